// Tests of evaluate/verdict: each rule that turns what a step observed into a variant's status,
// at its boundaries (the credibility checks of judge() as a whole are test_acceptance's).
#include "evaluate/verdict.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace optimas::evaluate;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Just below and just above a boundary, away from rounding.
constexpr double k_eps = 1e-9;

} // namespace

TEST(Verdict, FinalStatusesEndAnAttempt) {
  for (const char* s : {"accepted", "rejected", "build_failed", "build_stale", "guardrail_rejected", "no_edits",
                        "invalid_reply", "validation_failed", "not_measured", "run_failed"})
    EXPECT_TRUE(is_final_status(s)) << s;
  for (const char* s : {"", "running", "waiting", "accepted ", "Accepted", "build"})
    EXPECT_FALSE(is_final_status(s)) << s;
}

TEST(Verdict, AReplyThatDidNotParseIsInvalidAndRetried) {
  auto o = unusable_proposal(true, true, true, false, "line 3: not JSON");
  EXPECT_EQ(o.status, "invalid_reply"); // a parse error comes before any guardrail
  EXPECT_EQ(o.reason, "line 3: not JSON");
  EXPECT_TRUE(o.retry);
  EXPECT_EQ(o.feedback, "line 3: not JSON");
  // The same replies as the attempt before: asking again would get them again.
  EXPECT_FALSE(unusable_proposal(true, false, true, true, "x").retry);
}

TEST(Verdict, AGuardrailRejectionIsRetriedUnlessTheRepliesRepeat) {
  auto o = unusable_proposal(false, true, true, false, "signature changed");
  EXPECT_EQ(o.status, "guardrail_rejected");
  EXPECT_EQ(o.reason, "signature changed");
  EXPECT_TRUE(o.retry);
  EXPECT_FALSE(unusable_proposal(false, true, true, true, "signature changed").retry);
}

TEST(Verdict, NoEditsIsAnAnswerNotAMistake) {
  auto none = unusable_proposal(false, false, false, false, "no edit applied");
  EXPECT_EQ(none.status, "no_edits");
  EXPECT_EQ(none.reason, "the backend proposed no edit");
  EXPECT_FALSE(none.retry);
  EXPECT_EQ(none.feedback, "no edit applied");
  // Edits proposed but none applied: the reason says why they were not.
  auto unapplied = unusable_proposal(false, false, true, false, "edit 1: text not found");
  EXPECT_EQ(unapplied.status, "no_edits");
  EXPECT_EQ(unapplied.reason, "edit 1: text not found");
  EXPECT_FALSE(unapplied.retry);
}

TEST(Verdict, OnlyEditsOfTokensChangeTheCode) {
  const std::map<std::string, std::string> before = {{"main.cu", "int f(int x) { return x + 1; }\n"}};
  EXPECT_FALSE(edits_change_code(before, before));
  EXPECT_FALSE(edits_change_code(before, {{"main.cu", "int f(int x)\n{\n  return x + 1;\n}\n"}})); // layout
  EXPECT_FALSE(edits_change_code(before, {{"main.cu", "// faster\nint f(int x) { return x + 1; /* ok */ }\n"}}));
  EXPECT_TRUE(edits_change_code(before, {{"main.cu", "int f(int x) { return x + 2; }\n"}}));
  EXPECT_TRUE(edits_change_code(before, {{"other.cu", "int f(int x) { return x + 1; }\n"}})); // a file not before
}

TEST(Verdict, UnchangedCodeIsStaleAndRetriedUnlessTheRepliesRepeat) {
  auto o = unchanged_code(false);
  EXPECT_EQ(o.status, "build_stale");
  EXPECT_TRUE(has(o.reason, "only comments or layout")) << o.reason;
  EXPECT_EQ(o.feedback, o.reason);
  EXPECT_TRUE(o.retry);
  EXPECT_FALSE(unchanged_code(true).retry);
}

TEST(Verdict, AFailedBuildGoesBackWithTheCompilersErrors) {
  auto o = failed_build("exit code 1", "main.cu:3: error: x undeclared", false);
  EXPECT_EQ(o.status, "build_failed");
  EXPECT_EQ(o.reason, "exit code 1");
  EXPECT_EQ(o.feedback, "the variant does not build (exit code 1):\nmain.cu:3: error: x undeclared");
  EXPECT_TRUE(o.retry);
  EXPECT_FALSE(failed_build("exit code 1", "", true).retry);
}

