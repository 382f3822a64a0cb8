#include "supervisor/child_body.hpp"

namespace kevlaya::supervisor {

void set_child_fields(nlohmann::ordered_json& body, const std::string& model,
                      const std::vector<std::pair<std::string, double>>& lora) {
  if (!model.empty()) body["model"] = model;
  if (lora.empty()) return;
  auto arr = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < lora.size(); ++i) arr.push_back({{"id", i}, {"scale", lora[i].second}});
  body["lora"] = std::move(arr);
}

}  // namespace kevlaya::supervisor
