// The client commands for a running door (docs/lifecycle.md): status, load, unload, reload,
// events. Each reaches the door at --url (or $KEVLAYA_URL, or the listen address of --config,
// or http://127.0.0.1:8080) with --api-key (or $KEVLAYA_API_KEY, or the config's first key).
// Errors: one sentence on stderr and exit 1.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/client_format.hpp"
#include "cli/commands.hpp"
#include "cli/http_client.hpp"
#include "config/config.hpp"

namespace kevlaya::cli {
namespace {

using nlohmann::json;

struct ClientArgs {
  std::string url;
  std::string api_key;
  std::string config;
  bool json = false;
  int timeout_s = 0;  // 0 = the command's default
  std::string model;
};

std::string env_or(const char* name, const std::string& dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : dflt;
}

// --url, $KEVLAYA_URL, --config's listen address, the default listen address; same for the key.
Result<ClientOptions> client_options(const ClientArgs& a, int default_timeout_s) {
  std::string url = a.url.empty() ? env_or("KEVLAYA_URL", "") : a.url;
  std::string key = a.api_key.empty() ? env_or("KEVLAYA_API_KEY", "") : a.api_key;
  if (!a.config.empty() && (url.empty() || key.empty())) {
    const auto loaded = config::load(a.config);
    if (loaded.config.orch.file.empty())
      return make_error(Errc::config_invalid, "cannot read " + a.config + " for the door's address");
    const auto& o = loaded.config.orch;
    const bool any = o.listen.host == "0.0.0.0" || o.listen.host == "::";
    const std::string host = any ? "127.0.0.1" : o.listen.host;
    if (url.empty())
      url = "http://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
            std::to_string(o.listen.port);
    // An admin key works on every route; load, unload, reload and logs need one when any is set.
    if (key.empty() && !o.admin_api_keys.empty()) key = o.admin_api_keys.front();
    if (key.empty() && !o.api_keys.empty()) key = o.api_keys.front();
  }
  if (url.empty()) url = "http://127.0.0.1:8080";
  auto u = parse_door_url(url);
  if (!u) return u.error();
  ClientOptions o;
  o.url = *u;
  o.api_key = key;
  o.timeout = std::chrono::seconds(a.timeout_s > 0 ? a.timeout_s : default_timeout_s);
  return o;
}

int fail(const std::string& cmd, const std::string& message) {
  std::cerr << "kevlaya-orch " << cmd << ": " << message << "\n";
  return kExitFailure;
}

// One request; a non-2xx answer is the door's error sentence. Returns the parsed 2xx body.
Result<json> call(const std::string& cmd, const ClientArgs& a, const std::string& method, const std::string& path,
                  int default_timeout_s) {
  auto o = client_options(a, default_timeout_s);
  if (!o) return o.error();
  auto r = http_call(*o, method, path);
  if (!r) return r.error();
  if (r->status / 100 != 2) return make_error(Errc::upstream_error, error_text(*r));
  auto j = json::parse(r->body, nullptr, false);
  if (j.is_discarded()) return make_error(Errc::upstream_error, "the door's answer to " + cmd + " is not JSON");
  return j;
}

int report(const std::string& cmd, const Result<json>& r, const ClientArgs& a,
           const std::function<void(const json&)>& print) {
  if (!r) return fail(cmd, r.error().message + (r.error().hint.empty() ? "" : " (" + r.error().hint + ")"));
  if (a.json) std::cout << r->dump(2) << "\n";
  else print(r.value());
  return kExitOk;
}

int status(const ClientArgs& a) {
  return report("status", call("status", a, "GET", "/status", 10), a,
                [](const json& j) { std::cout << status_table(j); });
}

int load(const ClientArgs& a) {
  return report("load", call("load", a, "POST", "/admin/load/" + a.model, 900), a, [&](const json& j) {
    std::cout << a.model << ": ready (" << j.value("ms", 0) << " ms)\n";
  });
}

int unload(const ClientArgs& a) {
  const std::string path = a.model.empty() ? "/admin/unload" : "/admin/unload/" + a.model;
  return report("unload", call("unload", a, "POST", path, 300), a, [&](const json&) {
    std::cout << (a.model.empty() ? "every unpinned model" : a.model) << ": unloaded\n";
  });
}

int reload(const ClientArgs& a) {
  return report("reload", call("reload", a, "POST", "/admin/reload", 300), a, [](const json& j) {
    std::cout << "reloaded: changed " << j["changed"].size() << ", added " << j["added"].size() << ", removed "
              << j["removed"].size() << ", unchanged " << j["unchanged"].size() << "\n";
    for (const char* k : {"changed", "added", "removed"})
      for (const auto& n : j[k]) std::cout << "  " << k << ": " << n.get<std::string>() << "\n";
    for (const auto& n : j.value("needs_restart", json::array()))
      std::cout << "  needs a restart: " << n.get<std::string>() << "\n";
  });
}

int events(const ClientArgs& a) {
  auto o = client_options(a, 10);
  if (!o) return fail("events", o.error().message);
  SseSplitter sse;
  auto r = http_stream(*o, "/events", [&](std::string_view bytes) {
    for (const auto& data : sse.feed(bytes)) {
      if (a.json) {
        std::cout << data << std::endl;
        continue;
      }
      const auto j = json::parse(data, nullptr, false);
      std::cout << (j.is_object() ? event_line(j) : data) << std::endl;
    }
    return true;
  });
  if (!r) return fail("events", r.error().message + (r.error().hint.empty() ? "" : " (" + r.error().hint + ")"));
  if (r->status / 100 != 2) return fail("events", error_text(*r));
  std::cerr << "kevlaya-orch events: the door ended the stream\n";
  return kExitOk;
}

struct ActivityArgs {
  ClientArgs client;
  std::string since, until, status, who;
  int limit = 50;
  bool csv = false;
};

std::string query_escape(const std::string& v) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char ch : v) {
    if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') out += static_cast<char>(ch);
    else out += {'%', kHex[ch >> 4], kHex[ch & 15]};
  }
  return out;
}

