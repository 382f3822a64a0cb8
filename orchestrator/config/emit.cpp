// Profile -> YAML (see emit.hpp). yaml-cpp's emitter decides the quoting.
#include "config/emit.hpp"

#include <yaml-cpp/yaml.h>

#include <sstream>

#include "config/backend.hpp"

namespace kevlaya::config {
namespace {

// Strings are env-expanded when loaded: a literal "${" is written "$${" to stay literal.
std::string esc(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 2, "${") == 0) out += '$';
    out += s[i];
  }
  return out;
}

void strings(YAML::Emitter& e, const char* key, const std::vector<std::string>& v) {
  if (v.empty()) return;
  e << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& s : v) e << esc(s);
  e << YAML::EndSeq;
}

void health(YAML::Emitter& e, const HealthCfg& h) {
  const HealthCfg d;
  if (h.path == d.path && h.status == d.status && h.ready_line == d.ready_line &&
      h.startup_timeout_s == d.startup_timeout_s)
    return;
  e << YAML::Key << "health" << YAML::Value << YAML::BeginMap;
  if (h.path != d.path) e << YAML::Key << "path" << YAML::Value << esc(h.path);
  if (h.status != d.status) e << YAML::Key << "status" << YAML::Value << h.status;
  if (!h.ready_line.empty()) e << YAML::Key << "ready_line" << YAML::Value << esc(h.ready_line);
  if (h.startup_timeout_s != d.startup_timeout_s) e << YAML::Key << "startup_timeout_s" << YAML::Value << h.startup_timeout_s;
  e << YAML::EndMap;
}

void stop(YAML::Emitter& e, const StopCfg& s) {
  const StopCfg d;
  if (s.command.empty() && s.signal == d.signal && s.grace_s == d.grace_s) return;
  e << YAML::Key << "stop" << YAML::Value << YAML::BeginMap;
  if (s.signal != d.signal) e << YAML::Key << "signal" << YAML::Value << s.signal;
  if (s.grace_s != d.grace_s) e << YAML::Key << "grace_s" << YAML::Value << s.grace_s;
  strings(e, "command", s.command);
  e << YAML::EndMap;
}

void backend_keys(YAML::Emitter& e, const Profile& p) {
  const Profile d;
  if (p.backend != Backend::llama_server) e << YAML::Key << "backend" << YAML::Value << std::string(backend_of(p).name);
  if (p.backend == Backend::llama_server && p.binary != d.binary) e << YAML::Key << "binary" << YAML::Value << esc(p.binary);
  if (p.backend == Backend::remote) {
    e << YAML::Key << "url" << YAML::Value << esc(p.url);
    if (!p.remote_model.empty()) e << YAML::Key << "model" << YAML::Value << esc(p.remote_model);
    if (!p.api_key.empty()) e << YAML::Key << "api_key" << YAML::Value << p.api_key;  // may be a ${VAR} reference: kept
    return;
  }
  if (!p.model.empty()) e << YAML::Key << "model" << YAML::Value << esc(p.model.string());
  strings(e, "command", p.command);
  if (p.vram_mib) e << YAML::Key << "vram_mib" << YAML::Value << *p.vram_mib;
}

void llama_keys(YAML::Emitter& e, const Profile& p) {
  const Profile d;
  if (p.backend == Backend::remote) return;
  if (!p.quant.empty()) e << YAML::Key << "quant" << YAML::Value << p.quant;
  if (p.ngl != d.ngl) e << YAML::Key << "ngl" << YAML::Value << p.ngl;
  if (p.ctx != d.ctx) e << YAML::Key << "ctx" << YAML::Value << p.ctx;
  if (p.parallel != d.parallel) e << YAML::Key << "parallel" << YAML::Value << p.parallel;
  if (p.batch) e << YAML::Key << "batch" << YAML::Value << p.batch;
  if (!p.cache_type_k.empty()) e << YAML::Key << "cache_type_k" << YAML::Value << p.cache_type_k;
  if (!p.cache_type_v.empty()) e << YAML::Key << "cache_type_v" << YAML::Value << p.cache_type_v;
  if (p.flash_attn) e << YAML::Key << "flash_attn" << YAML::Value << *p.flash_attn;
  if (!p.lora.empty()) {
    e << YAML::Key << "lora" << YAML::Value << YAML::BeginSeq;
    for (const auto& l : p.lora)
      e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << l.name << YAML::Key << "path"
        << YAML::Value << esc(l.path.string()) << YAML::Key << "scale" << YAML::Value << l.scale << YAML::EndMap;
    e << YAML::EndSeq;
  }
}

}  // namespace

std::string profile_yaml(const Profile& p, const std::string& header) {
  YAML::Emitter e;
  e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << p.name;
  backend_keys(e, p);
  llama_keys(e, p);
  strings(e, "alias", p.alias);
  strings(e, "extra_args", p.extra_args);
  if (!p.env.empty()) {
    e << YAML::Key << "env" << YAML::Value << YAML::BeginMap;
    for (const auto& [k, v] : p.env) e << YAML::Key << k << YAML::Value << esc(v);
    e << YAML::EndMap;
  }
  if (p.port) e << YAML::Key << "port" << YAML::Value << *p.port;
  if (!p.gpu.empty()) {
    e << YAML::Key << "gpu" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const int g : p.gpu) e << g;
    e << YAML::EndSeq;
  }
  if (p.shared_base) e << YAML::Key << "shared_base" << YAML::Value << *p.shared_base;
  if (p.slot_cache.enabled)
    e << YAML::Key << "slot_cache" << YAML::Value << YAML::BeginMap << YAML::Key << "enabled" << YAML::Value << true
      << YAML::EndMap;
  health(e, p.health);
  stop(e, p.stop);
  if (p.idle_unload_s) e << YAML::Key << "idle_unload_s" << YAML::Value << *p.idle_unload_s;
  if (p.pin) e << YAML::Key << "pin" << YAML::Value << true;
  e << YAML::EndMap;
  std::ostringstream out;
  std::istringstream lines(header);
  for (std::string l; std::getline(lines, l);) out << "#" << (l.empty() ? "" : " ") << l << "\n";
  out << e.c_str() << "\n";
  return out.str();
}

std::string yaml_scalar(const std::string& s) {
  YAML::Emitter e;
  e << esc(s);
  return e.c_str();
}

}  // namespace kevlaya::config
