#include "analysis/dictionary.hpp"

#include <gtest/gtest.h>

using namespace optimas::analysis;
using optimas::profile::Stall;

TEST(Dictionary, NvidiaDescriptionsFromTheH200) {
  const auto& d = Dictionary::builtin();
  EXPECT_GT(d.metric_count(), 3000u);
  const MetricInfo* m = d.metric("dram__bytes_read.max");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->base, "dram__bytes_read");
  // A metric without a hand-written entry: NVIDIA's words with the rollup spelled out.
  EXPECT_EQ(d.describe("dram__bytes_read.max"), "# of bytes read from DRAM (maximum)");
  EXPECT_EQ(d.describe("SM_B.TriageCompute.dram__bytes_read.max"), "# of bytes read from DRAM (maximum)");
  EXPECT_EQ(d.describe("no_such__metric.sum"), "no_such__metric.sum");
}

TEST(Dictionary, HandWrittenExplanationsCoverEveryStall) {
  const auto& d = Dictionary::builtin();
  for (std::size_t i = 0; i < optimas::profile::k_stall_count; ++i) {
    auto s = static_cast<Stall>(i);
    const Explanation* e = d.stall_explanation(s);
    ASSERT_NE(e, nullptr) << optimas::profile::stall_label(s);
    EXPECT_FALSE(e->title.empty());
    EXPECT_FALSE(e->means.empty());
    EXPECT_FALSE(e->causes.empty());
    EXPECT_FALSE(e->helps.empty());
  }
  EXPECT_FALSE(d.stall_description(Stall::long_scoreboard).empty());
  EXPECT_GE(d.explained_metric_count(), 45u);
  const Explanation* e = d.metric_explanation("sm__warps_active.avg.pct_of_peak_sustained_active");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(d.describe("sm__warps_active.avg.pct_of_peak_sustained_active"), e->title);
}

TEST(Dictionary, SplitsRollups) {
  EXPECT_EQ(Dictionary::split_metric_name("dram__bytes.sum.per_second"),
            (std::pair<std::string, std::string>{"dram__bytes", "sum.per_second"}));
  EXPECT_EQ(Dictionary::split_metric_name("smsp__pcsamp_sample_count"),
            (std::pair<std::string, std::string>{"smsp__pcsamp_sample_count", ""}));
}

TEST(Dictionary, BuiltFromGivenTexts) {
  Dictionary d("\"Metric name\",\"Metric type\",\"Metric unit\",\"Metric "
               "description\"\n\"x__y\",\"Counter\",\"byte\",\"bytes of y.\"\n",
               "", "stalls:\n  wait:\n    title: T\n    means: M\n    causes: C\n    helps: H\n");
  EXPECT_EQ(d.describe("x__y.sum.per_second"), "bytes of y (sum, per second)");
  ASSERT_NE(d.stall_explanation(Stall::wait), nullptr);
  EXPECT_EQ(d.stall_explanation(Stall::wait)->helps, "H");
  EXPECT_EQ(d.stall_explanation(Stall::barrier), nullptr);
}
