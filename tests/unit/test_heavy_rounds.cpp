#include "profile/heavy_rounds.hpp"

#include <gtest/gtest.h>

#include <limits>

using namespace optimas::profile;

namespace {

std::vector<std::string> text(const std::vector<PlannedLaunch>& q) {
  std::vector<std::string> out;
  for (const auto& l : q) out.push_back(l.function + "#" + std::to_string(l.invocation));
  return out;
}

const double k_inf = std::numeric_limits<double>::infinity();

} // namespace

// Round 1 takes the first entry of each kernel: its middle pick, then the kernels take turns.
TEST(HeavyRounds, QueueTakesTheMiddleFirstAndKernelsInTurn) {
  std::vector<LaunchPick> picks = {{"triad", {1, 701, 1402}, 1402}, {"dot", {1, 5}, 5}, {"init", {1}, 1}};
  EXPECT_EQ(text(round_queue(picks)),
            (std::vector<std::string>{"triad#701", "dot#1", "init#1", "triad#1", "dot#5", "triad#1402"}));
  EXPECT_EQ(text(round_queue(picks, 4)), (std::vector<std::string>{"triad#701", "dot#1", "init#1", "triad#1"}))
      << "--launch-count keeps the front of the queue";
  EXPECT_TRUE(round_queue({}).empty());
}

TEST(HeavyRounds, RoundPicksGroupByFunction) {
  auto picks = round_picks({{"triad", 1402}, {"dot", 5}, {"triad", 1}});
  ASSERT_EQ(picks.size(), 2u);
  EXPECT_EQ(picks[0].function, "triad");
  EXPECT_EQ(picks[0].invocations, (std::vector<std::int64_t>{1, 1402}));
  EXPECT_EQ(picks[1].function, "dot");
  EXPECT_EQ(picks[1].invocations, (std::vector<std::int64_t>{5}));
}

// The issue's program: a 2 s run, then 23 replay passes of a launch over 1 GB, about 25 s.
TEST(HeavyRounds, CostComesFromTheProgramAndTheRoundsBefore) {
  RoundCost c = estimate_round_cost(2.0, {{1, 27.0}});
  EXPECT_DOUBLE_EQ(c.base_s, 2.0);
  EXPECT_DOUBLE_EQ(c.per_launch_s, 25.0);
  // A round faster than the timing pass (ncu's own timing pass replays every launch) lowers the base.
  c = estimate_round_cost(30.0, {{1, 10.0}, {2, 16.0}});
  EXPECT_DOUBLE_EQ(c.base_s, 10.0);
  EXPECT_DOUBLE_EQ(c.per_launch_s, 3.0) << "the slowest launch cost any round implies";
  c = estimate_round_cost(0.0, {});
  EXPECT_DOUBLE_EQ(c.base_s, 0.0);
  EXPECT_DOUBLE_EQ(c.per_launch_s, 0.0);
}

TEST(HeavyRounds, AsManyLaunchesAsFitWithAMargin) {
  RoundCost c{2.0, 25.0};
  EXPECT_EQ(launches_that_fit(c, 2, k_inf), 2) << "no limit: the rest in one round";
  EXPECT_EQ(launches_that_fit(c, 2, 1000), 2);
  // 56 s left: 2 + 2 x 25 = 52 s would fit bare, not with the margin (65 s); one launch (27 x 1.25 = 34 s) does.
  EXPECT_EQ(launches_that_fit(c, 2, 56), 1);
  EXPECT_EQ(launches_that_fit(c, 2, 65), 2);
  EXPECT_EQ(launches_that_fit(c, 2, 30), 0) << "not even one launch fits: no round is started";
  EXPECT_EQ(launches_that_fit(c, 2, -5), 0);
  EXPECT_EQ(launches_that_fit(c, 0, k_inf), 0);
  // Launches that cost nothing measurable: all of them, if the program's run fits.
  EXPECT_EQ(launches_that_fit({2.0, 0.0}, 7, 10), 7);
  EXPECT_EQ(launches_that_fit({20.0, 0.0}, 7, 10), 0);
}
