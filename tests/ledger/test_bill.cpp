// The per-child bill against hand-computed values (llama.cpp b10470 rules, docs/ledger.md).
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "ledger/ledger.hpp"

using namespace kevlaya;
using namespace kevlaya::ledger;
using kevlaya::test::q4ks_3b_info;
using kevlaya::test::q4ks_7b_info;
using kevlaya::test::stories260k_info;

namespace {
constexpr std::uint64_t kStoriesLayer = 181760;  // 4 * (4096 + 2048 + 2048 + 4096 + 3 * 11008 + 128)
constexpr std::uint64_t kStoriesEmbd = 131072;   // 4 * 64 * 512
constexpr std::uint64_t kStoriesOutput = 131328; // output.weight + output_norm

Flags with_ctx(int ctx, int parallel = 1) {
  Flags f;
  f.ctx = ctx;
  f.parallel = parallel;
  return f;
}
}  // namespace

TEST_CASE("offload_split counts the output layer as the first offloaded layer") {
  // i_gpu_start = max(n_layer + 1 - ngl, 0): ngl 1 is the output layer alone.
  CHECK(offload_split(32, 0).repeating_gpu == 0);
  CHECK_FALSE(offload_split(32, 0).output_gpu);
  CHECK(offload_split(32, 1).repeating_gpu == 0);
  CHECK(offload_split(32, 1).output_gpu);
  CHECK(offload_split(32, 32).repeating_gpu == 31);
  CHECK(offload_split(32, 32).reported == 32);
  CHECK(offload_split(32, 33).repeating_gpu == 32);
  CHECK(offload_split(32, 99).repeating_gpu == 32);
  CHECK(offload_split(32, 99).reported == 33);
  CHECK(offload_split(32, -1).repeating_gpu == 32);
  CHECK(offload_split(32, -1).output_gpu);
}

TEST_CASE("kv_shape pads to 256 and splits the context across slots") {
  CHECK(kv_shape(2048, 1, false).kv_size == 2048);
  CHECK(kv_shape(1000, 1, false).n_ctx == 1024);
  const auto four = kv_shape(2048, 4, false);
  CHECK(four.n_ctx_seq == 512);
  CHECK(four.n_stream == 4);
  CHECK(four.n_ctx == 2048);
  // 2048 / 3 = 682 -> padded to 768 per slot -> 2304 cells in all (llama_context rounds up)
  const auto three = kv_shape(2048, 3, false);
  CHECK(three.n_ctx_seq == 768);
  CHECK(three.n_ctx == 2304);
  const auto unified = kv_shape(2048, 3, true);
  CHECK(unified.n_stream == 1);
  CHECK(unified.kv_size == 2048);
}

TEST_CASE("stories260K bill, every layer offloaded") {
  const auto b = estimate(stories260k_info(), false, with_ctx(2048), {}, 450 * kMiB);
  CHECK(b.weights_gpu == 5 * kStoriesLayer + kStoriesOutput);
  CHECK(b.weights_cpu == kStoriesEmbd);
  // 5 layers x 2048 cells x (4 heads x 8 dims) x 2 bytes x (K + V) = 1.25 MiB, as llama-server logs
  CHECK(b.kv_gpu == 5 * 2048 * 32 * 2 * 2);
  CHECK(b.kv_gpu == 1310720);
  CHECK(b.kv_cpu == 0);
  CHECK(b.overhead_gpu == 450 * kMiB);
  CHECK(b.total_gpu() == b.weights_gpu + b.kv_gpu + b.compute_gpu + b.overhead_gpu);
}

TEST_CASE("stories260K bill with ngl 3 puts the output layer and the last two blocks on the GPU") {
  Flags f = with_ctx(2048);
  f.ngl = 3;
  const auto b = estimate(stories260k_info(), false, f, {}, 0);
  CHECK(b.weights_gpu == 2 * kStoriesLayer + kStoriesOutput);
  CHECK(b.weights_cpu == 3 * kStoriesLayer + kStoriesEmbd);
  CHECK(b.kv_gpu == 2 * 262144);
  CHECK(b.kv_cpu == 3 * 262144);
}

