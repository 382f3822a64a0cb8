// Profile -> child argv. Pure: the same profile and spawn words always give the same vector, in a
// fixed order, so it can be golden-tested and shown by `kevlaya-orch args`.
#include <sstream>

#include "config/config.hpp"
#include "config/flags.hpp"

namespace kevlaya::config {

namespace {

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string ngl_text(int ngl) { return ngl < 0 ? "all" : std::to_string(ngl); }  // b10470 takes "all"

using Vars = std::vector<std::pair<std::string, std::string>>;

Vars template_vars(const Profile& p, const std::string& host, const std::string& port) {
  return {{"{model}", p.model.string()}, {"{port}", port},
          {"{host}", host},              {"{ctx}", std::to_string(p.ctx)},
          {"{ngl}", ngl_text(p.ngl)},    {"{parallel}", std::to_string(p.parallel)},
          {"{alias}", p.name},           {"{name}", p.name}};
}

// Fills every placeholder inside each word (one pass per placeholder; values are not re-read).
std::vector<std::string> fill_template(const std::vector<std::string>& tmpl, const Vars& vars) {
  std::vector<std::string> argv;
  for (std::string word : tmpl) {
    for (const auto& [key, value] : vars) {
      for (std::size_t at = word.find(key); at != std::string::npos;
           at = word.find(key, at + value.size()))
        word.replace(at, key.size(), value);
    }
    argv.push_back(std::move(word));
  }
  return argv;
}

// Appends the table's spelling of `key` and its value.
void put(std::vector<std::string>& a, std::string_view key, std::string value) {
  a.emplace_back(flag_name(key));
  a.push_back(std::move(value));
}

}  // namespace

std::vector<std::string> build_argv(const Profile& p, const SpawnArgs& s) {
  if (p.backend == Backend::remote) return {};
  if (p.backend == Backend::command) return fill_template(p.command, template_vars(p, s.host, s.port));
  std::vector<std::string> a = {p.binary};
  put(a, "model", p.model.string());
  put(a, "ngl", ngl_text(p.ngl));
  put(a, "ctx", std::to_string(p.ctx));
  put(a, "parallel", std::to_string(p.parallel));
  put(a, "host", s.host);
  put(a, "port", s.port);
  // Only the profile name goes to --alias: llama-server reports the first alias (std::set order)
  // as its model name; extra aliases are routed by the orchestrator, not by the child.
  put(a, "name", p.name);
  if (p.batch > 0) put(a, "batch", std::to_string(p.batch));
  if (!p.cache_type_k.empty()) put(a, "cache_type_k", p.cache_type_k);
  if (!p.cache_type_v.empty()) put(a, "cache_type_v", p.cache_type_v);
  if (p.flash_attn) put(a, "flash_attn", *p.flash_attn ? "on" : "off");
  for (const auto& l : p.lora) put(a, "lora", l.path.string() + ":" + number(l.scale));
  if (p.placement.devices.size() > 1 && !p.placement.split.empty()) {  // CUDA numbers the visible devices 0..n-1
    put(a, "main_gpu", std::to_string(p.placement.main_gpu));
    std::string ts;
    for (const auto v : p.placement.split) ts += (ts.empty() ? "" : ",") + std::to_string(v);
    put(a, "tensor_split", ts);
  }
  if (!s.slot_save_path.empty()) put(a, "slot_cache", s.slot_save_path);
  if (!s.api_key.empty()) put(a, "api_key", s.api_key);
  // The door's /metrics carries every ready child's llamacpp:* families (llama-server answers 501
  // without this flag); a scrape reads them without a lease.
  if (!uses_key(p.extra_args, "metrics")) a.emplace_back("--metrics");
  // The VRAM ledger calibrates from the buffer sizes the child logs at load; b10470 prints them
  // only at verbosity 4 (~35 extra lines per request, in the rotated child log).
  if (!uses_key(p.extra_args, "verbosity")) put(a, "verbosity", "4");
  a.insert(a.end(), p.extra_args.begin(), p.extra_args.end());
  return a;
}

const std::vector<std::string>& command_placeholders() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    const Profile blank;  // named: GCC 12 -O3 misreports a temporary's strings as maybe-uninitialized
    for (const auto& [key, value] : template_vars(blank, "", "")) n.push_back(key);
    n.emplace_back("{pid}");
    return n;
  }();
  return names;
}

std::vector<std::string> build_stop_argv(const Profile& p, const SpawnArgs& s, int pid) {
  Vars vars = template_vars(p, s.host, s.port);
  vars.emplace_back("{pid}", std::to_string(pid));
  return fill_template(p.stop.command, vars);
}

std::vector<std::string> build_argv(const Profile& p, const std::string& host, int port) {
  return build_argv(p, SpawnArgs{host, std::to_string(port), {}, {}});
}

std::vector<std::pair<std::string, std::string>> placement_env(const DevicePlacement& p) {
  if (p.devices.empty() || p.visible.empty()) return {};
  // CUDA numbers devices fastest-first by default; NVML and nvidia-smi by PCI bus: make them agree.
  return {{"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}, {"CUDA_VISIBLE_DEVICES", p.visible}};
}

std::string shell_join(const std::vector<std::string>& argv) {
  static const std::string safe =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@%";
  std::string out;
  for (const auto& w : argv) {
    if (!out.empty()) out += ' ';
    if (!w.empty() && w.find_first_not_of(safe) == std::string::npos) {
      out += w;
      continue;
    }
    out += '\'';
    for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace kevlaya::config
