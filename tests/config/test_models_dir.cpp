// models_dir discovery: which files become profiles, under which names, and what joins a base
// (plain values for discover(), real GGUF files for scan_models_dir() and load()).
#include <catch2/catch.hpp>

#include "config/models_dir.hpp"
#include "fixture.hpp"
#include "gguf/writer.hpp"
#include "support/models.hpp"

using namespace kevlaya;
using config::GgufFacts;
namespace fs = std::filesystem;

namespace {

GgufFacts base(const std::string& path, std::uint32_t n_embd = 64) {
  GgufFacts g;
  g.path = path;
  g.architecture = "llama";
  g.n_embd = n_embd;
  g.tensors = {"blk.0.attn_q.weight", "blk.0.attn_v.weight", "output.weight"};
  return g;
}

GgufFacts adapter(const std::string& path, std::vector<std::string> targets = {"blk.0.attn_q.weight"}) {
  GgufFacts g;
  g.path = path;
  g.architecture = "llama";
  g.type = "adapter";
  g.tensors = std::move(targets);
  return g;
}

GgufFacts projector(const std::string& path, std::uint32_t dim) {
  GgufFacts g;
  g.path = path;
  g.architecture = "clip";
  g.type = "mmproj";
  g.projection_dim = dim;
  return g;
}

std::vector<std::string> names(const config::Discovery& d) {
  std::vector<std::string> out;
  for (const auto& p : d.profiles) out.push_back(p.name);
  return out;
}

const config::Profile& named(const config::Discovery& d, const std::string& n) {
  for (const auto& p : d.profiles)
    if (p.name == n) return p;
  FAIL("no profile " << n);
  throw 0;
}

}  // namespace

TEST_CASE("models_dir: a profile per base model, named from its file, fitted later") {
  const auto d = config::discover({base("/m/Qwen3-4B-Q4_K_M.gguf"), base("/m/gemma 3.gguf")}, "llama-server", {});
  CHECK(names(d) == std::vector<std::string>{"Qwen3-4B-Q4_K_M", "gemma-3"});
  const auto& q = named(d, "Qwen3-4B-Q4_K_M");
  CHECK(q.discovered);
  CHECK(q.model == "/m/Qwen3-4B-Q4_K_M.gguf");
  CHECK(q.binary == "llama-server");
  CHECK(d.notes.empty());
}

TEST_CASE("models_dir: split files are one model named without the shard suffix") {
  CHECK(config::model_name_from_file("/m/big-00001-of-00003.gguf") == "big");
  CHECK(config::model_name_from_file("/m/x.y.gguf") == "x.y");
  CHECK(config::model_name_from_file("/m/__.gguf").empty());
}

TEST_CASE("models_dir: a LoRA adapter becomes a profile of its base with the adapter loaded") {
  const auto d = config::discover({base("/m/kev.gguf"), adapter("/m/kev-lora-style.gguf")}, "llama-server", {});
  REQUIRE(names(d) == std::vector<std::string>{"kev", "kev-lora-style"});
  const auto& a = named(d, "kev-lora-style");
  CHECK(a.model == "/m/kev.gguf");  // its base: they share one child (shared-base group)
  REQUIRE(a.lora.size() == 1);
  CHECK(a.lora[0].path == "/m/kev-lora-style.gguf");
  CHECK(a.lora[0].scale == 1.0);
  CHECK(named(d, "kev").lora.empty());
}

TEST_CASE("models_dir: an adapter goes to the base whose tensors it targets, else it is reported") {
  auto other = base("/m/other.gguf");
  other.tensors = {"blk.0.ffn_up.weight"};
  const auto d = config::discover({base("/m/kev.gguf"), other, adapter("/m/other-lora.gguf")}, "s", {});
  CHECK(named(d, "other-lora").model == "/m/kev.gguf");  // the name says other, the tensors say kev
  const auto lost = config::discover({other, adapter("/m/a.gguf")}, "s", {});
  CHECK(names(lost) == std::vector<std::string>{"other"});
  REQUIRE(lost.notes.size() == 1);
  CHECK(lost.notes[0].find("not attached (LoRA adapter): no model of the folder fits it") != std::string::npos);
}

TEST_CASE("models_dir: a projector is --mmproj of the base of its width, copied to that base's adapters") {
  const auto d = config::discover({base("/m/vis.gguf", 2048), base("/m/txt.gguf", 64), projector("/m/mmproj-x.gguf", 2048),
                                   adapter("/m/vis-lora.gguf")},
                                  "s", {});
  CHECK(names(d) == std::vector<std::string>{"txt", "vis", "vis-lora"});
  CHECK(named(d, "vis").extra_args == std::vector<std::string>{"--mmproj", "/m/mmproj-x.gguf"});
  CHECK(named(d, "vis-lora").extra_args == std::vector<std::string>{"--mmproj", "/m/mmproj-x.gguf"});
  CHECK(named(d, "txt").extra_args.empty());
}

TEST_CASE("models_dir: a projector that fits two bases equally is reported, not guessed") {
  const auto d = config::discover({base("/m/a.gguf"), base("/m/b.gguf"), projector("/m/mmproj.gguf", 64)}, "s", {});
  for (const auto& p : d.profiles) CHECK(p.extra_args.empty());
  REQUIRE(d.notes.size() == 1);
  CHECK(d.notes[0].find("fits several models of the folder equally well") != std::string::npos);
  // The closer file name decides when there is one.
  const auto n = config::discover({base("/m/a.gguf"), base("/m/llava.gguf"), projector("/m/llava-mmproj.gguf", 64)}, "s", {});
  CHECK(named(n, "llava").extra_args.size() == 2);
}

