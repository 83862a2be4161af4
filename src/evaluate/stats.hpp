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

} // namespace optimas::evaluate
