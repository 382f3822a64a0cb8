// Residency planning over children (ChildSpec): each serves one profile or a shared-base group.
#include "ledger/plan.hpp"

#include <algorithm>
#include <iterator>

#include "common/strings.hpp"
#include "config/fingerprint.hpp"
#include "ledger/subsets.hpp"

namespace kevlaya::ledger {
namespace {

constexpr std::size_t kMaxPricedChildren = 6;  // `plan` lists every combination up to 2^6 (57 rows)
constexpr int kCtxStep = 256;            // llama_context pads n_ctx to 256

// The position of a profile the plan knows in its inputs and bills (names are unique).
std::size_t at(const std::vector<ProfileInput>& in, const std::string& name) {
  return static_cast<std::size_t>(
      std::find_if(in.begin(), in.end(), [&](const ProfileInput& p) { return p.name == name; }) - in.begin());
}

const ProfileInput& input(const std::vector<ProfileInput>& in, const std::string& name) { return in[at(in, name)]; }

// A command server's bill is what its profile declares, plus the usual per-child overhead.
Bill declared_bill(const ProfileInput& p, std::uint64_t overhead) {
  Bill b;
  b.declared_gpu = *p.declared_gpu;
  b.overhead_gpu = overhead;
  return b;
}

// The bill decisions use for `p` loading `adapters`: the estimate with measured lines substituted.
Bill effective_bill(const ProfileInput& p, const std::vector<AdapterInput>& adapters, std::uint64_t overhead) {
  if (p.declared_gpu) return declared_bill(p, overhead);
  Bill b = estimate(p.model, p.output_tied, p.flags, adapters, overhead);
  if (p.measured) {
    b = apply_measured(b, *p.measured);
    if (adapters.size() != p.adapters.size()) {  // a group loads more adapters than were measured
      b.adapters_gpu = 0;
      for (const auto& a : adapters) b.adapters_gpu += a.bytes;
    }
  }
  return b;
}

std::string biggest_line(const Bill& b) {
  const std::pair<const char*, std::uint64_t> lines[] = {
      {"weights", b.weights_gpu}, {"KV cache", b.kv_gpu}, {"compute buffer", b.compute_gpu},
      {"runtime overhead", b.overhead_gpu}, {"LoRA adapters", b.adapters_gpu},
      {"declared vram_mib", b.declared_gpu}};
  const auto* it = std::max_element(std::begin(lines), std::end(lines),
                                    [](const auto& x, const auto& y) { return x.second < y.second; });
  return std::string(it->first) + " (" + format_mib(it->second) + " MiB)";
}

bool fits(const ProfileInput& p, const Flags& f, const PlanOptions& opt) {
  return estimate(p.model, p.output_tied, f, p.adapters, opt.overhead).total_gpu() <= opt.budget;
}

// Largest ctx (multiple of 256, at the profile's ngl) and largest ngl (at its ctx) that fit.
void suggest(const ProfileInput& p, const PlanOptions& opt, ProfileBill& out) {
  // The first of `from`, `from - step`, ... down to `to` at which `field` alone changed fits.
  const auto largest = [&](int Flags::*field, int from, int to, int step) -> std::optional<int> {
    Flags f = p.flags;
    for (f.*field = from; f.*field >= to; f.*field -= step)
      if (fits(p, f, opt)) return f.*field;
    return std::nullopt;
  };
  const Flags& f = p.flags;
  const int ctx = f.ctx > 0 ? f.ctx : static_cast<int>(p.model.n_ctx_train);
  const int all = static_cast<int>(p.model.n_layer) + 1;
  out.suggest_ctx = largest(&Flags::ctx, (ctx - 1) / kCtxStep * kCtxStep, kCtxStep, kCtxStep);
  out.suggest_ngl = largest(&Flags::ngl, (f.ngl < 0 || f.ngl > all ? all : f.ngl) - 1, 0, 1);
}

std::string refusal(const ProfileBill& pb, std::uint64_t budget) {
  std::string msg = "cannot fit even alone: needs " + format_mib(pb.effective.total_gpu()) + " MiB of GPU memory, budget " +
                    format_mib(budget) + " MiB; biggest line: " + pb.too_big;
  if (pb.suggest_ctx) msg += "; would fit with ctx " + std::to_string(*pb.suggest_ctx);
  if (pb.suggest_ngl) msg += std::string(pb.suggest_ctx ? " or" : "; would fit with") + " ngl " + std::to_string(*pb.suggest_ngl);
  if (!pb.suggest_ctx && !pb.suggest_ngl) msg += "; no smaller ctx or ngl fits either";
  return msg;
}

ProfileBill price_profile(const ProfileInput& p, const PlanOptions& opt) {
  ProfileBill pb;
  pb.name = p.name;
  pb.estimate = p.declared_gpu ? declared_bill(p, opt.overhead)
                               : estimate(p.model, p.output_tied, p.flags, p.adapters, opt.overhead);
  pb.measured = p.measured;
  pb.effective = effective_bill(p, p.adapters, opt.overhead);
  pb.fits_alone = pb.effective.total_gpu() <= opt.budget;
  if (!pb.fits_alone) {
    pb.too_big = biggest_line(pb.effective);
    if (!p.declared_gpu) suggest(p, opt, pb);
  }
  return pb;
}

// Each profile that fits alone joins the first child it can share (when `group`), else gets its own.
std::vector<ChildSpec> form_children(const std::vector<ProfileInput>& in, const std::vector<ProfileBill>& bills,
                             bool group) {
  std::vector<ChildSpec> children;
  std::vector<std::size_t> first;  // each child's first member, as an index of `in`: no name lookups
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!bills[i].fits_alone) continue;
    std::size_t c = group ? 0 : children.size();
    while (c < children.size() && !can_share(in[first[c]], in[i])) ++c;
    if (c == children.size()) {
      children.emplace_back();
      first.push_back(i);
    }
    auto it = children.begin() + static_cast<std::ptrdiff_t>(c);
    it->members.push_back(in[i].name);
    for (const auto& a : in[i].adapters) {
      const bool seen = std::any_of(it->adapters.begin(), it->adapters.end(),
                                    [&](const AdapterInput& x) { return x.path == a.path; });
      if (!seen) it->adapters.push_back(a);
    }
  }
  return children;
}

