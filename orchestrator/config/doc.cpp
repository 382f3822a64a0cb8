// Reading one YAML file: bytes -> UTF-8 check -> yaml-cpp parse, every failure as file:line:col.
#include <sstream>
#include <stdexcept>

#include "common/bounded_file.hpp"
#include "common/bytes.hpp"
#include "config/detail.hpp"

namespace kevlaya::config::detail {

Doc::Doc(const fs::path& file, std::vector<Diagnostic>& out)
    : file_(fs::absolute(file).lexically_normal()), out_(out) {}

SourceLoc Doc::loc(const YAML::Node& n) const {
  const YAML::Mark m = n.Mark();
  if (m.is_null() || m.line < 0) return SourceLoc{display_path(file_), 0, 0};
  return SourceLoc{display_path(file_), m.line + 1, m.column + 1};
}

SourceLoc Doc::loc_at(std::size_t byte_pos) const {
  int line = 1, col = 1;
  for (std::size_t i = 0; i < byte_pos && i < text_.size(); ++i) {
    if (text_[i] == '\n') { ++line; col = 1; } else { ++col; }
  }
  return SourceLoc{display_path(file_), line, col};
}

const Key& Doc::key(std::string_view path) const {
  if (const Key* k = find_key(kind_, path)) return *k;
  throw std::logic_error("config/keys.cpp: no " + std::string(kind_name(kind_)) + " key '" + std::string(path) + "'");
}

void Doc::error(const SourceLoc& at, std::string msg) {
  out_.push_back(Diagnostic{Severity::error, at, std::move(msg)});
}

void Doc::warn(const YAML::Node& at, std::string msg) {
  out_.push_back(Diagnostic{Severity::warning, loc(at), std::move(msg)});
}

bool Doc::check_utf8() {
  const auto at = utf8_error(text_);
  if (!at) return true;
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(text_[*at]));
  error(loc_at(*at), std::string("invalid UTF-8 (byte ") + hex + "); configuration files must be UTF-8 text");
  return false;
}

// yaml-cpp reports tab indentation as "illegal map value" somewhere near; name the real cause.
void Doc::report_parse_error(int line0, int col0, const std::string& msg) {
  std::vector<std::string> lines;
  std::istringstream in(text_);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  for (int l = line0; l >= 0 && l >= line0 - 1 && l < static_cast<int>(lines.size()); --l) {
    const std::string& s = lines[static_cast<std::size_t>(l)];
    const auto lead = s.find_first_not_of(" \t");
    const auto tab = s.find('\t');
    if (tab != std::string::npos && (lead == std::string::npos || tab < lead)) {
      error(SourceLoc{display_path(file_), l + 1, static_cast<int>(tab) + 1},
            "tab character in indentation; YAML indentation must use spaces");
      return;
    }
  }
  const bool placed = line0 >= 0;  // yaml-cpp gives some errors no mark
  error(SourceLoc{display_path(file_), placed ? line0 + 1 : 0, placed ? col0 + 1 : 0}, "YAML syntax error: " + msg);
}

bool Doc::load() {
  auto text = read_bounded_file(file_, kMaxConfigFileBytes, "a configuration file");
  if (!text) {
    error(SourceLoc{display_path(file_), 0, 0}, text.error().message);
    return false;
  }
  text_ = std::move(text.value());
  if (!check_utf8()) return false;
  if (text_.find_first_not_of(" \t\r\n") == std::string::npos) {  // blank
    error(SourceLoc{display_path(file_), 1, 1}, "empty document");
    return false;
  }
  try {
    root_ = YAML::Load(text_);
  } catch (const YAML::Exception& e) {
    report_parse_error(e.mark.is_null() ? -1 : e.mark.line, e.mark.column, e.msg);
    return false;
  }
  if (root_.IsNull()) {  // only comments
    error(SourceLoc{display_path(file_), 1, 1}, "empty document");
    return false;
  }
  return true;
}

}  // namespace kevlaya::config::detail
