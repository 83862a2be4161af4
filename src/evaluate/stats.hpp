// Statistics for comparing two sets of timings: medians, a bootstrap confidence interval of
// the speedup and an exact rank test, so a verdict rests on more than one number.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace optimas::evaluate {

inline constexpr double k_default_confidence = 0.95;
inline constexpr double k_default_significance = 0.05;

struct StatsOptions {
  double confidence = k_default_confidence;     // of the bootstrap interval
  double significance = k_default_significance; // p-value below which a change is significant
  int resamples = 10000;                        // bootstrap resamples
  std::uint64_t seed = 1;                       // the interval is reproducible
};

enum class Verdict { faster, slower, no_change };
std::string verdict_name(Verdict v); // "faster", "slower", "no significant change"

struct Comparison {
  std::size_t n_base = 0, n_variant = 0;
  double base_median = 0, variant_median = 0;
  double speedup = 1;             // base_median / variant_median
  double ci_low = 1, ci_high = 1; // bootstrap percentile interval of the speedup
  double p_value = 1;             // two-sided Mann-Whitney U test
  Verdict verdict = Verdict::no_change;
};

double median(std::vector<double> values);

// Two-sided p-value of the Mann-Whitney U test; exact (all rank assignments) up to 20 values
// in total, normal approximation with tie correction above.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);

// Faster when significant and the whole interval lies above 1, slower when significant and it
// lies below 1; otherwise no significant change. Times: lower is better.
Comparison compare(const std::vector<double>& base, const std::vector<double>& variant,
                   const StatsOptions& options = {});

struct Interval {
  double low = 0, high = 0;
};

// Bootstrap interval of median(base) - median(variant): how much time a variant saves.
Interval median_difference_interval(const std::vector<double>& base, const std::vector<double>& variant,
                                    const StatsOptions& options = {});

// Geometric mean of speedups (the summary across input configurations).
double geometric_mean(const std::vector<double>& values);

// Distributions for the tests on runs: Student's t with `df` (> 0, not necessarily whole)
// degrees of freedom, its quantile, and the standard normal's quantile. p in (0, 1).
double student_t_cdf(double t, double df);
double student_t_quantile(double p, double df);
double normal_quantile(double p);

// One run's time per launch: the mean of its launches' durations with the slowest and fastest
// 10% left out, so that the first launch's cold caches or a launch preempted by another context
// do not decide the run; with fewer than 10 launches, their plain mean.
double run_summary(std::vector<double> launches);

// One run's time in its hot kernels from their launches (`kernels`: per kernel, its launches'
// durations): per kernel, run_summary times its number of launches. A variant that launches a
// kernel fewer times with more work each is compared on the time it takes in all; no launches
// of a kernel add nothing.
double hot_time(const std::vector<std::vector<double>>& kernels);

// Per-launch samples with the run as the block: `base` and `variant` hold, per run, the durations
// of its hot-kernel launches (a whole-run sample is a run of one value). Launches of one run
// share its clocks, caches and placement, so they are not independent samples: each run becomes
// one value, run_summary, and the runs are compared on the logarithms by Yuen's test, Welch's t
// test on means without each side's lowest and highest fifth of runs (none under five runs), so a
// run hit as a whole does not decide (docs/loop.md, "Per-launch samples"). speedup = the ratio of
// the two trimmed geometric means, held in base_median and variant_median; the interval at
// `options.confidence` and the two-sided p-value are the test's. Fewer than two runs a side give
// p = 1 and an interval of [0, inf). Verdict as compare's.
Comparison compare_runs(const std::vector<std::vector<double>>& base, const std::vector<std::vector<double>>& variant,
                        const StatsOptions& options = {});

} // namespace optimas::evaluate