// The rest of a child's spec. A lone profile's child is child_alone's; a shared one gets its name,
// its bill with every adapter, its largest member's host figures and each member's scales.
void finish(ChildSpec& u, const std::vector<ProfileInput>& in, const std::vector<ProfileBill>& bills, std::uint64_t overhead) {
  const auto& first = u.members.front();
  if (!u.shared()) {
    u = child_alone(input(in, first), bills[at(in, first)]);
    return;
  }
  u.name = shared_child_name(u.members);
  u.bill = effective_bill(input(in, first), u.adapters, overhead);
  for (const auto& m : u.members) {
    const auto& p = input(in, m);
    const auto alone = child_alone(p, bills[at(in, m)]);
    u.host_alone = std::max(u.host_alone, alone.host_alone);
    u.host_beside = std::max(u.host_beside, alone.host_beside);
    auto& scales = u.scales[m];
    for (std::size_t id = 0; id < u.adapters.size(); ++id) {
      double s = 0;  // every other adapter is sent explicitly at 0 so none leaks between profiles
      for (const auto& a : p.adapters)
        if (a.path == u.adapters[id].path) s = a.scale;
      scales.push_back({static_cast<int>(id), s});
    }
  }
}

std::vector<std::string> names_of(const std::vector<const ChildSpec*>& children) {
  std::vector<std::string> names;
  for (const auto* u : children) names.insert(names.end(), u->members.begin(), u->members.end());
  return names;
}

