// Placement over devices, then one make_plan per device, then the product of their allowed sets.
#include "ledger/placement.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/strings.hpp"

namespace kevlaya::ledger {
namespace {

constexpr std::size_t kMaxCombinations = 4096;  // machine-wide allowed sets kept at most

std::string mib(std::uint64_t b) { return format_mib(b) + " MiB"; }

std::string gpu_name(const Device& d) {
  return "gpu " + std::to_string(d.index) + (d.name.empty() ? "" : " (" + d.name + ")");
}

std::string list(const std::vector<int>& v) {
  const std::string s = join(v, ", ", [](int x) { return std::to_string(x); });
  return v.size() == 1 ? s : "[" + s + "]";
}

const ProfileInput& first_member(const std::vector<ProfileInput>& in, const ChildSpec& c) {
  return *std::find_if(in.begin(), in.end(), [&](const ProfileInput& p) { return p.name == c.members.front(); });
}

// `gpu:` of a child's members (equal: part of share_key); empty = auto.
bool auto_placed(const std::vector<ProfileInput>& in, const ChildSpec& c) { return first_member(in, c).gpu.empty(); }

class Placer {
 public:
  Placer(const std::vector<ProfileInput>& in, const std::vector<Device>& devs, const Plan& whole, PlacedPlan& out)
      : in_(in), devs_(devs), whole_(whole), out_(out), used_(devs.size(), 0), count_(devs.size(), 0) {}

  void place(const ChildSpec& u) {
    if (!request(u).empty()) return place_explicit(u);
    if (auto p = place_single(u)) return commit(u, *p);
    if (auto p = place_split(u)) return commit(u, *p);
    refuse(u, auto_refusal(u));
  }

 private:
  const ProfileInput& first(const ChildSpec& u) const { return first_member(in_, u); }
  const std::vector<int>& request(const ChildSpec& u) const { return first(u).gpu; }

  std::optional<std::size_t> position(int index) const {
    for (std::size_t i = 0; i < devs_.size(); ++i)
      if (devs_[i].index == index) return i;
    return std::nullopt;
  }

  // The child's bytes on `positions` (a split in the ratio of their budgets).
  Placement price(const ChildSpec& u, std::vector<std::size_t> positions) const {
    std::sort(positions.begin(), positions.end());
    Placement p;
    std::vector<double> ratio;
    for (const auto i : positions) {
      p.devices.push_back(devs_[i].index);
      ratio.push_back(static_cast<double>(devs_[i].budget));
    }
    if (positions.size() == 1) p.bytes = {u.bill.total_gpu()};
    else p.bytes = split_bytes(first(u), u.bill, ratio);
    return p;
  }

  // The first device of `p` it does not fit on, or nullopt.
  std::optional<std::size_t> overflow(const Placement& p) const {
    for (std::size_t k = 0; k < p.devices.size(); ++k)
      if (p.bytes[k] > devs_[*position(p.devices[k])].budget) return k;
    return std::nullopt;
  }

  void place_explicit(const ChildSpec& u) {
    std::vector<std::size_t> positions;
    for (const int g : request(u)) {
      const auto i = position(g);
      if (!i) {
        return refuse(u, "gpu: " + list(request(u)) + " names gpu " + std::to_string(g) + ", but the machine has " +
                             std::to_string(devs_.size()) + " GPU(s), 0 to " + std::to_string(devs_.size() - 1));
      }
      positions.push_back(*i);
    }
    const Placement p = price(u, positions);
    if (const auto k = overflow(p)) {
      const Device& d = devs_[*position(p.devices[*k])];
      return refuse(u, "gpu: " + list(request(u)) + " cannot hold it: it needs " + mib(p.bytes[*k]) + " on " +
                           gpu_name(d) + ", whose budget is " + mib(d.budget));
    }
    commit(u, p);
  }

