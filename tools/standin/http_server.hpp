// Minimal HTTP/1.1 server for the stand-in (Beast inside the .cpp): one coroutine per
// connection, keep-alive, whole responses or chunked streams flushed chunk by chunk.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace standin {

namespace net = boost::asio;
using tcp = net::ip::tcp;

inline constexpr const char* kJsonType = "application/json; charset=utf-8";

struct HttpRequest {
  std::string method;
  std::string path;                          // without the query string
  std::map<std::string, std::string> query;  // decoded query parameters
  std::string body;
  std::string authorization;  // Authorization header
  std::string x_api_key;      // X-Api-Key header
  // /cors-proxy: the x-llama-server-proxy-header-<name> headers, by lower-case <name>.
  std::map<std::string, std::string> proxy_headers;
};

// Writes the answer to one request: either send() once, or start_stream/write_chunk/end_stream.
class Responder {
 public:
  Responder(tcp::socket& socket, unsigned version, bool keep_alive)
      : socket_(socket), version_(version), keep_alive_(keep_alive) {}
  // A whole response with Content-Length (and `headers` besides the usual ones).
  net::awaitable<void> send(int status, std::string body, std::string content_type = kJsonType,
                            std::vector<std::pair<std::string, std::string>> headers = {});
  // Headers of a 200 chunked response; false when the client is gone.
  net::awaitable<bool> start_stream(std::string content_type);
  // One chunk, written (and, TCP_NODELAY, flushed) before returning; false when the client is gone.
  net::awaitable<bool> write_chunk(const std::string& data);
  // The terminating zero-length chunk.
  net::awaitable<void> end_stream();
  bool keep_alive() const { return keep_alive_ && !failed_; }
  bool answered() const { return answered_; }

 private:
  tcp::socket& socket_;
  unsigned version_;
  bool keep_alive_;
  bool answered_ = false;
  bool failed_ = false;
};

using Handler = std::function<net::awaitable<void>(const HttpRequest&, Responder&)>;

class HttpServer {
 public:
  HttpServer(net::io_context& ioc, Handler handler) : ioc_(ioc), handler_(std::move(handler)) {}
  // Binds and listens on host:port (port 0 = let the OS pick); returns the bound port.
  std::optional<int> bind(const std::string& host, int port);
  // Starts the accept loop.
  void start();
  // Closes the listening socket; open connections keep going.
  void stop_accepting();

 private:
  net::awaitable<void> accept_loop();
  net::awaitable<void> serve(tcp::socket socket);

  net::io_context& ioc_;
  Handler handler_;
  std::unique_ptr<tcp::acceptor> acceptor_;
};

}  // namespace standin