SetBill price_set(const std::vector<const ChildSpec*>& children, std::uint64_t budget) {
  SetBill s;
  s.profiles = names_of(children);
  s.children = static_cast<int>(children.size());
  for (const auto* u : children) s.total_gpu += u->bill.total_gpu();
  s.fits = s.total_gpu <= budget;
  return s;
}

// The combinations `plan` lists: every one of two or more children while there are at most
// kMaxPricedChildren (the table stays readable), else none (the allowed sets are priced instead).
void price_combinations(const std::vector<ChildSpec>& children, std::uint64_t budget, Plan& plan) {
  if (children.size() > kMaxPricedChildren) return;
  for (unsigned mask = 1; mask < (1U << children.size()); ++mask) {
    std::vector<const ChildSpec*> chosen;
    for (std::size_t i = 0; i < children.size(); ++i)
      if (mask & (1U << i)) chosen.push_back(&children[i]);
    if (chosen.size() >= 2) plan.sets.push_back(price_set(chosen, budget));
  }
}

std::vector<const ChildSpec*> children_at(const std::vector<ChildSpec>& children, const std::vector<std::size_t>& idx) {
  std::vector<const ChildSpec*> chosen;
  for (const auto i : idx) chosen.push_back(&children[i]);
  return chosen;
}

// The bounded subset search (ledger/subsets.hpp) over children, counted in the plan; a stopped search
// says so once per subject.
FittingSets search(Plan& plan, const std::vector<std::uint64_t>& cost, const std::vector<std::size_t>& required,
                   std::uint64_t budget, bool one_more, const std::string& subject) {
  auto found = maximal_fitting(cost, required, budget, one_more);
  plan.sets_examined += found.examined;
  if (found.truncated) {
    plan.diagnostics.push_back({config::Severity::warning, subject,
                                "more combinations fit than the planner searches (" + std::to_string(kMaxFittingSets) +
                                    " sets, " + std::to_string(kMaxSearchSteps) +
                                    " steps): the sets found are kept, and each other child gets one set filled greedily"});
  }
  return found;
}

std::vector<std::uint64_t> gpu_costs(const std::vector<ChildSpec>& children) {
  std::vector<std::uint64_t> cost;
  for (const auto& u : children) cost.push_back(u.bill.total_gpu());
  return cost;
}

// Allowed sets in rotate mode: the maximal combinations of two or more children that fit (priced
// into plan.sets when the full table is not), then each unit in none of them alone.
void rotate_sets(const std::vector<ChildSpec>& children, std::uint64_t budget, Plan& plan) {
  const auto found = search(plan, gpu_costs(children), {}, budget, false, "residency");
  std::vector<bool> covered(children.size(), false);
  for (const auto& idx : found.sets) {
    if (idx.size() < 2) continue;
    for (const auto i : idx) covered[i] = true;
    const auto chosen = children_at(children, idx);
    plan.allowed_sets.push_back(names_of(chosen));
    if (children.size() > kMaxPricedChildren) plan.sets.push_back(price_set(chosen, budget));
  }
  for (std::size_t i = 0; i < children.size(); ++i)
    if (!covered[i]) plan.allowed_sets.push_back(children[i].members);
}

