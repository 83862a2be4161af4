#include "evaluate/stats.hpp"

#include "util/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

using namespace optimas::evaluate;

namespace {

// The two-sided exact Mann-Whitney p-value by brute force, written independently of the engine:
// every way of splitting the pooled values into groups of |a| and |b|, counted by its U statistic
// (pairs where the first group's value is larger, ties counting one half).
double brute_force_p(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> pooled = a;
  pooled.insert(pooled.end(), b.begin(), b.end());
  const std::size_t n = pooled.size(), k = a.size();
  auto u_of = [&](std::uint32_t mask) {
    double u = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if ((mask >> i & 1u) && !(mask >> j & 1u))
          u += pooled[i] > pooled[j] ? 1.0 : pooled[i] == pooled[j] ? 0.5 : 0.0;
    return u;
  };
  const double centre = static_cast<double>(a.size() * b.size()) / 2.0;
  const double observed = std::abs(u_of((1u << k) - 1) - centre);
  std::uint64_t total = 0, extreme = 0;
  for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (static_cast<std::size_t>(__builtin_popcount(mask)) != k) continue;
    ++total;
    if (std::abs(u_of(mask) - centre) >= observed - 1e-9) ++extreme;
  }
  return static_cast<double>(extreme) / static_cast<double>(total);
}

std::vector<double> around(double centre, int n, double spread) {
  // Deterministic "noise": evenly spread values around the centre, in a shuffled order.
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(centre + spread * (((i * 7) % n) / static_cast<double>(n - 1) - 0.5));
  return out;
}

} // namespace

TEST(Stats, MedianOddAndEven) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({5}), 5);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({10, -2}), 4);
  EXPECT_THROW(median({}), optimas::Error);
}

