#include "evaluate/sequential.hpp"

#include "util/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace optimas::evaluate;

namespace {

using Runs = std::vector<std::vector<double>>;

// `n` runs of 20 launches at `level`, the runs' levels spread evenly over +-spread/2.
Runs runs_at(double level, int n, double spread) {
  Runs out;
  for (int r = 0; r < n; ++r) {
    double run = level * (1 + spread * ((r * 7 % n) / std::max(1.0, n - 1.0) - 0.5));
    out.emplace_back();
    for (int i = 0; i < 20; ++i) out.back().push_back(run * (1 + 0.002 * (i % 5 - 2)));
  }
  return out;
}

// Without futility unless asked: the tests of the other stops see them alone.
SequentialPlan plan_of(std::vector<int> looks, double significance = 0.05, double min_speedup = 1.01,
                       double futility = 0) {
  SequentialPlan p;
  p.looks = std::move(looks);
  p.significance = significance;
  p.min_speedup = min_speedup;
  p.futility = futility;
  return p;
}

} // namespace

TEST(Sequential, SpendingFunctions) {
  // O'Brien-Fleming (Lan-DeMets): 2 - 2 Phi(1.959964 / sqrt 0.5) = 2 - 2 Phi(2.771808) = 0.005575.
  EXPECT_NEAR(alpha_spent(Spending::obrien_fleming, 0.05, 0.5), 0.005575, 1e-6);
  EXPECT_NEAR(alpha_spent(Spending::obrien_fleming, 0.05, 1.0), 0.05, 1e-12);
  EXPECT_LT(alpha_spent(Spending::obrien_fleming, 0.05, 0.15), 1e-6);
  // Pocock: 0.05 ln(1 + (e - 1) / 2) = 0.031006.
  EXPECT_NEAR(alpha_spent(Spending::pocock, 0.05, 0.5), 0.031006, 1e-6);
  EXPECT_NEAR(alpha_spent(Spending::pocock, 0.05, 1.0), 0.05, 1e-12);
  EXPECT_DOUBLE_EQ(alpha_spent(Spending::pocock, 0.05, 0), 0);
}

TEST(Sequential, LooksShareTheSignificance) {
  for (Spending s : {Spending::obrien_fleming, Spending::pocock}) {
    auto plan = plan_of({3, 5, 8, 12, 18, 20}, 0.01);
    plan.spending = s;
    double total = 0;
    for (std::size_t k = 0; k < plan.looks.size(); ++k) {
      EXPECT_GT(look_significance(plan, k), 0);
      total += look_significance(plan, k);
    }
    EXPECT_NEAR(total, 0.01, 1e-12);
    EXPECT_THROW(look_significance(plan, 6), optimas::Error);
  }
  // O'Brien-Fleming keeps the first look strict and most of the alpha for the last ones; Pocock
  // (the default) gives the first look a share that three runs can use.
  auto obf = plan_of({3, 5, 8, 12, 18, 20});
  obf.spending = Spending::obrien_fleming;
  EXPECT_LT(look_significance(obf, 0), 1e-4);
  EXPECT_GT(look_significance(obf, 4) + look_significance(obf, 5), 0.025);
  auto pocock = plan_of({3, 5, 8, 12, 18, 20});
  EXPECT_EQ(pocock.spending, Spending::pocock);
  EXPECT_GT(look_significance(pocock, 0), 0.01);
}

TEST(Sequential, DefaultLooks) {
  EXPECT_EQ(default_looks(3, 20), (std::vector<int>{3, 5, 8, 12, 20})); // not 18 and then 20
  EXPECT_EQ(default_looks(3, 30), (std::vector<int>{3, 5, 8, 12, 18, 30}));
  EXPECT_EQ(default_looks(3, 10), (std::vector<int>{3, 5, 8, 10}));
  EXPECT_EQ(default_looks(5, 5), (std::vector<int>{5}));
  EXPECT_EQ(default_looks(1, 3), (std::vector<int>{2, 3}));
}

TEST(Sequential, PlanErrors) {
  EXPECT_EQ(plan_error(plan_of({3, 5})), "");
  EXPECT_NE(plan_error(plan_of({})), "");
  EXPECT_NE(plan_error(plan_of({1, 5})), "");
  EXPECT_NE(plan_error(plan_of({5, 5})), "");
  EXPECT_NE(plan_error(plan_of({3, 5}, 0)), "");
  EXPECT_NE(plan_error(plan_of({3, 5}, 0.05, 0.99)), "");
  EXPECT_NE(plan_error(plan_of({3, 5}, 0.05, 1.01, 0.5)), "");
  EXPECT_NE(plan_error(plan_of({3, 5}, 0.05, 1.10)), ""); // above the target speedup 1.05
  EXPECT_THROW(judge_look(runs_at(1, 3, 0), runs_at(1, 3, 0), plan_of({5, 3}), 0, "default"), optimas::Error);
}

