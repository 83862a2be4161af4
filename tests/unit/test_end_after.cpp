#include "evaluate/end_after.hpp"

#include <gtest/gtest.h>

using namespace optimas::evaluate;
using nlohmann::json;

namespace {

json side(std::uint64_t hot, std::uint64_t launches, double after_s) {
  return {{"hot_launches", hot}, {"launches", launches}, {"symbols", {"_Z1hv"}}, {"after_hot_s", after_s}};
}

json check(const std::string& label, const json& base, const json& variant, const std::string& config = "default") {
  return {
      {"label", label}, {"config", config}, {"passed", true}, {"trace", {{"baseline", base}, {"variant", variant}}}};
}

} // namespace

TEST(EndAfter, RunsEndWhereEveryValidationRunAgrees) {
  std::vector<json> checks = {check("default", side(40, 41, 2.0), side(40, 41, 2.1)),
                              check("default+seed 7", side(40, 41, 2.0), side(40, 41, 1.9)),
                              check("small", side(10, 11, 0.1), side(12, 13, 0.1), "small")};
  auto plan = plan_end_after(checks, "default");
  ASSERT_TRUE(plan.end) << plan.reason;
  EXPECT_EQ(plan.end->launches, 40u);
  EXPECT_EQ(plan.end->symbols, std::vector<std::string>{"_Z1hv"});
  EXPECT_EQ(plan.reason, "runs of default end after 40 hot-kernel launches");
  // Another configuration is planned on its own checks only.
  EXPECT_FALSE(plan_end_after(checks, "small").end);
}

TEST(EndAfter, WholeRunsWithTheReason) {
  auto reason = [](const std::vector<json>& checks) {
    auto plan = plan_end_after(checks, "default");
    EXPECT_FALSE(plan.end);
    return plan.reason;
  };
  const json base = side(40, 41, 2.0);
  EXPECT_EQ(reason({check("default", base, side(41, 42, 2.0))}),
            "whole runs: the variant launched the hot kernels 41 times on default, the baseline 40");
  EXPECT_EQ(reason({check("default", base, side(40, 42, 2.0))}),
            "whole runs: on default the variant launched 42 kernels in all, the baseline 41");
  EXPECT_EQ(reason({check("default", base, side(40, 41, 2.7))}),
            "whole runs: on default the variant ran 2.700 s after its last hot launch, the baseline 2.000 s (work may "
            "have moved behind the kernels)");
  EXPECT_TRUE(plan_end_after({check("default", base, side(40, 41, 2.6))}, "default").end); // within 25% + 0.1 s
  EXPECT_EQ(reason({check("default", base, side(40, 41, 2.0)),
                    check("default+seed 7", side(44, 45, 2.0), side(44, 45, 2.0))}),
            "whole runs: the baseline launched the hot kernels a different number of times on different inputs of "
            "default (40, 44)");
  EXPECT_EQ(reason({check("default", side(0, 3, 0.0), side(0, 3, 0.0))}),
            "whole runs: the validation runs of default launched no hot kernel");
  EXPECT_EQ(reason({json{{"label", "default"}, {"config", "default"}, {"passed", true}}}),
            "whole runs: validation run default of default was not traced");
  EXPECT_EQ(reason({check("default", base, nullptr)}), "whole runs: validation run default of default was not traced");
  EXPECT_EQ(reason({}), "whole runs: default was not validated");
  json old = side(40, 41, 2.0);
  old.erase("after_hot_s");
  EXPECT_EQ(reason({check("default", old, old)}),
            "whole runs: the traces of default have no end time (an older tracer)");
}
