#include "cli/pipeline_session.hpp"
#include "config/backend.hpp"

#include <unistd.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <boost/process/search_path.hpp>
#include <cstdio>
#include <iostream>
#include <set>
#include <sstream>

namespace kevlaya::cli {
namespace {

namespace fs = std::filesystem;

constexpr auto kPlainProgressEvery = std::chrono::seconds(5);
constexpr auto kTtyProgressEvery = std::chrono::milliseconds(200);

std::string default_config() {
  std::error_code ec;
  return fs::exists("kevlaya.yaml", ec) ? std::string("kevlaya.yaml") : std::string();
}

// Every stage's model must name a loaded profile (a pipeline loaded on its own was not checked).
Status check_models(const config::Config& cfg, const config::Pipeline& p) {
  for (const auto& s : p.stages)
    if (!cfg.find_profile(s.model))
      return make_error(Errc::config_invalid, config::display_path(p.file) + ": stage '" + s.name +
                                                  "' uses unknown model '" + s.model + "'",
                        "add a profile named '" + s.model + "' (or with that alias) to the profiles folder");
  return ok_status();
}

Result<config::Pipeline> find_pipeline(const config::Config& cfg, const std::string& arg, std::ostream& err) {
  std::error_code ec;
  if (fs::is_regular_file(arg, ec)) {
    const auto want = fs::weakly_canonical(arg, ec);
    for (const auto& p : cfg.pipelines)
      if (fs::weakly_canonical(p.file, ec) == want) return p;
    auto lr = config::load_pipeline_file(arg);
    for (const auto& d : lr.diagnostics) err << d.format() << "\n";
    if (!lr.ok() || lr.config.pipelines.empty())
      return make_error(Errc::config_invalid, arg + ": not a valid pipeline");
    return lr.config.pipelines.front();
  }
  if (const auto* p = cfg.find_pipeline(arg)) return *p;
  return make_error(Errc::not_found, "no pipeline file or pipeline named '" + arg + "'",
                    "pass a pipeline YAML file, or the name of one in pipelines_dir");
}

std::string resolve_binary(const std::string& bin) {
  if (bin.find('/') != std::string::npos) {
    std::error_code ec;
    const auto abs = fs::absolute(bin, ec);
    return fs::exists(abs, ec) ? abs.string() : abs.string() + " (missing!)";
  }
  const auto found = boost::process::search_path(bin);
  return found.empty() ? bin + " (not found on PATH!)" : found.string();
}

}  // namespace

Result<LoadedPipeline> load_pipeline(const std::string& pipeline_arg, const std::string& config_arg,
                                     std::ostream& err) {
  const std::string cfg_file = config_arg.empty() ? default_config() : config_arg;
  auto loaded = config::load(cfg_file);
  for (const auto& d : loaded.diagnostics) err << d.format() << "\n";
  if (!loaded.ok())
    return make_error(Errc::config_invalid, (cfg_file.empty() ? std::string("default config") : cfg_file) +
                                                ": " + std::to_string(loaded.error_count()) + " error(s)");
  auto p = find_pipeline(loaded.config, pipeline_arg, err);
  if (!p) return p.error();
  if (auto st = check_models(loaded.config, *p); !st) return st.error();
  return LoadedPipeline{std::move(loaded.config), std::move(*p)};
}

void print_binaries(const config::Config& cfg, const std::vector<config::Stage>& stages, std::ostream& out) {
  std::set<std::string> seen;
  for (const auto& s : stages) {
    const auto* p = cfg.find_profile(s.model);
    if (!p || !seen.insert(p->name).second) continue;
    if (!config::backend_of(*p).spawns) {  // nothing runs here: say where calls go
      out << "remote: " << p->name << " -> " << p->url << "  (model "
          << (p->remote_model.empty() ? p->name : p->remote_model) << ")\n";
      continue;
    }
    const auto argv = config::build_argv(*p, "127.0.0.1", 0);  // what the child runs, argv[0] first
    out << "server binary: " << p->name << " -> " << (argv.empty() ? std::string("(none)") : resolve_binary(argv.front()))
        << "  (model " << config::display_path(p->model) << ")\n";
  }
  out.flush();
}

std::string format_duration(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.1f s", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600, static_cast<int>(s) % 3600 / 60);
  return buf;
}

void use_stderr_logger(const std::string& level) {
  auto lg = spdlog::get("kevlaya");
  if (!lg) lg = spdlog::stderr_color_mt("kevlaya");
  spdlog::set_default_logger(lg);
  spdlog::set_level(spdlog::level::from_str(level));
}

ProgressPrinter::ProgressPrinter(std::string label) : label_(std::move(label)), tty_(::isatty(STDERR_FILENO) == 1) {}

void ProgressPrinter::update(const pipeline::RunProgress& p) {
  const auto now = std::chrono::steady_clock::now();
  const bool last = p.finished == p.total;
  if (!last && now - last_ < (tty_ ? std::chrono::milliseconds(kTtyProgressEvery) : kPlainProgressEvery)) return;
  if (!tty_ && last && p.total == 0) return;
  last_ = now;
  std::ostringstream line;
  line << label_ << " [" << p.finished << "/" << p.total << "] accepted " << p.accepted << ", rejected "
       << p.rejected << ", error " << p.errors << " | calls " << p.calls << ", switches " << p.switches
       << " | resident " << (p.resident.empty() ? "-" : p.resident);
  if (!last) line << " | ETA " << (p.eta_s < 0 ? std::string("?") : format_duration(p.eta_s));
  if (tty_) {
    std::cerr << "\r" << line.str() << "\x1b[K" << std::flush;
    line_open_ = true;
  } else {
    std::cerr << line.str() << "\n" << std::flush;
  }
}

void ProgressPrinter::note(const std::string& line) {
  if (tty_ && line_open_) std::cerr << "\r\x1b[K";
  std::cerr << line << "\n" << std::flush;
  last_ = {};  // redraw the progress line next time
}

void ProgressPrinter::finish() {
  if (tty_ && line_open_) std::cerr << "\n" << std::flush;
  line_open_ = false;
}

}  // namespace kevlaya::cli
