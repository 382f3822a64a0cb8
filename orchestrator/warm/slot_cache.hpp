// KV slot persistence bookkeeping: which saved slot files belong to a profile's current setup,
// where they live, and the size cap. Pure file-system functions; the HTTP calls to the child
// (POST /slots/N?action=save|restore) live in supervisor/process_effects.
//
// A saved slot is valid only for the exact model file, LoRA files and child argv and environment
// (context, slot count, KV cache types, ...) it was made with. All of that is hashed into a key in
// the file name, so a changed profile or model simply finds no file: a mismatch is never restored.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "common/error.hpp"
#include "config/config.hpp"

namespace kevlaya::warm {

// Key of a profile's slot files: file_fingerprint (common/hash.hpp) and mtime of the model and of
// each LoRA file, plus config::fingerprint (every flag and variable the child gets), in 16 hex digits.
// Rewriting a file in place changes mtime; a copy with the same bytes but another mtime counts as
// another file (a missed restore, never a wrong one).
Result<std::string> slot_key(const config::Profile& p);

// <state_dir>/slots/<profile>, the folder passed as --slot-save-path (profile name sanitized).
std::filesystem::path slot_dir(const std::filesystem::path& state_dir, const std::string& profile);

// slot_dir() when `p` persists its KV slots (slot_cache.enabled, llama-server backend, state_dir
// set), else nullopt: the one rule for whether a child gets --slot-save-path.
std::optional<std::filesystem::path> slot_save_dir(const config::Profile& p, const std::filesystem::path& state_dir);

// "<key>-slot<N>.bin": only [0-9a-f-slotbin.] characters, so never a path (llama-server also
// rejects names with separators).
std::string slot_file_name(const std::string& key, int slot);

// True for a plain file name: [A-Za-z0-9._-], not starting with '.', at most 200 characters.
bool safe_file_name(const std::string& name);

// Deletes the least recently used (oldest mtime) *.bin files in `dir` until their total size is
// at most `max_bytes`. Returns how many were removed.
int enforce_cap(const std::filesystem::path& dir, std::int64_t max_bytes);

}  // namespace kevlaya::warm
