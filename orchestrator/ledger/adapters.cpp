// LoRA adapter vs base model: the checks llama_adapter_lora_init_impl (src/llama-adapter.cpp,
// b10470) makes at load time, made before a child is spawned so a mismatch is a plan error.
#include <map>
#include <string>

#include "ledger/ledger.hpp"

namespace kevlaya::ledger {
namespace {

std::string kv_string(const gguf::File& f, const std::string& key) {
  const auto* v = f.find(key);
  return v ? v->as_string().value_or("") : "";
}

std::string dims(const std::vector<std::uint64_t>& ne) {
  std::string s = "[";
  for (std::size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

struct Pair {
  const gguf::TensorInfo* a = nullptr;
  const gguf::TensorInfo* b = nullptr;
};

Error mismatch(const std::string& adapter, const std::string& msg) {
  return make_error(Errc::config_invalid, "adapter " + adapter + ": " + msg,
                    "use an adapter trained for this base model");
}

std::uint64_t dim(const gguf::TensorInfo& t, std::size_t i) { return i < t.ne.size() ? t.ne[i] : 1; }

Status check_pair(const gguf::TensorInfo& base, const std::string& name, const Pair& p,
                  const std::string& adapter) {
  const bool ok = name == "token_embd.weight"
                      // B is not transposed for token_embd (llm_build_inp_embd)
                      ? dim(base, 0) == dim(*p.b, 1) && dim(base, 1) == dim(*p.a, 1)
                      : dim(base, 0) == dim(*p.a, 0) && dim(base, 1) == dim(*p.b, 1) &&
                            dim(*p.a, 1) == dim(*p.b, 0);
  if (ok) return ok_status();
  return mismatch(adapter, "tensor '" + name + "' has shape " + dims(base.ne) + " in the base but lora_a " +
                               dims(p.a->ne) + " / lora_b " + dims(p.b->ne));
}

}  // namespace

Status check_adapter(const gguf::File& base, const gguf::File& adapter, const std::string& adapter_name) {
  const std::string base_arch = kv_string(base, "general.architecture");
  const std::string arch = kv_string(adapter, "general.architecture");
  if (arch != base_arch)
    return mismatch(adapter_name, "architecture '" + arch + "' does not match the base model's '" + base_arch + "'");
  const std::string type = kv_string(adapter, "adapter.type");
  if (type != "lora") return mismatch(adapter_name, "adapter.type is '" + type + "', expected 'lora'");

  std::map<std::string, Pair> pairs;
  for (const auto& t : adapter.tensors) {
    if (t.name.ends_with(".lora_a")) {
      pairs[t.name.substr(0, t.name.size() - 7)].a = &t;
    } else if (t.name.ends_with(".lora_b")) {
      pairs[t.name.substr(0, t.name.size() - 7)].b = &t;
    } else if (!t.name.ends_with("_norm.weight")) {
      return mismatch(adapter_name, "tensor '" + t.name + "' has an unexpected suffix");
    }
  }
  std::map<std::string, const gguf::TensorInfo*> base_tensors;
  for (const auto& t : base.tensors) base_tensors[t.name] = &t;
  for (const auto& [name, p] : pairs) {
    if (!p.a || !p.b) return mismatch(adapter_name, "tensor '" + name + "' lacks its lora_a or lora_b half");
    const auto it = base_tensors.find(name);
    if (it == base_tensors.end()) return mismatch(adapter_name, "tensor '" + name + "' does not exist in the base model");
    if (auto st = check_pair(*it->second, name, p, adapter_name); !st) return st;
  }
  return ok_status();
}

}  // namespace kevlaya::ledger
