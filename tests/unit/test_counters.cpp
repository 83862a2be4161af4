#include "analysis/counters.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

using namespace optimas::analysis;

namespace {

// N runs x C random counters; the runtime depends on three of them.
CounterMatrix planted(std::size_t n, std::size_t c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  CounterMatrix m;
  for (std::size_t j = 0; j < c; ++j) m.counters.push_back("counter_" + std::to_string(j) + ".sum");
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<double> row(c);
    for (auto& v : row) v = 100 + 10 * normal(rng);
    double t = 1000 + 3 * row[17] - 2 * row[123] + 1.5 * row[250] + 0.05 * normal(rng);
    m.rows.push_back(std::move(row));
    m.runtime.push_back(t);
  }
  return m;
}

std::set<std::string> top_names(const CounterSelection& s, std::size_t k) {
  std::set<std::string> out;
  for (std::size_t i = 0; i < std::min(k, s.top.size()); ++i) out.insert(s.top[i].counter);
  return out;
}

} // namespace

TEST(Counters, RecoversPlantedCounters) {
  auto m = planted(64, 300, 7);
  EompOptions o;
  auto s = select_counters(m, o);
  EXPECT_EQ(s.runs, 64u);
  EXPECT_EQ(s.counters_used, 300u);
  EXPECT_EQ(top_names(s, 3), (std::set<std::string>{"counter_17.sum", "counter_123.sum", "counter_250.sum"}));
  EXPECT_TRUE(s.reliable);
  // Members that drew a noise counter early fit less well; most pick all three.
  EXPECT_GT(s.mean_r2, 0.6);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_GT(s.top[i].frequency, 0.6) << s.top[i].counter;
  // The signs say which way the runtime moves.
  for (const auto& w : s.top) {
    if (w.counter == "counter_17.sum") {
      EXPECT_GT(w.mean_weight, 0);
    }
    if (w.counter == "counter_123.sum") {
      EXPECT_LT(w.mean_weight, 0);
    }
  }
}

TEST(Counters, DeterministicForASeed) {
  auto m = planted(30, 120, 3);
  EompOptions o;
  o.seed = 99;
  auto a = select_counters(m, o), b = select_counters(m, o);
  ASSERT_EQ(a.top.size(), b.top.size());
  for (std::size_t i = 0; i < a.top.size(); ++i) {
    EXPECT_EQ(a.top[i].counter, b.top[i].counter);
    EXPECT_DOUBLE_EQ(a.top[i].importance, b.top[i].importance);
  }
}

TEST(Counters, DropsConstantMissingTimeAndDuplicateColumns) {
  auto m = planted(20, 30, 5);
  for (auto& row : m.rows) {
    row.push_back(42.0);            // constant
    row.push_back(row[17] * 2 + 1); // the same signal as counter_17 (another rollup)
    row.push_back(7.0);             // time measure, see below
  }
  m.counters.push_back("launch__block_size");
  m.counters.push_back("counter_17.avg.longer_name");
  m.counters.push_back("gpu__time_duration.sum");
  m.rows[3][5] = optimas::profile::k_nan; // missing in one run
  auto s = select_counters(m, {});
  EXPECT_EQ(s.dropped_constant, 1u);
  EXPECT_EQ(s.dropped_missing, 1u);
  EXPECT_EQ(s.dropped_time, 1u);
  EXPECT_EQ(s.dropped_duplicate, 1u);
  EXPECT_EQ(s.counters_used, 29u);
  EXPECT_TRUE(is_time_counter("sm__cycles_elapsed.avg"));
  EXPECT_FALSE(is_time_counter("sm__cycles_elapsed.avg.per_second"));
}

TEST(Counters, SaysPlainlyWhenThereAreTooFewRuns) {
  auto s = select_counters(planted(6, 50, 1), {});
  EXPECT_FALSE(s.reliable);
  EXPECT_NE(s.caveat.find("only 6 runs"), std::string::npos);
  auto none = select_counters(planted(1, 10, 1), {});
  EXPECT_TRUE(none.top.empty());
  EXPECT_FALSE(none.caveat.empty());
}
