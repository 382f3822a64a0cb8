#include "http/ui.hpp"

#include <vector>

#include "common/hash.hpp"
#include "common/strings.hpp"
#include "http/detail.hpp"

namespace kevlaya::http {
namespace ui {
namespace {

std::string etag_of(std::string_view bytes) { return "\"" + hex16(fnv1a(bytes)) + "\""; }

// Content type from the file extension (utf-8 for text); application/octet-stream when unknown.
std::string_view content_type_of(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".svg")) return "image/svg+xml";
  if (name.ends_with(".png")) return "image/png";
  if (name.ends_with(".json") || name.ends_with(".webmanifest")) return "application/json";
  return "application/octet-stream";
}

const std::vector<Asset>& assets() {
  static const std::vector<Asset> all = [] {
    std::vector<Asset> v;
    for (std::size_t i = 0; i < kAssetCount; ++i)
      v.push_back({kAssets[i].name, kAssets[i].bytes, content_type_of(kAssets[i].name), etag_of(kAssets[i].bytes)});
    return v;
  }();
  return all;
}

// q of one Accept element ("text/html;q=0.9" -> 0.9); 1 when absent, 0 when unparsable.
double q_of(std::string_view params) {
  const auto at = params.find("q=");
  if (at == std::string_view::npos) return 1.0;
  const std::string v(trim_blanks(params.substr(at + 2, params.find(';', at) - at - 2)));
  char* end = nullptr;
  const double q = std::strtod(v.c_str(), &end);
  return end == v.c_str() ? 0.0 : q;
}

}  // namespace

const Asset* find_asset(std::string_view name) {
  if (name.empty()) name = "index.html";
  for (const auto& a : assets())
    if (a.name == name) return &a;
  return nullptr;
}

bool prefers_html(std::string_view accept) {
  double html = 0, other = 0;  // best q of text/html (or xhtml) and of any other explicit type
  while (!accept.empty()) {
    const auto comma = accept.find(',');
    const auto item = trim_blanks(accept.substr(0, comma));
    accept = comma == std::string_view::npos ? std::string_view{} : accept.substr(comma + 1);
    const auto semi = item.find(';');
    const auto type = trim_blanks(item.substr(0, semi));
    const double q = semi == std::string_view::npos ? 1.0 : q_of(item.substr(semi + 1));
    if (type == "text/html" || type == "application/xhtml+xml") html = std::max(html, q);
    else if (type != "*/*" && type != "text/*") other = std::max(other, q);
  }
  return html > 0 && html >= other;
}

std::size_t total_bytes() {
  std::size_t n = 0;
  for (const auto& a : assets()) n += a.bytes.size();
  return n;
}

}  // namespace ui

Reply ui_reply(const Request& req, std::string_view path) {
  constexpr std::string_view kPrefix = "/ui/";
  const std::string_view name = path.size() > kPrefix.size() ? path.substr(kPrefix.size()) : std::string_view{};
  const auto* a = ui::find_asset(name);
  if (!a) return error_reply(make_error(Errc::not_found, "no such file in the status page: " + std::string(path)));
  Reply r;
  r.content_type = std::string(a->content_type);
  // Revalidate every time (names carry no hash); a matching ETag answers 304 without the body.
  r.headers = {{"ETag", a->etag}, {"Cache-Control", "no-cache"},
               {"Content-Security-Policy", std::string(ui::kCsp)}, {"X-Content-Type-Options", "nosniff"},
               {"Referrer-Policy", "no-referrer"}, {"X-Frame-Options", "DENY"}};
  if (header(req, bhttp::field::if_none_match) == a->etag) {
    r.status = 304;
    return r;
  }
  r.body = std::string(a->bytes);
  return r;
}

Reply redirect_to_ui() {
  Reply r;
  r.status = 302;
  r.content_type = "text/plain; charset=utf-8";
  r.body = "see /ui\n";
  r.headers = {{"Location", "/ui"}, {"Vary", "Accept"}};
  return r;
}

}  // namespace kevlaya::http
