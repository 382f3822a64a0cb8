// Gathering the ledger's inputs from files (see inputs.hpp).
#include "ledger/inputs.hpp"

#include <algorithm>
#include <map>

#include "common/hash.hpp"
#include "config/backend.hpp"
#include "ledger/calibration.hpp"

namespace kevlaya::ledger {
namespace {

Error file_error(const std::string& profile, const std::string& what, const std::filesystem::path& path,
                 const Error& e) {
  Error out = make_error(Errc::bad_model, "profile " + profile + ": " + what + " " + path.string() + ": " + e.message,
                         "check the profile's path; `kevlaya-orch inspect FILE` shows what is wrong with a file");
  out.detail = e.detail;
  return out;
}

Status add_adapters(const config::Profile& p, const gguf::File& base, ProfileInput& in) {
  for (const auto& l : p.lora) {
    auto file = gguf::read_file(l.path);
    if (!file) return file_error(p.name, "LoRA adapter", l.path, file.error());
    auto info = gguf::model_info(*file, l.path);
    if (!info) return file_error(p.name, "LoRA adapter", l.path, info.error());
    if (auto st = check_adapter(base, *file, l.path.filename().string()); !st) {
      Error e = st.error();
      e.message = "profile " + p.name + ": " + e.message;
      return e;
    }
    in.adapters.push_back({l.name.empty() ? l.path.stem().string() : l.name, l.path.string(), info->tensor_bytes, l.scale});
  }
  return ok_status();
}

}  // namespace

Result<Gathered> gather(const config::Config& cfg) {
  Gathered g;
  std::map<std::string, Measured> store;
  if (!cfg.orch.state_dir.empty()) {
    auto s = load_store(store_path(cfg.orch.state_dir));
    if (s) store = std::move(*s);  // a corrupt store only loses the measured column
  }
  for (const auto& p : cfg.profiles) {
    if (config::backend_of(p).declared_vram && p.vram_mib) {  // priced as declared; no file to read
      ProfileInput in;
      in.name = p.name;
      in.declared_gpu = static_cast<std::uint64_t>(*p.vram_mib) * kMiB;
      in.shared_base = false;
      g.keys.emplace_back();
      g.profiles.push_back(std::move(in));
      continue;
    }
    if (!config::backend_of(p).llama_server || p.model.empty()) {
      g.skipped.push_back(p.name);
      continue;
    }
    auto file = gguf::read_model(p.model);  // every shard of a split model
    if (!file) return file_error(p.name, "model", p.model, file.error());
    auto info = gguf::model_info(*file, p.model);
    if (!info) return file_error(p.name, "model", p.model, info.error());
    ProfileInput in;
    in.name = p.name;
    in.model = *info;
    in.output_tied = output_is_tied(*file);
    in.flags = flags_from_profile(p);
    in.shared_base = p.shared_base;
    in.share_key = share_key(p);
    in.gpu = p.gpu;
    in.pin = p.pin;
    if (auto st = add_adapters(p, *file, in); !st) return st.error();
    std::string key;
    if (auto fp = file_fingerprint(p.model)) {
      key = measurement_key(*fp, in.flags, in.adapters);
      if (const auto it = store.find(key); it != store.end()) in.measured = it->second;
    }
    g.keys.push_back(key);
    g.profiles.push_back(std::move(in));
  }
  return g;
}

std::vector<Device> plan_devices(const config::GpuCfg& gpu, std::optional<std::int64_t> override_mib,
                                 std::vector<Device> detected) {
  const auto bytes = [](std::int64_t mib) { return static_cast<std::uint64_t>(std::max<std::int64_t>(mib, 0)) * kMiB; };
  std::vector<Device> out;
  if (override_mib) {
    out.push_back(Device{0, {}, {}, bytes(*override_mib), 0});
  } else if (!gpu.devices.empty()) {
    for (std::size_t i = 0; i < gpu.devices.size(); ++i)
      out.push_back(Device{static_cast<int>(i), gpu.devices[i].name, {}, bytes(gpu.devices[i].vram_mib), 0});
  } else if (gpu.vram_mib) {
    out.push_back(Device{0, {}, {}, bytes(*gpu.vram_mib), 0});
  } else {
    out = std::move(detected);
  }
  const std::uint64_t reserve = bytes(gpu.reserve_mib);
  for (auto& d : out) d.budget = d.total > reserve ? d.total - reserve : 0;
  return out;
}

PlanOptions plan_options(const config::OrchestratorCfg& orch, std::uint64_t budget) {
  PlanOptions o;
  o.budget = budget;
  o.overhead = static_cast<std::uint64_t>(std::max<std::int64_t>(orch.gpu.overhead_mib, 0)) * kMiB;
  o.residency = orch.residency;
  return o;
}

}  // namespace kevlaya::ledger
