// Hot-path helpers for HTTP/1.1 messages, shared by the door and the upstream client.
//
// A message whose whole body is in memory, written as two buffers: its head, laid out once into one
// string (HeadWriter: no Beast fields to build, no serializer to walk), and its body; what the
// socket takes at once is written without an asynchronous operation. The heads are the bytes
// Beast's serializer writes for the same fields (tests/upstream/test_wire.cpp compares both).
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/container/small_vector.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace kevlaya::upstream {

// A head the code writes once (a request to a child, the door's response), laid out straight into
// one string: Beast's fields cost an allocation and a tree insert per field. `set` replaces a field
// of the same name (ASCII case-insensitive) in its place, as Beast's does; names and values are
// views that must outlive text(). The framing fields (keep_alive, Content-Length,
// Transfer-Encoding) are the caller's to set, last, as Beast's keep_alive and prepare_payload add them.
class HeadWriter {
 public:
  void set(std::string_view name, std::string_view value) {
    const auto same = [name](const auto& f) {
      return boost::beast::iequals({f.first.data(), f.first.size()}, {name.data(), name.size()});
    };
    if (const auto it = std::find_if(fields_.begin(), fields_.end(), same); it != fields_.end()) it->second = value;
    else fields_.emplace_back(name, value);
  }
  // The Connection field Beast's keep_alive() writes: HTTP/1.1 says only `close`, 1.0 only `keep-alive`.
  void keep_alive(unsigned version, bool keep) {
    if (version >= 11 && !keep) set("Connection", "close");
    if (version < 11 && keep) set("Connection", "keep-alive");
  }
  // `start` (a request or status line, without its CRLF), the fields, the blank line.
  std::string text(std::string_view start) const {
    std::string out;
    out.reserve(384);
    out.append(start).append("\r\n");
    for (const auto& [k, v] : fields_) out.append(k).append(": ").append(v).append("\r\n");
    return out.append("\r\n");
  }

 private:
  // In place up to 16 fields (a door response has 6 to 12): no allocation per field.
  boost::container::small_vector<std::pair<std::string_view, std::string_view>, 16> fields_;
};

// "HTTP/1.1 200 OK": a response's status line, with the reason Beast writes.
inline std::string status_line(unsigned version, int status) {
  const auto reason = boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(status));
  std::string out = "HTTP/1.1 000 ";
  out[5] = static_cast<char>('0' + version / 10), out[7] = static_cast<char>('0' + version % 10);
  out[9] = static_cast<char>('0' + status / 100 % 10), out[10] = static_cast<char>('0' + status / 10 % 10);
  out[11] = static_cast<char>('0' + status % 10);
  return out.append(reason.data(), reason.size());
}

// Asio posts the completion of an operation that finished at once (a scheduler round and a coroutine
// resumption); what the kernel has ready is moved here without one. The socket is put in
// non-blocking mode (Asio's asynchronous operations set it anyway).
template <class Socket>
void non_blocking(Socket& socket, boost::system::error_code& ec) {
  if (!socket.non_blocking()) socket.non_blocking(true, ec);
}

// Writes what `socket` takes of `bufs` at once, without waiting, and returns the rest (empty when
// all went). `ec`: an error other than would_block.
template <class Socket, class Buffers>
boost::beast::buffers_suffix<Buffers> write_ready(Socket& socket, const Buffers& bufs, boost::system::error_code& ec) {
  boost::beast::buffers_suffix<Buffers> rest(bufs);
  non_blocking(socket, ec);
  if (ec) return rest;
  const std::size_t n = socket.write_some(bufs, ec);
  if (ec == boost::asio::error::would_block) ec = {};
  if (!ec) rest.consume(n);
  return rest;
}

// Reads into `buf` what has already arrived on `socket` (up to `max` bytes), without waiting.
// would_block, end of stream and errors leave `buf` as it was: the asynchronous read that follows
// reports them.
template <class Socket, class DynamicBuffer>
void read_ready(Socket& socket, DynamicBuffer& buf, std::size_t max) {
  boost::system::error_code ec;
  non_blocking(socket, ec);
  const std::size_t n = ec ? 0 : socket.read_some(buf.prepare(max), ec);
  if (!ec) buf.commit(n);
}

// Parses what `buf` already holds into `p` without an I/O operation: Beast's read operations post
// their completion even when the bytes are already buffered (a scheduler round and a coroutine
// resumption per call; a request's body usually arrives with its header, an answer's with its head).
// Stops when the message (with `header_only`, its header) is done, the buffer is empty or the parser
// needs more bytes; `ec` is a parse error (limits included), as the read operation would report it.
template <class Parser, class DynamicBuffer>
void parse_buffered(Parser& p, DynamicBuffer& buf, boost::system::error_code& ec, bool header_only = false) {
  while (!(header_only ? p.is_header_done() : p.is_done()) && buf.size() > 0) {
    const auto n = p.put(buf.data(), ec);
    buf.consume(n);
    if (ec == boost::beast::http::error::need_more) {
      ec = {};
      return;
    }
    if (ec || n == 0) return;
  }
}

// Reads once from `stream` (up to the buffer's free room, at least `min_read` bytes of room),
// appends to `buf`, then parses as parse_buffered does. After parse_buffered stops for more, the
// parser must next see more bytes than it saw: Boost 1.74's chunk parser asserts on the same bytes
// handed to it twice, and Beast's own read operations parse the buffer before reading, which does
// exactly that. So after parse_buffered, every further read goes through here. End of stream is
// reported as Beast's read reports it (put_eof once some of the message came, else end_of_stream).
template <class AsyncStream, class Parser, class DynamicBuffer>
boost::asio::awaitable<void> read_more(AsyncStream& stream, DynamicBuffer& buf, Parser& p, std::size_t min_read,
                                       boost::system::error_code& ec, bool header_only = false) {
  const auto room = std::max(min_read, buf.capacity() - buf.size());
  const auto n = co_await stream.async_read_some(buf.prepare(room),
                                                 boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  if (ec == boost::asio::error::eof) {
    ec = {};
    if (p.got_some()) p.put_eof(ec);
    else ec = boost::beast::http::error::end_of_stream;
    co_return;
  }
  if (ec) co_return;
  buf.commit(n);
  parse_buffered(p, buf, ec, header_only);
}

// Reads (read_more, never Beast's read operations) until `p` has its header (`header_only`) or its
// whole message: how the door reads a request and a child's answer.
template <class AsyncStream, class Parser, class DynamicBuffer>
boost::asio::awaitable<void> read_parsed(AsyncStream& stream, DynamicBuffer& buf, Parser& p, std::size_t min_read,
                                         boost::system::error_code& ec, bool header_only = false) {
  while (!ec && !(header_only ? p.is_header_done() : p.is_done()))
    co_await read_more(stream, buf, p, min_read, ec, header_only);
}

}  // namespace kevlaya::upstream