TEST(Stats, MannWhitneyExactKnownValues) {
  // Completely separated samples: only the two extreme splits are as extreme, 2 / C(n, k).
  EXPECT_NEAR(mann_whitney_p({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 2.0 / 252.0, 1e-12);
  EXPECT_NEAR(mann_whitney_p({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}), 2.0 / 252.0, 1e-12);
  EXPECT_NEAR(mann_whitney_p({1, 2, 3}, {4, 5, 6, 7}), 2.0 / 35.0, 1e-12);
  // 20 values in all is still exact: 2 / C(20, 10).
  std::vector<double> low, high;
  for (int i = 0; i < 10; ++i) {
    low.push_back(i);
    high.push_back(100 + i);
  }
  EXPECT_NEAR(mann_whitney_p(low, high), 2.0 / 184756.0, 1e-15);
  // Identical samples are as unremarkable as can be.
  EXPECT_DOUBLE_EQ(mann_whitney_p({1, 2, 3, 4}, {1, 2, 3, 4}), 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_p({2, 2, 2}, {2, 2, 2}), 1.0);
  // No samples on a side: nothing to test.
  EXPECT_DOUBLE_EQ(mann_whitney_p({}, {1, 2}), 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_p({1, 2}, {}), 1.0);
}

TEST(Stats, MannWhitneyExactMatchesBruteForce) {
  const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases = {
      {{1, 2, 2, 3}, {2, 3, 3, 4}},                      // ties across the samples
      {{1.0, 1.0, 1.5, 2.0, 7.0}, {1.0, 2.0, 2.0, 9.0}}, // ties, unequal sizes
      {{0.9, 1.1, 1.0, 1.2, 0.95}, {1.05, 1.3, 1.25, 1.15, 1.4, 1.35}},
      {{3, 1, 4, 1, 5, 9, 2, 6}, {5, 3, 5, 8, 9, 7, 9, 3, 2, 3}},
      {{1}, {2}},
  };
  for (const auto& [a, b] : cases) {
    double expected = brute_force_p(a, b);
    EXPECT_NEAR(mann_whitney_p(a, b), expected, 1e-12) << "sizes " << a.size() << " and " << b.size();
    EXPECT_NEAR(mann_whitney_p(b, a), expected, 1e-12);
  }
}

TEST(Stats, MannWhitneyNormalApproximationAboveTwentyValues) {
  // 11 vs 11, completely separated. Rank sum of the low group: 1 + ... + 11 = 66; its mean
  // 11 * 23 / 2 = 126.5 and variance 11 * 11 * 23 / 12 = 231.917; with the continuity correction
  // z = (60.5 - 0.5) / 15.2288 = 3.9399, two-sided p = erfc(3.9399 / sqrt 2) = 8.15e-5.
  // (The exact value would be 2 / C(22, 11) = 2.8e-6: this is the approximation.)
  std::vector<double> low, high;
  for (int i = 0; i < 11; ++i) {
    low.push_back(1 + i);
    high.push_back(50 + i);
  }
  EXPECT_NEAR(mann_whitney_p(low, high), 8.15e-5, 0.02e-5);

  // With ties: low = four 1s and seven 2s, high = four 2s and seven 3s. Mid-ranks 2.5, 10 and 19
  // give a rank sum of 4 * 2.5 + 7 * 10 = 80; tie groups of 4, 11 and 7 sum t^3 - t to 1716,
  // so the variance is 121 / 12 * (23 - 1716 / 462) = 194.46, z = (46.5 - 0.5) / 13.945 = 3.2987
  // and p = 9.71e-4. Without the tie correction it would be 1.24e-3.
  std::vector<double> a(4, 1.0), b(4, 2.0);
  a.insert(a.end(), 7, 2.0);
  b.insert(b.end(), 7, 3.0);
  EXPECT_NEAR(mann_whitney_p(a, b), 9.71e-4, 0.02e-4);

  // All values equal: the variance is zero and nothing differs.
  EXPECT_DOUBLE_EQ(mann_whitney_p(std::vector<double>(11, 4.0), std::vector<double>(12, 4.0)), 1.0);
}

TEST(Stats, ClearSpeedupIsFaster) {
  auto base = around(1.2, 10, 0.02);
  auto variant = around(1.0, 10, 0.02);
  auto c = compare(base, variant);
  EXPECT_EQ(c.verdict, Verdict::faster) << verdict_name(c.verdict);
  EXPECT_EQ(c.n_base, 10u);
  EXPECT_EQ(c.n_variant, 10u);
  EXPECT_DOUBLE_EQ(c.base_median, median(base));
  EXPECT_DOUBLE_EQ(c.variant_median, median(variant));
  EXPECT_NEAR(c.speedup, c.base_median / c.variant_median, 1e-12);
  EXPECT_NEAR(c.speedup, 1.2, 1e-9);
  EXPECT_GT(c.ci_low, 1.0);
  EXPECT_LE(c.ci_low, c.speedup);
  EXPECT_GE(c.ci_high, c.speedup);
  EXPECT_LT(c.p_value, 0.001);
}

TEST(Stats, ClearSlowdownIsSlower) {
  auto c = compare(around(1.0, 8, 0.02), around(1.25, 8, 0.02));
  EXPECT_EQ(c.verdict, Verdict::slower) << verdict_name(c.verdict);
  EXPECT_NEAR(c.speedup, 0.8, 1e-9);
  EXPECT_LT(c.ci_high, 1.0);
  EXPECT_LT(c.p_value, 0.05);
}

TEST(Stats, OverlappingNoisySamplesAreNoChange) {
  std::vector<double> base = {1.00, 1.30, 0.90, 1.20, 1.10, 0.95, 1.25};
  std::vector<double> variant = {1.05, 1.25, 0.92, 1.15, 1.00, 1.20, 0.97};
  auto c = compare(base, variant);
  EXPECT_EQ(c.verdict, Verdict::no_change) << verdict_name(c.verdict);
  EXPECT_GT(c.p_value, 0.05);
  EXPECT_LT(c.ci_low, 1.0);
  EXPECT_GT(c.ci_high, 1.0);
  // Even when the rank test is taken to be significant, an interval containing 1 is no verdict.
  StatsOptions lax;
  lax.significance = 0.999;
  auto d = compare(base, variant, lax);
  EXPECT_LT(d.p_value, lax.significance);
  EXPECT_EQ(d.verdict, Verdict::no_change) << verdict_name(d.verdict);
}

TEST(Stats, SignificanceOptionDecides) {
  // Separated 5 vs 5: p = 0.0079, significant at 0.05 but not at 0.005.
  std::vector<double> base = {1.20, 1.21, 1.22, 1.23, 1.24}, variant = {1.00, 1.01, 1.02, 1.03, 1.04};
  EXPECT_EQ(compare(base, variant).verdict, Verdict::faster);
  StatsOptions strict;
  strict.significance = 0.005;
  auto c = compare(base, variant, strict);
  EXPECT_EQ(c.verdict, Verdict::no_change);
  EXPECT_GT(c.ci_low, 1.0); // the interval alone would have said faster
}

TEST(Stats, IntervalIsReproducibleAndWidensWithConfidence) {
  std::vector<double> base = {1.00, 1.30, 0.90, 1.20, 1.10, 0.95, 1.25, 1.4};
  std::vector<double> variant = {0.85, 1.05, 0.80, 1.10, 0.90, 0.99, 0.88};
  StatsOptions options;
  options.seed = 42;
  auto first = compare(base, variant, options);
  auto again = compare(base, variant, options);
  EXPECT_EQ(first.ci_low, again.ci_low);
  EXPECT_EQ(first.ci_high, again.ci_high);
  EXPECT_LE(first.ci_low, first.speedup);
  EXPECT_GE(first.ci_high, first.speedup);

  options.seed = 43;
  auto other = compare(base, variant, options);
  EXPECT_TRUE(other.ci_low != first.ci_low || other.ci_high != first.ci_high) << "the seed has no effect";

  options.seed = 42;
  options.confidence = 0.5;
  auto narrow = compare(base, variant, options);
  options.confidence = 0.99;
  auto wide = compare(base, variant, options);
  EXPECT_LE(wide.ci_low, narrow.ci_low);
  EXPECT_GE(wide.ci_high, narrow.ci_high);
  EXPECT_LT(narrow.ci_high - narrow.ci_low, wide.ci_high - wide.ci_low);
}

TEST(Stats, CompareNeedsSamplesOnBothSides) {
  EXPECT_THROW(compare({}, {1.0}), optimas::Error);
  EXPECT_THROW(compare({1.0}, {}), optimas::Error);
  EXPECT_THROW(median_difference_interval({}, {1.0}), optimas::Error);
}

TEST(Stats, VerdictNames) {
  EXPECT_EQ(verdict_name(Verdict::faster), "faster");
  EXPECT_EQ(verdict_name(Verdict::slower), "slower");
  EXPECT_EQ(verdict_name(Verdict::no_change), "no significant change");
}

TEST(Stats, MedianDifferenceIntervalContainsTheShift) {
  std::vector<double> variant = {2.0, 2.3, 1.9, 2.2, 2.1, 1.95, 2.25, 2.05, 2.15};
  std::vector<double> base;
  for (double v : variant) base.push_back(v + 0.5);
  StatsOptions options;
  options.seed = 7;
  auto interval = median_difference_interval(base, variant, options);
  EXPECT_LE(interval.low, 0.5);
  EXPECT_GE(interval.high, 0.5);
  EXPECT_GT(interval.low, 0.0); // the saving is clearly there
  EXPECT_LT(interval.high, 1.0);
  EXPECT_LT(interval.low, interval.high);
  auto again = median_difference_interval(base, variant, options);
  EXPECT_EQ(interval.low, again.low);
  EXPECT_EQ(interval.high, again.high);
  // Reversed, the interval mirrors: the variant costs time.
  auto reversed = median_difference_interval(variant, base, options);
  EXPECT_LT(reversed.high, 0.0);
}

TEST(Stats, GeometricMean) {
  EXPECT_NEAR(geometric_mean({2, 8}), 4, 1e-12);
  EXPECT_NEAR(geometric_mean({1.5}), 1.5, 1e-12);
  EXPECT_NEAR(geometric_mean({0.5, 2, 1}), 1, 1e-12);
  EXPECT_NEAR(geometric_mean({1.1, 1.2, 1.3}), std::cbrt(1.1 * 1.2 * 1.3), 1e-12);
  EXPECT_DOUBLE_EQ(geometric_mean({}), 1.0);
}

TEST(Stats, StudentTAgainstClosedFormsAndTables) {
  // One degree of freedom is the Cauchy distribution, two have a closed form too.
  for (double t : {-30.0, -2.5, -0.3, 0.0, 0.7, 4.0, 100.0}) {
    EXPECT_NEAR(student_t_cdf(t, 1), 0.5 + std::atan(t) / M_PI, 1e-12) << t;
    EXPECT_NEAR(student_t_cdf(t, 2), 0.5 + t / (2 * std::sqrt(2 + t * t)), 1e-12) << t;
  }
  // Four: F(t) = 1/2 + 3/8 u (1 - u^2 / 12) with u = t / sqrt(1 + t^2 / 4).
  for (double t : {-6.0, -1.0, 0.5, 2.0, 9.0}) {
    double u = t / std::sqrt(1 + t * t / 4);
    EXPECT_NEAR(student_t_cdf(t, 4), 0.5 + 0.375 * u * (1 - u * u / 12), 1e-12) << t;
  }
  // Quantiles from the printed tables.
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.228138852, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.975, 4), 2.776445105, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.995, 30), 2.749995652, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.025, 10), -2.228138852, 1e-8);
  EXPECT_NEAR(student_t_quantile(1 - 1e-6, 1), std::tan(M_PI * (0.5 - 1e-6)), 1e-3);
  // Fractional degrees of freedom (Welch's) lie between their neighbours.
  EXPECT_GT(student_t_quantile(0.975, 4.5), student_t_quantile(0.975, 5));
  EXPECT_LT(student_t_quantile(0.975, 4.5), student_t_quantile(0.975, 4));
  EXPECT_NEAR(normal_quantile(0.975), 1.959963985, 1e-8);
  EXPECT_NEAR(normal_quantile(0.001), -3.090232306, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.975, 1e7), normal_quantile(0.975), 1e-5);
  EXPECT_THROW(student_t_quantile(1, 3), optimas::Error);
  EXPECT_THROW(normal_quantile(0), optimas::Error);
  EXPECT_THROW(student_t_cdf(1, 0), optimas::Error);
}