TEST_CASE("stories260K bill with ngl 0 keeps every weight on the CPU") {
  Flags f = with_ctx(2048);
  f.ngl = 0;
  const auto b = estimate(stories260k_info(), false, f, {}, 0);
  CHECK(b.weights_gpu == 0);
  CHECK(b.kv_gpu == 0);
  CHECK(b.weights_cpu == stories260k_info().tensor_bytes);
}

TEST_CASE("quantized KV cache types use ggml row sizes (q8_0 34/32, q4_0 18/32)") {
  Flags f = with_ctx(2048);
  f.cache_type_k = "q8_0";
  CHECK(estimate(stories260k_info(), false, f, {}, 0).kv_gpu == 5 * 2048 * (34 + 64));
  f.cache_type_v = "q4_0";
  CHECK(estimate(stories260k_info(), false, f, {}, 0).kv_gpu == 5 * 2048 * (34 + 18));
  const auto b7 = estimate(q4ks_7b_info(), false, f, {}, 0);
  CHECK(b7.kv_gpu == 32ULL * 2048 * (1024 * 34 / 32 + 1024 * 18 / 32));
}

TEST_CASE("7B Q4_K_S f16 KV cache is exactly 256 MiB at -c 2048 and 1024 MiB at -c 8192") {
  Flags f = with_ctx(2048);
  f.ngl = 33;
  CHECK(estimate(q4ks_7b_info(), false, f, {}, 0).kv_gpu == 256 * kMiB);
  f.ctx = 8192;
  CHECK(estimate(q4ks_7b_info(), false, f, {}, 0).kv_gpu == 1024 * kMiB);
}

TEST_CASE("7B with -ngl 32 leaves block 0 and its KV on the CPU") {
  Flags f = with_ctx(2048);
  f.ngl = 32;
  const auto m = q4ks_7b_info();
  const auto b = estimate(m, false, f, {}, 0);
  CHECK(b.weights_gpu == 31 * m.layer_bytes[0] + m.output_bytes);
  CHECK(b.kv_gpu == 248 * kMiB);
  CHECK(b.kv_cpu == 8 * kMiB);
}

TEST_CASE("parallel slots: KV covers the padded per-slot context times the slots") {
  Flags f = with_ctx(2048, 4);
  CHECK(estimate(q4ks_7b_info(), false, f, {}, 0).kv_gpu == 256 * kMiB);
  f.parallel = 3;  // 3 x 768 cells
  CHECK(estimate(q4ks_7b_info(), false, f, {}, 0).kv_gpu == 288 * kMiB);
  f.kv_unified = true;
  CHECK(estimate(q4ks_7b_info(), false, f, {}, 0).kv_gpu == 256 * kMiB);
}

TEST_CASE("3B with a tied output puts a copy of token_embd on the GPU") {
  const auto m = q4ks_3b_info();
  Flags f = with_ctx(4096);
  const auto tied = estimate(m, true, f, {}, 0);
  const auto untied = estimate(m, false, f, {}, 0);
  CHECK(tied.weights_gpu == untied.weights_gpu + m.token_embd_bytes);
  CHECK(tied.weights_cpu == untied.weights_cpu);
  CHECK(tied.kv_gpu == 28ULL * 4096 * 2 * 1024 * 2);  // 448 MiB
  CHECK(tied.kv_gpu == 448 * kMiB);
}

TEST_CASE("compute estimate is the widest phase of the reserved prompt graph") {
  const auto m = stories260k_info();
  Flags f = with_ctx(2048);
  const auto kv = kv_shape(2048, 1, false);
  // flash attention: f16 mask 2 x 512 x 2048 + 6 f32 activations of 512 x 64
  CHECK(compute_estimate(m, f, kv) == 2 * 512 * 2048 + 4 * 512 * 6 * 64);
  f.flash_attn = false;
  // scores + f32 mask: 4 x 512 x 2048 x (8 + 1) + 4 activations; llama-server CPU measured 36.76 MiB
  CHECK(compute_estimate(m, f, kv) == 4ULL * 512 * 2048 * 9 + 4 * 512 * 4 * 64);
  const double mib = static_cast<double>(compute_estimate(m, f, kv)) / static_cast<double>(kMiB);
  CHECK(mib == Approx(36.76).epsilon(0.02));
}

