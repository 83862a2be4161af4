#include "analysis/application.hpp"

#include "analysis/diagnostics.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace optimas::analysis {

namespace {

std::string pct(double share) {
  return fmt::format("{:.0f}%", 100 * share);
}

std::string count_text(std::uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "synchronous device-to-host copy of 4 B" -> "synchronous device-to-host copies of 4 B".
std::string plural(std::string label, std::uint64_t n) {
  if (n == 1) return label;
  for (auto [one, many] : {std::pair{" copy of ", " copies of "}, std::pair{"memset of ", "memsets of "}})
    if (auto at = label.find(one); at != std::string::npos) return label.replace(at, std::string(one).size(), many);
  return label;
}

bool is_transfer(const std::string& label) {
  return label.find(" copy of ") != std::string::npos || label.rfind("memset of ", 0) == 0;
}

std::string overview_text(const profile::Timeline& t) {
  std::string s =
      fmt::format("GPU idle {} of the run ({} wall; GPU busy {}: kernels {}, copies {}", pct(1 - t.busy_fraction()),
                  time_text(t.wall_ns), time_text(t.busy_ns), time_text(t.kernel_ns), time_text(t.transfer_ns));
  if (t.memsets) s += fmt::format(", memsets {}", time_text(t.memset_ns));
  s += fmt::format("). Of the idle time, {} lies in {} host gaps between GPU work, {} before the first GPU work "
                   "(CUDA's start-up among it) and {} after the last.",
                   time_text(t.gap_ns()), count_text(t.gaps), time_text(t.before_first_ns), time_text(t.after_last_ns));
  std::vector<std::string> calls;
  for (std::size_t i = 0; i < t.calls.size() && i < 4; ++i)
    calls.push_back(
        fmt::format("{} x{} ({})", t.calls[i].name, count_text(t.calls[i].count), time_text(t.calls[i].ns)));
  if (!calls.empty()) s += " The host blocked in " + util::join(calls, ", ") + ".";
  if (t.ended_early) s += " The trace ended early (measure.end_after_kernels): the run's end is not in it.";
  return s;
}

// What makes a recurring gap: a copy or memset that follows a kernel, each launch or some of them.
std::string gap_cause(const profile::Timeline& t, const profile::GapGroup& g) {
  if (!is_transfer(g.before) || g.kernel_before.empty()) return {};
  const profile::Follow* f = t.follow(g.before, g.kernel_before);
  if (!f) return {};
  std::string each = f->count == f->kernel_launches
                         ? fmt::format("one after each launch of {}", f->kernel)
                         : fmt::format("after {} of the {} launches of {}", count_text(f->count),
                                       count_text(f->kernel_launches), f->kernel);
  return fmt::format(": {} {}, {}", count_text(f->count), plural(g.before, f->count), each);
}

std::string gap_text(const profile::Timeline& t, const profile::GapGroup& g) {
  return fmt::format("GPU idle {} of the run in {} host gaps ({} each on average, the largest {}), each after {}, "
                     "before the next {}{}",
                     pct(g.total_ns / t.wall_ns), count_text(g.count), time_text(g.total_ns / double(g.count)),
                     time_text(g.largest_ns), g.before, g.after, gap_cause(t, g));
}

} // namespace

std::string time_text(double ns) {
  if (!std::isfinite(ns)) return "n/a";
  if (ns >= 1e9) return fmt::format("{:.3g} s", ns / 1e9);
  if (ns >= 1e6) return fmt::format("{:.3g} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.3g} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

std::string traffic_text(const profile::Traffic& d) {
  const bool set = d.direction == "set";
  std::string what = set ? (d.count == 1 ? "memset" : "memsets")
                         : profile::direction_words(d.direction) + (d.count == 1 ? " copy" : " copies");
  const double rate = d.ns > 0 ? static_cast<double>(d.bytes) / (d.ns / 1e9) : 0;
  return fmt::format("{} {}, {} in {} ({}/s); {} synchronous (the host waited), {} to or from pageable memory; {} of "
                     "it with no kernel running",
                     count_text(d.count), what, profile::bytes_text(d.bytes), time_text(d.ns),
                     profile::bytes_text(static_cast<std::uint64_t>(rate)), count_text(d.synchronous),
                     count_text(d.pageable), time_text(d.exposed_ns));
}

double application_headroom(const profile::Timeline& t) {
  return t.wall_ns > 0 ? std::max(0.0, 1 - t.kernel_ns / t.wall_ns) : 0;
}

std::vector<std::string> application_calls(const profile::Timeline& t) {
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  if (t.copies) add("cudaMemcpy");
  if (t.memsets) add("cudaMemset");
  for (const auto& c : t.calls) add(c.name);
  return out;
}

std::vector<Evidence> application_evidence(const profile::Timeline& t) {
  std::vector<Evidence> out;
  if (!(t.wall_ns > 0)) return out;
  auto add = [&](std::string text, double saved, const std::string& if_what, const std::string& assumes) {
    Evidence e{fmt::format("AP{}", out.size() + 1), "application", "", std::move(text)};
    set_gain(e, saved, if_what, "the wall time", assumes);
    out.push_back(std::move(e));
  };
  const std::string same_gpu = "the GPU's own work stays as it is";
  add(overview_text(t), t.gap_ns() / t.wall_ns, "the host work between GPU work overlapped it",
      same_gpu + ", and the start-up and the end are not shortened");
  std::size_t shown = 0;
  bool largest_shown = false;
  for (const auto& g : t.groups) {
    if (shown == k_max_gap_items || g.count < 2 || g.total_ns < k_min_wall_share * t.wall_ns) continue;
    add(gap_text(t, g), g.total_ns / t.wall_ns, "these gaps were gone (their host work overlapped the GPU's)",
        same_gpu);
    ++shown;
    largest_shown = largest_shown || (t.largest && t.largest->before == g.before && t.largest->after == g.after &&
                                      t.largest->kernel_before == g.kernel_before);
  }
  if (t.largest && !largest_shown && t.largest->largest_ns >= k_min_wall_share * t.wall_ns)
    add(fmt::format("The largest host gap: the GPU idle {} ({} of the run), {} into the run, after {}, before the "
                    "next {}",
                    time_text(t.largest->largest_ns), pct(t.largest->largest_ns / t.wall_ns),
                    time_text(t.largest->at_ns), t.largest->before, t.largest->after),
        t.largest->largest_ns / t.wall_ns, "this gap were gone", same_gpu);
  for (const auto& d : t.traffic)
    if (d.ns >= k_min_wall_share * t.wall_ns)
      add(traffic_text(d), d.exposed_ns / t.wall_ns,
          d.direction == "set" ? "these memsets ran under kernels" : "these copies ran under kernels",
          "they can overlap kernels (asynchronous, from pinned memory, on another stream) or be avoided, and the "
          "kernels stay as they are");
  return out;
}

} // namespace optimas::analysis
