#include "evaluate/acceptance.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace optimas::evaluate;

namespace {

std::vector<Sample> walls(const std::vector<double>& ms) {
  std::vector<Sample> out;
  for (double x : ms) out.push_back({x, std::nullopt});
  return out;
}

// Wall time `wall` with `kernel` of it printed by the program.
std::vector<Sample> timed(const std::vector<double>& wall, const std::vector<double>& kernel) {
  std::vector<Sample> out;
  for (std::size_t i = 0; i < wall.size(); ++i) out.push_back({wall[i], kernel[i]});
  return out;
}

const std::vector<double> k_base = {100.0, 100.4, 99.8, 100.2, 100.1};

std::vector<double> scaled(const std::vector<double>& v, double factor) {
  std::vector<double> out;
  for (double x : v) out.push_back(x * factor);
  return out;
}

} // namespace

TEST(Acceptance, SmallestPValueOfTheExactTest) {
  EXPECT_DOUBLE_EQ(smallest_p_value(5), 2.0 / 252.0);
  EXPECT_DOUBLE_EQ(smallest_p_value(2), 2.0 / 6.0);
  EXPECT_NEAR(smallest_p_value(10), 2.0 / 184756.0, 1e-15);
}

TEST(Acceptance, CorrectedSignificanceDividesByTheComparisons) {
  AcceptanceRule rule;
  rule.comparisons = 4;
  EXPECT_DOUBLE_EQ(rule.corrected_significance(), 0.0125);
  EXPECT_DOUBLE_EQ(rule.stats().significance, 0.0125);
}

// A clear speedup passes the screening and then waits for its confirmation.
TEST(Acceptance, ClearSpeedupIsScreenedThenConfirmed) {
  AcceptanceRule rule;
  auto variant = walls(scaled(k_base, 1 / 1.2));
  auto j = judge(walls(k_base), variant, false, rule);
  EXPECT_EQ(j.comparison.verdict, Verdict::faster);
  auto d = screen({{"default", j}}, "default", rule);
  EXPECT_EQ(d.stage, Stage::confirm) << d.reason;

  std::vector<Sample> all_base = walls(k_base), all_variant = variant;
  for (double x : k_base) all_base.push_back({x + 0.05, std::nullopt});
  for (double x : k_base) all_variant.push_back({(x + 0.05) / 1.2, std::nullopt});
  auto fresh = judge(walls(scaled(k_base, 1.0005)), walls(scaled(k_base, 1.0005 / 1.2)), false, rule);
  auto pooled = judge(all_base, all_variant, false, rule);
  d = confirm(fresh, pooled, "default", rule);
  EXPECT_EQ(d.stage, Stage::accepted) << d.reason;
  EXPECT_NE(d.reason.find("confirmed"), std::string::npos) << d.reason;
}

// Significant but smaller than min_speedup: the old rule (p < 0.05, interval above 1) accepted it.
TEST(Acceptance, SignificantButBelowTheMinimumEffectIsRejected) {
  AcceptanceRule rule;
  auto j = judge(walls(k_base), walls(scaled(k_base, 1 / 1.005)), false, rule);
  ASSERT_EQ(j.comparison.verdict, Verdict::faster) << "the test needs a significant 0.5% speedup";
  auto d = screen({{"default", j}}, "default", rule);
  EXPECT_EQ(d.stage, Stage::rejected);
  EXPECT_NE(d.reason.find("min_speedup"), std::string::npos) << d.reason;
}

// p = 4/252 (one pair out of order) is significant alone, not for four configurations.
TEST(Acceptance, SignificanceIsCorrectedForSeveralComparisons) {
  std::vector<double> base = {100, 101, 102, 103, 104}, variant = {90, 91, 92, 93, 100.5};
  AcceptanceRule one;
  EXPECT_EQ(judge(walls(base), walls(variant), false, one).comparison.verdict, Verdict::faster);
  AcceptanceRule four;
  four.comparisons = 4;
  auto j = judge(walls(base), walls(variant), false, four);
  EXPECT_NEAR(j.comparison.p_value, 4.0 / 252.0, 1e-12);
  EXPECT_EQ(j.comparison.verdict, Verdict::no_change);
  auto d = screen({{"default", j}}, "default", four);
  EXPECT_EQ(d.stage, Stage::rejected);
  EXPECT_NE(d.reason.find("p < 0.0125"), std::string::npos) << d.reason;
}

