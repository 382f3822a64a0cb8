// Calibration: what a real llama-server said it allocated (parsed from its log), stored per
// (model fingerprint, flags) under state_dir so later plans show estimate vs measured.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/error.hpp"
#include "ledger/ledger.hpp"

namespace kevlaya::ledger {

// Parses llama-server's startup log (needs --log-verbosity 4 at b10470 for the buffer lines).
// Buffers are summed per side: names starting "CPU" or ending "_Host" are host memory, every
// other buffer (CUDA0, ROCm0, Vulkan0, Metal...) is GPU. A second model load starts over.
Measured parse_log(std::string_view log);

// True for host-memory buffer names ("CPU", "CPU_Mapped", "CUDA_Host", ...).
bool is_host_buffer(std::string_view name);

// Store key: fingerprint (kevlaya::file_fingerprint of the model) + flags_key + adapter file names.
std::string measurement_key(const std::string& fingerprint, const Flags& f, const std::vector<AdapterInput>& adapters);

// <state_dir>/ledger-measurements.json
std::filesystem::path store_path(const std::filesystem::path& state_dir);
// Missing file = empty store; a corrupt file is an error naming it.
Result<std::map<std::string, Measured>> load_store(const std::filesystem::path& file);
// load + insert/replace + save.
Status record_measurement(const std::filesystem::path& state_dir, const std::string& key, const Measured& m);

// Load times: the last kLoadTimesKept successful loads per key (ms, start to ready; the supervisor
// keys them by child name and config::child_key), in <state_dir>/ledger-load-times.json beside the measurements, so
// a child's load ETA (their median) survives restarts and starts over when what reaches it changes.
constexpr std::size_t kLoadTimesKept = 5;
std::filesystem::path load_times_path(const std::filesystem::path& state_dir);
// Missing file = none; a corrupt file is an error naming it. Oldest first.
Result<std::map<std::string, std::vector<std::int64_t>>> load_load_times(const std::filesystem::path& file);
// load + append (keeping the last kLoadTimesKept) + save atomically.
Status record_load_time(const std::filesystem::path& state_dir, const std::string& key, std::int64_t ms);

// JSON form of a Measured (bytes; absent lines omitted), shared with `plan --json`.
nlohmann::json measured_to_json(const Measured& m);

}  // namespace kevlaya::ledger