  // Beside what is placed where it fits (most room left), else rotating where it fits alone
  // (fewest children, then the largest budget).
  std::optional<Placement> place_single(const ChildSpec& u) const {
    const std::uint64_t need = u.bill.total_gpu();
    std::optional<std::size_t> beside, rotate;
    for (std::size_t i = 0; i < devs_.size(); ++i) {
      const Device& d = devs_[i];
      if (need > d.budget) continue;
      if (used_[i] + need <= d.budget && (!beside || d.budget - used_[i] > devs_[*beside].budget - used_[*beside]))
        beside = i;
      if (!rotate || count_[i] < count_[*rotate] || (count_[i] == count_[*rotate] && d.budget > devs_[*rotate].budget))
        rotate = i;
    }
    if (beside) return price(u, {*beside});
    if (rotate) return price(u, {*rotate});
    return std::nullopt;
  }

  // The fewest devices, largest budgets first, that hold it together.
  std::optional<Placement> place_split(const ChildSpec& u) const {
    std::vector<std::size_t> order(devs_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return devs_[a].budget > devs_[b].budget; });
    for (std::size_t k = 2; k <= order.size(); ++k) {
      Placement p = price(u, std::vector<std::size_t>(order.begin(), order.begin() + static_cast<long>(k)));
      if (!overflow(p)) return p;
    }
    return std::nullopt;
  }

  std::string auto_refusal(const ChildSpec& u) const {
    const std::string& name = u.members.front();
    std::string msg;
    for (const auto& d : whole_.diagnostics)
      if (d.severity == config::Severity::error && d.subject == name) msg = d.message;
    if (msg.empty()) msg = "needs " + mib(u.bill.total_gpu()) + " of GPU memory; no GPU can hold it";
    if (devs_.size() > 1) {
      std::vector<std::size_t> all(devs_.size());
      for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
      const Placement p = price(u, all);
      const auto k = overflow(p).value_or(0);
      const Device& d = devs_[*position(p.devices[k])];
      msg += "; split over all " + std::to_string(devs_.size()) + " GPUs it would still need " + mib(p.bytes[k]) +
             " on " + gpu_name(d) + " (budget " + mib(d.budget) + ")";
    }
    return msg;
  }

  void commit(const ChildSpec& u, const Placement& p) {
    for (std::size_t k = 0; k < p.devices.size(); ++k) {
      const auto i = *position(p.devices[k]);
      // A split child rotates alone on its devices: nothing is placed beside it there.
      used_[i] = p.split() ? std::max(devs_[i].budget, used_[i]) : used_[i] + p.bytes[k];
      ++count_[i];
    }
    for (const auto& m : u.members) out_.placement[m] = p;
  }

  void refuse(const ChildSpec& u, const std::string& why) {
    for (const auto& m : u.members) {
      out_.plan.diagnostics.push_back({config::Severity::error, m, why});
      for (auto& pb : out_.plan.profiles)
        if (pb.name == m) pb.fits_alone = false;
    }
  }