// Seven runs clearly faster, three no faster (a loaded machine): the ranks separate (p < 0.05)
// but the interval of the medians' ratio reaches below 1. The reason names the interval, not a
// p-value the run already has (it said "p = 0.0355; faster needs p < 0.05" once).
TEST(Acceptance, SignificantWithAnIntervalAcrossOneSaysTheIntervalFailed) {
  AcceptanceRule rule;
  const std::vector<double> base = {100, 101, 102, 103, 104, 105, 106, 107, 108, 109};
  const std::vector<double> variant = {85, 86, 87, 88, 89, 90, 91, 105, 107, 111};
  auto j = judge(walls(base), walls(variant), false, rule);
  ASSERT_LT(j.comparison.p_value, rule.significance);
  ASSERT_LT(j.comparison.ci_low, 1.0);
  ASSERT_EQ(j.comparison.verdict, Verdict::no_change);
  auto d = screen({{"default", j}}, "default", rule);
  EXPECT_EQ(d.stage, Stage::rejected);
  EXPECT_NE(d.reason.find("faster needs the whole interval above 1"), std::string::npos) << d.reason;
  EXPECT_EQ(d.reason.find("faster needs p <"), std::string::npos) << d.reason;
}

TEST(Acceptance, FreshRunsThatDoNotAgreeRejectTheVariant) {
  AcceptanceRule rule;
  auto fresh = judge(walls(k_base), walls(scaled(k_base, 1.0)), false, rule); // no speedup this time
  std::vector<Sample> all_base = walls(k_base), all_variant = walls(scaled(k_base, 1 / 1.2));
  for (double x : k_base) all_base.push_back({x, std::nullopt}), all_variant.push_back({x, std::nullopt});
  auto pooled = judge(all_base, all_variant, false, rule);
  auto d = confirm(fresh, pooled, "default", rule);
  EXPECT_EQ(d.stage, Stage::rejected);
  EXPECT_NE(d.reason.find("not confirmed"), std::string::npos) << d.reason;
}

// A machine shared with another job: each run takes about 100 or 200 ms, whichever the job's
// bursts give it. On CI an A/A variant was accepted so: the screening's p = 0.036 by chance, then
// fresh runs whose medians fell in different modes (2.05x, p = 0.165) agreed by their estimate.
// The fresh runs must now be faster on their own.
TEST(Acceptance, FreshRunsFasterOnlyByTheirMediansDoNotConfirm) {
  AcceptanceRule rule;
  const std::vector<double> base = {200, 201, 99, 202, 203, 100, 204, 101, 205, 206};
  const std::vector<double> variant = {100, 199, 101, 200, 102, 103, 201, 104, 105, 202};
  auto fresh = judge(walls(base), walls(variant), false, rule);
  ASSERT_GT(fresh.comparison.speedup, 1.9) << "the medians fall in different modes";
  ASSERT_GT(fresh.comparison.p_value, 2 * rule.significance) << "and the ranks do not separate";
  std::vector<Sample> all_base = walls(base), all_variant = walls(variant);
  for (int i = 0; i < 10; ++i)
    all_base.push_back({200.0 + i, std::nullopt}), all_variant.push_back({100.0 + i, std::nullopt});
  auto pooled = judge(all_base, all_variant, false, rule);
  ASSERT_EQ(pooled.comparison.verdict, Verdict::faster) << "the screening's runs carry the pooled test";
  auto d = confirm(fresh, pooled, "default", rule);
  EXPECT_EQ(d.stage, Stage::rejected) << d.reason;
  EXPECT_NE(d.reason.find("on their own"), std::string::npos) << d.reason;
}

TEST(Acceptance, SlowerElsewhereOrUnmeasuredPrimaryRejects) {
  AcceptanceRule rule;
  rule.comparisons = 2;
  auto faster = judge(walls(k_base), walls(scaled(k_base, 1 / 1.2)), false, rule);
  auto slower = judge(walls(k_base), walls(scaled(k_base, 1.2)), false, rule);
  ASSERT_EQ(slower.comparison.verdict, Verdict::slower);
  auto d = screen({{"default", faster}, {"large", slower}}, "default", rule);
  EXPECT_EQ(d.stage, Stage::rejected);
  EXPECT_NE(d.reason.find("slower on large"), std::string::npos) << d.reason;
  d = screen({{"large", faster}}, "default", rule);
  EXPECT_EQ(d.stage, Stage::rejected);
}

