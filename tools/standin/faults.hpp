// Deliberate failures of the stand-in (--fake-* flags) that are not tied to one endpoint.
#pragma once

namespace standin {

// Aborts like ggml_abort (message on stderr, then SIGABRT).
[[noreturn]] void fake_abort(const char* why);

// Allocates `mib` MiB and writes every page so the RSS really grows; kept until exit.
void fake_rss(int mib);

// SIGTERM is ignored from the start (--fake-ignore-sigterm): only SIGKILL stops the process.
void ignore_sigterm();

// Second signal during shutdown: the real server's message, then exit(1) at once.
[[noreturn]] void terminate_immediately();

}  // namespace standin
