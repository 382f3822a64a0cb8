#include "common/bounded_json.hpp"

namespace kevlaya {
namespace {

// The DOM builder nlohmann::json::parse uses, with a depth count in front: the first container
// past the limit stops the parse, so no deep tree is ever built.
template <class json>
class BoundedSax {
  using DomParser = nlohmann::detail::json_sax_dom_parser<json>;

 public:
  BoundedSax(json& out, std::size_t max_depth) : dom_(out, /*allow_exceptions=*/false), max_(max_depth) {}
  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(typename json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(typename json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(typename json::number_float_t v, const typename json::string_t& s) { return dom_.number_float(v, s); }
  bool string(typename json::string_t& v) { return dom_.string(v); }
  bool binary(typename json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) { return enter() && dom_.start_object(n); }
  bool key(typename json::string_t& v) { return dom_.key(v); }
  bool end_object() { --depth_; return dom_.end_object(); }
  bool start_array(std::size_t n) { return enter() && dom_.start_array(n); }
  bool end_array() { --depth_; return dom_.end_array(); }
  bool parse_error(std::size_t pos, const std::string& tok, const nlohmann::detail::exception& ex) {
    if (message_.empty()) message_ = ex.what();
    return dom_.parse_error(pos, tok, ex);
  }
  bool too_deep() const { return too_deep_; }
  const std::string& message() const { return message_; }

 private:
  bool enter() {
    if (++depth_ <= max_) return true;
    too_deep_ = true;
    return false;
  }
  DomParser dom_;
  std::size_t max_;
  std::size_t depth_ = 0;
  bool too_deep_ = false;
  std::string message_;
};

template <class json>
Result<json> parse_bounded(std::string_view text, std::size_t max_depth) {
  // nlohmann's lexer takes a NUL byte for the end of input (for C strings), so `{...}\0garbage`
  // parsed as `{...}`. JSON has no NUL outside a string and none raw inside one: refuse it.
  if (const auto nul = text.find('\0'); nul != std::string_view::npos)
    return make_error(Errc::bad_request, "not valid JSON: a NUL byte at offset " + std::to_string(nul));
  json out;
  BoundedSax<json> sax(out, max_depth);
  const bool ok = json::sax_parse(text.begin(), text.end(), &sax);
  if (sax.too_deep()) return make_error(Errc::bad_request, json_depth_message(max_depth));
  if (!ok || out.is_discarded())
    return make_error(Errc::bad_request,
                      "not valid JSON: " + (sax.message().empty() ? std::string("parse error") : sax.message()));
  return out;
}

}  // namespace

std::string json_depth_message(std::size_t max_depth) {
  return "JSON nests deeper than " + std::to_string(max_depth) + " levels (the limit)";
}

Result<nlohmann::json> parse_json_bounded(std::string_view text, std::size_t max_depth) {
  return parse_bounded<nlohmann::json>(text, max_depth);
}

Result<nlohmann::ordered_json> parse_ordered_json_bounded(std::string_view text, std::size_t max_depth) {
  return parse_bounded<nlohmann::ordered_json>(text, max_depth);
}

std::optional<std::string> error_message(const nlohmann::json& body) {
  if (!body.is_object() || !body.contains("error")) return std::nullopt;
  const auto& e = body["error"];
  if (e.is_string()) return e.get<std::string>();
  if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
  return std::nullopt;
}

}  // namespace kevlaya
