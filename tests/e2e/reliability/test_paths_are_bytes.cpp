// Paths are bytes (issue 14, item 2): a config, model, state and log directory named with bytes that
// are not UTF-8 work under `serve`; the state file round-trips them. And a missing server binary is
// a 503 like any child that will not start.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "common/bytes.hpp"
#include "harness.hpp"
#include "supervisor/state_file.hpp"
#include "support/models.hpp"

using namespace kevlaya::test;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kLatin1 = "d\xe9j\xe0";  // "déjà" in Latin-1

// The state files of running children in `state_dir` (the measurement store left out).
std::vector<json> state_files(const fs::path& state_dir) {
  std::vector<json> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(state_dir, ec))
    if (e.path().extension() == ".json" && e.path().filename().string().find("ledger") == std::string::npos)
      out.push_back(json::parse(read_text(e.path()), nullptr, false));
  return out;
}

}  // namespace

TEST_CASE("paths are bytes: serve from a Latin-1 directory starts the child, answers, and records its argv",
          "[reliability][bytes]") {
  TempDir dir("bytes-serve");
  const fs::path root = dir.path() / kLatin1;
  const fs::path model = root / "m.gguf";  // YAML text is UTF-8: the bytes come from the folder
  fs::create_directories(root);
  fs::copy_file(tiny_llama(), model);
  const auto config = write_config(root, {{"kev", {}, ""}});
  // The profile file named k\xffv.yaml (its name comes from `name:`); the model path, relative to
  // it, resolves inside the Latin-1 folder.
  std::string profile = read_text(root / "profiles/kev.yaml");
  profile.replace(profile.find(tiny_llama().string()), tiny_llama().string().size(), "../m.gguf");
  fs::remove(root / "profiles/kev.yaml");
  write_text(root / "profiles/k\xffv.yaml", profile);

  Serve serve(config);
  const auto r = chat(serve.port(), "kev", false, 30s);
  INFO(read_text(root / "serve.log"));
  CHECK(r.status == 200);

  const auto status = http_get(serve.port(), "/status");
  REQUIRE(status.status == 200);
  const auto st = json::parse(status.body, nullptr, false);
  REQUIRE(st.is_object());
  REQUIRE(st["profiles"].size() == 1);
  CHECK(st["profiles"][0]["state"] == "ready");
  CHECK(st["profiles"][0]["pid"].get<int>() > 0);

  // The child's state file is complete and gives back the model path byte for byte.
  const auto files = state_files(root / "state");
  REQUIRE(files.size() == 1);
  REQUIRE(files[0].is_object());
  CHECK(files[0]["pid"] == st["profiles"][0]["pid"]);
  std::vector<std::string> argv;
  for (const auto& a : files[0]["argv"]) argv.push_back(kevlaya::bytes_from_json(a).value_or("?"));
  const auto m = std::find(argv.begin(), argv.end(), "-m");
  REQUIRE(m + 1 < argv.end());
  CHECK(fs::equivalent(m[1], model));  // the exact bytes: the file is found through them
  CHECK(fs::exists(root / "logs"));
}

TEST_CASE("paths are bytes: a state file keeps argv bytes exactly and reads back", "[reliability][bytes]") {
  TempDir dir("bytes-state");
  kevlaya::supervisor::ChildRecord rec;
  rec.pid = 999999;  // no such process: reap_stale only removes the file
  rec.pgid = 999999;
  rec.profile = "kev";
  rec.argv = {"/bin/llama-server", "-m", "/models/" + kLatin1 + "/m.gguf", "--alias", "a\\xe9"};
  REQUIRE(kevlaya::supervisor::write_state(dir.path(), rec));
  const auto files = state_files(dir.path());
  REQUIRE(files.size() == 1);
  CHECK(files[0]["argv"][2] == json{{"hex", "2f6d6f64656c732f64e96ae02f6d2e67677566"}});
  CHECK(files[0]["argv"][4] == "a\\xe9");  // text that merely looks escaped stays text
  std::vector<std::string> back;
  for (const auto& a : files[0]["argv"]) back.push_back(kevlaya::bytes_from_json(a).value_or("?"));
  CHECK(back == rec.argv);
  CHECK(kevlaya::supervisor::reap_stale(dir.path()) == 0);
  CHECK(state_files(dir.path()).empty());
}

TEST_CASE("missing server binary answers 503 unavailable naming the binary", "[reliability][bytes]") {
  TempDir dir("missing-binary");
  const auto config = write_config(dir, {{"kev", {}, ""}});
  std::string profile = read_text(dir / "profiles/kev.yaml");
  const std::string missing = (dir / "no-such-llama-server").string();
  profile.replace(profile.find(standin_binary().string()), standin_binary().string().size(), missing);
  write_text(dir / "profiles/kev.yaml", profile);

  Serve serve(config);
  const auto r = chat(serve.port(), "kev", false, 30s);
  INFO(r.body);
  CHECK(r.status == 503);
  REQUIRE(is_openai_error(r.body));
  const auto err = json::parse(r.body)["error"];
  CHECK(err["code"] == "unavailable");
  CHECK(err["message"].get<std::string>().find("server binary not found or not executable: " + missing) !=
        std::string::npos);
}
