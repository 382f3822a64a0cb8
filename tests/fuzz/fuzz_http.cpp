// libFuzzer entry for the front door's request handling without a network. Two modes:
//  - raw (any input not starting with '#'): the bytes are requests, parsed with the door's limits and framing rules
//    (parse_request.hpp: http/framing.cpp's rules, as Connection::read_request applies them); each parsed one goes through the
//    router's decisions: the gate (Host count and loopback rule, Origin, route table and 405,
//    JSON content type; http/gate.cpp), the API-key check, and its body as the route reads it
//    (http/bodies.cpp: model resolution and the alias rewrite that re-serializes it; a pipeline
//    run's body, then the task rules of pipeline/tasks.cpp as the CLI runner applies them).
//  - generated ('#' first): the bytes after it steer a generated body (nesting depth up to 300,000 of arrays and
//    objects, `model` as profile / alias / unknown / non-string, stream, extra fields) sent as a
//    model call with an alias and as a pipeline run.
// Must never crash, hang or grow without bound; traps on a broken invariant: a refusal other than
// 400/413, no progress, a body past the depth limit accepted or one within it refused, an alias
// rewrite whose output does not name the profile.
#include <cmath>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/bounded_json.hpp"
#include "common/json_scan.hpp"
#include "http/auth.hpp"
#include "http/bodies.hpp"
#include "http/framing.hpp"
#include "http/gate.hpp"
#include "pipeline/tasks.hpp"
#include "parse_request.hpp"