TEST(Sequential, StopsEarlyInEveryDirection) {
  const auto plan = plan_of({3, 5, 8, 12, 18, 20});
  // Runs that agree to 0.1%: twice as fast is clear at the first look, whatever its strictness.
  auto faster = judge_look(runs_at(2.0, 3, 0.001), runs_at(1.0, 3, 0.001), plan, 0, "default");
  EXPECT_EQ(faster.call, Call::faster) << faster.reason;
  EXPECT_NEAR(faster.comparison.speedup, 2.0, 0.01);
  EXPECT_DOUBLE_EQ(faster.significance, look_significance(plan, 0));
  EXPECT_NE(faster.reason.find("faster on default after 3 run(s) a side (look 1/6"), std::string::npos)
      << faster.reason;
  auto slower = judge_look(runs_at(1.0, 3, 0.001), runs_at(1.3, 3, 0.001), plan, 0, "default");
  EXPECT_EQ(slower.call, Call::slower) << slower.reason;
  // The same program against itself, runs agreeing to 0.1%: clearly no gain of 1%.
  auto none = judge_look(runs_at(1.0, 5, 0.001), runs_at(1.0, 5, 0.001), plan, 1, "default");
  EXPECT_EQ(none.call, Call::no_gain) << none.reason;
  EXPECT_LT(none.comparison.ci_high, 1.01);
  // 0.5% faster, clearly: no gain either (it is below min_speedup), not "faster".
  auto small = judge_look(runs_at(1.005, 8, 0.0005), runs_at(1.0, 8, 0.0005), plan, 2, "default");
  EXPECT_EQ(small.call, Call::no_gain) << small.reason;
}

TEST(Sequential, UndecidedUntilTheLastLook) {
  const auto plan = plan_of({3, 5, 8});
  // 3% faster within a run-to-run spread of 4%: not clear at 3 runs.
  auto first = judge_look(runs_at(1.03, 3, 0.04), runs_at(1.0, 3, 0.04), plan, 0, "default");
  EXPECT_EQ(first.call, Call::more) << first.reason;
  EXPECT_GT(first.comparison.ci_high, 1.01);
  EXPECT_LT(first.comparison.ci_low, 1.01);
  // At the last look what is not clearly faster is rejected.
  auto last = judge_look(runs_at(1.01, 8, 0.04), runs_at(1.0, 8, 0.04), plan, 2, "default");
  EXPECT_EQ(last.call, Call::inconclusive) << last.reason;
  EXPECT_EQ(call_name(last.call), "inconclusive");
  EXPECT_EQ(call_name(Call::more), "more runs");
}

TEST(Sequential, FirstLookIsStricterThanOneFixedTest) {
  // Five runs a side 2.5% faster with a 1.5% spread: a single test at 0.05 would accept, the first
  // look of six (O'Brien-Fleming) does not.
  auto base = runs_at(1.025, 5, 0.015), variant = runs_at(1.0, 5, 0.015);
  StatsOptions fixed;
  fixed.confidence = 0.95;
  auto once = compare_runs(base, variant, fixed);
  EXPECT_GT(once.ci_low, 1.01);
  auto early = judge_look(base, variant, plan_of({5, 8, 12, 18, 20, 30}), 0, "default");
  EXPECT_EQ(early.call, Call::more) << early.reason;
}

TEST(Sequential, FutilityStopsWhatCannotReachTheTarget) {
  // The same program against itself, runs spread by 2%: at five runs the interval at the look's
  // significance still reaches above min_speedup, but the speedup is clearly under the 1.05 the
  // rule is built to find: no gain, without the runs a decision at 1.01 would take.
  auto plan = plan_of({3, 5, 8, 12, 20}, 0.05, 1.01, 0.1);
  EXPECT_GT(look_futility(plan, 1), 0);
  auto look = judge_look(runs_at(1.0, 5, 0.02), runs_at(1.0, 5, 0.02), plan, 1, "default");
  EXPECT_EQ(look.call, Call::no_gain) << look.reason;
  EXPECT_GT(look.comparison.ci_high, 1.01);
  EXPECT_LT(look.futility_high, 1.05);
  EXPECT_NE(look.reason.find("no gain of 1.05"), std::string::npos) << look.reason;
  // Without futility the same look asks for more runs.
  plan.futility = 0;
  EXPECT_DOUBLE_EQ(look_futility(plan, 1), 0);
  EXPECT_EQ(judge_look(runs_at(1.0, 5, 0.02), runs_at(1.0, 5, 0.02), plan, 1, "default").call, Call::more);
  // A variant at the target speedup is dismissed at most `futility` of the time over all looks.
  plan.futility = 0.1;
  double total = 0;
  for (std::size_t k = 0; k < plan.looks.size(); ++k) total += look_futility(plan, k);
  EXPECT_NEAR(total, 0.1, 1e-12);
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0, 0.03);
  int dismissed = 0;
  for (int s = 0; s < 1000; ++s) {
    Runs base, variant;
    for (std::size_t k = 0; k < plan.looks.size(); ++k) {
      while (static_cast<int>(base.size()) < plan.looks[k]) {
        base.push_back({1.05 * std::exp(noise(rng))});
        variant.push_back({std::exp(noise(rng))});
      }
      auto l = judge_look(base, variant, plan, k, "default");
      if (l.call == Call::no_gain) ++dismissed;
      if (l.call != Call::more) break;
    }
  }
  EXPECT_LE(dismissed, 100);
  EXPECT_GT(dismissed, 10); // it does stop some: the bound is not vacuous
}