// Pins (docs/lifecycle.md): every allowed set holds every pinned unit, so the scheduler never
// picks a pin as a victim; a unit that cannot fit beside the pins is refused with the figures.
// Under `rotate` (not `largest`) the others run one at a time beside the pins.
void pinned_sets(const std::vector<ChildSpec>& children, const std::vector<ProfileInput>& in, std::uint64_t budget,
                 bool largest, Plan& plan) {
  std::vector<std::size_t> pins;
  std::vector<const ChildSpec*> pinned;
  for (std::size_t i = 0; i < children.size(); ++i) {
    const bool pin = std::any_of(children[i].members.begin(), children[i].members.end(),
                                 [&](const std::string& m) { return input(in, m).pin; });
    if (pin) {
      pins.push_back(i);
      pinned.push_back(&children[i]);
    }
  }
  plan.allowed_sets.clear();
  const SetBill alone = price_set(pinned, budget);
  if (!alone.fits) {
    plan.diagnostics.push_back({config::Severity::error, join(alone.profiles, "+"),
                                "pinned profiles need " + format_mib(alone.total_gpu) + " MiB together, more than the " +
                                    format_mib(budget) + " MiB budget; unpin one or lower its ctx/ngl", true});
    return;
  }
  const auto found = search(plan, gpu_costs(children), pins, budget, !largest, "pin");
  std::vector<bool> covered(children.size(), false);
  for (const auto& idx : found.sets)
    for (const auto i : idx) covered[i] = true;
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (covered[i]) continue;
    std::vector<const ChildSpec*> with = pinned;
    with.push_back(&children[i]);
    const SetBill s = price_set(with, budget);
    plan.diagnostics.push_back({config::Severity::error, children[i].members.front(),
                                "does not fit beside the pinned " + join(alone.profiles, ", ") + ": together they need " +
                                    format_mib(s.total_gpu) + " MiB of the " + format_mib(budget) +
                                    " MiB budget; unpin, or lower ctx/ngl", true});
  }
  for (const auto& idx : found.sets) plan.allowed_sets.push_back(names_of(children_at(children, idx)));
}

void warn_headroom(Plan& plan, const std::vector<ChildSpec>& children) {
  for (const auto& set : plan.allowed_sets) {
    std::uint64_t total = 0;
    for (const auto& u : children)
      if (std::find(set.begin(), set.end(), u.members.front()) != set.end()) total += u.bill.total_gpu();
    const double left = static_cast<double>(plan.budget) - static_cast<double>(total);
    if (total <= plan.budget && left < kHeadroomWarn * static_cast<double>(plan.budget)) {
      plan.diagnostics.push_back({config::Severity::warning, join(set, "+"),
                                  "only " + format_mib(plan.budget - total) + " MiB headroom (under 10% of the " +
                                      format_mib(plan.budget) + " MiB budget); a longer prompt or driver update may not fit"});
    }
  }
}

void decide_mode(Plan& plan, const std::vector<ChildSpec>& children, const PlanOptions& opt) {
  std::vector<const ChildSpec*> all;
  for (const auto& u : children) all.push_back(&u);
  const SetBill everything = price_set(all, opt.budget);
  price_combinations(children, opt.budget, plan);
  const bool one_group = children.size() == 1 && children.front().shared();
  if (opt.residency == config::Residency::rotate || children.empty()) {
    plan.mode = one_group ? Mode::shared_base : Mode::rotate;  // grouping applies in every residency
    for (const auto& u : children) plan.allowed_sets.push_back(u.members);
    return;
  }
  if (opt.residency == config::Residency::co_resident || everything.fits) {
    plan.mode = one_group ? Mode::shared_base : Mode::co_resident;
    if (!all.empty()) plan.allowed_sets.push_back(everything.profiles);
    if (!everything.fits) {
      plan.diagnostics.push_back({config::Severity::error, join(everything.profiles, "+"),
                                  "residency: co-resident, but together they need " + format_mib(everything.total_gpu) +
                                      " MiB of the " + format_mib(opt.budget) + " MiB budget"});
    }
    return;
  }
  plan.mode = Mode::rotate;
  rotate_sets(children, opt.budget, plan);
}

}  // namespace

std::string to_string(Mode m) {
  switch (m) {
    case Mode::co_resident: return "co-resident";
    case Mode::shared_base: return "shared-base";
    case Mode::rotate: return "rotate";
  }
  return "rotate";
}

bool Plan::ok() const {
  return std::none_of(diagnostics.begin(), diagnostics.end(),
                      [](const PlanDiagnostic& d) { return d.severity == config::Severity::error; });
}

const ChildSpec* Plan::child_spec(const std::string& profile) const {
  for (const auto& c : children)
    if (std::find(c.members.begin(), c.members.end(), profile) != c.members.end()) return &c;
  return nullptr;
}