namespace {

namespace kh = kevlaya::http;
namespace bhttp = boost::beast::http;

constexpr std::size_t kMaxHeader = 16 * 1024;  // ServerOptions defaults
constexpr std::uint64_t kMaxBody = 1 << 20;

std::string_view field(const bhttp::request<bhttp::string_body>& r, bhttp::field f) {
  auto it = r.find(f);
  if (it == r.end()) return {};
  return {it->value().data(), it->value().size()};
}

const kevlaya::config::Config& config() {
  static const kevlaya::config::Config cfg = [] {
    kevlaya::config::Config c;
    kevlaya::config::Profile kev, laya;
    kev.name = "kev";
    kev.alias = {"k", "decider"};
    laya.name = "laya";
    c.profiles = {kev, laya};
    return c;
  }();
  return cfg;
}

const kh::GatePolicy& policy() {
  static const kh::GatePolicy p = kh::GatePolicy::from("127.0.0.1", {"kev.lan"}, {"http://localhost:3000"});
  return p;
}

// What the route would do with the body (no network, no supervisor).
void route_body(kh::Route route, const std::string& body) {
  static const std::vector<kevlaya::ledger::LoraScale> lora = {{0, 0.5}};
  if (route == kh::Route::model_api) {
    if (const auto t = kh::timings_of(body); t && t->predicted_per_second && std::isnan(*t->predicted_per_second))
      __builtin_trap();  // JSON has no NaN
    // The door's scan (common/json_scan.hpp) and the library must agree on what is JSON; nlohmann
    // alone stops at a NUL byte as at the end, so bodies with one are left out of the comparison.
    if (body.find('\0') == std::string::npos &&
        kevlaya::scan_json(body).ok() != kevlaya::parse_json_bounded(body).ok())
      __builtin_trap();
    static const auto shared = std::make_shared<const kevlaya::config::Config>(config());
    auto call = kh::parse_model_call(shared, body);
    if (!call) return;
    const auto out = kh::child_body(*call, body, call->profile(), call->requested.size() % 2 ? lora
                                                                                           : decltype(lora){});
    if (out != body) {
      auto back = kevlaya::parse_json_bounded(out);
      if (!back || !back->is_object() || (*back)["model"] != call->profile()) __builtin_trap();
    }
  } else if (route == kh::Route::pipeline_runs) {
    auto task = kh::parse_run_body(body);
    if (!task) return;
    if (!task->contains("id")) (*task)["id"] = "rest";
    (void)kevlaya::pipeline::parse_tasks(task->dump());  // what cli/pipeline_runner.cpp does
  }
}

void raw_mode(std::string_view raw) {
  static const std::vector<std::string> keys = {"sk-test-key", "second"};
  // Pipelined requests: parse until the bytes run out, as the keep-alive loop does.
  for (int i = 0; i < 8 && !raw.empty(); ++i) {
    auto p = kevlaya::fuzz::parse_request(raw, kMaxHeader, kMaxBody);
    if (p.status != 0) {
      if (p.status != 400 && p.status != 413) __builtin_trap();
      break;
    }
    if (!p.complete) break;
    if (p.consumed == 0 || p.consumed > raw.size()) __builtin_trap();  // must make progress
    raw.remove_prefix(p.consumed);
    const auto& req = p.request;
    if (kh::check_host(policy(), req)) continue;
    const auto verdict = kh::check_origin(policy(), field(req, bhttp::field::origin), field(req, bhttp::field::host));
    if (verdict == kh::OriginVerdict::refused) continue;
    auto api_key = req.find("X-Api-Key");
    const std::string_view x_api_key =
        api_key == req.end() ? std::string_view() : std::string_view(api_key->value().data(), api_key->value().size());
    (void)kh::access(keys, keys, true, field(req, bhttp::field::authorization), x_api_key);
    const std::string_view target(req.target().data(), req.target().size());
    const auto m = kh::match_route(target.substr(0, target.find('?')));
    if (m.route == kh::Route::none) continue;
    if (kh::allow_of(m).empty()) __builtin_trap();
    if (req.method() != m.method) continue;
    if (m.method == bhttp::verb::post && !kh::is_json_content_type(field(req, bhttp::field::content_type))) continue;
    route_body(m.route, req.body());
  }
}

// A byte reader over the input; 0 once it runs out.
struct Bytes {
  std::string_view s;
  std::uint8_t next() {
    if (s.empty()) return 0;
    const auto b = static_cast<std::uint8_t>(s.front());
    s.remove_prefix(1);
    return b;
  }
};

void generated_mode(std::string_view rest) {
  Bytes b{rest};
  static const char* kModels[] = {"\"k\"", "\"kev\"", "\"decider\"", "\"laya\"", "\"nobody\"", "1", "null", "[\"k\"]"};
  const std::string model = kModels[b.next() % 8];
  // Depth: around the limit most of the time, sometimes very deep.
  const std::uint8_t shape = b.next();
  std::size_t depth = kevlaya::kMaxJsonDepth - 4 + b.next() % 9;
  if (shape % 4 == 0) depth = (std::size_t{b.next()} << 8 | b.next()) * 4 + 1;  // up to ~262,000
  std::string open, close;
  for (std::size_t i = 0; i + 1 < depth; ++i) {  // the outer object is one level
    const bool obj = (b.next() & 1) != 0;
    open += obj ? "{\"k\":" : "[";
    close += obj ? '}' : ']';
  }
  std::reverse(close.begin(), close.end());
  std::string extra = open + (b.next() % 2 ? "\"v\"" : "1") + close;
  std::string body = "{\"model\":" + model + ",\"input\":\"x\",\"messages\":[],\"extra\":" + extra;
  if (b.next() % 2) body += ",\"stream\":true";
  body += "}";
  const std::size_t levels = depth;  // outer object + (depth - 1) containers
  const auto parsed = kevlaya::parse_json_bounded(body);
  if (parsed.ok() != (levels <= kevlaya::kMaxJsonDepth)) __builtin_trap();
  route_body(kh::Route::model_api, body);
  route_body(kh::Route::pipeline_runs, body);
  // The same bytes as a task line of `run --input-file`.
  (void)kevlaya::pipeline::parse_tasks("{\"id\":\"t\"," + body.substr(1));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  if (!in.empty() && in.front() == '#') generated_mode(in.substr(1));
  else raw_mode(in);  // the committed seeds are raw HTTP
  return 0;
}