TEST_CASE("models_dir: name clashes serve both files (the later one's name ends in its hash), and explicit profiles win silently") {
  const auto d = config::discover({base("/m/a b.gguf"), base("/m/a-b.gguf"), base("/m/kev.gguf")}, "s", {"kev"});
  REQUIRE(d.profiles.size() == 2);
  CHECK(d.profiles[0].name == "a-b");
  CHECK(d.profiles[0].model == "/m/a b.gguf");
  CHECK(d.profiles[1].name.rfind("a-b-", 0) == 0);
  CHECK(d.profiles[1].name.size() == 3 + 1 + 8);
  CHECK(d.profiles[1].model == "/m/a-b.gguf");
  REQUIRE(d.notes.size() == 1);  // the clash is reported; the override is not a problem
  CHECK(d.notes[0].find("served as '" + d.profiles[1].name + "': its name 'a-b' is taken by") != std::string::npos);
}

TEST_CASE("models_dir: unreadable files and files without an architecture are reported") {
  GgufFacts bad;
  bad.path = "/m/bad.gguf";
  bad.error = "not a GGUF file";
  GgufFacts odd;
  odd.path = "/m/odd.gguf";
  const auto d = config::discover({bad, odd}, "s", {});
  CHECK(d.profiles.empty());
  CHECK(d.notes.size() == 2);
}

TEST_CASE("models_dir: scanning a real folder (split set, adapter, projector, a stray file)") {
  test::TempDir dir("models-dir-scan");
  const auto spec = gguf::stories_shaped_spec();
  REQUIRE(gguf::write_tiny_model(dir / "one.gguf", spec).ok());
  REQUIRE(gguf::write_tiny_model(dir / "two-00001-of-00002.gguf", spec).ok());
  test::write_text(dir / "two-00002-of-00002.gguf", "second shard");  // not read: the first names the model
  REQUIRE(gguf::write_tiny_model(dir / "three-00001-of-00002.gguf", spec).ok());  // its shard 2 is missing
  REQUIRE(gguf::write_tiny_lora(dir / "one-lora.gguf", spec, gguf::TinyLoraSpec{}).ok());
  test::write_projector(dir / "mmproj-one.gguf", spec.n_embd);
  test::write_text(dir / "notes.txt", "not a model");
  const auto facts = config::scan_models_dir(dir.path());
  const auto d = config::discover(facts, "srv", {});
  CHECK(names(d) == std::vector<std::string>{"one", "one-lora", "two"});
  CHECK(named(d, "two").model == dir / "two-00001-of-00002.gguf");
  CHECK(named(d, "one-lora").lora.size() == 1);
  // Both bases have the projector's width; its file name names one.
  const std::vector<std::string> mmproj{"--mmproj", (dir / "mmproj-one.gguf").string()};
  CHECK(named(d, "one").extra_args == mmproj);
  CHECK(named(d, "one-lora").extra_args == mmproj);
  CHECK(named(d, "two").extra_args.empty());
  REQUIRE(d.notes.size() == 1);
  CHECK(d.notes[0].find("three-00001-of-00002.gguf: not served: split model: shard 00002 of 00002 is missing") !=
        std::string::npos);
}

TEST_CASE("models_dir: load() adds the folder's models to the explicit profiles, which override") {
  test::TempDir dir("models-dir-load");
  std::filesystem::create_directories(dir / "models");
  REQUIRE(gguf::write_tiny_model(dir / "models/kev.gguf", gguf::stories_shaped_spec()).ok());
  REQUIRE(gguf::write_tiny_model(dir / "models/laya.gguf", gguf::stories_shaped_spec()).ok());
  test::write_text(dir / "kevlaya.yaml", "models_dir: models\nmodels_binary: /opt/llama-server\n");
  test::write_text(dir / "profiles/laya.yaml", "model: ../models/laya.gguf\nctx: 512\n");
  const auto r = config::load(dir / "kevlaya.yaml");
  INFO(test::dump(r));
  REQUIRE(r.ok());
  CHECK(r.diagnostics.empty());
  REQUIRE(r.config.profiles.size() == 2);
  const auto* kev = r.config.find_profile("kev");
  REQUIRE(kev);
  CHECK(kev->discovered);
  CHECK(kev->binary == "/opt/llama-server");
  const auto* laya = r.config.find_profile("laya");
  CHECK_FALSE(laya->discovered);  // the explicit profile, not the folder's
  CHECK(laya->ctx == 512);
}

TEST_CASE("models_dir: with --models-dir and no configuration file, zero YAML loads") {
  test::TempDir dir("models-dir-cli");
  REQUIRE(gguf::write_tiny_model(dir / "a.gguf", gguf::stories_shaped_spec()).ok());
  const auto r = config::load(config::Source{"", dir.path()});
  INFO(test::dump(r));
  CHECK(r.ok());
  CHECK(r.diagnostics.empty());  // no "profiles directory not found" / "no profiles" complaint
  REQUIRE(r.config.profiles.size() == 1);
  CHECK(r.config.profiles[0].name == "a");
  const auto missing = config::load(config::Source{"", dir / "nope"});
  CHECK_FALSE(missing.ok());
  CHECK(test::dump(missing).find("--models-dir: error: models_dir not found") != std::string::npos);
}
