#include "supervisor/child_body.hpp"

namespace kevlaya::supervisor {

void set_child_fields(nlohmann::ordered_json& body, const std::string& model,
                      const std::vector<ledger::LoraScale>& lora) {
  if (!model.empty()) body["model"] = model;
  if (lora.empty()) return;
  auto arr = nlohmann::ordered_json::array();
  for (const auto& s : lora) arr.push_back({{"id", s.id}, {"scale", s.scale}});
  body["lora"] = std::move(arr);
}

std::string child_model(const std::string& requested, const std::string& upstream) {
  return !upstream.empty() && !requested.empty() && requested != upstream ? upstream : std::string();
}

}  // namespace kevlaya::supervisor
