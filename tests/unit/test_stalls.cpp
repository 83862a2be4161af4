#include "profile/stalls.hpp"

#include <gtest/gtest.h>

using namespace optimas::profile;

TEST(Stalls, SourcePageSpellings) {
  auto c = parse_stall_column("stall_long_sb");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->stall, Stall::long_scoreboard);
  EXPECT_FALSE(c->not_issued);
  // ncu 2025.3.1 spells the same reason two ways.
  EXPECT_EQ(parse_stall_column("stall_sleep")->stall, Stall::sleeping);
  auto ni = parse_stall_column("stall_sleeping (Not Issued)");
  ASSERT_TRUE(ni);
  EXPECT_EQ(ni->stall, Stall::sleeping);
  EXPECT_TRUE(ni->not_issued);
  EXPECT_EQ(parse_stall_column("stall_math")->stall, Stall::math_pipe_throttle);
  EXPECT_EQ(parse_stall_column("stall_mio (Not Issued)")->stall, Stall::mio_throttle);
  EXPECT_EQ(parse_stall_column("stall_no_inst")->stall, Stall::no_instructions);
  EXPECT_FALSE(parse_stall_column("stall_unheard_of"));
  EXPECT_FALSE(parse_stall_column("# Samples"));
}

TEST(Stalls, KernelLevelMetricNames) {
  auto c = parse_stall_column("smsp__pcsamp_warps_issue_stalled_long_scoreboard");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->stall, Stall::long_scoreboard);
  auto ni = parse_stall_column("smsp__pcsamp_warps_issue_stalled_membar_not_issued");
  ASSERT_TRUE(ni);
  EXPECT_EQ(ni->stall, Stall::membar);
  EXPECT_TRUE(ni->not_issued);
  EXPECT_EQ(parse_stall_column("smsp__pcsamp_warps_issue_stalled_dispatch_stall")->stall, Stall::dispatch_stall);
}

TEST(Stalls, EveryReasonRoundTripsThroughItsLabel) {
  for (std::size_t i = 0; i < k_stall_count; ++i) {
    auto s = static_cast<Stall>(i);
    auto back = stall_from_name(stall_label(s));
    ASSERT_TRUE(back) << stall_label(s);
    EXPECT_EQ(*back, s);
  }
  EXPECT_EQ(stall_label(Stall::long_scoreboard), "stall_long_scoreboard");
}
