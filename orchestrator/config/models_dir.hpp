// models_dir: a folder of GGUF files, each model served as a profile named from its file. Split
// files (NAME-00001-of-0000N.gguf) are one model; LoRA adapters and multimodal projectors (from
// their GGUF metadata) join a base model of the folder instead of being served alone.
// Discovery only names and attaches; ctx, ngl and parallel are fitted later (runtime::fit_discovered).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace kevlaya::config {

// What discovery needs to know of one GGUF file (scan_models_dir reads it from the file).
struct GgufFacts {
  fs::path path;
  std::string architecture;           // general.architecture
  std::string type;                   // general.type: "" / "model", "adapter", "mmproj"
  std::uint32_t n_embd = 0;           // {architecture}.embedding_length
  std::uint32_t projection_dim = 0;   // a projector's output width (clip.*.projection_dim); 0 = unknown
  std::vector<std::string> tensors;   // a base's tensor names; an adapter's target tensor names
  std::string error;                  // non-empty: the file could not be read (why)
  bool is_adapter() const { return type == "adapter"; }
  bool is_projector() const { return type == "mmproj" || architecture == "clip"; }
};

// The result of discovery: one profile per model (name order) and why any file was left out.
struct Discovery {
  std::vector<Profile> profiles;
  std::vector<std::string> notes;  // "FILE: why it is not served"
};

// The longest profile name a model file gives: names become log fields and parts of file names
// (state records, child logs, slot caches), which a file system limits to 255 bytes.
inline constexpr std::size_t kMaxModelNameBytes = 128;

// The profile name a model file gets: its stem without the split suffix, any byte outside
// [A-Za-z0-9._-] made '-'; a longer name than kMaxModelNameBytes is cut and ends in 8 hex digits
// of the file name's hash; empty when nothing usable is left.
std::string model_name_from_file(const fs::path& file);

// The model files of `dir` (*.gguf, not recursive, sorted), split shards after the first skipped
// (a set with a missing shard becomes an error fact), each with its metadata.
std::vector<GgufFacts> scan_models_dir(const fs::path& dir);

// Pure: a profile per base model of `files` (binary `binary`), adapters as profiles of their base
// with the adapter loaded (so they share its child), projectors as --mmproj of their base.
// Names in `taken` (explicit profiles and aliases) win: a discovered model of that name is dropped.
Discovery discover(const std::vector<GgufFacts>& files, const std::string& binary,
                   const std::vector<std::string>& taken);

// The default server binary of discovered profiles: $KEVLAYA_SERVER_BINARY, else "llama-server".
std::string default_models_binary();

}  // namespace kevlaya::config
