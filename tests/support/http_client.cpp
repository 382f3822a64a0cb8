#include "support/http_client.hpp"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <boost/beast/http.hpp>
#include <cctype>
#include <limits>
#include <stdexcept>

namespace kevlaya::test {

namespace bhttp = boost::beast::http;
using SClock = std::chrono::steady_clock;

int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

namespace {

int ms_left(SClock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SClock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

void fill(HttpReply& r, bhttp::response_parser<bhttp::string_body>& p) {
  auto& m = p.get();
  r.status = static_cast<int>(m.result_int());
  for (const auto& f : m) r.headers[lower(std::string(f.name_string()))] = std::string(f.value());
  r.body = m.body();
}

void send_all(int fd, const std::string& bytes) {
  // A server may answer (and close) before it read everything: a failed send is not an error.
  for (std::size_t sent = 0; sent < bytes.size();) {
    const auto n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<std::size_t>(n);
  }
}

// Feeds what arrives on `fd` to `p` until the response is complete, EOF or the deadline.
void read_response(int fd, bhttp::response_parser<bhttp::string_body>& p, HttpReply& r,
                   SClock::time_point deadline) {
  std::string pending;
  boost::system::error_code ec;
  while (!p.is_done()) {
    pollfd pf{fd, POLLIN, 0};
    const int left = ms_left(deadline);
    if (left == 0 || ::poll(&pf, 1, left) <= 0) {
      r.timed_out = true;
      return;
    }
    char buf[16384];
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      if (p.is_header_done()) p.put_eof(ec);
      r.closed = true;
      return;
    }
    pending.append(buf, static_cast<std::size_t>(n));
    while (!pending.empty() && !p.is_done()) {
      const auto used = p.put(boost::asio::buffer(pending), ec);
      pending.erase(0, used);
      if (ec == bhttp::error::need_more) {
        ec = {};
        break;
      }
      if (ec) return;
    }
  }
}

}  // namespace

HttpReply http_raw(int port, const std::string& raw, std::chrono::milliseconds timeout,
                   std::chrono::milliseconds linger) {
  HttpReply r;
  const int fd = connect_loopback(port);
  if (fd < 0) return r;
  send_all(fd, raw);
  bhttp::response_parser<bhttp::string_body> p;
  p.eager(true);
  p.body_limit(std::numeric_limits<std::uint64_t>::max());
  read_response(fd, p, r, SClock::now() + timeout);
  for (const auto until = SClock::now() + linger; !r.closed && p.is_done();) {
    pollfd pf{fd, POLLIN, 0};
    const int left = ms_left(until);
    if (left == 0 || ::poll(&pf, 1, left) <= 0) break;
    char buf[4096];
    r.closed = ::recv(fd, buf, sizeof buf, 0) <= 0;
  }
  ::close(fd);
  if (p.is_header_done()) fill(r, p);
  return r;
}

HttpReply http_request(int port, const std::string& method, const std::string& target, const std::string& body,
                       const Headers& headers, std::chrono::milliseconds timeout) {
  Headers all{{"Host", "127.0.0.1"}};
  if (!body.empty() || method == "POST") all.emplace_back("Content-Type", "application/json");
  for (const auto& [k, v] : headers) {  // a caller's header replaces the default of that name
    std::erase_if(all, [&](const auto& h) { return lower(h.first) == lower(k); });
    all.emplace_back(k, v);
  }
  std::string raw = method + " " + target + " HTTP/1.1\r\n";
  for (const auto& [k, v] : all) raw += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST" || method == "PUT") raw += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  return http_raw(port, raw + "Connection: close\r\n\r\n" + body, timeout);
}

HttpReply http_get(int port, const std::string& target, std::chrono::milliseconds timeout,
                   const std::string& extra_headers) {
  return http_raw(port, "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                            extra_headers + "\r\n", timeout);
}

HttpReply http_post(int port, const std::string& target, const std::string& json_body,
                    std::chrono::milliseconds timeout, const std::string& extra_headers) {
  return http_raw(port, "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                            "Content-Type: application/json\r\nContent-Length: " +
                            std::to_string(json_body.size()) + "\r\n" + extra_headers + "\r\n" +
                            json_body, timeout);
}

std::string read_until(int port, const std::string& raw_request, const std::string& needle,
                       std::chrono::milliseconds limit) {
  const int fd = connect_loopback(port);
  if (fd < 0) return {};
  std::string out;
  const auto deadline = SClock::now() + limit;
  if (::send(fd, raw_request.data(), raw_request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(raw_request.size())) {
    char buf[4096];
    while (needle.empty() || out.find(needle) == std::string::npos) {
      pollfd pf{fd, POLLIN, 0};
      const int left = ms_left(deadline);
      if (left == 0 || ::poll(&pf, 1, left) <= 0) break;
      const auto n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

RawClient::RawClient(int port) : fd_(connect_loopback(port)) {
  if (fd_ < 0) throw std::runtime_error("connect failed");
}

RawClient::~RawClient() { close(); }

void RawClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void RawClient::send(const std::string& bytes) { send_all(fd_, bytes); }  // reading tells the rest

namespace {
// The kernel's tcp_info goes on past glibc's (an append-only ABI, linux/tcp.h, which cannot be
// included beside netinet/tcp.h): its fields up to tcpi_data_segs_in.
struct TcpInfoToDataSegsIn {
  tcp_info glibc;
  std::uint64_t pacing_rate, max_pacing_rate, bytes_acked, bytes_received;
  std::uint32_t segs_out, segs_in, notsent_bytes, min_rtt, data_segs_in;
};
static_assert(offsetof(TcpInfoToDataSegsIn, data_segs_in) == 152, "linux/tcp.h: tcpi_data_segs_in");
}  // namespace

std::uint32_t RawClient::data_segments_in() const {
  TcpInfoToDataSegsIn info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd_, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) throw std::runtime_error("TCP_INFO failed");
  if (len < sizeof info) throw std::runtime_error("TCP_INFO: this kernel has no tcpi_data_segs_in");
  return info.data_segs_in;
}

std::string RawClient::read_until(const std::string& needle, std::chrono::milliseconds timeout, int times) {
  const auto deadline = SClock::now() + timeout;
  while (count_of(received_, needle) < static_cast<std::size_t>(times)) {
    pollfd p{fd_, POLLIN, 0};
    const int left = ms_left(deadline);
    if (left == 0 || ::poll(&p, 1, left) <= 0) break;
    char buf[4096];
    auto n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) break;
    received_.append(buf, static_cast<std::size_t>(n));
  }
  return received_;
}

bool RawClient::wait_closed(std::chrono::milliseconds timeout) {
  const auto deadline = SClock::now() + timeout;
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    const int left = ms_left(deadline);
    if (left == 0 || ::poll(&p, 1, left) <= 0) return false;
    char buf[4096];
    auto n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return true;
    received_.append(buf, static_cast<std::size_t>(n));
  }
}

std::size_t count_of(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

std::string post(const std::string& target, const std::string& body) {
  return "POST " + target + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::vector<std::string> sse_events(const std::string& body) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const std::size_t end = body.find("\n\n", pos);
    out.push_back(body.substr(pos + 6, end == std::string::npos ? std::string::npos : end - pos - 6));
    if (end == std::string::npos) break;
    pos = end + 2;
  }
  return out;
}

}  // namespace kevlaya::test
