#include "evaluate/sequential.hpp"

#include "util/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace optimas::evaluate {

std::vector<int> default_looks(int first, int most) {
  std::vector<int> looks;
  for (int n = std::max(first, 2); n < most; n = std::max(n + 1, static_cast<int>(std::lround(n * 1.5))))
    looks.push_back(n);
  // A last step of less than a quarter more runs would spend alpha on little new evidence.
  if (!looks.empty() && looks.back() * 5 > most * 4) looks.pop_back();
  looks.push_back(std::max(most, 2));
  return looks;
}

double alpha_spent(Spending spending, double significance, double t) {
  t = std::clamp(t, 0.0, 1.0);
  if (t == 0) return 0;
  if (spending == Spending::pocock) return significance * std::log(1 + (std::exp(1.0) - 1) * t);
  const double z = normal_quantile(1 - significance / 2);
  return std::erfc(z / std::sqrt(t) / std::sqrt(2.0));
}

double look_significance(const SequentialPlan& plan, std::size_t look) {
  if (look >= plan.looks.size()) throw Error(fmt::format("look {} of a plan of {}", look + 1, plan.looks.size()));
  const double most = plan.looks.back();
  const double before = look == 0 ? 0 : alpha_spent(plan.spending, plan.significance, plan.looks[look - 1] / most);
  return alpha_spent(plan.spending, plan.significance, plan.looks[look] / most) - before;
}

double look_futility(const SequentialPlan& plan, std::size_t look) {
  if (look >= plan.looks.size()) throw Error(fmt::format("look {} of a plan of {}", look + 1, plan.looks.size()));
  if (plan.futility == 0) return 0;
  const double most = plan.looks.back();
  const double before = look == 0 ? 0 : alpha_spent(plan.futility_spending, plan.futility, plan.looks[look - 1] / most);
  return alpha_spent(plan.futility_spending, plan.futility, plan.looks[look] / most) - before;
}

std::string plan_error(const SequentialPlan& plan) {
  if (plan.looks.empty()) return "a sequential plan needs at least one look";
  if (plan.looks.front() < 2) return fmt::format("the first look needs at least 2 runs a side, not {}", plan.looks[0]);
  for (std::size_t k = 1; k < plan.looks.size(); ++k)
    if (plan.looks[k] <= plan.looks[k - 1])
      return fmt::format("the looks must take more runs each time ({} after {})", plan.looks[k], plan.looks[k - 1]);
  if (!(plan.significance > 0 && plan.significance < 1))
    return fmt::format("the significance must lie between 0 and 1, not {}", plan.significance);
  if (!(plan.futility >= 0 && plan.futility < 0.5))
    return fmt::format("the futility must lie in [0, 0.5), not {}", plan.futility);
  if (!(plan.min_speedup >= 1)) return fmt::format("min_speedup must be at least 1, not {}", plan.min_speedup);
  if (!(plan.target_speedup >= plan.min_speedup))
    return fmt::format("the target speedup {} lies below min_speedup {}", plan.target_speedup, plan.min_speedup);
  return "";
}

std::string call_name(Call c) {
  switch (c) {
  case Call::more:
    return "more runs";
  case Call::faster:
    return "faster";
  case Call::slower:
    return "slower";
  case Call::no_gain:
    return "no gain";
  case Call::inconclusive:
    return "inconclusive";
  }
  return "inconclusive";
}

