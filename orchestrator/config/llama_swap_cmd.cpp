// A llama-swap `cmd` -> profile keys (see llama_swap_detail.hpp).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>

#include "config/flags.hpp"
#include "config/llama_swap.hpp"
#include "config/llama_swap_detail.hpp"

namespace kevlaya::config {

std::vector<std::string> split_command(const std::string& cmd) {
  std::string text;  // without comment lines
  std::size_t at = 0;
  while (at <= cmd.size()) {
    auto end = cmd.find('\n', at);
    if (end == std::string::npos) end = cmd.size();
    const std::string line = cmd.substr(at, end - at);
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] != '#') text += line + "\n";
    at = end + 1;
  }
  std::vector<std::string> words;
  std::string w;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < text.size() && std::string("\"\\$`").find(text[i + 1]) != std::string::npos) w += text[++i];
      else w += c;
    } else if (c == '\'' || c == '"') {
      quote = c, in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      if (text[i + 1] != '\n') w += text[i + 1], in_word = true;  // a backslash-newline joins lines
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(w);
      w.clear(), in_word = false;
    } else {
      w += c, in_word = true;
    }
  }
  if (in_word) words.push_back(w);
  return words;
}

std::string profile_name_from_id(const std::string& id) {
  std::string s = id;
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '-';
  const auto first = s.find_first_not_of("._-");
  return first == std::string::npos ? std::string() : s.substr(first);
}