// GET /activity with the filters given; a table, the JSON page, or the door's CSV as is.
int activity(const ActivityArgs& a) {
  std::string path = "/activity?limit=" + std::to_string(a.limit);
  for (const auto& [k, v] : {std::pair{"model", &a.client.model}, std::pair{"since", &a.since},
                             std::pair{"until", &a.until}, std::pair{"status", &a.status}, std::pair{"client", &a.who}})
    if (!v->empty()) path += std::string("&") + k + "=" + query_escape(*v);
  if (!a.csv) return report("activity", call("activity", a.client, "GET", path, 30), a.client,
                            [](const json& j) { std::cout << activity_table(j); });
  auto o = client_options(a.client, 30);
  if (!o) return fail("activity", o.error().message);
  auto r = http_call(*o, "GET", path + "&format=csv");
  if (!r) return fail("activity", r.error().message);
  if (r->status / 100 != 2) return fail("activity", error_text(*r));
  std::cout << r->body;
  return kExitOk;
}

void common_options(CLI::App* sub, ClientArgs& a) {
  sub->add_option("--url", a.url, "the door, http://HOST:PORT (default: $KEVLAYA_URL, --config's listen, "
                                  "http://127.0.0.1:8080)");
  sub->add_option("--api-key", a.api_key, "API key (default: $KEVLAYA_API_KEY, --config's first key)");
  sub->add_option("-c,--config", a.config, "kevlaya.yaml whose listen address and key to use");
  sub->add_option("--timeout", a.timeout_s, "seconds to wait for the answer")->check(CLI::Range(1, 86400));
  sub->add_flag("--json", a.json, "print the door's JSON as is");
}

}  // namespace

void add_client(CLI::App& app, Globals& g) {
  struct Cmd {
    const char* name;
    const char* help;
    int (*fn)(const ClientArgs&);
    int model;  // 0 none, 1 required, 2 optional
  };
  static const Cmd kCmds[] = {
      {"status", "show a running door's models, queue and recent switches", status, 0},
      {"load", "start MODEL in a running door (switching if needed) and wait until it is ready", load, 1},
      {"unload", "stop MODEL (or every unpinned model) in a running door, after in-flight requests", unload, 2},
      {"reload", "make a running door re-read its configuration (like SIGHUP)", reload, 0},
      {"events", "follow a running door's events, one line each (Ctrl-C to stop)", events, 0},
  };
  for (const auto& c : kCmds) {
    auto args = std::make_shared<ClientArgs>();
    auto* sub = app.add_subcommand(c.name, c.help);
    common_options(sub, *args);
    if (c.model == 1) sub->add_option("MODEL", args->model, "model (profile or alias)")->required();
    if (c.model == 2) sub->add_option("MODEL", args->model, "model (profile or alias); default: every one");
    sub->callback([&g, args, fn = c.fn] { g.exit_code = fn(*args); });
  }
  auto act = std::make_shared<ActivityArgs>();
  auto* sub = app.add_subcommand("activity", "show a running door's recent requests from its history (GET /activity)");
  common_options(sub, act->client);
  sub->add_option("--model", act->client.model, "only this model (profile name)");
  sub->add_option("--since", act->since, "only after this: 30s, 15m, 1h, 2d ago, or a unix time in ms");
  sub->add_option("--until", act->until, "only before this (same forms as --since)");
  sub->add_option("--status", act->status, "200, 2xx, 4xx, 5xx or error");
  sub->add_option("--client", act->who, "only this client address or session id");
  sub->add_option("--limit", act->limit, "at most this many (newest), 1-1000")->check(CLI::Range(1, 1000));
  sub->add_flag("--csv", act->csv, "print CSV (every field) instead of a table")->excludes(sub->get_option("--json"));
  sub->callback([&g, act] { g.exit_code = activity(*act); });
}

}  // namespace kevlaya::cli
