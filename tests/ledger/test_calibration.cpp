// Calibration: llama-server log lines -> Measured, the measurement store, fingerprints.
#include <catch2/catch.hpp>

#include "common/hash.hpp"

#include "fixtures.hpp"
#include "ledger/calibration.hpp"
#include "support/paths.hpp"

using namespace kevlaya;
using namespace kevlaya::ledger;

namespace {
std::uint64_t mib(double v) { return static_cast<std::uint64_t>(v * static_cast<double>(kMiB) + 0.5); }

// Lines as llama.cpp b10470 prints them on a CUDA build with a partial offload (format strings of
// load_tensors, llama_kv_cache, sched_reserve and llama_adapter_lora_init_impl).
constexpr const char* kCudaLog =
    "0.00.011.866 I load_tensors: loading model tensors, this can take a while... (load_mode = mmap)\n"
    "0.00.012.000 I load_tensors: offloading output layer to GPU\n"
    "0.00.012.001 I load_tensors: offloading 27 repeating layers to GPU\n"
    "0.00.012.002 I load_tensors: offloaded 28/33 layers to GPU\n"
    "0.00.013.300 I load_tensors:   CPU_Mapped model buffer size =   612.25 MiB\n"
    "0.00.013.301 I load_tensors:        CUDA0 model buffer size =  3376.50 MiB\n"
    "0.00.013.550 I llama_context:  CUDA_Host  output buffer size =     0.12 MiB\n"
    "0.00.013.587 I llama_kv_cache:      CUDA0 KV buffer size =   224.00 MiB\n"
    "0.00.013.588 I llama_kv_cache:        CPU KV buffer size =    32.00 MiB\n"
    "0.00.013.600 I llama_adapter_lora_init_impl:      CUDA0 LoRA buffer size =    20.00 MiB\n"
    "0.00.015.909 I sched_reserve:      CUDA0 compute buffer size =   164.01 MiB\n"
    "0.00.015.910 I sched_reserve:  CUDA_Host compute buffer size =    12.01 MiB\n";
}  // namespace

TEST_CASE("parse_log sums CUDA and host buffers separately") {
  const auto m = parse_log(kCudaLog);
  CHECK(m.layers_offloaded == 28u);
  CHECK(m.layers_total == 33u);
  CHECK(m.weights_gpu == mib(3376.50));
  CHECK(m.weights_cpu == mib(612.25));
  CHECK(m.kv_gpu == mib(224.0));
  CHECK(m.kv_cpu == mib(32.0));
  CHECK(m.compute_gpu == mib(164.01));
  CHECK(m.compute_cpu == mib(12.01));
  CHECK(m.adapters_gpu == mib(20.0));
  CHECK_FALSE(m.adapters_cpu);
}

TEST_CASE("parse_log reads a real llama-server b10470 CPU log of stories260K") {
  const auto text = test::read_text(test::source_dir() / "tests/data/ledger/stories260k-cpu-c2048-np2.log");
  const auto m = parse_log(text);
  CHECK(m.weights_cpu == mib(1.12));
  CHECK(m.kv_cpu == mib(1.25));
  CHECK(m.compute_cpu == mib(2.52));
  CHECK_FALSE(m.weights_gpu);
  CHECK_FALSE(m.layers_offloaded);  // a CPU build prints no offload line
  // the ledger's own figure for the same run: 5 layers x 2048 cells x 64 x 2 x 2 bytes
  Flags f;
  f.ctx = 2048;
  f.parallel = 2;
  f.ngl = 0;
  CHECK(estimate(test::stories260k_info(), false, f, {}, 0).kv_cpu == 1310720);
}

TEST_CASE("parse_log starts over when the model is loaded again") {
  const std::string twice = std::string(kCudaLog) + kCudaLog;
  CHECK(parse_log(twice).weights_gpu == mib(3376.50));
}

TEST_CASE("parse_log of an unrelated log is empty") {
  CHECK(parse_log("srv  llama_server: listening on http://127.0.0.1:8080\n").empty());
  CHECK(parse_log("").empty());
}

TEST_CASE("host buffer names") {
  CHECK(is_host_buffer("CPU"));
  CHECK(is_host_buffer("CPU_Mapped"));
  CHECK(is_host_buffer("CPU_REPACK"));
  CHECK(is_host_buffer("CUDA_Host"));
  CHECK_FALSE(is_host_buffer("CUDA0"));
  CHECK_FALSE(is_host_buffer("Vulkan0"));
}