std::string Plan::child_of(const std::string& profile) const {
  const auto* c = child_spec(profile);
  return c ? c->name : profile;
}

ChildSpec child_alone(const ProfileInput& p, const ProfileBill& b) {
  ChildSpec c;
  c.name = p.name;
  c.members = {p.name};
  c.adapters = p.adapters;
  c.bill = b.effective;
  c.host_alone = host_bytes(p);
  c.host_beside = host_part(b.effective);
  return c;
}

std::vector<ChildSpec> Plan::shared_children() const {
  std::vector<ChildSpec> out;
  std::copy_if(children.begin(), children.end(), std::back_inserter(out), [](const ChildSpec& c) { return c.shared(); });
  return out;
}

std::string share_key(const config::Profile& p) {
  // One child has one placement, chosen after grouping: the `gpu:` request stands in for it, so
  // profiles asking for different devices do not share.
  std::string k = config::fingerprint(p, config::FingerprintScope::base) + "|gpu";
  for (const auto g : p.gpu) k += "," + std::to_string(g);
  return k;
}

bool can_share(const ProfileInput& a, const ProfileInput& b) {
  if (a.shared_base == false || b.shared_base == false) return false;
  if (a.declared_gpu || b.declared_gpu) return false;  // command servers: no adapters to share by
  return a.model.path == b.model.path && a.share_key == b.share_key;
}

std::string shared_child_name(const std::vector<std::string>& members) { return join(members, "+"); }

std::map<std::string, std::uint64_t> child_host_bytes(const Plan& plan, bool gpu) {
  std::map<std::string, std::uint64_t> out;
  for (const auto& c : plan.children) out[c.name] = gpu ? c.host_beside : c.host_alone;
  return out;
}

std::vector<std::vector<std::string>> maximal_sets(const std::vector<std::vector<std::string>>& sets) {
  // Largest first (then in order), each checked against the sets kept so far only: a set inside a
  // dropped one is inside the kept one that dropped it. Sorted copies make containment linear.
  std::vector<std::vector<std::string>> sorted(sets);
  for (auto& s : sorted) std::sort(s.begin(), s.end());
  std::vector<std::size_t> order(sets.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return sets[a].size() > sets[b].size(); });
  std::vector<std::size_t> kept;
  std::vector<bool> keep(sets.size(), false);
  for (const auto i : order) {
    const bool dominated = std::any_of(kept.begin(), kept.end(), [&](std::size_t k) {
      return std::includes(sorted[k].begin(), sorted[k].end(), sorted[i].begin(), sorted[i].end());
    });
    if (dominated) continue;
    kept.push_back(i);
    keep[i] = true;
  }
  std::vector<std::vector<std::string>> out;
  for (std::size_t i = 0; i < sets.size(); ++i)
    if (keep[i]) out.push_back(sets[i]);
  return out;
}

std::string format_sets(const std::vector<std::vector<std::string>>& sets) {
  std::string s;
  for (const auto& set : sets) s += (s.empty() ? "[" : " [") + join(set, ", ") + "]";
  return s.empty() ? "none" : s;
}

