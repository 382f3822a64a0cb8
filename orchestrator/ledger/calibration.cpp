// Log parsing and the measurement store. The log lines are llama.cpp b10470's:
//   load_tensors: offloaded N/M layers to GPU                     (llama-model.cpp, GPU builds only)
//   load_tensors: <BUF> model buffer size = X MiB                 (llama-model.cpp)
//   llama_kv_cache: <BUF> KV buffer size = X MiB                  (llama-kv-cache.cpp)
//   sched_reserve: <BUF> compute buffer size = X MiB              (llama-context.cpp)
//   llama_adapter_lora_init_impl: <BUF> LoRA buffer size = X MiB  (llama-adapter.cpp)
#include "ledger/calibration.hpp"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <system_error>

#include "common/bytes.hpp"
#include "common/replace_file.hpp"

namespace kevlaya::ledger {
namespace {

constexpr const char* kStoreName = "ledger-measurements.json";
constexpr const char* kLoadTimesName = "ledger-load-times.json";

std::uint64_t mib_to_bytes(const std::string& mib) {
  return static_cast<std::uint64_t>(std::stod(mib) * static_cast<double>(kMiB) + 0.5);
}

void add(std::optional<std::uint64_t>& line, std::uint64_t bytes) { line = line.value_or(0) + bytes; }

// The compute buffers of one `sched_reserve` pass; llama-server reserves again when a request
// changes the graph (e.g. other LoRA scales), so the measurement keeps the largest pass.
struct Reserve {
  std::optional<std::uint64_t> gpu, cpu;
};

void keep_max(std::optional<std::uint64_t>& line, const std::optional<std::uint64_t>& pass) {
  if (pass && (!line || *pass > *line)) line = pass;
}

void add_buffer(Measured& m, Reserve& r, const std::string& kind, const std::string& buf, std::uint64_t bytes) {
  const bool host = is_host_buffer(buf);
  if (kind == "model") add(host ? m.weights_cpu : m.weights_gpu, bytes);
  if (kind == "KV") add(host ? m.kv_cpu : m.kv_gpu, bytes);
  if (kind == "LoRA") add(host ? m.adapters_cpu : m.adapters_gpu, bytes);
  if (kind == "compute") {
    add(host ? r.cpu : r.gpu, bytes);
    keep_max(m.compute_cpu, r.cpu);
    keep_max(m.compute_gpu, r.gpu);
  }
}

const std::pair<const char*, std::optional<std::uint64_t> Measured::*> kLines[] = {
    {"weights_gpu", &Measured::weights_gpu}, {"weights_cpu", &Measured::weights_cpu},
    {"kv_gpu", &Measured::kv_gpu},           {"kv_cpu", &Measured::kv_cpu},
    {"compute_gpu", &Measured::compute_gpu}, {"compute_cpu", &Measured::compute_cpu},
    {"adapters_gpu", &Measured::adapters_gpu}, {"adapters_cpu", &Measured::adapters_cpu},
};

}  // namespace

bool is_host_buffer(std::string_view name) {
  const bool cpu = name.substr(0, 3) == "CPU";
  const bool host = name.size() >= 5 && name.substr(name.size() - 5) == "_Host";
  return cpu || host;
}

Measured parse_log(std::string_view log) {
  static const std::regex kLoadStart(R"(load_tensors: loading model tensors)");
  static const std::regex kReserve(R"(sched_reserve: reserving)");
  static const std::regex kOffloaded(R"(load_tensors: offloaded (\d+)/(\d+) layers to GPU)");
  static const std::regex kBuffer(R"(:\s+(\S+)\s+(model|KV|compute|LoRA) buffer size =\s+([0-9.]+) MiB)");
  Measured m;
  Reserve pass;
  std::size_t pos = 0;
  while (pos < log.size()) {
    const std::size_t eol = std::min(log.find('\n', pos), log.size());
    const std::string_view view = log.substr(pos, eol - pos);
    pos = eol + 1;
    // Cheap filter first: at -lv 4 a long-running child's log is mostly request traces.
    if (view.find("load_tensors") == std::string_view::npos && view.find("buffer size") == std::string_view::npos &&
        view.find("sched_reserve") == std::string_view::npos)
      continue;
    const std::string line(view);
    std::smatch g;
    if (std::regex_search(line, kLoadStart)) {
      m = Measured{};  // a reload (sleep/resume) allocates everything again
      pass = Reserve{};
    } else if (std::regex_search(line, kReserve)) {
      pass = Reserve{};
    } else if (std::regex_search(line, g, kOffloaded)) {
      m.layers_offloaded = static_cast<std::uint32_t>(std::stoul(g[1]));
      m.layers_total = static_cast<std::uint32_t>(std::stoul(g[2]));
    } else if (std::regex_search(line, g, kBuffer)) {
      add_buffer(m, pass, g[2], g[1], mib_to_bytes(g[3]));
    }
  }
  return m;
}

std::string measurement_key(const std::string& fingerprint, const Flags& f, const std::vector<AdapterInput>& adapters) {
  std::string k = fingerprint + " " + flags_key(f);
  for (const auto& a : adapters) {  // a JSON key: a file name that is not UTF-8 goes in as {"hex":...}
    const std::string name = std::filesystem::path(a.path).filename().string();
    const auto b = bytes_to_json(name);
    k += " lora=" + (b.is_string() ? name : b.dump());
  }
  return k;
}

std::filesystem::path store_path(const std::filesystem::path& state_dir) { return state_dir / kStoreName; }

nlohmann::json measured_to_json(const Measured& m) {
  nlohmann::json j = nlohmann::json::object();
  if (m.layers_offloaded) j["layers_offloaded"] = *m.layers_offloaded;
  if (m.layers_total) j["layers_total"] = *m.layers_total;
  for (const auto& [name, member] : kLines)
    if (m.*member) j[name] = *(m.*member);
  return j;
}

static Measured measured_from_json(const nlohmann::json& j) {
  Measured m;
  if (j.contains("layers_offloaded")) m.layers_offloaded = j.at("layers_offloaded").get<std::uint32_t>();
  if (j.contains("layers_total")) m.layers_total = j.at("layers_total").get<std::uint32_t>();
  for (const auto& [name, member] : kLines)
    if (j.contains(name)) m.*member = j.at(name).get<std::uint64_t>();
  return m;
}

Result<std::map<std::string, Measured>> load_store(const std::filesystem::path& file) {
  std::map<std::string, Measured> store;
  std::ifstream in(file);
  if (!in) return store;
  try {
    const auto j = nlohmann::json::parse(in);
    for (const auto& [key, value] : j.at("measurements").items()) store[key] = measured_from_json(value);
  } catch (const nlohmann::json::exception& e) {
    return make_error(Errc::io_error, file.string() + ": not a measurement store: " + e.what(),
                      "delete the file; measurements are recorded again on the next start");
  }
  return store;
}

namespace {

// Writes `j` to `file` atomically (temp file + rename).
Status write_atomically(const std::filesystem::path& file, const nlohmann::json& j) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  return replace_file(file, dump_json(j, 2) + "\n");
}

// Writes atomically (temp file + rename).
Status save_store(const std::filesystem::path& file, const std::map<std::string, Measured>& store) {
  nlohmann::json j;
  j["version"] = 1;
  j["measurements"] = nlohmann::json::object();
  for (const auto& [key, m] : store) j["measurements"][key] = measured_to_json(m);
  return write_atomically(file, j);
}
}  // namespace

