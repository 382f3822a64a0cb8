#include "log.hpp"

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <vector>

namespace standin {
namespace {

int g_verbosity = 3;  // LOG_LEVEL_INFO, llama.cpp's default
bool g_disabled = false;
const auto g_start = std::chrono::steady_clock::now();

char level_letter(Level level) {
  switch (level) {
    case Level::error: return 'E';
    case Level::warn: return 'W';
    case Level::debug: return 'D';
    default: return 'I';
  }
}

}  // namespace

void log_configure(int verbosity, bool disabled) {
  g_verbosity = verbosity;
  g_disabled = disabled;
}

void logf(Level level, const char* fmt, ...) {
  if (g_disabled || static_cast<int>(level) > g_verbosity) return;
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::vector<char> buf(static_cast<size_t>(n > 0 ? n : 0) + 1);
  std::vsnprintf(buf.data(), buf.size(), fmt, ap2);
  va_end(ap2);
  std::string msg(buf.data());
  if (msg.empty() || msg.back() != '\n') msg.push_back('\n');

  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - g_start)
                      .count();
  // [M.s.ms.us] exactly as common_log_entry::print formats it.
  std::fprintf(stderr, "%d.%02d.%03d.%03d %c %s", static_cast<int>(us / 1000000 / 60),
               static_cast<int>(us / 1000000 % 60), static_cast<int>(us / 1000 % 1000),
               static_cast<int>(us % 1000), level_letter(level), msg.c_str());
  std::fflush(stderr);
}

std::string fn12(std::string_view func) {
  std::string s(func.substr(0, 12));
  if (s.size() < 12) s.insert(0, 12 - s.size(), ' ');
  return s;
}

void raw_stderr(const std::string& text) {
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace standin