TEST(Stats, RunSummaryTrimsTheExtremeLaunches) {
  EXPECT_DOUBLE_EQ(run_summary({4}), 4);
  EXPECT_DOUBLE_EQ(run_summary({1, 2, 3, 100}), 26.5); // under 10 launches: the plain mean
  // Ten launches: the slowest (a cold first launch) and the fastest are left out.
  EXPECT_DOUBLE_EQ(run_summary({50, 2, 2, 2, 2, 2, 2, 2, 2, 0.1}), 2);
  EXPECT_THROW(run_summary({}), optimas::Error);
}

TEST(Stats, HotTimeIsEachKernelsSummaryTimesItsLaunches) {
  // Ten launches of one kernel, one of them preempted: 10 x 2; three of another: 3 x 1.
  EXPECT_DOUBLE_EQ(hot_time({{2, 2, 2, 2, 2, 2, 2, 2, 2, 9}, {1, 1, 1}}), 23);
  EXPECT_DOUBLE_EQ(hot_time({{}, {0.5}}), 0.5);
  EXPECT_DOUBLE_EQ(hot_time({}), 0);
}

TEST(Stats, CompareRunsIsWelchOnTheLogsOfRuns) {
  // Three runs a side with logs 1 +- 0.1 and 0.5 +- 0.1: equal variances, so Welch's degrees of
  // freedom are 4 and t = 0.5 / sqrt(2 * 0.01 / 3).
  auto runs = [](double centre) {
    return std::vector<std::vector<double>>{{std::exp(centre - 0.1)}, {std::exp(centre + 0.1)}, {std::exp(centre)}};
  };
  StatsOptions o;
  o.significance = 0.01;
  auto c = compare_runs(runs(1.0), runs(0.5), o);
  const double se = std::sqrt(2 * 0.01 / 3), t = 0.5 / se, u = t / std::sqrt(1 + t * t / 4);
  EXPECT_NEAR(c.speedup, std::exp(0.5), 1e-12);
  EXPECT_NEAR(c.p_value, 2 * (0.5 - 0.375 * u * (1 - u * u / 12)), 1e-10);
  EXPECT_NEAR(c.ci_low, std::exp(0.5 - 2.776445105 * se), 1e-7);
  EXPECT_NEAR(c.ci_high, std::exp(0.5 + 2.776445105 * se), 1e-7);
  EXPECT_NEAR(c.base_median, std::exp(1.0), 1e-12);
  EXPECT_EQ(c.n_base, 3u);
  EXPECT_EQ(c.verdict, Verdict::faster);
  // Reversed: slower, the interval mirrored.
  auto r = compare_runs(runs(0.5), runs(1.0), o);
  EXPECT_EQ(r.verdict, Verdict::slower);
  EXPECT_NEAR(r.ci_high, 1 / c.ci_low, 1e-9);
  // A run's launches enter through its summary: ten launches of e^x are the run of one e^x.
  std::vector<std::vector<double>> launches;
  for (const auto& run : runs(1.0)) launches.push_back(std::vector<double>(10, run[0]));
  EXPECT_NEAR(compare_runs(launches, runs(0.5), o).p_value, c.p_value, 1e-12);
}

