// models_dir discovery (see models_dir.hpp): scanning reads metadata, discover() decides.
#include "config/models_dir.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "common/bytes.hpp"
#include "common/hash.hpp"
#include "config/llama_swap.hpp"
#include "gguf/gguf.hpp"

namespace kevlaya::config {
namespace {

// NAME-00001-of-00003.gguf: llama.cpp's split naming (gguf-split); the first shard names the model.
const std::regex& split_re() {
  static const std::regex re(R"((.*)-([0-9]{5})-of-([0-9]{5})\.gguf)");
  return re;
}

std::string str_of(const gguf::File& f, const std::string& key) {
  const gguf::Value* v = f.find(key);
  return v ? v->as_string().value_or("") : std::string();
}

std::uint32_t u32_of(const gguf::File& f, const std::string& key) {
  const gguf::Value* v = f.find(key);
  const auto x = v ? v->as_uint() : std::nullopt;
  return x && *x <= UINT32_MAX ? static_cast<std::uint32_t>(*x) : 0;
}

GgufFacts read_facts(const fs::path& path) {
  GgufFacts g;
  g.path = path;
  auto f = gguf::read_file(path);
  if (!f) {
    g.error = f.error().message;
    return g;
  }
  g.architecture = str_of(*f, "general.architecture");
  g.type = str_of(*f, "general.type");
  g.n_embd = u32_of(*f, g.architecture + ".embedding_length");
  for (const char* k : {"clip.vision.projection_dim", "clip.audio.projection_dim"})
    if (!g.projection_dim) g.projection_dim = u32_of(*f, k);
  for (const auto& t : f->tensors) {
    if (!g.is_adapter()) {
      g.tensors.push_back(t.name);
      continue;
    }
    for (const std::string suffix : {".lora_a", ".lora_b"}) {  // the base tensor an A/B pair targets
      if (t.name.size() > suffix.size() && t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        std::string base = t.name.substr(0, t.name.size() - suffix.size());
        if (std::find(g.tensors.begin(), g.tensors.end(), base) == g.tensors.end()) g.tensors.push_back(std::move(base));
      }
    }
  }
  return g;
}

// A file's path as notes, locations and logs show it: bytes a terminal would obey (a newline, an
// escape) or that are not UTF-8 are spelled \xNN, so a file name cannot forge a log line.
std::string shown(const fs::path& p) { return printable(display_path(p)); }

// `name` with "-" and 8 hex digits of `file`'s FNV-1a: distinct files keep distinct names.
std::string with_file_hash(std::string name, const fs::path& file) {
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(fnv1a(file.filename().string()) >> 32));
  return name + "-" + hex;
}

std::size_t common_prefix(const std::string& a, const std::string& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// A projector's or adapter's name without the words that say what it is, for matching its base.
std::string stem_for_match(const fs::path& p) {
  std::string s = p.stem().string();
  for (const std::string w : {"mmproj-", "-mmproj", "mmproj", "lora-", "-lora", "lora"})
    if (const auto at = s.find(w); at != std::string::npos) s.erase(at, w.size());
  return s;
}

// The base among `candidates` whose file name shares the longest prefix with `extra`'s; nullopt
// (with the reason in `why`) when there is none or two are equally close.
std::optional<std::size_t> closest(const std::vector<const GgufFacts*>& candidates, const GgufFacts& extra,
                                   std::string& why) {
  if (candidates.empty()) {
    why = "no model of the folder fits it";
    return std::nullopt;
  }
  const std::string want = stem_for_match(extra.path);
  std::size_t best = 0, best_len = 0, ties = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::size_t len = common_prefix(want, candidates[i]->path.stem().string());
    if (i == 0 || len > best_len) {
      best = i, best_len = len, ties = 0;
    } else if (len == best_len) {
      ++ties;
    }
  }
  if (ties > 0) {
    why = "it fits several models of the folder equally well; write a profile for it";
    return std::nullopt;
  }
  return best;
}

// `base_tensors`: the base's tensor names, sorted (a lookup per adapter tensor, not a scan).
bool adapter_fits(const GgufFacts& adapter, const GgufFacts& base, const std::vector<std::string>& base_tensors) {
  if (adapter.architecture != base.architecture || adapter.tensors.empty()) return false;
  return std::all_of(adapter.tensors.begin(), adapter.tensors.end(), [&](const std::string& t) {
    return std::binary_search(base_tensors.begin(), base_tensors.end(), t);
  });
}

Profile base_profile(const std::string& name, const fs::path& model, const std::string& binary) {
  Profile p;
  p.name = name;
  p.loc = SourceLoc{shown(model), 0, 0};
  p.binary = binary;
  p.model = model;
  p.discovered = true;
  return p;
}

}  // namespace

std::string model_name_from_file(const fs::path& file) {
  const std::string s = file.filename().string();
  std::smatch m;
  std::string name = profile_name_from_id(std::regex_match(s, m, split_re()) ? m[1].str() : file.stem().string());
  if (name.size() <= kMaxModelNameBytes) return name;
  name.resize(kMaxModelNameBytes - 9);  // room for "-" and 8 hex digits
  return with_file_hash(std::move(name), file);
}

