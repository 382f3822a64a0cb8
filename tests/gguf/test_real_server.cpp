// The stand-in GGUFs load in the REAL llama-server ($KEVLAYA_LLAMA_SERVER): Kev with both adapters
// (scale 0, switched on per request), and Laya. Skipped when the variable is unset.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/paths.hpp"

extern char** environ;

using namespace kevlaya::test;

namespace {

constexpr auto kStartupDeadline = std::chrono::seconds(90);
constexpr auto kPollInterval = std::chrono::milliseconds(200);

// A free TCP port on loopback (bound, read back, released).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// One llama-server child; SIGTERM + wait on destruction.
class Server {
 public:
  Server(const std::vector<std::string>& args, const std::filesystem::path& log) : port_(free_port()) {
    std::vector<std::string> argv{real_llama_server(), "--host", "127.0.0.1", "--port", std::to_string(port_),
                                  "-c", "256", "-t", "2"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (::posix_spawn(&pid_, cargv[0], &fa, nullptr, cargv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Server() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

  // Polls /health until 200, the child exits, or the deadline passes.
  bool wait_healthy() {
    const auto deadline = std::chrono::steady_clock::now() + kStartupDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      if (pid_ <= 0 || ::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      auto r = run_command("curl -s -o /dev/null -w '%{http_code}' --max-time 2 " + url("/health"));
      if (r.output == "200") return true;
      std::this_thread::sleep_for(kPollInterval);
    }
    return false;
  }

  nlohmann::json post(const std::string& path, const nlohmann::json& body) const {
    auto r = run_command("curl -s --max-time 60 -H 'Content-Type: application/json' -d '" + body.dump() + "' " +
                         url(path));
    return nlohmann::json::parse(r.output, nullptr, false);
  }

  nlohmann::json get(const std::string& path) const {
    return nlohmann::json::parse(run_command("curl -s --max-time 10 " + url(path)).output, nullptr, false);
  }

 private:
  int port_;
  pid_t pid_ = -1;
};

nlohmann::json completion(const Server& s, const nlohmann::json& lora) {
  nlohmann::json body{{"prompt", "hello world"}, {"n_predict", 12}, {"temperature", 0}, {"seed", 1}};
  if (!lora.is_null()) body["lora"] = lora;
  return s.post("/completion", body);
}

}  // namespace

TEST_CASE("real llama-server loads the Kev stand-in with both adapters", "[gguf][real]") {
  if (real_llama_server().empty()) KEVLAYA_SKIP("KEVLAYA_LLAMA_SERVER is not set");
  TempDir dir("real-gguf");
  REQUIRE(run_command(tiny_gguf_tool().string() + " standins --dir " + dir.path().string()).exit_code == 0);
  const std::string a = (dir / "kev-lora-a.gguf").string();
  const std::string b = (dir / "kev-lora-b.gguf").string();
  Server s({"-m", (dir / "kev-tiny.gguf").string(), "--lora-scaled", a + ":0," + b + ":0"}, dir / "kev.log");
  if (!s.wait_healthy()) FAIL("llama-server did not become healthy:\n" << read_text(dir / "kev.log"));
  const auto adapters = s.get("/lora-adapters");
  REQUIRE(adapters.is_array());
  REQUIRE(adapters.size() == 2);
  CHECK(adapters[0].at("scale") == 0.0);
  const auto base = completion(s, nullptr);
  INFO(base.dump());
  REQUIRE(base.contains("content"));
  CHECK(base.at("tokens_predicted").get<int>() > 0);
  CHECK_FALSE(base.at("content").get<std::string>().empty());
  // The adapters are large on purpose: switching one on changes the greedy output.
  const auto with_a = completion(s, nlohmann::json::array({{{"id", 0}, {"scale", 1.0}}}));
  const auto with_b = completion(s, nlohmann::json::array({{{"id", 1}, {"scale", 1.0}}}));
  REQUIRE(with_a.contains("content"));
  REQUIRE(with_b.contains("content"));
  CHECK(with_a.at("content") != base.at("content"));
  CHECK(with_b.at("content") != base.at("content"));
  CHECK(with_a.at("content") != with_b.at("content"));
}

TEST_CASE("real llama-server loads the Laya stand-in", "[gguf][real]") {
  if (real_llama_server().empty()) KEVLAYA_SKIP("KEVLAYA_LLAMA_SERVER is not set");
  TempDir dir("real-gguf");
  REQUIRE(run_command(tiny_gguf_tool().string() + " standins --dir " + dir.path().string()).exit_code == 0);
  Server s({"-m", (dir / "laya-tiny.gguf").string()}, dir / "laya.log");
  if (!s.wait_healthy()) FAIL("llama-server did not become healthy:\n" << read_text(dir / "laya.log"));
  const auto r = completion(s, nullptr);
  INFO(r.dump());
  REQUIRE(r.contains("content"));
  CHECK(r.at("tokens_predicted").get<int>() > 0);
}