TEST(Stats, CorrelatedLaunchesDoNotInflateConfidence) {
  // Four runs a side of 200 launches each. Each run has its own level (its clocks, its
  // placement) and its launches scatter little around it: the variant's runs happen to sit 2%
  // lower, within the run-to-run spread of 3%. Taken as 800 independent samples a side the
  // launches make the naive test sure; four runs a side prove nothing.
  auto runs = [](std::vector<double> levels) {
    std::vector<std::vector<double>> out;
    for (double level : levels) {
      out.emplace_back();
      for (int i = 0; i < 200; ++i) out.back().push_back(level * (1 + 0.001 * ((i * 37) % 11 - 5) / 5.0));
    }
    return out;
  };
  auto base = runs({1.00, 1.04, 0.97, 1.03}), variant = runs({0.98, 1.01, 0.96, 1.00});
  std::vector<double> all_base, all_variant;
  for (const auto& r : base) all_base.insert(all_base.end(), r.begin(), r.end());
  for (const auto& r : variant) all_variant.insert(all_variant.end(), r.begin(), r.end());
  StatsOptions o;
  o.resamples = 2000;
  auto naive = compare(all_base, all_variant, o);
  EXPECT_EQ(naive.verdict, Verdict::faster) << naive.p_value;
  EXPECT_LT(naive.p_value, 1e-10);
  auto blocked = compare_runs(base, variant, o);
  EXPECT_EQ(blocked.verdict, Verdict::no_change) << blocked.p_value;
  EXPECT_GT(blocked.p_value, 0.2);
  EXPECT_LT(blocked.ci_low, 1.0);
}

