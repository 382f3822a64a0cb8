// Slot-file keys, names and the size cap; next-profile prediction. Pure file-system tests.
#include <catch2/catch.hpp>

#include "common/hash.hpp"

#include <fstream>

#include "support/paths.hpp"
#include "warm/predict.hpp"
#include "warm/slot_cache.hpp"

using namespace kevlaya;
using kevlaya::test::TempDir;
namespace fs = std::filesystem;

namespace {

void write_bytes(const fs::path& p, std::size_t n, char c = 'x') {
  std::ofstream(p, std::ios::binary) << std::string(n, c);
}

config::Profile profile_on(const fs::path& model) {
  config::Profile p;
  p.name = "kev";
  p.model = model;
  p.ctx = 2048;
  return p;
}

}  // namespace

TEST_CASE("slot key changes with model bytes, ctx, slots, cache types and LoRA set", "[warm]") {
  TempDir dir("warm-key");
  write_bytes(dir / "m.gguf", 3 << 20);
  write_bytes(dir / "a.gguf", 1000);
  auto p = profile_on(dir / "m.gguf");
  auto base = warm::slot_key(p);
  REQUIRE(base.ok());
  CHECK(base->size() == 16);
  CHECK(warm::slot_key(p).value() == *base);  // stable
  auto q = p;
  q.ctx = 4096;
  CHECK(warm::slot_key(q).value() != *base);
  q = p;
  q.parallel = 2;
  CHECK(warm::slot_key(q).value() != *base);
  q = p;
  q.cache_type_k = "q8_0";
  CHECK(warm::slot_key(q).value() != *base);
  q = p;
  q.lora.push_back({"a", dir / "a.gguf", 1.0});
  CHECK(warm::slot_key(q).value() != *base);
  auto q2 = q;
  q2.lora[0].scale = 0.5;
  CHECK(warm::slot_key(q2).value() != warm::slot_key(q).value());
  // Same size, other last MiB: another model.
  write_bytes(dir / "m2.gguf", 3 << 20);
  { std::fstream f(dir / "m2.gguf", std::ios::in | std::ios::out | std::ios::binary); f.seekp((3 << 20) - 10); f << "Z"; }
  auto fp1 = kevlaya::file_fingerprint(dir / "m.gguf"), fp2 = kevlaya::file_fingerprint(dir / "m2.gguf");
  REQUIRE(fp1.ok());
  REQUIRE(fp2.ok());
  CHECK(*fp1 != *fp2);
}

// Issue 35: the key follows what the child runs. Before, a KV cache type set in extra_args or env
// kept the key (slots saved as f16 would be restored into a q8_0 cache), and `ctx` moved into
// extra_args changed it.
TEST_CASE("slot key follows the child's argv and environment, however a flag is written", "[warm]") {
  TempDir dir("warm-key-argv");
  write_bytes(dir / "m.gguf", 3 << 20);
  auto p = profile_on(dir / "m.gguf");
  const auto base = warm::slot_key(p).value();
  auto q = p;
  q.extra_args = {"-ctk", "q8_0"};
  CHECK(warm::slot_key(q).value() != base);
  q = p;
  q.env["LLAMA_ARG_CACHE_TYPE_K"] = "q8_0";
  CHECK(warm::slot_key(q).value() != base);
  q = p;
  q.ctx = 8192;
  auto moved = p;
  moved.extra_args = {"-c", "8192"};  // the child reads the last -c: the same KV shape
  CHECK(warm::slot_key(moved).value() == warm::slot_key(q).value());
}

TEST_CASE("slot key of a missing model is an error", "[warm]") {
  auto k = warm::slot_key(profile_on("/nonexistent/kevlaya.gguf"));
  REQUIRE_FALSE(k.ok());
  CHECK(k.error().code == Errc::io_error);
}

TEST_CASE("slot file names and folders are never paths", "[warm]") {
  CHECK(warm::safe_file_name(warm::slot_file_name("0123456789abcdef", 3)));
  CHECK(warm::slot_file_name("0123456789abcdef", 3) == "0123456789abcdef-slot3.bin");
  CHECK_FALSE(warm::safe_file_name("../x.bin"));
  CHECK_FALSE(warm::safe_file_name("a/b.bin"));
  CHECK_FALSE(warm::safe_file_name(".."));
  CHECK_FALSE(warm::safe_file_name(".hidden"));
  CHECK_FALSE(warm::safe_file_name(""));
  CHECK_FALSE(warm::safe_file_name(std::string(201, 'a')));
  CHECK(warm::slot_dir("/s", "kev") == fs::path("/s/slots/kev"));
  CHECK(warm::slot_dir("/s", "kev+laya") == fs::path("/s/slots/kev_laya"));
  CHECK(warm::slot_dir("/s", "../../etc") == fs::path("/s/slots/_.._.._etc"));
  CHECK(warm::slot_dir("/s", "..") == fs::path("/s/slots/_.."));
}

TEST_CASE("enforce_cap evicts the oldest slot files first", "[warm]") {
  TempDir dir("warm-cap");
  const auto now = fs::file_time_type::clock::now();
  const char* names[] = {"old.bin", "mid.bin", "new.bin"};
  for (int i = 0; i < 3; ++i) {
    write_bytes(dir / names[i], 1000);
    fs::last_write_time(dir / names[i], now - std::chrono::hours(3 - i));
  }
  write_bytes(dir / "other.txt", 5000);  // not a slot file: neither counted nor removed
  CHECK(warm::enforce_cap(dir.path(), 3000) == 0);
  CHECK(warm::enforce_cap(dir.path(), 2500) == 1);
  CHECK_FALSE(fs::exists(dir / "old.bin"));
  CHECK(fs::exists(dir / "mid.bin"));
  CHECK(warm::enforce_cap(dir.path(), 0) == 2);
  CHECK(fs::exists(dir / "other.txt"));
  CHECK(warm::enforce_cap(dir / "missing", 0) == 0);
}

TEST_CASE("likely_next follows pipeline stages, then the previous profile", "[warm]") {
  config::Config cfg;
  for (const char* n : {"kev", "laya", "third"}) {
    config::Profile p;
    p.name = n;
    p.model = std::string("/m/") + n + ".gguf";
    if (std::string(n) == "laya") p.alias = {"verifier"};
    cfg.profiles.push_back(p);
  }
  config::Pipeline pl;
  pl.name = "dv";
  pl.stages.resize(2);
  pl.stages[0].model = "kev";
  pl.stages[1].model = "verifier";  // an alias resolves to its profile
  cfg.pipelines.push_back(pl);
  CHECK(warm::likely_next(cfg, "kev", "") == std::vector<std::string>{"laya"});
  CHECK(warm::likely_next(cfg, "laya", "") == std::vector<std::string>{"kev"});  // next round's decide
  CHECK(warm::likely_next(cfg, "laya", "third") == std::vector<std::string>{"kev", "third"});
  CHECK(warm::likely_next(cfg, "third", "kev") == std::vector<std::string>{"kev"});
  CHECK(warm::likely_next(cfg, "third", "unknown").empty());
  CHECK(warm::profile_files(cfg.profiles[0]) == std::vector<fs::path>{"/m/kev.gguf"});
}