  const std::vector<ProfileInput>& in_;
  const std::vector<Device>& devs_;
  const Plan& whole_;
  PlacedPlan& out_;
  std::vector<std::uint64_t> used_;  // bytes placed per device, as if all alive
  std::vector<int> count_;           // children per device
};

std::string prefixed(const Device& d, const std::string& msg) { return "on " + gpu_name(d) + ": " + msg; }

// The single-GPU plan of the profiles placed on one device alone; split children rotate alone.
DevicePlan plan_device(const Device& dev, const std::vector<ProfileInput>& in, const PlacedPlan& placed,
                       const PlanOptions& opt, Plan& whole_out, bool only_device) {
  DevicePlan dp;
  dp.device = dev;
  std::vector<ProfileInput> here;
  std::vector<std::string> split_here;
  for (const auto& p : in) {
    const auto it = placed.placement.find(p.name);
    if (it == placed.placement.end()) continue;
    const auto& devs = it->second.devices;
    if (std::find(devs.begin(), devs.end(), dev.index) == devs.end()) continue;
    dp.profiles.push_back(p.name);
    if (it->second.split()) split_here.push_back(p.name);
    else here.push_back(p);
  }
  const Plan pd = make_plan(here, PlanOptions{dev.budget, opt.overhead, opt.residency});
  dp.allowed_sets = pd.allowed_sets;
  for (const auto& name : split_here) dp.allowed_sets.push_back({name});
  if (only_device) whole_out.mode = pd.mode;
  whole_out.sets_examined += pd.sets_examined;
  whole_out.children.insert(whole_out.children.end(), pd.children.begin(), pd.children.end());
  for (auto s : pd.sets) {
    s.device = dev.index;
    whole_out.sets.push_back(std::move(s));
  }
  for (auto d : pd.diagnostics) {
    if (!only_device) d.message = prefixed(dev, d.message);
    whole_out.diagnostics.push_back(std::move(d));
  }
  return dp;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Every combination of one allowed set per device; a split child only where every one of its
// devices chose it.
void combine(const PlacedPlan& pp, std::size_t d, std::vector<const std::vector<std::string>*>& chosen,
             std::vector<std::vector<std::string>>& out) {
  static const std::vector<std::vector<std::string>> kNoSets(1);  // a device with none: one empty choice
  if (out.size() >= kMaxCombinations) return;
  if (d == pp.devices.size()) {
    std::vector<std::string> set;
    for (const auto* s : chosen) {
      for (const auto& name : *s) {
        const auto& p = pp.placement.at(name);
        const bool everywhere = std::all_of(p.devices.begin(), p.devices.end(), [&](int idx) {
          for (std::size_t k = 0; k < pp.devices.size(); ++k)
            if (pp.devices[k].device.index == idx) return contains(*chosen[k], name);
          return false;
        });
        if (everywhere && !contains(set, name)) set.push_back(name);
      }
    }
    if (!set.empty()) out.push_back(std::move(set));
    return;
  }
  const auto& sets = pp.devices[d].allowed_sets.empty() ? kNoSets : pp.devices[d].allowed_sets;
  for (const auto& s : sets) {
    chosen.push_back(&s);
    combine(pp, d + 1, chosen, out);
    chosen.pop_back();
  }
}

}  // namespace

const DevicePlan* PlacedPlan::device(int index) const {
  for (const auto& d : devices)
    if (d.device.index == index) return &d;
  return nullptr;
}

std::vector<std::uint64_t> split_bytes(const ProfileInput& p, const Bill& b, const std::vector<double>& ratio) {
  const std::size_t n = ratio.size();
  std::vector<std::uint64_t> out(n, 0);
  if (n == 0) return out;
  // Cumulative split points, as floats like llama.cpp (same rounding at the boundaries).
  std::vector<float> splits(n);
  float sum = 0;
  for (std::size_t i = 0; i < n; ++i) splits[i] = sum += static_cast<float>(ratio[i]);
  for (std::size_t i = 0; i < n; ++i) splits[i] = sum > 0 ? splits[i] / sum : static_cast<float>(i + 1) / static_cast<float>(n);
  const auto& m = p.model;
  const Offload o = offload_split(m.n_layer, p.flags.ngl);
  const std::uint32_t act = o.reported, start = m.n_layer + 1 - act;
  std::vector<double> w(n, 0), kv(n, 0);
  double w_total = 0, kv_total = 0;
  for (std::uint32_t il = start; il <= m.n_layer && act > 0; ++il) {
    const auto at = std::upper_bound(splits.begin(), splits.end(), static_cast<float>(il - start) / static_cast<float>(act));
    const auto dev = std::min<std::size_t>(static_cast<std::size_t>(at - splits.begin()), n - 1);
    double bytes = 0;
    if (il < m.n_layer) bytes = il < m.layer_bytes.size() ? static_cast<double>(m.layer_bytes[il]) : 0;
    else bytes = static_cast<double>(m.output_bytes + (p.output_tied ? m.token_embd_bytes : 0));
    w[dev] += bytes;
    w_total += bytes;
    if (il < m.n_layer) {
      kv[dev] += 1;
      kv_total += 1;
    }
  }
  const auto part = [](std::uint64_t total, double f) { return static_cast<std::uint64_t>(std::llround(static_cast<double>(total) * f)); };
  for (std::size_t d = 0; d < n; ++d) {
    const double fw = w_total > 0 ? w[d] / w_total : 1.0 / static_cast<double>(n);
    const double fk = kv_total > 0 ? kv[d] / kv_total : 0;
    out[d] = part(b.weights_gpu, fw) + part(b.kv_gpu, fk) + part(b.adapters_gpu, fw) + b.compute_gpu + b.overhead_gpu;
  }
  return out;
}

config::DevicePlacement spawn_placement(const Placement& p, const std::vector<Device>& devices) {
  config::DevicePlacement out;
  std::vector<const Device*> devs;
  for (const int idx : p.devices) {
    const auto it = std::find_if(devices.begin(), devices.end(), [&](const Device& d) { return d.index == idx; });
    if (it == devices.end()) return {};  // a placement from another device list: place nothing
    devs.push_back(&*it);
  }
  out.devices = p.devices;
  const bool uuids = std::all_of(devs.begin(), devs.end(), [](const Device* d) { return !d->uuid.empty(); });
  for (const auto* d : devs) out.visible += (out.visible.empty() ? "" : ",") + (uuids ? d->uuid : std::to_string(d->index));
  if (p.split()) {
    for (const auto* d : devs) out.split.push_back(static_cast<std::int64_t>(d->budget / kMiB));
    const auto biggest = std::max_element(p.bytes.begin(), p.bytes.end());
    out.main_gpu = static_cast<int>(biggest - p.bytes.begin());
  }
  return out;
}

PlacedPlan place(const std::vector<ProfileInput>& in, const std::vector<Device>& devices, const PlanOptions& opt) {
  PlacedPlan out;
  if (devices.empty()) {
    out.plan = make_plan(in, opt);
    return out;
  }
  std::uint64_t largest = 0;
  for (const auto& d : devices) largest = std::max(largest, d.budget);
  // Bills, refusals (with their suggestions) and shared-base groups as on the largest device.
  const Plan whole = make_plan(in, PlanOptions{largest, opt.overhead, opt.residency});
  out.plan.budget = largest;  // "fits alone" means: on the largest device
  out.plan.profiles = whole.profiles;
  for (auto& pb : out.plan.profiles) pb.fits_alone = true;  // the placement decides below
  auto children = whole.children;
  for (std::size_t i = 0; i < in.size(); ++i)  // too big for the largest device alone: maybe split below
    if (!whole.child_spec(in[i].name)) children.push_back(child_alone(in[i], whole.profiles[i]));
  // Explicit requests first (config order), then the biggest auto child first.
  std::stable_sort(children.begin(), children.end(), [&](const ChildSpec& a, const ChildSpec& b) {
    if (auto_placed(in, a) != auto_placed(in, b)) return !auto_placed(in, a);
    return auto_placed(in, a) && a.bill.total_gpu() > b.bill.total_gpu();
  });
  Placer placer(in, devices, whole, out);
  for (const auto& c : children) placer.place(c);
  for (const auto& d : devices) out.devices.push_back(plan_device(d, in, out, opt, out.plan, devices.size() == 1));
  for (const auto& c : children)  // a split child is in no device's plan
    if (out.placement.count(c.members.front()) && out.placement.at(c.members.front()).split()) out.plan.children.push_back(c);
  std::vector<const std::vector<std::string>*> chosen;
  std::vector<std::vector<std::string>> sets;
  combine(out, 0, chosen, sets);
  out.plan.allowed_sets = maximal_sets(sets);
  if (devices.size() > 1) {
    const bool one_set = out.plan.allowed_sets.size() == 1 && out.plan.allowed_sets.front().size() == out.placement.size();
    out.plan.mode = !one_set ? Mode::rotate
                    : out.plan.children.size() == 1 && out.plan.children.front().shared() &&
                            out.plan.children.front().members.size() == out.placement.size()
                        ? Mode::shared_base
                        : Mode::co_resident;
  }
  return out;
}

void fit_host_ram(PlacedPlan& pp, const std::vector<ProfileInput>& in, std::optional<std::uint64_t> budget,
                  config::Residency residency) {
  fit_host_ram(pp.plan, in, budget, residency);
  for (auto& d : pp.devices) {  // each device's sets, cut along the machine's (a split set splits here too)
    std::vector<std::vector<std::string>> cut;
    for (const auto& s : d.allowed_sets) {
      for (const auto& m : pp.plan.allowed_sets) {
        std::vector<std::string> both;
        for (const auto& n : s)
          if (contains(m, n)) both.push_back(n);
        if (!both.empty()) cut.push_back(std::move(both));
      }
    }
    d.allowed_sets = maximal_sets(cut);
  }
}

}  // namespace kevlaya::ledger
