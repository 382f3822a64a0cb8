// config::fingerprint and config::child_key (issue 35): one derivation of what reaches a child, from
// its argv and environment, that reload, shared-base grouping and the slot cache all compare.
#include <catch2/catch.hpp>

#include "config/fingerprint.hpp"
#include "config/fixture.hpp"

using namespace kevlaya::test;
using cfg::FingerprintScope;

namespace {

cfg::Profile fp_kev() {
  cfg::Profile p;
  p.name = "kev";
  p.model = "/models/kev-7b.Q4_K_S.gguf";
  p.ngl = 32;
  p.ctx = 8192;
  return p;
}

}  // namespace

TEST_CASE("fingerprint: a flag written in extra_args runs as the profile key does", "[config]") {
  auto moved = fp_kev();
  moved.ctx = 2048;
  moved.extra_args = {"-c", "8192"};  // the child reads the last -c
  CHECK(cfg::fingerprint(moved) == cfg::fingerprint(fp_kev()));
  CHECK(cfg::child_key(moved) == cfg::child_key(fp_kev()));
  moved.extra_args = {"--ctx-size=8192", "-lv", "4"};  // another spelling; the default verbosity
  CHECK(cfg::fingerprint(moved) == cfg::fingerprint(fp_kev()));
  auto batch = fp_kev();
  batch.batch = 512;
  auto batch_extra = fp_kev();
  batch_extra.extra_args = {"--batch-size", "512"};  // where in the argv a flag stands does not matter
  CHECK(cfg::fingerprint(batch) == cfg::fingerprint(batch_extra));
}

TEST_CASE("fingerprint: every flag and variable that reaches the child changes it", "[config]") {
  const auto base = cfg::fingerprint(fp_kev());
  auto p = fp_kev();
  p.extra_args = {"-ctk", "q8_0"};
  CHECK(cfg::fingerprint(p) != base);
  p.extra_args = {"--temp", "0.5"};  // unknown to the flag table: kept as written
  CHECK(cfg::fingerprint(p) != base);
  p = fp_kev();
  p.env["LLAMA_ARG_CACHE_TYPE_K"] = "q8_0";
  CHECK(cfg::fingerprint(p) != base);
  p = fp_kev();
  p.placement.devices = {1};
  p.placement.visible = "1";
  CHECK(cfg::fingerprint(p) != base);  // CUDA_VISIBLE_DEVICES
  CHECK(cfg::fingerprint(p, FingerprintScope::base) == cfg::fingerprint(fp_kev(), FingerprintScope::base));
  p = fp_kev();
  p.binary = "/opt/llama-server";
  CHECK(cfg::fingerprint(p) != base);
}

TEST_CASE("fingerprint: the base scope leaves out each member's LoRA and name, the child scope does not", "[config]") {
  auto a = fp_kev();
  a.lora = {{"a", "/l/a.gguf", 1.0}};
  a.alias = {"kev-a"};
  auto b = fp_kev();
  b.name = "laya";
  b.lora = {{"b", "/l/b.gguf", 0.5}};
  CHECK(cfg::fingerprint(a, FingerprintScope::base) == cfg::fingerprint(b, FingerprintScope::base));
  CHECK(cfg::fingerprint(a) != cfg::fingerprint(b));
  auto other = b;
  other.extra_args = {"-ngl", "8"};
  CHECK(cfg::fingerprint(other, FingerprintScope::base) != cfg::fingerprint(a, FingerprintScope::base));
}

TEST_CASE("child key: idle, pin, eviction and aliases keep the child, start and stop settings do not", "[config]") {
  const auto key = cfg::child_key(fp_kev());
  auto p = fp_kev();
  p.idle_unload_s = 5;
  p.pin = true;
  p.alias = {"k", "decider"};
  p.evict.protect = true;
  p.shared_base = false;
  CHECK(cfg::child_key(p) == key);
  p = fp_kev();
  p.port = 8101;
  CHECK(cfg::child_key(p) != key);
  p = fp_kev();
  p.health.startup_timeout_s += 1;
  CHECK(cfg::child_key(p) != key);
  p = fp_kev();
  p.stop.grace_s = 1;
  CHECK(cfg::child_key(p) != key);
  p = fp_kev();
  p.slot_cache.enabled = true;
  CHECK(cfg::child_key(p) != key);
  p = fp_kev();
  p.name = "kev2";  // --alias
  CHECK(cfg::child_key(p) != key);
}

TEST_CASE("child key: a command backend's template and a remote's URL are compared as written", "[config]") {
  cfg::Profile c;
  c.name = "cmd";
  c.backend = cfg::Backend::command;
  c.command = {"/bin/server", "--port", "{port}", "-c", "1"};
  auto d = c;
  d.command = {"/bin/server", "--port", "{port}", "-c", "2"};
  CHECK(cfg::fingerprint(c) != cfg::fingerprint(d));
  CHECK(cfg::fingerprint(c).find("--port PORT") != std::string::npos);
  cfg::Profile r;
  r.name = "far";
  r.backend = cfg::Backend::remote;
  r.url = "http://a:1";
  auto s = r;
  s.url = "http://b:1";
  CHECK(cfg::child_key(r) != cfg::child_key(s));
  s = r;
  s.alias = {"other"};
  CHECK(cfg::child_key(r) == cfg::child_key(s));
}