TEST(Stats, CompareRunsDecidesWithFewTightRuns) {
  // Three runs a side whose levels agree to 0.2%: a 5% speedup is clear at p < 0.001, where the
  // rank test on three whole runs a side cannot go below 2 / C(6, 3) = 0.1.
  std::vector<std::vector<double>> base = {{1.000, 1.001}, {1.002, 1.001}, {0.999, 1.000}};
  std::vector<std::vector<double>> variant;
  for (const auto& r : base) variant.push_back({r[0] / 1.05, r[1] / 1.05 * 1.001});
  auto c = compare_runs(base, variant);
  EXPECT_EQ(c.verdict, Verdict::faster);
  EXPECT_LT(c.p_value, 0.001);
  EXPECT_NEAR(c.speedup, 1.05, 0.002);
  EXPECT_GT(mann_whitney_p({1.0005, 1.0015, 0.9995}, {0.953, 0.954, 0.952}), 0.09);
}

TEST(Stats, CompareRunsEdgeCases) {
  EXPECT_THROW(compare_runs({}, {{1.0}}), optimas::Error);
  EXPECT_THROW(compare_runs({{1.0}, {}}, {{1.0}, {1.0}}), optimas::Error);
  EXPECT_THROW(compare_runs({{1.0}, {-1.0}}, {{1.0}, {1.0}}), optimas::Error);
  // One run a side: no spread to judge by.
  auto one = compare_runs({{2.0}}, {{1.0}});
  EXPECT_DOUBLE_EQ(one.speedup, 2.0);
  EXPECT_DOUBLE_EQ(one.p_value, 1.0);
  EXPECT_EQ(one.verdict, Verdict::no_change);
  EXPECT_TRUE(std::isinf(one.ci_high));
  // Runs that agree exactly (a deterministic stand-in): the difference is exact.
  auto exact = compare_runs({{2.0}, {2.0}}, {{1.0}, {1.0}});
  EXPECT_EQ(exact.verdict, Verdict::faster);
  EXPECT_DOUBLE_EQ(exact.ci_low, 2.0);
  auto same = compare_runs({{2.0}, {2.0}}, {{2.0}, {2.0}});
  EXPECT_EQ(same.verdict, Verdict::no_change);
  EXPECT_DOUBLE_EQ(same.p_value, 1.0);
}