namespace {

using ChildMembers = std::map<std::string, std::vector<std::string>>;  // child -> its profiles in a set

ChildMembers children_of(const Plan& plan, const std::vector<std::string>& set) {
  ChildMembers children;
  for (const auto& n : set) children[plan.child_of(n)].push_back(n);
  return children;
}

// A child's host figure (0 for a name the figures do not know: nothing priced, nothing thrown).
std::uint64_t host_of(const std::map<std::string, std::uint64_t>& host, const std::string& child) {
  const auto it = host.find(child);
  return it == host.end() ? 0 : it->second;
}

bool any_pinned(const std::vector<ProfileInput>& in, const std::vector<std::string>& names) {
  return std::any_of(in.begin(), in.end(), [&](const ProfileInput& p) {
    return p.pin && std::find(names.begin(), names.end(), p.name) != names.end();
  });
}

// One set's children for cut_to_fit: names, members, host figures and pins, in one order.
struct Kids {
  std::vector<const std::vector<std::string>*> members;
  std::vector<std::uint64_t> host;
  std::vector<bool> pinned;
  std::uint64_t pin_need = 0;
  std::vector<std::string> pins;  // the pinned children's profiles
  std::vector<std::string> names(const std::vector<std::size_t>& idx) const {
    auto v = pins;
    for (const auto i : idx) v.insert(v.end(), members[i]->begin(), members[i]->end());
    return v;
  }
};

// The largest subsets of the non-pinned children that fit beside the pins;
// without pins a child alone is always a set, even over the budget (mmap pages it in).
std::vector<std::vector<std::size_t>> largest_fitting(Plan& plan, const Kids& k, std::uint64_t budget) {
  std::vector<std::size_t> pins;
  for (std::size_t i = 0; i < k.members.size(); ++i)
    if (k.pinned[i]) pins.push_back(i);
  auto sets = search(plan, k.host, pins, budget, false, "host RAM").sets;
  for (std::size_t i = 0; i < k.members.size() && pins.empty(); ++i)
    if (std::none_of(sets.begin(), sets.end(), [&](const auto& v) { return std::find(v.begin(), v.end(), i) != v.end(); }))
      sets.push_back({i});
  std::sort(sets.begin(), sets.end(), mask_before);  // in the children's order, lone ones included
  for (auto& v : sets) std::erase_if(v, [&](std::size_t i) { return k.pinned[i]; });
  return sets;
}

// `children` cut into the largest subsets that hold every pinned child and fit `budget` by `host`.
// Pins over the budget, or a child that fits beside no pins, get a pin error (a pin is never
// stopped, so that child could never start). Without a budget, or not `largest`, the sets are the
// pins plus each other child (priced one by one).
void cut_to_fit(Plan& plan, const ChildMembers& children, const std::vector<ProfileInput>& in,
                const std::map<std::string, std::uint64_t>& host, std::optional<std::uint64_t> budget,
                bool largest, std::vector<std::vector<std::string>>& out) {
  Kids k;
  for (const auto& [c, members] : children) {
    k.members.push_back(&members);
    k.host.push_back(host_of(host, c));
    k.pinned.push_back(any_pinned(in, members));
    if (!k.pinned.back()) continue;
    k.pin_need += host_of(host, c);
    k.pins.insert(k.pins.end(), members.begin(), members.end());
  }
  const std::string where = " MiB of host RAM (layers not offloaded, CPU KV cache and buffers), budget ";
  if (budget && k.pin_need > *budget) {
    plan.diagnostics.push_back({config::Severity::error, join(k.pins, "+"), "pinned, but alone they need " +
                                    format_mib(k.pin_need) + where + format_mib(*budget) + " MiB; unpin, or lower ctx/ngl", true});
    return;
  }
  std::vector<std::vector<std::size_t>> sets;
  if (largest && budget) {
    sets = largest_fitting(plan, k, *budget);
  } else {
    for (std::size_t i = 0; i < k.members.size(); ++i)
      if (!k.pinned[i] && (!budget || k.pin_need + k.host[i] <= *budget || k.pins.empty())) sets.push_back({i});
  }
  for (std::size_t i = 0; i < k.members.size(); ++i) {
    const bool placed = k.pinned[i] || std::any_of(sets.begin(), sets.end(), [&](const auto& v) {
                          return std::find(v.begin(), v.end(), i) != v.end();
                        });
    if (placed) continue;
    plan.diagnostics.push_back({config::Severity::error, join(*k.members[i], "+"),
                                "does not fit beside the pinned " + join(k.pins, ", ") + ": together they need " +
                                    format_mib(k.pin_need + k.host[i]) + where + format_mib(budget.value_or(0)) +
                                    " MiB; unpin, or lower ctx/ngl", true});
  }
  if (sets.empty() && !k.pins.empty()) sets.push_back({});
  for (const auto& v : sets) out.push_back(k.names(v));
}

}  // namespace

