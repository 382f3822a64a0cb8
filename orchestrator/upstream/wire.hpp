// Hot-path helpers for HTTP/1.1 messages, shared by the door and the upstream client.
//
// A message whose whole body is in memory, written as two buffers: its head, flattened once, and
// its body. Beast's serializer walks a many-part buffer sequence (start line pieces, each field,
// chunk framing) on every write; on the door's request path that walk was the largest user-space
// cost after the kernel (docs/benchmarks.md, "Door hot path, fourth pass"). Beast still builds and
// checks the message (fields, prepare_payload, keep_alive); only the bytes are laid out here, in
// the order and form Beast's serializer writes them (tests/upstream/test_wire.cpp compares both).
#pragma once

#include <array>
#include <string>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>
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

// Writes `msg` (prepared: Content-Length set, not chunked) as [head, body] in one gather write.
// `head` must outlive the operation (the caller's frame holds it).
template <class Stream, bool isRequest, class Token>
auto async_write_flat(Stream& s, const boost::beast::http::message<isRequest, boost::beast::http::string_body>& msg,
                      const std::string& head, Token&& token) {
  const std::array<boost::asio::const_buffer, 2> bufs{boost::asio::buffer(head), boost::asio::buffer(msg.body())};
  return boost::asio::async_write(s, bufs, std::forward<Token>(token));
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

}  // namespace kevlaya::upstream