TEST(Verdict, ABuildIdenticalToTheParentsIsStale) {
  auto stale = stale_build("abc", "abc", "stream", false);
  ASSERT_TRUE(stale.has_value());
  EXPECT_EQ(stale->status, "build_stale");
  EXPECT_TRUE(has(stale->reason, "its stream is identical to the parent's")) << stale->reason;
  EXPECT_FALSE(stale->retry);
  auto no_binary = stale_build("abc", "abc", "", false);
  ASSERT_TRUE(no_binary.has_value());
  EXPECT_TRUE(has(no_binary->reason, "its output is identical")) << no_binary->reason;
  EXPECT_FALSE(stale_build("abc", "abd", "stream", false).has_value());
  // An A/A variant is the parent built again, on purpose.
  EXPECT_FALSE(stale_build("abc", "abc", "stream", true).has_value());
}

TEST(Verdict, TamperingIsAChangeOutsideTheCopyOrToItsOwnBuild) {
  TreeChanges none, added, changed, outside;
  added.added = {"out/cache.bin"};
  changed.changed = {"stream"};
  changed.added = {"out/cache.bin"};
  outside.changed = {"work/baseline/stream"};
  EXPECT_EQ(tampering(none, none), "");
  EXPECT_EQ(tampering(none, added), ""); // a file it left is removed, not held against it
  auto own = tampering(none, changed);
  EXPECT_TRUE(has(own, "changed its own build")) << own;
  EXPECT_TRUE(has(own, "stream")) << own;
  EXPECT_FALSE(has(own, "cache.bin")) << own; // what it added is not part of the charge
  auto out = tampering(outside, changed);     // outside the copy is the graver one
  EXPECT_TRUE(has(out, "outside its scratch copy")) << out;
  EXPECT_TRUE(has(out, "work/baseline/stream")) << out;
}

TEST(Verdict, ABaselineThatDoesNotReproduceItsOutputStopsTheRun) {
  EXPECT_FALSE(baseline_drift("default", "default", "aa", "aa").has_value());
  // A fresh-seed check has an input of its own: no recorded output to compare with.
  EXPECT_FALSE(baseline_drift("default/seed-1", "default", "aa", "bb").has_value());
  auto drift = baseline_drift("default", "default", "aa", "bb");
  ASSERT_TRUE(drift.has_value());
  // The loop names the run once, in front of every error that stops it.
  EXPECT_FALSE(has(*drift, "run ")) << *drift;
  EXPECT_TRUE(has(*drift, "for default changed between two runs")) << *drift;
}

TEST(Verdict, AValidationFailureNamesTheCheck) {
  EXPECT_EQ(validation_failure("heldout", true, false, "line 3 differs"),
            "wrong output on heldout (held out): line 3 differs");
  EXPECT_EQ(validation_failure("small", false, true, "it changed x"), "caught on small: it changed x");
}

TEST(Verdict, AMeasuredOutputMustBeTheBaselinesOnTheSameInput) {
  EXPECT_FALSE(measured_output_differs("exact", "default", 0, "", "aa", "aa").has_value());
  // With a tolerance the hashes may differ: validation compared the values.
  EXPECT_FALSE(measured_output_differs("rel=1e-6", "default", 0, "", "aa", "bb").has_value());
  auto first = measured_output_differs("exact", "default", 0, "", "aa", "bb");
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(has(*first, "on default while measured (round 1)")) << *first;
  auto warmup = measured_output_differs("exact", "small", -1, "77", "aa", "bb");
  ASSERT_TRUE(warmup.has_value());
  EXPECT_TRUE(has(*warmup, "(round warm-up, seed 77)")) << *warmup;
}

TEST(Verdict, KernelTimeMayNotExceedTheProcessesTime) {
  // 5% and 1 ms of slack: 100 ms of process allows 106 ms of kernel time.
  EXPECT_FALSE(kernel_time_exceeds_process(106 - k_eps, 100).has_value());
  auto over = kernel_time_exceeds_process(106 + 1e-6, 100);
  ASSERT_TRUE(over.has_value());
  EXPECT_TRUE(has(*over, "in a process that ran 100 ms")) << *over;
  EXPECT_FALSE(kernel_time_exceeds_process(1.0, 0).has_value());
  EXPECT_TRUE(kernel_time_exceeds_process(1.0 + 1e-6, 0).has_value());
}

