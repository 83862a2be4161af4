// When a measured variant counts as faster. A wrong "faster" is the worst result Optimas can
// report, so the rule asks for more than one significant test (docs/loop.md, "Acceptance"):
//   1. screening: on the primary configuration the variant is faster at the corrected
//      significance (Bonferroni over configurations x iterations) with its speedup estimate at
//      least min_speedup; it is slower on no configuration; its printed time is credible;
//   2. confirmation: a round of fresh interleaved runs of the primary configuration agrees (its
//      own speedup estimate is at least min_speedup, and on their own the fresh runs are faster
//      at the family's significance, one-sided), and all runs together are
//      faster at the corrected significance with their interval above min_speedup.
// bench/bench_acceptance runs the rule on simulated A/A and A/B comparisons and prints its
// false-accept rate and power.
#pragma once

#include "evaluate/stats.hpp"

#include <optional>
#include <string>
#include <vector>

namespace optimas::evaluate {

inline constexpr double k_default_min_speedup = 1.01;

struct AcceptanceRule {
  double significance = k_default_significance; // for the whole family of tests
  double confidence = k_default_confidence;     // of the speedup's interval
  double min_speedup = k_default_min_speedup;   // the pooled interval must lie above it
  int comparisons = 1;                          // tests in the family: measured configs x iterations
  bool confirm = true;                          // ask fresh runs to agree before accepting
  int resamples = 10000;                        // bootstrap resamples per interval

  double corrected_significance() const { return significance / (comparisons < 1 ? 1 : comparisons); }
  StatsOptions stats() const;
};

// The smallest two-sided p-value the exact rank test can give with `runs` samples a side.
double smallest_p_value(int runs);

// One timed run: the process's wall time and its kernel time: the traced GPU time of its
// kernels (measure.timing trace) or what the program printed. With a trace, a printed time is
// kept beside it as `printed_ms`, the program's claim that the trace checks.
struct Sample {
  double wall_ms = 0;
  std::optional<double> kernel_ms;
  std::optional<double> printed_ms;
};

// One configuration's comparison: of kernel times when `kernel_time`, else of wall times.
struct Judgement {
  Comparison comparison;
  std::optional<std::string> suspicious; // why the printed time is not credible
  Interval overhead_growth;              // of the time outside the kernels, variant minus baseline (ms)
};

// Compares the samples at the rule's corrected significance. A printed time is the program's
// claim: the time outside the kernels (wall minus printed time, per run, which cancels the noise
// both share) must not grow by what the kernels claim to save, and no run may print more kernel
// time than its process ran. Where every sample has a printed time beside a traced one, the
// printed saving may not exceed the traced saving by more than half of it (and 2 points). The
// rules themselves are evaluate/verdict.hpp's.
Judgement judge(const std::vector<Sample>& base, const std::vector<Sample>& variant, bool kernel_time,
                const AcceptanceRule& rule);

enum class Stage { rejected, confirm, accepted };

struct Decision {
  Stage stage = Stage::rejected;
  std::string reason;
};

struct ConfigJudgement {
  std::string config;
  Judgement judgement;
};

// After the screening rounds of every measured configuration (`primary` first is not required).
// Accepted directly only when confirmation is off and the interval lies above min_speedup.
Decision screen(const std::vector<ConfigJudgement>& configs, const std::string& primary, const AcceptanceRule& rule);

// After the confirmation round: `fresh` compares the fresh runs alone, `pooled` all runs of the
// primary configuration.
Decision confirm(const Judgement& fresh, const Judgement& pooled, const std::string& primary,
                 const AcceptanceRule& rule);

} // namespace optimas::evaluate
