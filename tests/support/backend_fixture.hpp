// Shared by the backend tests (e2e/backends, remote): stand-in profiles written as YAML (command
// and remote), a door config, door requests and /status as JSON.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "support/http_client.hpp"
#include "support/paths.hpp"

namespace kevlaya::test {

// A `backend: command` profile that starts the stand-in through its argv template; `extra` are
// more template words (YAML flow items, e.g. ", --fake-crash-after, '0'").
std::string command_profile_yaml(const std::string& name, const std::string& extra = "");
// A `backend: remote` profile for `url` (fast checks: 1 s period, 1 s backoff cap).
std::string remote_profile_yaml(const std::string& name, const std::string& url, const std::string& more = "");
// kevlaya.yaml next to profiles/ and pipelines/ in `dir`, one child at a time.
void write_door_config(const TempDir& dir, const std::string& extra = "");

// A request with a JSON body (empty body: GET), read to the end.
HttpReply request(int port, const std::string& target, const std::string& body = "");
std::string chat(const std::string& model, bool stream = false);
nlohmann::json status_of(int port);  // GET /status
std::optional<nlohmann::json> profile_in(const nlohmann::json& status, const std::string& name);  // a copy

}  // namespace kevlaya::test