TEST(Verdict, TheRestOfTheProcessMayNotAbsorbTheClaimedSaving) {
  // Claimed 10 ms: a growth of 5 ms (half) stands, more does not, once it is significant.
  EXPECT_FALSE(overhead_absorbs_saving(10, 5, 1, 0.95).has_value());
  auto absorbed = overhead_absorbs_saving(10, 5 + k_eps, 1, 0.95);
  ASSERT_TRUE(absorbed.has_value());
  EXPECT_TRUE(has(*absorbed, "95% interval")) << *absorbed;
  EXPECT_TRUE(has(*absorbed, "the wall time did not fall")) << *absorbed;
  // Not significant (the interval reaches 0): too noisy to tell, the printed time stands.
  EXPECT_FALSE(overhead_absorbs_saving(10, 8, 0, 0.95).has_value());
  EXPECT_TRUE(overhead_absorbs_saving(10, 8, k_eps, 0.95).has_value());
}

TEST(Verdict, APrintedSavingMayExceedTheTracedOneByHalfAndTwoPoints) {
  // Traced 1.10x: printed up to 1 + 1.5 x 0.10 + 0.02 = 1.17x is credible.
  EXPECT_FALSE(printed_exceeds_traced(1.17 - k_eps, 1.10).has_value());
  auto over = printed_exceeds_traced(1.17 + k_eps, 1.10);
  ASSERT_TRUE(over.has_value());
  EXPECT_TRUE(has(*over, "printed kernel time says 1.170x, its traced GPU time 1.100x")) << *over;
  // Traced not faster at all: only the 2 points of slack are left.
  EXPECT_FALSE(printed_exceeds_traced(1.02 - k_eps, 0.9).has_value());
  EXPECT_TRUE(printed_exceeds_traced(1.02 + k_eps, 0.9).has_value());
  EXPECT_FALSE(printed_exceeds_traced(1.0, 1.0).has_value());
}

TEST(Verdict, OnlyAnAcceptedDecisionAcceptsTheVariant) {
  EXPECT_EQ(measured_status(Stage::accepted), "accepted");
  EXPECT_EQ(measured_status(Stage::rejected), "rejected");
  EXPECT_EQ(measured_status(Stage::confirm), "rejected"); // unconfirmed is not accepted
}

TEST(Verdict, TooFewRunsToReachTheSignificanceAreSaidBeforeARun) {
  AcceptanceRule rule; // significance 0.05
  rule.significance = 0.05;
  rule.comparisons = 1;
  // 3 runs a side: p >= 2 / C(6, 3) = 0.1; 4 runs: 2 / 70 < 0.05.
  auto three = unreachable_significance(3, rule, 1, 1);
  ASSERT_TRUE(three.has_value());
  EXPECT_TRUE(has(*three, "to at least 4")) << *three;
  EXPECT_FALSE(unreachable_significance(4, rule, 1, 1).has_value());
  // Ten comparisons share it: p < 0.005 needs C(2n, n) > 400, n = 6.
  rule.comparisons = 10;
  auto five = unreachable_significance(5, rule, 5, 2);
  ASSERT_TRUE(five.has_value());
  EXPECT_TRUE(has(*five, "5 measured configuration(s) x 2 iteration(s)")) << *five;
  EXPECT_TRUE(has(*five, "to at least 6")) << *five;
  EXPECT_FALSE(unreachable_significance(6, rule, 5, 2).has_value());
}

TEST(Verdict, TheSequentialRulesPrimaryConfigurationIsScreenedNotJudged) {
  nlohmann::json m = {
      {"verdict_rule", "sequential"},
      {"primary", "default"},
      {"configs", {{"default", {{"verdict", "no significant change"}}}, {"large", {{"verdict", "faster"}}}}}};
  EXPECT_EQ(config_verdict(m, "default"), "whole runs, screened");
  EXPECT_EQ(config_verdict(m, "large"), "faster");
  // The fixed rule judges every configuration, the primary one too.
  m.erase("verdict_rule");
  EXPECT_EQ(config_verdict(m, "default"), "no significant change");
  EXPECT_EQ(config_verdict(m, "missing"), "?");
  EXPECT_EQ(config_verdict(nullptr, "default"), "?");
}

TEST(Verdict, ASmallOutputIsWarnedAbout) {
  auto w = small_output(k_small_output - 1, "default");
  ASSERT_TRUE(w.has_value());
  EXPECT_TRUE(has(*w, "compares 255 bytes of output on default")) << *w;
  EXPECT_FALSE(small_output(k_small_output, "default").has_value());
}

TEST(Verdict, TheRunsOutcome) {
  EXPECT_EQ(run_outcome(true, true), "improved");
  EXPECT_EQ(run_outcome(false, true), "no_improvement");
  EXPECT_EQ(run_outcome(false, false), "not_measured");
}