Status record_measurement(const std::filesystem::path& state_dir, const std::string& key, const Measured& m) {
  auto store = load_store(store_path(state_dir));
  if (!store) return store.error();
  (*store)[key] = m;
  return save_store(store_path(state_dir), *store);
}

std::filesystem::path load_times_path(const std::filesystem::path& state_dir) { return state_dir / kLoadTimesName; }

Result<std::map<std::string, std::vector<std::int64_t>>> load_load_times(const std::filesystem::path& file) {
  std::map<std::string, std::vector<std::int64_t>> out;
  std::ifstream in(file);
  if (!in) return out;
  try {
    const auto j = nlohmann::json::parse(in);
    for (const auto& [key, value] : j.at("load_ms").items()) out[key] = value.get<std::vector<std::int64_t>>();
  } catch (const nlohmann::json::exception& e) {
    return make_error(Errc::io_error, file.string() + ": not a load-time store: " + e.what(),
                      "delete the file; load times are recorded again on the next loads");
  }
  return out;
}

Status record_load_time(const std::filesystem::path& state_dir, const std::string& key, std::int64_t ms) {
  auto store = load_load_times(load_times_path(state_dir));
  if (!store) return store.error();
  auto& v = (*store)[key];
  v.push_back(ms);
  if (v.size() > kLoadTimesKept) v.erase(v.begin(), v.end() - static_cast<std::ptrdiff_t>(kLoadTimesKept));
  nlohmann::json j = {{"version", 1}, {"load_ms", *store}};
  return write_atomically(load_times_path(state_dir), j);
}

}  // namespace kevlaya::ledger
