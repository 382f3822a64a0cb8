// KV slot persistence bookkeeping: which saved slot files belong to a profile's current setup,
// where they live, and the size cap. Pure file-system functions; the HTTP calls to the child
// (POST /slots/N?action=save|restore) live in supervisor/process_effects.
//
// A saved slot is valid only for the exact model file, context, slot count, KV cache types and LoRA
// set it was made with. All of that is hashed into a key that is part of the file name, so a changed
// profile or model simply finds no file: a mismatch is never restored.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "common/error.hpp"
#include "config/config.hpp"

namespace kevlaya::warm {

// Cheap identity of a (possibly multi-GB) file: size, mtime (ns) and a 64-bit FNV-1a hash of its
// first and last MiB, as 16 hex digits. Rewriting the file in place changes mtime; a copy with the
// same bytes but another mtime counts as another file (a missed restore, never a wrong one).
Result<std::string> file_fingerprint(const std::filesystem::path& path);

// Key of a profile's slot files: fingerprints of the model and each LoRA file plus ctx, parallel,
// cache_type_k/v and LoRA scales, hashed to 16 hex digits.
Result<std::string> slot_key(const config::Profile& p);

// <state_dir>/slots/<profile>, the folder passed as --slot-save-path (profile name sanitized).
std::filesystem::path slot_dir(const std::filesystem::path& state_dir, const std::string& profile);

// "<key>-slot<N>.bin": only [0-9a-f-slotbin.] characters, so never a path (llama-server also
// rejects names with separators).
std::string slot_file_name(const std::string& key, int slot);

// True for a plain file name: [A-Za-z0-9._-], not starting with '.', at most 200 characters.
bool safe_file_name(const std::string& name);

// Deletes the least recently used (oldest mtime) *.bin files in `dir` until their total size is
// at most `max_bytes`. Returns how many were removed.
int enforce_cap(const std::filesystem::path& dir, std::int64_t max_bytes);

}  // namespace kevlaya::warm