TEST(Sequential, WrongStopsStayWithinTheSignificance) {
  // A/A sequences with independent normal run-to-run noise: with min_speedup 1 a stop at
  // "faster" or "slower" is a type I error, and over all six looks those may happen at most 5% of
  // the time. Testing every look at 0.05 instead would stop wrongly about 14% of the time.
  const auto plan = plan_of({3, 5, 8, 12, 18, 20}, 0.05, 1.0);
  std::mt19937_64 rng(27);
  std::normal_distribution<double> noise(0, 0.01);
  const int sequences = 2000;
  int wrong = 0, naive_wrong = 0;
  for (int s = 0; s < sequences; ++s) {
    Runs base, variant;
    bool stopped = false, naive_stopped = false;
    for (std::size_t k = 0; k < plan.looks.size(); ++k) {
      while (static_cast<int>(base.size()) < plan.looks[k]) {
        base.push_back({std::exp(noise(rng))});
        variant.push_back({std::exp(noise(rng))});
      }
      auto look = judge_look(base, variant, plan, k, "default");
      stopped = stopped || look.call == Call::faster || look.call == Call::slower;
      naive_stopped = naive_stopped || compare_runs(base, variant).verdict != Verdict::no_change;
      if (look.call != Call::more) break;
    }
    wrong += stopped;
    naive_wrong += naive_stopped;
  }
  EXPECT_LE(wrong, sequences * 0.05) << wrong;
  EXPECT_GT(naive_wrong, sequences * 0.08) << naive_wrong;
}

TEST(Sequential, DecisionNeedsTheWholeRunsToAgree) {
  const auto plan = plan_of({3, 5});
  auto faster = judge_look(runs_at(2.0, 3, 0.001), runs_at(1.0, 3, 0.001), plan, 0, "default");
  ASSERT_EQ(faster.call, Call::faster);
  auto whole = [](double speedup, Verdict v) {
    Judgement j;
    j.comparison.speedup = speedup;
    j.comparison.verdict = v;
    return j;
  };
  // The whole runs agree: accepted, with the look's speedup.
  auto d = sequential_decision(faster, {{"default", whole(1.8, Verdict::faster)}}, "default", 1.01);
  EXPECT_EQ(d.stage, Stage::accepted) << d.reason;
  EXPECT_NE(d.reason.find("2.000x faster on default"), std::string::npos) << d.reason;
  // The hot kernels got faster but the run's kernels did not: the work went elsewhere.
  d = sequential_decision(faster, {{"default", whole(1.0, Verdict::no_change)}}, "default", 1.01);
  EXPECT_EQ(d.stage, Stage::rejected);
  EXPECT_NE(d.reason.find("went elsewhere"), std::string::npos) << d.reason;
  // Slower on another configuration, or a printed time that is not credible.
  d = sequential_decision(faster, {{"default", whole(1.8, Verdict::faster)}, {"small", whole(0.9, Verdict::slower)}},
                          "default", 1.01);
  EXPECT_EQ(d.stage, Stage::rejected);
  EXPECT_NE(d.reason.find("slower on small"), std::string::npos) << d.reason;
  Judgement lying = whole(1.8, Verdict::faster);
  lying.suspicious = "it reports 5 ms of kernel time in a process that ran 1 ms";
  d = sequential_decision(faster, {{"default", lying}}, "default", 1.01);
  EXPECT_EQ(d.stage, Stage::rejected);
  EXPECT_NE(d.reason.find("not credible"), std::string::npos) << d.reason;
  // Not faster at its look, or the primary configuration's whole runs missing: rejected.
  auto none = judge_look(runs_at(1.0, 5, 0.001), runs_at(1.0, 5, 0.001), plan, 1, "default");
  d = sequential_decision(none, {{"default", whole(1.0, Verdict::no_change)}}, "default", 1.01);
  EXPECT_EQ(d.stage, Stage::rejected);
  EXPECT_EQ(d.reason, none.reason);
  EXPECT_EQ(sequential_decision(faster, {}, "default", 1.01).stage, Stage::rejected);
}