TEST_CASE("measurement store round-trips and replaces by key") {
  test::TempDir dir("ledger-store");
  const auto m = parse_log(kCudaLog);
  REQUIRE(record_measurement(dir.path(), "k1", m).ok());
  Measured other;
  other.compute_gpu = 7;
  REQUIRE(record_measurement(dir.path(), "k2", other).ok());
  REQUIRE(record_measurement(dir.path(), "k2", m).ok());
  auto store = load_store(store_path(dir.path()));
  REQUIRE(store.ok());
  REQUIRE(store->size() == 2);
  CHECK(store->at("k1").compute_gpu == m.compute_gpu);
  CHECK(store->at("k1").layers_offloaded == 28u);
  CHECK(store->at("k2").weights_cpu == m.weights_cpu);
}

TEST_CASE("measurement store: missing file is empty, corrupt file is an error") {
  test::TempDir dir("ledger-store-bad");
  auto missing = load_store(store_path(dir.path()));
  REQUIRE(missing.ok());
  CHECK(missing->empty());
  test::write_text(store_path(dir.path()), "{not json");
  const auto bad = load_store(store_path(dir.path()));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("ledger-measurements.json") != std::string::npos);
}

TEST_CASE("load-time store keeps the last loads per key, oldest first, beside the measurements") {
  test::TempDir dir("ledger-load-times");
  for (std::int64_t ms = 1; ms <= 7; ++ms) REQUIRE(record_load_time(dir.path(), "k1", ms * 100).ok());
  REQUIRE(record_load_time(dir.path(), "k2", 42).ok());
  const auto store = load_load_times(load_times_path(dir.path()));
  REQUIRE(store.ok());
  CHECK(store->at("k1") == std::vector<std::int64_t>{300, 400, 500, 600, 700});  // kLoadTimesKept = 5
  CHECK(store->at("k2") == std::vector<std::int64_t>{42});
  CHECK(load_times_path(dir.path()).parent_path() == store_path(dir.path()).parent_path());
  test::write_text(load_times_path(dir.path()), "{not json");
  const auto bad = load_load_times(load_times_path(dir.path()));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("ledger-load-times.json") != std::string::npos);
}

TEST_CASE("fingerprint changes with content and keys include the flags") {
  test::TempDir dir("ledger-fp");
  test::write_text(dir / "a.gguf", std::string(3 * kMiB, 'a'));
  test::write_text(dir / "b.gguf", std::string(3 * kMiB, 'a') + "b");
  auto a = file_fingerprint(dir / "a.gguf");
  auto b = file_fingerprint(dir / "b.gguf");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a != *b);
  CHECK(a->size() == 16);
  CHECK(file_fingerprint(dir / "a.gguf").value() == *a);
  CHECK_FALSE(file_fingerprint(dir / "missing.gguf").ok());
  Flags f1, f2;
  f2.ctx = 4096;
  CHECK(measurement_key(*a, f1, {}) != measurement_key(*a, f2, {}));
}

TEST_CASE("parse_log keeps the largest compute reservation, not the sum of re-reservations") {
  // llama-server reserves the graph again when a request changes it (e.g. other LoRA scales).
  const std::string log =
      "0.00.036.791 I load_tensors: loading model tensors, this can take a while... (load_mode = mmap)\n"
      "0.00.037.758 I load_tensors:   CPU_Mapped model buffer size =     1.32 MiB\n"
      "0.00.039.552 I sched_reserve: reserving ...\n"
      "0.00.046.201 I sched_reserve:        CPU compute buffer size =     1.26 MiB\n"
      "0.04.798.275 I sched_reserve: reserving ...\n"
      "0.04.799.353 I sched_reserve:        CPU compute buffer size =     1.38 MiB\n"
      "0.05.229.594 I sched_reserve: reserving ...\n"
      "0.05.229.600 I sched_reserve:        CPU compute buffer size =     1.26 MiB\n";
  const auto m = parse_log(log);
  CHECK(m.compute_cpu == mib(1.38));
  CHECK(m.weights_cpu == mib(1.32));
}
