// A rescan of models_dir while a model file is being copied (docs/reliability.md, "Files that change
// under the door"): the reload applies nothing, says which file it waits for, and runs again by
// itself; no model is taken away and no child whose file did not change is restarted.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "gguf/writer.hpp"
#include "support/models.hpp"
#include "support/http_client.hpp"
#include "support/paths.hpp"
#include "support/process.hpp"

using namespace kevlaya;
using namespace kevlaya::test;
namespace fs = std::filesystem;

namespace {

// The first third of a valid GGUF: what a copy in progress leaves at `to` (modified now).
void write_partial(const fs::path& whole, const fs::path& to) {
  const std::string bytes = read_text(whole);
  std::ofstream(to, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 3);
}

nlohmann::json model_of(int port, const std::string& name) {
  const auto j = http_get(port, "/status").json_body();
  if (j.is_object())
    for (const auto& p : j.value("profiles", nlohmann::json::array()))
      if (p.value("name", "") == name) return p;
  return nullptr;
}

struct Folder {
  explicit Folder(const TempDir& dir) {
    fs::create_directories(dir / "models");
    REQUIRE(gguf::write_tiny_model(dir / "whole.gguf", kevlaya::test::small_model_spec()).ok());
    fs::copy_file(dir / "whole.gguf", dir / "models/a.gguf");
    fs::last_write_time(dir / "models/a.gguf", fs::file_time_type::clock::now() - std::chrono::hours(1));
    write_text(dir / "kevlaya.yaml", "models_dir: models\nmodels_binary: " + standin_binary().string() +
                                         "\nstate_dir: state\nlog_dir: logs\n");
  }
};

}  // namespace

TEST_CASE("lifecycle e2e: a reload during a copy into models_dir waits for the file and applies it by itself",
          "[lifecycle][e2e][reload]") {
  TempDir dir("rescan-new-file");
  Folder folder(dir);
  Serve serve(dir / "kevlaya.yaml");
  const int port = serve.port();
  REQUIRE(http_request(port, "POST", "/admin/load/a").status == 200);
  const int pid = model_of(port, "a").value("pid", 0);
  REQUIRE(pid > 0);

  write_partial(dir / "whole.gguf", dir / "models/b.gguf");
  const auto r = http_request(port, "POST", "/admin/reload");
  INFO(r.body);
  CHECK(r.status == 200);
  CHECK(r.body.find("b.gguf is still being written") != std::string::npos);
  CHECK(model_of(port, "b").is_null());

  fs::copy_file(dir / "whole.gguf", dir / "models/b.gguf", fs::copy_options::overwrite_existing);  // the copy ends
  // No further reload is asked for: the deferred one runs again by itself.
  CHECK(eventually([&] { return !model_of(port, "b").is_null(); }, std::chrono::seconds(20)));
  CHECK(model_of(port, "a").value("pid", 0) == pid);  // a's child was never restarted
}

TEST_CASE("lifecycle e2e: a served model's file overwritten during a reload is not taken away", "[lifecycle][e2e][reload]") {
  TempDir dir("rescan-overwrite");
  Folder folder(dir);
  Serve serve(dir / "kevlaya.yaml");
  const int port = serve.port();
  REQUIRE(http_request(port, "POST", "/admin/load/a").status == 200);
  const int pid = model_of(port, "a").value("pid", 0);
  REQUIRE(pid > 0);

  write_partial(dir / "whole.gguf", dir / "models/a.gguf");  // `cp new.gguf models/a.gguf`, half way
  const auto r = http_request(port, "POST", "/admin/reload");
  INFO(r.body);
  CHECK(r.body.find("a.gguf is still being written") != std::string::npos);
  CHECK(model_of(port, "a").value("pid", 0) == pid);  // still served, its child still running

  fs::copy_file(dir / "whole.gguf", dir / "models/a.gguf", fs::copy_options::overwrite_existing);
  CHECK(serve.proc().log().find("reload: deferred") != std::string::npos);
  // The retry reads the whole file: the same profile, so the same child keeps serving.
  CHECK(eventually([&] { return http_request(port, "POST", "/admin/reload").body.find("still being written") ==
                                std::string::npos; }, std::chrono::seconds(20)));
  CHECK(model_of(port, "a").value("pid", 0) == pid);
}
