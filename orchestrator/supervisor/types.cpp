#include "supervisor/types.hpp"

#include <csignal>
#include <cstring>
#include <regex>

namespace kevlaya::supervisor {

std::string_view to_string(FailureKind k) {
  switch (k) {
    case FailureKind::none: return "none";
    case FailureKind::cuda_oom: return "cuda_oom";
    case FailureKind::bad_model: return "bad_model";
    case FailureKind::port_in_use: return "port_in_use";
    case FailureKind::binary_not_found: return "binary_not_found";
    case FailureKind::startup_timeout: return "startup_timeout";
    case FailureKind::stalled: return "stalled";
    case FailureKind::crashed: return "crashed";
    case FailureKind::hung: return "hung";
    case FailureKind::exited: return "exited";
    case FailureKind::internal: return "internal";
  }
  return "?";
}

Error ChildFailure::to_error(Errc code) const {
  Error e = make_error(code, message, hint);
  e.detail = log_tail;
  return e;
}

namespace {

bool any_line(const std::vector<std::string>& tail, const std::regex& re) {
  for (const auto& l : tail)
    if (std::regex_search(l, re)) return true;
  return false;
}

std::string status_text(int exit_code, int signal) {
  if (signal != 0) {
    const char* name = sigabbrev_np(signal);
    return "killed by signal " + std::to_string(signal) + (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "exited with code " + std::to_string(exit_code);
}

}  // namespace

ChildFailure classify_exit(int exit_code, int signal, const std::vector<std::string>& log_tail) {
  static const std::regex oom(
      R"(out of memory|failed to allocate\b.*\b(buffer|buffers|memory)\b|cudaMalloc failed)",
      std::regex::icase);
  static const std::regex bad_model(R"(error loading model|failed to load model)");
  static const std::regex bind_fail(R"(couldn't bind HTTP server socket)");
  ChildFailure f;
  f.exit_code = exit_code;
  f.signal = signal;
  f.log_tail = log_tail;
  std::string how = status_text(exit_code, signal);
  if (any_line(log_tail, bind_fail)) {
    f.kind = FailureKind::port_in_use;
    f.message = "port already in use (" + how + ")";
    f.hint = "another process holds the port; leave `port` unset to allocate one";
  } else if (any_line(log_tail, oom)) {
    f.kind = FailureKind::cuda_oom;
    f.message = "out of GPU memory while loading (" + how + ")";
    f.hint = "reduce ctx or ngl (or use a smaller quant / KV cache type)";
  } else if (any_line(log_tail, bad_model)) {
    f.kind = FailureKind::bad_model;
    f.message = "model failed to load (" + how + ")";
    f.hint = "check the model path and that the file is a complete GGUF";
  } else if (signal != 0) {
    f.kind = FailureKind::crashed;
    f.message = "child crashed: " + how;
    f.hint = "see the last log lines";
  } else {
    f.kind = FailureKind::exited;
    f.message = "child " + how;
    f.hint = "see the last log lines";
  }
  return f;
}

}  // namespace kevlaya::supervisor
