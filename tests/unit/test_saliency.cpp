#include "analysis/saliency.hpp"

#include <gtest/gtest.h>

using namespace optimas::analysis;
using optimas::profile::KernelSource;
using optimas::profile::SourceLine;
using optimas::profile::Stall;

namespace {

SourceLine line(int no, std::initializer_list<std::pair<Stall, std::uint64_t>> stalls, std::string code = "x = y;") {
  SourceLine l;
  l.file = "/src/k.cu";
  l.line = no;
  l.code = std::move(code);
  for (auto [s, n] : stalls) {
    l.samples.stalls[static_cast<std::size_t>(s)] += n;
    l.samples.all += n;
  }
  return l;
}

KernelSource kernel(std::vector<SourceLine> lines) {
  KernelSource k;
  k.demangled = "k(float *)";
  k.kernel = "k";
  k.lines = std::move(lines);
  return k;
}

} // namespace

TEST(Saliency, PlantedDominantStallIsFoundOnItsLine) {
  StallAggregator agg;
  // Line 10: long_scoreboard is 52 of 82 stalled samples (selected = issued, not a stall).
  agg.add(kernel({line(10, {{Stall::long_scoreboard, 52}, {Stall::wait, 30}, {Stall::selected, 18}}),
                  line(11, {{Stall::math_pipe_throttle, 40}, {Stall::wait, 10}})}));
  auto s = agg.summarize("k(float *)", {});
  ASSERT_EQ(s.lines.size(), 2u);
  EXPECT_EQ(s.lines[0].line, 10);
  EXPECT_EQ(s.lines[0].id, "PC1");
  EXPECT_EQ(s.lines[0].dominant, Stall::long_scoreboard);
  EXPECT_EQ(s.lines[0].stalled, 82u);
  EXPECT_NEAR(s.lines[0].dominant_fraction, 52.0 / 82.0, 1e-12);
  EXPECT_NEAR(s.lines[0].kernel_share, 100.0 / 150.0, 1e-12);
  EXPECT_EQ(s.lines[1].dominant, Stall::math_pipe_throttle);
  EXPECT_NE(s.text.find("k.cu:10"), std::string::npos);
  EXPECT_NE(s.text.find("stall_long_scoreboard: 63%"), std::string::npos);
}

TEST(Saliency, A29PercentStallIsNotKept) {
  StallAggregator agg;
  agg.add(kernel({line(20, {{Stall::barrier, 29},
                            {Stall::wait, 15},
                            {Stall::long_scoreboard, 14},
                            {Stall::short_scoreboard, 14},
                            {Stall::mio_throttle, 14},
                            {Stall::math_pipe_throttle, 14}}),
                  line(21, {{Stall::barrier, 30},
                            {Stall::wait, 14},
                            {Stall::long_scoreboard, 14},
                            {Stall::short_scoreboard, 14},
                            {Stall::mio_throttle, 14},
                            {Stall::math_pipe_throttle, 14}})}));
  auto s = agg.summarize("k(float *)", {});
  ASSERT_EQ(s.lines.size(), 1u); // exactly 30% on line 21 is kept
  EXPECT_EQ(s.lines[0].line, 21);
  EXPECT_EQ(s.lines_below_tau, 1u);
  SaliencyOptions strict;
  strict.tau = 0.31;
  EXPECT_TRUE(agg.summarize("k(float *)", strict).lines.empty());
}

TEST(Saliency, LaunchesOfOneKernelAddUpAndRankBySamples) {
  StallAggregator agg;
  agg.add(kernel({line(5, {{Stall::wait, 10}}), line(6, {{Stall::long_scoreboard, 8}})}), 1000);
  agg.add(kernel({line(5, {{Stall::wait, 10}}), line(6, {{Stall::long_scoreboard, 30}})}), 1000);
  auto s = agg.summarize("k(float *)", {});
  EXPECT_EQ(s.total_samples, 58u);
  ASSERT_EQ(s.lines.size(), 2u);
  EXPECT_EQ(s.lines[0].line, 6); // 38 samples beat 20
  EXPECT_EQ(s.lines[0].samples, 38u);
  EXPECT_EQ(s.raw_bytes, 2000u);
  EXPECT_GT(s.reduction(), 0.0);
}

TEST(Saliency, SummaryStaysWithinItsBudget) {
  StallAggregator agg;
  std::vector<SourceLine> lines;
  for (int i = 1; i <= 200; ++i)
    lines.push_back(line(i, {{Stall::long_scoreboard, static_cast<std::uint64_t>(1000 - i)}},
                         "value[" + std::to_string(i) + "] = table[index[" + std::to_string(i) + "]] * scale;"));
  agg.add(kernel(lines));
  SaliencyOptions o;
  o.max_bytes = 1024;
  o.min_line_share = 0;
  auto s = agg.summarize("k(float *)", o);
  EXPECT_LE(s.text.size(), 1024u);
  EXPECT_GT(s.lines.size(), 3u);
  EXPECT_EQ(s.lines.size() + s.lines_over_budget, 200u);
  // The kept lines are the highest ranked ones, with consecutive IDs.
  for (std::size_t i = 0; i < s.lines.size(); ++i) {
    EXPECT_EQ(s.lines[i].line, static_cast<int>(i + 1));
    EXPECT_EQ(s.lines[i].id, "PC" + std::to_string(i + 1));
  }
}

TEST(Saliency, UnknownKernelGivesAnEmptySummary) {
  StallAggregator agg;
  EXPECT_EQ(agg.summarize("nothing()", {}).total_samples, 0u);
}
