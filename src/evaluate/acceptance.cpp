#include "evaluate/acceptance.hpp"

#include "evaluate/verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace optimas::evaluate {

StatsOptions AcceptanceRule::stats() const {
  StatsOptions o;
  o.confidence = confidence;
  o.significance = corrected_significance();
  o.resamples = resamples;
  return o;
}

double smallest_p_value(int runs) {
  // Two-sided exact test, all of one side below all of the other: 2 / C(2n, n).
  double c = 1;
  for (int k = 1; k <= runs; ++k) c = c * (runs + k) / k;
  return 2.0 / c;
}

Judgement judge(const std::vector<Sample>& base, const std::vector<Sample>& variant, bool kernel_time,
                const AcceptanceRule& rule) {
  auto times = [&](const std::vector<Sample>& s) {
    std::vector<double> out;
    for (const auto& x : s) out.push_back(kernel_time ? x.kernel_ms.value_or(0) : x.wall_ms);
    return out;
  };
  const StatsOptions so = rule.stats();
  Judgement j;
  j.comparison = compare(times(base), times(variant), so);
  if (!kernel_time) return j;

  for (const auto& s : variant)
    if (auto why = kernel_time_exceeds_process(s.kernel_ms.value_or(0), s.wall_ms)) j.suspicious = why;
  auto outside = [](const std::vector<Sample>& s) {
    std::vector<double> out;
    for (const auto& x : s) out.push_back(x.wall_ms - x.kernel_ms.value_or(0));
    return out;
  };
  const Comparison& c = j.comparison;
  double claimed = c.base_median - c.variant_median;
  // The time outside the kernels must not grow by what the kernels claim to save.
  j.overhead_growth = median_difference_interval(outside(variant), outside(base), so);
  double growth = median(outside(variant)) - median(outside(base));
  if (c.verdict == Verdict::faster)
    if (auto why = overhead_absorbs_saving(claimed, growth, j.overhead_growth.low, rule.confidence)) j.suspicious = why;
  auto printed = [](const std::vector<Sample>& s) {
    std::vector<double> out;
    for (const auto& x : s)
      if (x.printed_ms) out.push_back(*x.printed_ms);
    return out;
  };
  auto pb = printed(base), pv = printed(variant);
  if (c.verdict == Verdict::faster && !pb.empty() && pb.size() == base.size() && pv.size() == variant.size() &&
      median(pv) > 0) {
    if (auto why = printed_exceeds_traced(median(pb) / median(pv), c.speedup)) j.suspicious = why;
  }
  return j;
}

namespace {

std::string describe(const Comparison& c) {
  return fmt::format("{:.3f}x [{:.3f}, {:.3f}], p = {:.3g}", c.speedup, c.ci_low, c.ci_high, c.p_value);
}

} // namespace

Decision screen(const std::vector<ConfigJudgement>& configs, const std::string& primary, const AcceptanceRule& rule) {
  std::vector<std::string> suspicious, slower;
  const Judgement* p = nullptr;
  for (const auto& c : configs) {
    if (c.config == primary) p = &c.judgement;
    if (c.judgement.suspicious) suspicious.push_back(c.config + ": " + *c.judgement.suspicious);
    if (c.judgement.comparison.verdict == Verdict::slower) slower.push_back(c.config);
  }
  if (!p) return {Stage::rejected, "the primary configuration " + primary + " was not measured"};
  const Comparison& pc = p->comparison;
  std::string level = fmt::format("p < {:.3g}", rule.corrected_significance());
  if (!suspicious.empty()) {
    std::string all;
    for (const auto& s : suspicious) all += (all.empty() ? "" : "; ") + s;
    return {Stage::rejected, "the reported time is not credible (" + all + ")"};
  }
  if (pc.verdict != Verdict::faster) {
    // Significant but not faster: the interval reaches across 1 (a rank test and a bootstrap
    // interval can disagree on a few noisy runs); say which of the two conditions failed.
    bool significant = pc.p_value < rule.corrected_significance();
    std::string needs = significant && pc.verdict == Verdict::no_change ? "the whole interval above 1" : level;
    return {Stage::rejected,
            fmt::format("{} on {} ({}; faster needs {})", verdict_name(pc.verdict), primary, describe(pc), needs)};
  }
  if (!slower.empty()) {
    std::string all;
    for (const auto& s : slower) all += (all.empty() ? "" : ", ") + s;
    return {Stage::rejected, "faster on " + primary + " but slower on " + all};
  }
  if (pc.speedup < rule.min_speedup)
    return {Stage::rejected, fmt::format("faster on {} by less than measure.min_speedup {:.3g} ({})", primary,
                                         rule.min_speedup, describe(pc))};
  if (rule.confirm) return {Stage::confirm, fmt::format("faster on {} ({}); confirming", primary, describe(pc))};
  if (pc.ci_low < rule.min_speedup)
    return {Stage::rejected, fmt::format("faster on {}, but the interval reaches below measure.min_speedup {:.3g} ({})",
                                         primary, rule.min_speedup, describe(pc))};
  return {Stage::accepted,
          fmt::format("{:.3f}x faster on {} [{:.3f}, {:.3f}]", pc.speedup, primary, pc.ci_low, pc.ci_high)};
}

Decision confirm(const Judgement& fresh, const Judgement& pooled, const std::string& primary,
                 const AcceptanceRule& rule) {
  if (fresh.suspicious) return {Stage::rejected, "the reported time is not credible (" + *fresh.suspicious + ")"};
  if (pooled.suspicious) return {Stage::rejected, "the reported time is not credible (" + *pooled.suspicious + ")"};
  const Comparison& f = fresh.comparison;
  const Comparison& all = pooled.comparison;
  if (f.speedup < rule.min_speedup)
    return {Stage::rejected,
            fmt::format("not confirmed: fresh runs on {} show {:.3f}x, below measure.min_speedup {:.3g} "
                        "({})",
                        primary, f.speedup, rule.min_speedup, describe(f))};
  // The fresh rounds replicate the screening on their own: one test, its direction known, so
  // one-sided at the family's significance (half the two-sided p; the estimate above says which
  // side). Their estimate alone let about half of the chance screenings through.
  if (!(f.p_value / 2 < rule.significance))
    return {Stage::rejected,
            fmt::format("not confirmed: fresh runs on {} are not faster on their own (one-sided p = {:.3g}, needs "
                        "p < {:.3g}; {})",
                        primary, f.p_value / 2, rule.significance, describe(f))};
  if (all.verdict != Verdict::faster)
    return {Stage::rejected, fmt::format("not confirmed: all runs on {} together show {} ({})", primary,
                                         verdict_name(all.verdict), describe(all))};
  if (all.ci_low < rule.min_speedup)
    return {Stage::rejected, fmt::format("not confirmed: the interval of all runs on {} reaches below "
                                         "measure.min_speedup {:.3g} ({})",
                                         primary, rule.min_speedup, describe(all))};
  return {Stage::accepted, fmt::format("{:.3f}x faster on {} [{:.3f}, {:.3f}], confirmed by fresh runs ({})",
                                       all.speedup, primary, all.ci_low, all.ci_high, describe(f))};
}

} // namespace optimas::evaluate