TEST(Stats, CompareRunsTrimsAFifthOfTheRunsFromFive) {
  // Yuen's test by hand. Logs 5, 6, 7, 8, 15 against 0, 1, 2, 3, 10: one run a side trimmed at
  // each end, trimmed means 7 and 2; winsorised (6, 6, 7, 8, 8), the sum of squares is 4, so each
  // mean's variance is 4 / (3 * 2) and its degrees of freedom 3 - 1: t = 5 / sqrt(4 / 3), df 4.
  auto runs = [](std::vector<double> logs) {
    std::vector<std::vector<double>> out;
    for (double x : logs) out.push_back({std::exp(x)});
    return out;
  };
  StatsOptions o;
  o.significance = 0.05;
  auto c = compare_runs(runs({5, 6, 7, 8, 15}), runs({0, 1, 2, 3, 10}), o);
  const double se = std::sqrt(4.0 / 3.0), t = 5 / se, u = t / std::sqrt(1 + t * t / 4);
  EXPECT_NEAR(c.speedup, std::exp(5.0), 1e-9);
  EXPECT_NEAR(c.base_median, std::exp(7.0), 1e-9);
  EXPECT_NEAR(c.p_value, 2 * (0.5 - 0.375 * u * (1 - u * u / 12)), 1e-10);
  EXPECT_NEAR(std::log(c.ci_low), 5 - 2.776445105 * se, 1e-7);
  EXPECT_EQ(c.n_base, 5u);
}

TEST(Stats, CompareRunsIsNotUndoneByARunHitAsAWhole) {
  // Ten runs a side, the variant 5% faster and every run within 0.5%, except one baseline run that
  // another process slowed by 60%. Means and their variance would take it in and hide the speedup
  // (the interval would reach below 1); the trimmed test leaves it out.
  std::vector<std::vector<double>> base, variant;
  for (int r = 0; r < 10; ++r) {
    double level = 1 + 0.005 * ((r * 3 % 10) / 9.0 - 0.5);
    base.push_back({level * (r == 4 ? 1.6 : 1.0)});
    variant.push_back({level / 1.05});
  }
  auto c = compare_runs(base, variant);
  EXPECT_EQ(c.verdict, Verdict::faster) << c.ci_low << " " << c.p_value;
  EXPECT_GT(c.ci_low, 1.04);
  EXPECT_NEAR(c.speedup, 1.05, 0.002);
}
