// llama.cpp-shaped logging for the stand-in: every line goes to stderr as
// "M.SS.mmm.uuu L message" (common_log with prefix + timestamps, as llama-server sets it up),
// so log-parsing code written against the real server works unchanged on the stand-in.
#pragma once
#include <string>
#include <string_view>

namespace standin {

enum class Level { output = 0, error = 1, warn = 2, info = 3, trace = 4, debug = 5 };

// Sets the verbosity threshold (-lv) and whether logging is disabled (--log-disable).
void log_configure(int verbosity, bool disabled);

// One line (or several) at `level`, printf-style, message WITHOUT the prefix; a trailing
// newline is added when missing. Lines above the verbosity threshold are dropped.
void logf(Level level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The "%12.*s" field llama.cpp uses for function names in "srv  %12.*s: " (right-aligned,
// truncated to 12 characters).
std::string fn12(std::string_view func);

// Unprefixed text straight to stderr (the real server prints a few lines this way).
void raw_stderr(const std::string& text);

}  // namespace standin
