// Hot-path helpers for HTTP/1.1 messages, shared by the door and the upstream client.
//
// A message whose whole body is in memory, written as two buffers: its head, flattened once, and
// its body; what the socket takes at once is written without an asynchronous operation. Beast's
// serializer walks a many-part buffer sequence (start line pieces, each field, chunk framing) on
// every write; on the door's request path that walk was the largest user-space
// cost after the kernel (docs/benchmarks.md, "Door hot path, fourth pass"). Beast still builds and
// checks the message (fields, prepare_payload, keep_alive); only the bytes are laid out here, in
// the order and form Beast's serializer writes them (tests/upstream/test_wire.cpp compares both).
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace kevlaya::upstream {

// The start line, every field and the blank line of `h`, as Beast's serializer writes them.
template <bool isRequest, class Fields>
std::string flat_head(const boost::beast::http::header<isRequest, Fields>& h) {
  std::string out;
  out.reserve(384);
  const auto add = [&out](boost::beast::string_view s) { out.append(s.data(), s.size()); };
  const unsigned v = h.version();
  const char version[] = {'H', 'T', 'T', 'P', '/', static_cast<char>('0' + v / 10), '.',
                          static_cast<char>('0' + v % 10)};
  if constexpr (isRequest) {
    add(h.method_string());
    out += ' ';
    add(h.target());
    out += ' ';
    out.append(version, sizeof version);
  } else {
    const unsigned code = h.result_int();
    const char status[] = {' ', static_cast<char>('0' + code / 100 % 10), static_cast<char>('0' + code / 10 % 10),
                           static_cast<char>('0' + code % 10), ' '};
    out.append(version, sizeof version).append(status, sizeof status);
    add(h.reason());
  }
  out += "\r\n";
  for (const auto& f : h) {
    add(f.name_string());
    out += ": ";
    add(f.value());
    out += "\r\n";
  }
  out += "\r\n";
  return out;
}

// [head, body] of `msg` (prepared: Content-Length set, not chunked), for one gather write. `head`
// (flat_head) and `msg` must outlive the write.
template <bool isRequest>
std::array<boost::asio::const_buffer, 2> flat_buffers(
    const std::string& head, const boost::beast::http::message<isRequest, boost::beast::http::string_body>& msg) {
  return {boost::asio::buffer(head), boost::asio::buffer(msg.body())};
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

// All of `bufs` on `stream` (whose socket is `socket`): write_ready, then the rest asynchronously,
// bounded by whatever bounds the stream's operations (its timeout, the caller's watchdog).
template <class AsyncStream, class Socket, class Buffers>
boost::asio::awaitable<void> write_all(AsyncStream& stream, Socket& socket, const Buffers& bufs,
                                       boost::system::error_code& ec) {
  const auto rest = write_ready(socket, bufs, ec);
  if (!ec && boost::beast::buffer_bytes(rest) > 0)
    co_await boost::asio::async_write(stream, rest, boost::asio::redirect_error(boost::asio::use_awaitable, ec));
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

}  // namespace kevlaya::upstream
