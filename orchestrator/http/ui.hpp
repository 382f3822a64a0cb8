// The status page's assets (GET /ui, docs/ui.md): files under http/ui/ compiled into the binary
// by cmake/embed_assets.cmake, looked up by name, each with its content type and a strong ETag.
// No Beast here: the reply is built in ui.cpp.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace kevlaya::http::ui {

// One embedded file (the generated ui_assets.cpp defines the table).
struct EmbeddedAsset {
  std::string_view name;   // file name under http/ui/, e.g. "app.js"
  std::string_view bytes;  // its contents
};
extern const EmbeddedAsset kAssets[];
extern const std::size_t kAssetCount;

struct Asset {
  std::string_view name;
  std::string_view bytes;
  std::string_view content_type;
  std::string etag;  // "\"<fnv-1a 64 hex>\"", computed once
};

// The asset named `name` ("" = index.html), or nullptr.
const Asset* find_asset(std::string_view name);

// The page's Content-Security-Policy: scripts, styles and fetches from the door only; no inline
// script or style, no frames, no plugins, no form posts.
inline constexpr std::string_view kCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

// True when an Accept header prefers HTML (a browser navigating), e.g. "text/html,...;*/*;q=0.8";
// false for "*/*", "application/json", an empty header or text/html at a lower q than another type.
bool prefers_html(std::string_view accept);

// The total size of the embedded assets (bytes), for docs and tests.
std::size_t total_bytes();

}  // namespace kevlaya::http::ui