// Without confirmation the screening's own interval must clear min_speedup.
TEST(Acceptance, WithoutConfirmationTheIntervalMustClearTheMinimum) {
  AcceptanceRule rule;
  rule.confirm = false;
  rule.min_speedup = 1.15;
  std::vector<double> variant = {82, 88, 80, 86, 84}; // about 1.19x, spread wide
  auto j = judge(walls(k_base), walls(variant), false, rule);
  ASSERT_EQ(j.comparison.verdict, Verdict::faster);
  ASSERT_LT(j.comparison.ci_low, 1.15);
  auto d = screen({{"default", j}}, "default", rule);
  EXPECT_EQ(d.stage, Stage::rejected);
  EXPECT_NE(d.reason.find("interval reaches below"), std::string::npos) << d.reason;
  rule.min_speedup = 1.01;
  EXPECT_EQ(screen({{"default", j}}, "default", rule).stage, Stage::accepted);
}

// A printed time that falls while the process's wall time does not is not believed.
TEST(Acceptance, PrintedTimeMustShowInTheWallTime) {
  AcceptanceRule rule;
  std::vector<double> wall = {200, 201, 199, 200.5, 200.2}, kernel = {100, 100.4, 99.8, 100.2, 100.1};
  auto honest = judge(timed(wall, kernel), timed(scaled(wall, 0.75), scaled(kernel, 0.5)), true, rule);
  EXPECT_EQ(honest.comparison.verdict, Verdict::faster);
  EXPECT_FALSE(honest.suspicious.has_value()) << *honest.suspicious;

  auto fake = judge(timed(wall, kernel), timed(wall, scaled(kernel, 0.5)), true, rule);
  ASSERT_TRUE(fake.suspicious.has_value());
  EXPECT_NE(fake.suspicious->find("the wall time did not fall"), std::string::npos) << *fake.suspicious;
  auto d = screen({{"default", fake}}, "default", rule);
  EXPECT_EQ(d.stage, Stage::rejected);
  EXPECT_NE(d.reason.find("not credible"), std::string::npos) << d.reason;

  auto impossible = judge(timed(wall, kernel), timed(wall, scaled(wall, 2.0)), true, rule);
  ASSERT_TRUE(impossible.suspicious.has_value());
  EXPECT_NE(impossible.suspicious->find("in a process that ran"), std::string::npos) << *impossible.suspicious;
}

// Under load the wall time is noisy: an interval of the outside time's growth that starts just
// above 0 is not "at least half the claim", yet growth that large and that certain is not a
// saving either. The old rule (interval above half the claim) let this one through.
TEST(Acceptance, NoisyWallTimeThatDidNotFallIsNotBelieved) {
  AcceptanceRule rule;
  std::vector<double> kernel = {100, 101, 99, 100.5, 100.2, 99.7, 100.1, 99.9, 100.3, 100.4};
  std::vector<double> base_wall = {300, 240, 390, 280, 330, 260, 350, 310, 270, 320};
  std::vector<double> var_wall = {310, 350, 260, 330, 290, 380, 300, 340, 280, 325}; // the same work, moved
  auto fake = judge(timed(base_wall, kernel), timed(var_wall, scaled(kernel, 0.5)), true, rule);
  ASSERT_EQ(fake.comparison.verdict, Verdict::faster);
  ASSERT_GT(fake.overhead_growth.low, 0.0);
  ASSERT_LT(fake.overhead_growth.low, 25.0) << "the case the old rule missed";
  ASSERT_TRUE(fake.suspicious.has_value());

  // An honest saving of the same size in the same noise: the outside time does not grow.
  std::vector<double> honest_wall;
  for (double w : var_wall) honest_wall.push_back(w - 50);
  auto honest = judge(timed(base_wall, kernel), timed(honest_wall, scaled(kernel, 0.5)), true, rule);
  EXPECT_FALSE(honest.suspicious.has_value()) << *honest.suspicious;
}
