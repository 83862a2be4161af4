// Sequential verdicts: measure in stages and stop as soon as the decision is clear. At each look
// the runs taken so far are compared with the run as the block (compare_runs), at a significance
// of its own: the alpha the spending function releases between the previous look and this one,
// so that all looks together spend no more than the rule's significance (docs/loop.md,
// "Sequential verdicts"). A look stops in either direction: clearly faster (accepted), clearly
// slower, or clearly no gain (below min_speedup at the look's confidence, or below the target
// speedup at the futility's); otherwise more runs, until the last look, where what is not clearly
// faster is rejected.
#pragma once

#include "evaluate/acceptance.hpp"
#include "evaluate/stats.hpp"

#include <string>
#include <vector>

namespace optimas::evaluate {

// How the alpha is spent over the looks, by the fraction t of the largest number of runs taken:
// O'Brien-Fleming (Lan-DeMets), 2 - 2 Phi(z_{1-alpha/2} / sqrt t), keeps the early looks strict
// and nearly all alpha for the last; Pocock, alpha ln(1 + (e - 1) t), spends it evenly, so that
// three runs a side can decide (the default; docs/loop.md says what bench_verdict found).
enum class Spending { obrien_fleming, pocock };

struct SequentialPlan {
  std::vector<int> looks; // runs a side at each look, increasing, the first at least 2
  // The chance of a wrong "faster" or "slower" over all looks (Bonferroni over configurations and
  // iterations is the caller's), and how it is spent.
  double significance = k_default_significance;
  Spending spending = Spending::pocock;
  double min_speedup = 1.01; // faster: the interval lies above it
  // The gain the rule is built to find, and the chance over all looks of dismissing a variant
  // that has it as "no gain" (0: never before the last look, unless below min_speedup).
  double target_speedup = 1.05;
  double futility = 0.1;
  Spending futility_spending = Spending::pocock;
};

// Looks at `first` runs a side, then about 1.5 times as many each time, the last at `most`:
// 3, 5, 8, 12, 18, ... A look costs nothing but alpha, and each adds a chance to stop early.
std::vector<int> default_looks(int first, int most);

// The alpha spent up to the fraction `t` in (0, 1] of the runs.
double alpha_spent(Spending spending, double significance, double t);

// The significance of look `look` (0-based): what the spending releases since the look before.
// By Bonferroni over the looks the chance of any wrong stop is at most plan.significance, whatever
// the correlation of the looks (the exact boundaries assume known variances, which three runs do
// not give).
double look_significance(const SequentialPlan& plan, std::size_t look);

// The futility spent at look `look`: a variant of target_speedup is called "no gain" there at most
// this often.
double look_futility(const SequentialPlan& plan, std::size_t look);

// Checks a plan: looks increasing from at least 2 runs, significance in (0, 1), futility in
// [0, 0.5), 1 <= min_speedup <= target_speedup. Returns what is wrong, or "".
std::string plan_error(const SequentialPlan& plan);

enum class Call { more, faster, slower, no_gain, inconclusive };
std::string call_name(Call c); // "more runs", "faster", "slower", "no gain", "inconclusive"

struct LookResult {
  Call call = Call::more;
  Comparison comparison; // at this look's significance, its interval at 1 - that significance
  double significance = 0;
  double futility = 0;
  double futility_high = 0; // the one-sided upper bound of the speedup at 1 - futility
  std::string reason;
};

// Look `look` of the plan with every run taken so far (per run, its hot-kernel launches' durations;
// plan.looks[look] a side is expected, more are used as given). `config` names the configuration
// in the reason.
LookResult judge_look(const std::vector<std::vector<double>>& base, const std::vector<std::vector<double>>& variant,
                      const SequentialPlan& plan, std::size_t look, const std::string& config);

// The sequential rule's last word on a variant. `look` is the primary configuration's last look
// (on each run's time in the hot kernels), `whole` the judgements on whole runs (the traced time
// of every kernel, as the fixed rule compares): the primary configuration's on the same runs, and
// each other measured configuration's screening. Accepted only when the look says faster, the
// primary configuration's whole runs agree (their speedup estimate at least min_speedup: work
// moved out of the hot kernels into others is no gain), no printed time is suspicious and no
// configuration is slower.
Decision sequential_decision(const LookResult& look, const std::vector<ConfigJudgement>& whole,
                             const std::string& primary, double min_speedup);

} // namespace optimas::evaluate