namespace swap {

std::string env_references(const std::string& text, std::vector<std::string>* vars) {
  const auto name_char = [](char c, bool first) {
    return c == '_' || std::isalpha(static_cast<unsigned char>(c)) || (!first && std::isdigit(static_cast<unsigned char>(c)));
  };
  std::string out;
  std::size_t at = 0;
  for (auto open = text.find("${env.", at); open != std::string::npos; open = text.find("${env.", at)) {
    std::size_t end = open + 6;
    while (end < text.size() && name_char(text[end], end == open + 6)) ++end;
    if (end == open + 6 || end >= text.size() || text[end] != '}') {  // not a reference: as written
      out.append(text, at, open + 1 - at);
      at = open + 1;
      continue;
    }
    const std::string var = text.substr(open + 6, end - open - 6);
    out.append(text, at, open - at).append("${" + var + "}");
    if (vars && std::find(vars->begin(), vars->end(), var) == vars->end()) vars->push_back(var);
    at = end + 1;
  }
  return out.append(text, at, std::string::npos);
}

// The value of each ${VAR} in `text` now (unset: empty), for a typed key that holds no reference.
std::string env_values(const std::string& text) {
  std::string out;
  std::size_t at = 0;
  for (auto open = text.find("${", at); open != std::string::npos; open = text.find("${", at)) {
    const auto close = text.find('}', open);
    if (close == std::string::npos) break;
    const char* v = std::getenv(text.substr(open + 2, close - open - 2).c_str());
    out.append(text, at, open - at).append(v ? v : "");
    at = close + 1;
  }
  return out.append(text, at, std::string::npos);
}

std::optional<int> parse_int(const std::string& s) {
  static const std::regex re("-?[0-9]{1,9}");
  if (!std::regex_match(s, re)) return std::nullopt;
  return std::stoi(s);
}

namespace {

fs::path resolve(const std::string& path, const fs::path& base) {
  fs::path p(path);
  if (path.rfind("${", 0) == 0) return p;  // a ${VAR} reference: the loader expands it
  return (p.is_absolute() ? p : base / p).lexically_normal();
}

// --lora-scaled FNAME:SCALE[,FNAME:SCALE...]
bool add_scaled(const std::string& v, const fs::path& base, Profile& p) {
  std::size_t at = 0;
  while (at < v.size()) {
    auto end = v.find(',', at);
    if (end == std::string::npos) end = v.size();
    const std::string item = v.substr(at, end - at);
    const auto colon = item.rfind(':');
    if (colon == std::string::npos) return false;
    char* stop = nullptr;
    const double scale = std::strtod(item.c_str() + colon + 1, &stop);
    if (!stop || *stop) return false;
    const fs::path path = resolve(item.substr(0, colon), base);
    p.lora.push_back(LoraSpec{path.stem().string(), path, scale});
    at = end + 1;
  }
  return true;
}

// One flag of the table with its value -> a profile key. False: not understood (kept in extra_args).
bool set_key(const LlamaFlag& f, const std::string& v, const fs::path& base, Profile& p, std::vector<std::string>& notes) {
  const std::string_view k = f.key;
  const auto n = parse_int(v);
  if (k == "model") p.model = resolve(v, base);
  else if (k == "ngl") {
    if (v == "all" || v == "auto") p.ngl = -1;
    else if (n && *n >= 0) p.ngl = *n;
    else return false;
  } else if (k == "ctx") {
    if (!n) return false;
    if (*n < 256) return notes.push_back(std::string(f.name) + " " + v + ": kevlaya-orch needs a context of 256 or more; ctx left at 2048"), true;
    p.ctx = *n;
  } else if (k == "parallel" || k == "batch") {
    if (!n || *n < 1) return false;
    (k == "parallel" ? p.parallel : p.batch) = *n;
  } else if (k == "cache_type_k" || k == "cache_type_v") {
    const auto& t = kv_cache_types();
    if (std::find(t.begin(), t.end(), v) == t.end()) return false;
    (k == "cache_type_k" ? p.cache_type_k : p.cache_type_v) = v;
  } else if (k == "flash_attn") {
    if (v == "on" || v == "1" || v == "true") p.flash_attn = true;
    else if (v == "off" || v == "0" || v == "false") p.flash_attn = false;
    else if (v != "auto") return false;
  } else if (k == "lora" && f.name == "--lora") {
    const fs::path path = resolve(v, base);
    p.lora.push_back(LoraSpec{path.stem().string(), path, 1.0});
  } else if (k == "lora") {
    return add_scaled(v, base, p);
  } else {
    return false;
  }
  return true;
}

// A flag's value for its typed key: a path keeps its ${VAR} references; a number or a word cannot
// hold one, so it gets the variable's value now (said, without the value: it is never echoed).
std::string typed_value(const LlamaFlag& f, const std::string& word, const std::string& value,
                        std::vector<std::string>& notes) {
  if (f.key == "model" || f.key == "lora" || value.find("${") == std::string::npos) return value;
  notes.push_back(word + " " + value + ": the typed key '" + std::string(f.key) +
                  "' holds no ${VAR}: the variable's value here is written");
  return env_values(value);
}

void map_llama_server(const std::vector<std::string>& words, const fs::path& base, Profile& p,
                      std::vector<std::string>& notes) {
  p.binary = words[0];
  for (std::size_t i = 1; i < words.size(); ++i) {
    const LlamaFlag* f = find_flag(words[i]);
    if (!f) {
      p.extra_args.push_back(words[i]);
      continue;
    }
    const std::string word = words[i].substr(0, words[i].find('='));
    std::string value;
    const std::size_t first = i;
    if (f->value != FlagValue::none) {
      const auto eq = words[i].find('=');
      if (eq != std::string::npos) value = words[i].substr(eq + 1);
      else if (i + 1 < words.size()) value = words[++i];
    }
    if (f->owner == FlagOwner::user) {
      p.extra_args.insert(p.extra_args.end(), words.begin() + static_cast<std::ptrdiff_t>(first),
                          words.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    } else if (f->key == "host" || f->key == "port") {
      // kevlaya-orch binds each child to 127.0.0.1 on a port of its own choosing.
    } else if (f->key == "name") {
      notes.push_back(word + " " + value + ": dropped; kevlaya-orch passes --alias with the profile name");
    } else if (f->key == "api_key") {
      notes.push_back(word + ": dropped; each child gets its own per-start key (the door's keys are api_keys)");
    } else if (f->key == "slot_cache") {
      p.slot_cache.enabled = true;
      notes.push_back(word + " " + value + ": mapped to slot_cache.enabled (the files go under state_dir/slots)");
    } else if (f->key == "main_gpu" || f->key == "tensor_split" || f->key == "device") {
      notes.push_back(word + " " + value + ": dropped; kevlaya-orch places children on GPUs itself (profile key 'gpu')");
    } else if (!set_key(*f, typed_value(*f, word, value, notes), base, p, notes)) {
      notes.push_back(word + " " + value + ": not a value kevlaya-orch's key '" + std::string(f->key) + "' accepts; dropped");
    }
  }
}

}  // namespace

std::string expand(const std::string& text, const Macros& macros, const std::string& model_id,
                   std::vector<std::string>& bad) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto close = text.compare(i, 2, "${") == 0 ? text.find('}', i + 2) : std::string::npos;
    if (close == std::string::npos) {
      out += text[i];
      continue;
    }
    const std::string name = text.substr(i + 2, close - i - 2);
    const auto m = std::find_if(macros.rbegin(), macros.rend(), [&](const auto& kv) { return kv.first == name; });
    if (name == "PORT" || name == "PID") {
      out += "${" + name + "}";
    } else if (name == "MODEL_ID") {
      out += model_id;
    } else if (name.rfind("env.", 0) == 0) {
      if (!std::getenv(name.substr(4).c_str()))
        bad.push_back("${" + name + "} (not set here; kevlaya-orch reads ${" + name.substr(4) + "} when it loads the profile)");
      out += "${" + name.substr(4) + "}";
    } else if (m != macros.rend()) {
      out += m->second;
    } else {
      bad.push_back("${" + name + "} (no such macro)");
      out += "${" + name + "}";
    }
    i = close;
  }
  return out;
}

void map_command(const std::vector<std::string>& words, const fs::path& base, Profile& p,
                 std::vector<std::string>& notes) {
  if (words.empty()) return;
  const bool llama = fs::path(words[0]).filename().string().find("llama-server") != std::string::npos &&
                     uses_key(words, "model");
  if (llama) {
    map_llama_server(words, base, p, notes);
    return;
  }
  // Any other server (or llama-server without a model file, e.g. -hf): run as written.
  p.backend = Backend::command;
  for (std::string w : words) {
    for (auto at = w.find("${PORT}"); at != std::string::npos; at = w.find("${PORT}", at)) w.replace(at, 7, "{port}");
    p.command.push_back(std::move(w));
  }
}

}  // namespace swap
}  // namespace kevlaya::config
