// Fuzz entry for the door as it runs: each input's bytes go over a loopback connection to a real
// http::Server (a real Supervisor on fake effects, every child a scripted upstream:
// tests/http/door_fixture.hpp), so they meet the coroutine reader that `serve` runs
// (Connection::read_request: its buffer, header and body limits, Expect, the early key check),
// then the framing rules, gate, routes and relay. fuzz_http drives the same decisions without a
// connection; this one drives the connection.
// Traps on: no end of the answer within 10 s of the client's end of input (a hang), an answer
// that does not start with an HTTP/1.x status line (100-599), or a door that no longer answers
// GET /health afterwards. The scripted child's "test_mode" field (which can hold an answer
// forever, by design of the door tests) is neutralised in the input.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>

#include "http/door_fixture.hpp"

namespace {

constexpr std::size_t kMaxInput = 256 * 1024;  // bytes sent per input
constexpr int kAnswerTimeoutS = 10;

kevlaya::test::DoorOptions door_options() {
  kevlaya::test::DoorOptions o;
  o.load_ms = 1;
  o.header_timeout_s = 5;  // a header cut off by the client's end waits for no timer: EOF ends it
  o.read_timeout_s = 5;
  return o;
}

kevlaya::test::Door& door() {
  static kevlaya::test::Door d(door_options());  // one door for every input, as libFuzzer runs
  return d;
}

int connect_door() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) __builtin_trap();
  timeval tv{kAnswerTimeoutS, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  // Closed with a reset once the door has closed: thousands of inputs a second would otherwise
  // fill the ephemeral ports with TIME_WAIT (the client ends its side first) and fail connect().
  const linger off{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, sizeof off);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(door().port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) __builtin_trap();  // the door is gone
  return fd;
}

// Sends `bytes`, ends the client's side, and reads until the door closes. Traps on a hang.
std::string exchange(const std::string& bytes) {
  const int fd = connect_door();
  std::size_t sent = 0;
  while (sent < bytes.size()) {  // the door may answer early and stop reading: that is no error
    const auto n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string answer;
  char buf[16384];
  for (;;) {
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      if (answer.size() < (1u << 20)) answer.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) __builtin_trap();  // no end in 10 s
    break;  // closed (or reset after an early answer)
  }
  ::close(fd);
  return answer;
}

bool is_status_line(const std::string& a) {
  // HTTP/1.1, or HTTP/1.0 to a 1.0 request (the answer carries the request's version)
  if (a.size() < 12 || (a.compare(0, 9, "HTTP/1.1 ") != 0 && a.compare(0, 9, "HTTP/1.0 ") != 0)) return false;
  if (!std::all_of(a.begin() + 9, a.begin() + 12, [](char c) { return c >= '0' && c <= '9'; })) return false;
  const int status = std::stoi(a.substr(9, 3));
  return status >= 100 && status <= 599;
}

}  // namespace

// The support kit's Catch2 runner (support/main.cpp) defines this; the fuzz driver has its own
// main, and nothing here may skip.
namespace kevlaya::test {
void mark_skipped() { __builtin_trap(); }
}  // namespace kevlaya::test

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), std::min(size, kMaxInput));
  for (auto at = bytes.find("test_mode"); at != std::string::npos; at = bytes.find("test_mode", at))
    bytes[at + 8] = '_';  // the scripted child's hold/stream modes wait for a test by design
  const auto answer = exchange(bytes);
  if (!answer.empty() && !is_status_line(answer)) __builtin_trap();
  const auto health = exchange("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  if (health.compare(0, 12, "HTTP/1.1 200") != 0) __builtin_trap();
  return 0;
}
