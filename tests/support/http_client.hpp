// The one blocking HTTP/1.1 client of the tests, on raw loopback sockets (so malformed requests
// can be sent as bytes and a dropped connection reads as status 0, never an exception).
#pragma once
#include <chrono>
#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kevlaya::test {

using namespace std::chrono_literals;

struct HttpReply {
  int status = 0;                             // 0 = no response (connection closed / timeout)
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                           // de-chunked
  bool timed_out = false;
  bool closed = false;  // the server closed the connection (read EOF) after the reply
  nlohmann::json json_body() const { return nlohmann::json::parse(body, nullptr, false); }
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

using Headers = std::vector<std::pair<std::string, std::string>>;

// A blocking TCP connection to 127.0.0.1:port (close-on-exec); -1 when it fails.
int connect_loopback(int port);
// Sends `raw` bytes to 127.0.0.1:port and reads one response (until it is complete or the peer
// closes), then waits up to `linger` for the server to close the connection. Never hangs longer
// than `timeout` + `linger`.
HttpReply http_raw(int port, const std::string& raw, std::chrono::milliseconds timeout = 30s,
                   std::chrono::milliseconds linger = 0ms);
// One request on a fresh connection (Connection: close), read to the end. Sends Host: 127.0.0.1
// and, with a body or for POST, Content-Type: application/json; `headers` override both.
HttpReply http_request(int port, const std::string& method, const std::string& target,
                       const std::string& body = {}, const Headers& headers = {},
                       std::chrono::milliseconds timeout = 60s);
// A request with `Connection: close`; a body means POST with Content-Type: application/json.
HttpReply http_get(int port, const std::string& target, std::chrono::milliseconds timeout = 30s,
                   const std::string& extra_headers = "");
HttpReply http_post(int port, const std::string& target, const std::string& json_body,
                    std::chrono::milliseconds timeout = 30s, const std::string& extra_headers = "");

// Sends `raw_request` and reads until `needle` shows up in the raw bytes (empty: until EOF);
// returns what was read so far.
std::string read_until(int port, const std::string& raw_request, const std::string& needle,
                       std::chrono::milliseconds limit = 20s);

// A raw client socket with a receive timeout, for framing and streaming tests.
class RawClient {
 public:
  explicit RawClient(int port);
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;
  void send(const std::string& bytes);
  // Reads until `needle` appears `times` in everything received so far (or EOF / timeout); returns it all.
  std::string read_until(const std::string& needle, std::chrono::milliseconds timeout = 10s, int times = 1);
  bool wait_closed(std::chrono::milliseconds timeout);  // true once the server closed the socket
  void close();
  const std::string& received() const { return received_; }
  // TCP segments with data this socket has received so far (TCP_INFO): how many writes the
  // server's bytes left in, on loopback where one write below the MSS is one segment.
  std::uint32_t data_segments_in() const;

 private:
  int fd_ = -1;
  std::string received_;
};

std::size_t count_of(const std::string& hay, const std::string& needle);
// The bytes of a JSON POST to `target` (Host: localhost), for a RawClient.
std::string post(const std::string& target, const std::string& body);
// "data: ..." payloads of an SSE body, in order.
std::vector<std::string> sse_events(const std::string& body);

}  // namespace kevlaya::test
