// Load progress read from a starting llama-server's log (lines as b10470 prints them at -lv 4).
#include <catch2/catch.hpp>

#include "supervisor/load_progress.hpp"

using kevlaya::supervisor::parse_load_progress;

TEST_CASE("load progress: nothing logged yet is 'starting'") {
  const auto p = parse_load_progress("");
  CHECK(p.stage == "starting");
  CHECK_FALSE(p.pct);
}

TEST_CASE("load progress: the last stage reached wins, in load order") {
  const std::string log =
      "2026-01-01T00:00:00.000 [kev] 0.00.064.272 I srv    load_model: loading model '/m/kev.gguf'\n"
      "2026-01-01T00:00:00.001 [kev] 0.00.076.788 I llama_model_loader: loaded meta data with 20 key-value pairs\n"
      "2026-01-01T00:00:00.002 [kev] 0.00.077.037 I load_tensors: loading model tensors, this can take a while... (load_mode = mmap)\n";
  auto p = parse_load_progress(log);
  CHECK(p.stage == "loading tensors");
  CHECK_FALSE(p.pct);  // "this can take a while..." is not a progress line
  p = parse_load_progress(log + "2026-01-01T00:00:00.003 [kev] 0.00.095.348 I llama_context: constructing llama_context\n");
  CHECK(p.stage == "creating context");
  p = parse_load_progress(log + "x I cmn  common_init_: warming up the model with an empty run - please wait ...\n");
  CHECK(p.stage == "warming up");
  p = parse_load_progress(log + "x I srv    load_model: initializing, n_slots = 4, n_ctx_slot = 256\n");
  CHECK(p.stage == "initializing slots");
}

TEST_CASE("load progress: offloaded layers and progress dots while tensors load") {
  const std::string log =
      "[kev] I load_tensors: loading model tensors, this can take a while... (load_mode = mmap)\n"
      "[kev] I load_tensors: offloading 32 repeating layers to GPU\n"
      "[kev] I load_tensors: offloaded 33/33 layers to GPU\n"
      "[kev] ..........................................\n";
  const auto p = parse_load_progress(log);
  CHECK(p.stage == "loading tensors (33/33 layers on GPU)");
  REQUIRE(p.pct);
  CHECK(*p.pct == 42);
}

TEST_CASE("load progress: dots that continue a log line count too") {
  const auto p = parse_load_progress(
      "I load_tensors: loading model tensors, this can take a while... (load_mode = mmap)\n"
      "I load_tensors:        CUDA0 model buffer size =  3200.00 MiB..........\n");
  REQUIRE(p.pct);
  CHECK(*p.pct == 10);
}