LookResult judge_look(const std::vector<std::vector<double>>& base, const std::vector<std::vector<double>>& variant,
                      const SequentialPlan& plan, std::size_t look, const std::string& config) {
  if (auto why = plan_error(plan); !why.empty()) throw Error(why);
  LookResult r;
  r.significance = look_significance(plan, look);
  // The interval at 1 - this look's significance: it excludes 1 exactly when the test rejects,
  // so "faster" and "slower" need both, and "no gain" is the same confidence turned the other way.
  StatsOptions o;
  o.significance = r.significance;
  o.confidence = 1 - r.significance;
  r.comparison = compare_runs(base, variant, o);
  const Comparison& c = r.comparison;
  // Futility: the upper end of the two-sided interval at 1 - 2 beta is the one-sided bound at
  // 1 - beta, which a variant of target_speedup falls below with chance beta.
  r.futility = look_futility(plan, look);
  r.futility_high = INFINITY;
  if (r.futility > 0) {
    StatsOptions f;
    f.confidence = 1 - 2 * r.futility;
    r.futility_high = compare_runs(base, variant, f).ci_high;
  }
  const std::string where =
      fmt::format("{} after {} run(s) a side (look {}/{}, {:.3f}x [{:.3f}, {:.3f}] at p < {:.3g})", config, c.n_base,
                  look + 1, plan.looks.size(), c.speedup, c.ci_low, c.ci_high, r.significance);
  const bool last = look + 1 == plan.looks.size();
  if (c.ci_low > plan.min_speedup) {
    r.call = Call::faster;
    r.reason = fmt::format("faster on {}", where);
  } else if (c.ci_high < 1) {
    r.call = Call::slower;
    r.reason = fmt::format("slower on {}", where);
  } else if (c.ci_high < plan.min_speedup) {
    r.call = Call::no_gain;
    r.reason = fmt::format("no gain of measure.min_speedup {:.3g} on {}", plan.min_speedup, where);
  } else if (r.futility_high < plan.target_speedup) {
    r.call = Call::no_gain;
    r.reason = fmt::format("no gain of {:.3g} on {}: at most {:.3f}x at {:.3g}% confidence", plan.target_speedup, where,
                           r.futility_high, 100 * (1 - r.futility));
  } else if (last) {
    r.call = Call::inconclusive;
    r.reason = fmt::format("not clearly faster than measure.min_speedup {:.3g} on {}", plan.min_speedup, where);
  } else {
    r.reason = fmt::format("undecided on {}", where);
  }
  return r;
}

Decision sequential_decision(const LookResult& look, const std::vector<ConfigJudgement>& whole,
                             const std::string& primary, double min_speedup) {
  if (look.call != Call::faster) return {Stage::rejected, look.reason};
  std::vector<std::string> suspicious, slower;
  const Judgement* p = nullptr;
  for (const auto& c : whole) {
    if (c.config == primary) p = &c.judgement;
    if (c.judgement.suspicious) suspicious.push_back(c.config + ": " + *c.judgement.suspicious);
    if (c.judgement.comparison.verdict == Verdict::slower) slower.push_back(c.config);
  }
  auto joined = [](const std::vector<std::string>& v, const char* sep) {
    std::string all;
    for (const auto& s : v) all += (all.empty() ? "" : sep) + s;
    return all;
  };
  if (!p) return {Stage::rejected, "the whole runs of the primary configuration " + primary + " were not judged"};
  if (!suspicious.empty())
    return {Stage::rejected, "the reported time is not credible (" + joined(suspicious, "; ") + ")"};
  if (p->comparison.speedup < min_speedup)
    return {Stage::rejected,
            fmt::format("{}, but the whole runs' kernel time shows {:.3f}x, below measure.min_speedup {:.3g}: the "
                        "time saved in the hot kernels went elsewhere",
                        look.reason, p->comparison.speedup, min_speedup)};
  if (!slower.empty()) return {Stage::rejected, look.reason + ", but slower on " + joined(slower, ", ")};
  const Comparison& c = look.comparison;
  return {Stage::accepted, fmt::format("{:.3f}x faster on {} [{:.3f}, {:.3f}] after {} run(s) a side (sequential; "
                                       "whole runs {:.3f}x)",
                                       c.speedup, primary, c.ci_low, c.ci_high, c.n_base, p->comparison.speedup)};
}

} // namespace optimas::evaluate
