#include "profile/hot_kernels.hpp"
#include "util/error.hpp"

#include <gtest/gtest.h>

using namespace optimas::profile;

namespace {

Launch launch(const std::string& name, double ns) {
  Launch l;
  l.demangled = name + "(int)";
  l.kernel = name;
  l.duration_ns = ns;
  return l;
}

} // namespace

TEST(HotKernels, SmallestSetReachingAlpha) {
  // a: 50, b: 30, c: 15, d: 5 -> a + b = 80% reaches alpha = 0.8 exactly.
  std::vector<Launch> ls = {launch("c", 10), launch("a", 25), launch("b", 30),
                            launch("a", 25), launch("c", 5),  launch("d", 5)};
  auto hot = select_hot_kernels(ls, 0.8);
  ASSERT_EQ(hot.kernels.size(), 4u);
  EXPECT_EQ(hot.kernels[0].kernel, "a");
  EXPECT_EQ(hot.kernels[0].launches, 2);
  EXPECT_DOUBLE_EQ(hot.kernels[0].share, 0.5);
  EXPECT_EQ(hot.hot_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(hot.kernels[2].hot);
  // Just above 80% needs the third kernel.
  EXPECT_EQ(select_hot_kernels(ls, 0.81).hot_names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(select_hot_kernels(ls, 1.0).hot_names().size(), 4u);
  EXPECT_EQ(select_hot_kernels(ls, 0.1).hot_names(), (std::vector<std::string>{"a"}));
}

TEST(HotKernels, TemplateInstancesAreSeparateKernels) {
  Launch a = launch("k<0>", 10), b = launch("k<1>", 10);
  a.demangled = "void k<0>(int)";
  b.demangled = "void k<1>(int)";
  auto hot = select_hot_kernels({a, b}, 0.8);
  EXPECT_EQ(hot.kernels.size(), 2u);
  EXPECT_EQ(hot.hot_names().size(), 2u);
}

TEST(HotKernels, LaunchesWithoutDurationAreIgnoredAndAlphaIsChecked) {
  Launch x = launch("x", k_nan);
  auto hot = select_hot_kernels({x, launch("y", 4)}, 0.8);
  ASSERT_EQ(hot.kernels.size(), 1u);
  EXPECT_EQ(hot.kernels[0].kernel, "y");
  EXPECT_THROW(select_hot_kernels({}, 0.0), optimas::UsageError);
  EXPECT_THROW(select_hot_kernels({}, 1.5), optimas::UsageError);
}

// A variant's re-profile asks for its parent's hot kernels: the one an edit made fast enough to
// leave the hot set is profiled too (its counters compared before and after), the hot one and
// one that did not run are not added.
TEST(HotKernels, TheWantedKernelsThatAreNoLongerHot) {
  // blur 90%, histogram 10%: only blur is hot at alpha 0.8.
  auto hk = select_hot_kernels({launch("blur", 90), launch("histogram", 10)}, 0.8);
  ASSERT_EQ(hk.hot_names(), std::vector<std::string>{"blur"});
  auto cooled = hk.not_hot_of({"blur", "histogram", "gone"});
  ASSERT_EQ(cooled.size(), 1u);
  EXPECT_EQ(cooled[0].kernel, "histogram");
  EXPECT_EQ(cooled[0].demangled, "histogram(int)");
  EXPECT_TRUE(hk.not_hot_of({}).empty());
}