void fit_host_ram(Plan& plan, const std::vector<ProfileInput>& in, std::optional<std::uint64_t> budget,
                  config::Residency residency) {
  if (!budget) return;
  const auto host = child_host_bytes(plan, true);
  std::vector<std::vector<std::string>> kept;
  bool split = false;
  for (const auto& set : plan.allowed_sets) {
    const auto children = children_of(plan, set);
    std::uint64_t need = 0;
    for (const auto& [c, members] : children) need += host_of(host, c);
    if (children.size() < 2 || need <= *budget) {
      kept.push_back(set);
      continue;
    }
    const std::string sums = "alive together they need " + format_mib(need) +
                             " MiB of host RAM (layers not offloaded, CPU KV cache and buffers), budget " +
                             format_mib(*budget) + " MiB";
    if (residency == config::Residency::co_resident) {
      plan.diagnostics.push_back({config::Severity::warning, join(set, "+"), "residency: co-resident, but " + sums + "; the system may swap"});
      kept.push_back(set);
      continue;
    }
    const bool pins = any_pinned(in, set);
    plan.diagnostics.push_back({config::Severity::warning, join(set, "+"), sums + (pins ? ": the others rotate beside the pins" : ": they rotate instead")});
    cut_to_fit(plan, children, in, host, budget, true, kept);  // the largest groups that fit take turns
    split = true;
  }
  plan.allowed_sets = maximal_sets(kept);
  if (split && plan.allowed_sets.size() > 1) plan.mode = Mode::rotate;
}

void fit_sets_to_host_ram(Plan& plan, const std::vector<ProfileInput>& in, std::optional<std::uint64_t> budget,
                          bool largest) {
  const auto host = child_host_bytes(plan, false);
  std::vector<std::vector<std::string>> kept;
  for (const auto& set : plan.allowed_sets) cut_to_fit(plan, children_of(plan, set), in, host, budget, largest, kept);
  plan.allowed_sets = maximal_sets(kept);
  if (plan.allowed_sets.size() > 1) plan.mode = Mode::rotate;
}

Plan make_plan(const std::vector<ProfileInput>& in, const PlanOptions& opt) {
  Plan plan;
  plan.budget = opt.budget;
  for (const auto& p : in) {
    plan.profiles.push_back(price_profile(p, opt));
    if (!plan.profiles.back().fits_alone)
      plan.diagnostics.push_back({config::Severity::error, p.name, refusal(plan.profiles.back(), opt.budget)});
  }
  // Shared-base grouping applies whatever the residency (unless a profile opts out): one child
  // serving several profiles is never worse than rotating children of the same base.
  auto children = form_children(in, plan.profiles, true);
  const auto price = [&] {
    for (auto& u : children) finish(u, in, plan.profiles, opt.overhead);
  };
  price();
  const bool group_too_big = std::any_of(children.begin(), children.end(), [&](const ChildSpec& u) {
    return u.members.size() > 1 && u.bill.total_gpu() > opt.budget;
  });
  if (group_too_big) {  // every adapter at once does not fit: separate children instead
    plan.diagnostics.push_back({config::Severity::warning, "shared-base",
                                "the shared base with every adapter loaded does not fit; profiles keep separate children"});
    children = form_children(in, plan.profiles, false);
    price();
  }
  decide_mode(plan, children, opt);
  const bool pinned = std::any_of(in.begin(), in.end(), [](const ProfileInput& p) { return p.pin; });
  if (pinned && plan.mode != Mode::co_resident && plan.allowed_sets.size() > 1) pinned_sets(children, in, opt.budget, opt.residency != config::Residency::rotate, plan);
  warn_headroom(plan, children);
  plan.children = std::move(children);
  return plan;
}

}  // namespace kevlaya::ledger