std::vector<GgufFacts> scan_models_dir(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".gguf" && e.is_regular_file(ec)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::set<std::string> names;
  for (const auto& f : files) names.insert(f.filename().string());
  std::vector<GgufFacts> out;
  for (const auto& f : files) {
    const std::string fn = f.filename().string();
    std::smatch m;
    if (!std::regex_match(fn, m, split_re())) {
      out.push_back(read_facts(f));
      continue;
    }
    if (m[2].str() != "00001") continue;  // later shards: llama-server opens them from the first
    const int count = std::stoi(m[3].str());
    for (int i = 2; i <= count; ++i) {
      char shard[16];
      std::snprintf(shard, sizeof shard, "%05d", i);
      if (names.count(m[1].str() + "-" + shard + "-of-" + m[3].str() + ".gguf")) continue;
      GgufFacts g;
      g.path = f;
      g.error = std::string("split model: shard ") + shard + " of " + m[3].str() + " is missing";
      out.push_back(std::move(g));
      break;
    }
    if (out.empty() || out.back().path != f) out.push_back(read_facts(f));
  }
  return out;
}

Discovery discover(const std::vector<GgufFacts>& files, const std::string& binary,
                   const std::vector<std::string>& taken) {
  Discovery d;
  // `why` may quote the path raw (the reader's errors do): every note is printable as a whole.
  const auto note = [&d](const GgufFacts& g, const std::string& why) { d.notes.push_back(shown(g.path) + ": " + printable(why)); };
  std::vector<const GgufFacts*> bases, extras;
  for (const auto& g : files) {
    if (!g.error.empty()) note(g, "not served: " + g.error);
    else if (g.is_adapter() || g.is_projector()) extras.push_back(&g);
    else if (g.architecture.empty()) note(g, "not served: no general.architecture (not a model)");
    else bases.push_back(&g);
  }
  std::map<std::string, std::size_t> by_name;  // discovered name -> index in d.profiles
  std::map<const GgufFacts*, std::size_t> base_index;
  const std::set<std::string> explicit_names(taken.begin(), taken.end());
  // Two files whose names clean to the same profile name are both served: the later one (in file
  // order) gets its file's hash appended, and a note says so.
  const auto add = [&](std::string name, Profile p, const GgufFacts& from) -> bool {
    if (name.empty()) return note(from, "not served: its file name gives no usable profile name"), false;
    if (explicit_names.count(name)) return false;  // the explicit profile wins
    if (const auto it = by_name.find(name); it != by_name.end()) {
      const std::string other = shown(d.profiles[it->second].model);
      const std::string unique = with_file_hash(name, from.path);
      if (by_name.count(unique) || explicit_names.count(unique))
        return note(from, "not served: its name '" + name + "' is taken by " + other), false;
      note(from, "served as '" + unique + "': its name '" + name + "' is taken by " + other);
      name = unique;
      p.name = unique;
    }
    by_name.emplace(name, d.profiles.size());
    d.profiles.push_back(std::move(p));
    return true;
  };
  for (const auto* b : bases) {
    const std::string name = model_name_from_file(b->path);
    if (add(name, base_profile(name, b->path, binary), *b)) base_index[b] = d.profiles.size() - 1;
  }
  std::vector<const GgufFacts*> served;
  std::map<const GgufFacts*, std::vector<std::string>> sorted_tensors;  // filled only when adapters wait
  for (const auto& kv : base_index) served.push_back(kv.first);
  const bool any_adapter = std::any_of(extras.begin(), extras.end(), [](const GgufFacts* e) { return e->is_adapter(); });
  for (const auto* b : served) {
    if (!any_adapter) break;
    auto& t = sorted_tensors[b];
    t = b->tensors;
    std::sort(t.begin(), t.end());
  }
  std::sort(served.begin(), served.end(), [](auto* x, auto* y) { return x->path < y->path; });
  // Projectors first: an adapter's profile copies its base's --mmproj.
  std::stable_partition(extras.begin(), extras.end(), [](const GgufFacts* e) { return e->is_projector(); });
  for (const auto* e : extras) {
    std::vector<const GgufFacts*> fit;
    for (const auto* b : served) {
      const bool ok = e->is_adapter() ? adapter_fits(*e, *b, sorted_tensors[b])
                                      : !e->projection_dim || e->projection_dim == b->n_embd;
      if (ok) fit.push_back(b);
    }
    std::string why;
    const auto pick = closest(fit, *e, why);
    if (!pick) {
      note(*e, std::string("not attached (") + (e->is_adapter() ? "LoRA adapter" : "multimodal projector") + "): " + why);
      continue;
    }
    const GgufFacts& base = *fit[*pick];
    Profile& bp = d.profiles[base_index.at(&base)];
    if (e->is_projector()) {
      bp.extra_args.insert(bp.extra_args.end(), {"--mmproj", e->path.string()});
      continue;
    }
    if (e->path.string().find_first_of(":,") != std::string::npos) {  // --lora-scaled FNAME:SCALE,...
      note(*e, "not attached (LoRA adapter): llama-server's --lora-scaled cannot pass a path with ':' or ','");
      continue;
    }
    const std::string name = model_name_from_file(e->path);
    Profile p = base_profile(name, base.path, binary);
    p.lora.push_back(LoraSpec{name, e->path, 1.0});
    p.extra_args = bp.extra_args;
    add(name, std::move(p), *e);
  }
  std::sort(d.profiles.begin(), d.profiles.end(), [](const Profile& a, const Profile& b) { return a.name < b.name; });
  return d;
}

std::string default_models_binary() {
  const char* v = std::getenv("KEVLAYA_SERVER_BINARY");
  return v && *v ? std::string(v) : std::string("llama-server");
}

}  // namespace kevlaya::config