TEST_CASE("compute estimate shrinks the ubatch to a short context") {
  const auto m = stories260k_info();
  Flags f = with_ctx(256);
  f.flash_attn = false;
  const auto kv = kv_shape(256, 1, false);
  CHECK(compute_estimate(m, f, kv) == 4ULL * 256 * 256 * 9 + 4 * 256 * 4 * 64);
}

TEST_CASE("adapters add their tensor bytes to the GPU bill") {
  const std::vector<AdapterInput> ads{{"a", "/a.gguf", 3 * kMiB, 1.0}, {"b", "/b.gguf", 5 * kMiB, 0.5}};
  const auto b = estimate(stories260k_info(), false, with_ctx(2048), ads, 0);
  CHECK(b.adapters_gpu == 8 * kMiB);
}

TEST_CASE("measured lines replace the estimate's") {
  const auto est = estimate(q4ks_7b_info(), false, with_ctx(2048), {}, 450 * kMiB);
  Measured m;
  m.compute_gpu = 164 * kMiB;
  m.kv_gpu = 256 * kMiB;
  const auto eff = apply_measured(est, m);
  CHECK(eff.compute_gpu == 164 * kMiB);
  CHECK(eff.kv_gpu == 256 * kMiB);
  CHECK(eff.weights_gpu == est.weights_gpu);
  CHECK(eff.overhead_gpu == est.overhead_gpu);
}

TEST_CASE("flags_from_profile maps profile fields and extra_args") {
  config::Profile p;
  p.ngl = 20;
  p.ctx = 4096;
  p.parallel = 2;
  p.cache_type_k = "q8_0";
  p.flash_attn = false;
  p.extra_args = {"-ub", "256", "--kv-unified"};
  const auto f = flags_from_profile(p);
  CHECK(f.ngl == 20);
  CHECK(f.ctx == 4096);
  CHECK(f.parallel == 2);
  CHECK(f.cache_type_k == "q8_0");
  CHECK(f.cache_type_v == "f16");
  CHECK_FALSE(f.flash_attn);
  CHECK(f.n_ubatch == 256);
  CHECK(f.kv_unified);
  p.parallel = -1;  // auto: 4 slots, unified (tools/server/server.cpp)
  CHECK(flags_from_profile(p).parallel == 4);
  CHECK(flags_key(f) != flags_key(flags_from_profile(p)));
}

// The child runs with the last value of a flag, extra_args coming after the profile's keys: the
// ledger prices that (`extra_args: [-c, 8192]` was priced at the profile's ctx).
TEST_CASE("flags_from_profile prices extra_args that repeat a profile flag as the child runs them") {
  config::Profile p;
  p.ngl = 20;
  p.ctx = 2048;
  p.parallel = 1;
  p.extra_args = {"-c", "8192", "--n-gpu-layers", "all", "--parallel=3", "-ctv", "q4_0", "-b", "512"};
  const auto f = flags_from_profile(p);
  CHECK(f.ctx == 8192);
  CHECK(f.ngl == -1);
  CHECK(f.parallel == 3);
  CHECK(f.cache_type_v == "q4_0");
  CHECK(f.n_batch == 512);
  p.extra_args = {"--ctx-size", "1024", "-c", "4096"};  // the last one wins
  CHECK(flags_from_profile(p).ctx == 4096);
  p.backend = config::Backend::command;  // not llama-server: its argv is not read as llama-server's
  p.command = {"/bin/server", "-c", "999"};
  CHECK(flags_from_profile(p).ctx == 2048);
}
