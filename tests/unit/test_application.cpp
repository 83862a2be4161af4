// AP items (analysis/application.cpp) on the synthetic format-3 traces of tests/data/trace-v3
// (written to the format, not recorded; their figures are in make_fixtures.py) and on the ones
// recorded on the H200 (trace-v3/h200, figures from figures.py).
#include "analysis/application.hpp"

#include "analysis/diagnostics.hpp"
#include "analysis/json.hpp"
#include "profile/importer.hpp"
#include "profile/trace.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace optimas;
using namespace optimas::analysis;
using optimas::test::data_path;

namespace {

// A profile whose timing pass is the trace (as `optimas profile` records one), no heavy pass.
profile::Profile traced(const std::string& name) {
  profile::Trace t = profile::read_trace(data_path("trace-v3/" + name));
  profile::Run run;
  run.config = "default";
  run.timeline = profile::summarize_timeline(t);
  run.timing = std::move(t.launches);
  profile::Profile p;
  p.runs.push_back(std::move(run));
  return p;
}

const Evidence* find(const Diagnostics& d, const std::string& id) {
  for (const auto& e : d.evidence)
    if (e.id == id) return &e;
  return nullptr;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST(Application, SyncCopiesAfterEachLaunchAreTheFirstGapItem) {
  Diagnostics d = analyze(traced("sync-copy"), {});
  ASSERT_TRUE(d.timeline);
  // The overview, two recurring gaps, the device-to-host and host-to-device copies (the memset
  // and the gaps that do not recur are under 1% of the run or single).
  std::vector<std::string> ids;
  for (const auto& e : d.evidence)
    if (e.kind == "application") ids.push_back(e.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"AP1", "AP2", "AP3", "AP4", "AP5"}));

  const Evidence* overview = find(d, "AP1");
  ASSERT_NE(overview, nullptr);
  EXPECT_TRUE(overview->kernel.empty());
  EXPECT_TRUE(contains(overview->text, "GPU idle 75% of the run (24.2 ms wall; GPU busy 5.95 ms: kernels 5 ms, "
                                       "copies 900 us, memsets 50 us)"))
      << overview->text;
  EXPECT_TRUE(contains(overview->text, "15.3 ms lies in 102 host gaps between GPU work, 2 ms before the first"));
  EXPECT_TRUE(contains(overview->text, "The host blocked in cudaMemcpy x52"));
  EXPECT_NEAR(overview->saved, 15300.0 / 24250, 1e-12);

  const Evidence* gap = find(d, "AP2");
  ASSERT_NE(gap, nullptr);
  EXPECT_TRUE(contains(gap->text,
                       "GPU idle 61% of the run in 49 host gaps (300 us each on average, the largest 300 "
                       "us), each after synchronous device-to-host copy of 4 B, before the next step_kernel: "
                       "50 synchronous device-to-host copies of 4 B, one after each launch of step_kernel"))
      << gap->text;
  EXPECT_NEAR(gap->saved, 14700.0 / 24250, 1e-12);
  EXPECT_NEAR(gap->gain, 1 / (1 - gap->saved), 1e-12);
  EXPECT_TRUE(contains(gap->text, "of the wall time")) << gap->text;
  EXPECT_TRUE(contains(gap->text, "assumes the GPU's own work stays as it is")) << gap->text;

  const Evidence* down = find(d, "AP4");
  ASSERT_NE(down, nullptr);
  EXPECT_TRUE(contains(down->text, "51 device-to-host copies, 4 MiB in 500 us")) << down->text;
  EXPECT_TRUE(contains(down->text, "51 synchronous (the host waited), 51 to or from pageable memory; 500 us of it"));
  EXPECT_NEAR(down->saved, 500.0 / 24250, 1e-12);
  EXPECT_TRUE(contains(find(d, "AP5")->text, "1 host-to-device copy, 4 MiB in 400 us"));

  // The text summary ends with them; the JSON has them and the timeline.
  EXPECT_TRUE(contains(to_text(d), "[AP2] GPU idle 61% of the run"));
  auto j = to_json(d);
  EXPECT_EQ(j["timeline"]["gap_groups"][0]["count"], 49);
  EXPECT_NEAR(j["application_headroom"].get<double>(), 1 - 5000.0 / 24250, 1e-12);
}

// Several items at once: the AP items' savings add up to at most the time no kernel runs; with a
// kernel's item among them the bound is of the wall time, the kernel's saving scaled to it.
TEST(Application, CombinedGainOfApItemsIsOfTheWallTime) {
  Diagnostics d = analyze(traced("sync-copy"), {});
  std::vector<const Evidence*> all;
  for (const auto& e : d.evidence)
    if (e.kind == "application") all.push_back(&e);
  EXPECT_NEAR(combined_gain(all, d), 1 / (5000.0 / 24250), 1e-9) << "capped at 1 - kernel time / wall time";
  EXPECT_NEAR(combined_gain({find(d, "AP2")}, d), find(d, "AP2")->gain, 1e-12);

  Evidence kernel_item{"PC1", "pc", "step_kernel", "", 0.5, 2.0};
  std::map<std::string, double> headroom = {{"step_kernel", 1.0}, {"", 0.8}};
  // 0.5 of the GPU time, which is a fifth of the wall time, and 0.3 of the wall time.
  Evidence ap{"AP2", "application", "", "", 0.3, 1 / 0.7};
  EXPECT_NEAR(combined_gain({&kernel_item, &ap}, headroom, 0.2), 1 / (1 - 0.3 - 0.1), 1e-12);
  EXPECT_NEAR(combined_gain({&kernel_item}, headroom, 0.2), 2.0, 1e-12) << "kernel items alone: of the GPU time";
}

TEST(Application, AnOverlappedPipelineHasLittleToGain) {
  Diagnostics d = analyze(traced("overlap"), {});
  ASSERT_TRUE(d.timeline);
  const Evidence* overview = find(d, "AP1");
  ASSERT_NE(overview, nullptr);
  EXPECT_TRUE(contains(overview->text, "GPU idle 16% of the run")) << overview->text;
  EXPECT_NEAR(overview->saved, 57.0 / 4757, 1e-12) << "the start-up and the end are not counted";
  const Evidence* gaps = find(d, "AP2");
  ASSERT_NE(gaps, nullptr);
  EXPECT_TRUE(contains(gaps->text, "19 host gaps (3 us each on average")) << gaps->text;
  EXPECT_TRUE(contains(gaps->text, "each after update, before the next update")) << gaps->text;
  const Evidence* copies = find(d, "AP3");
  ASSERT_NE(copies, nullptr);
  EXPECT_TRUE(contains(copies->text, "0 synchronous")) << copies->text;
  EXPECT_DOUBLE_EQ(copies->saved, 0) << "every copy ran under a kernel";
  EXPECT_EQ(find(d, "AP4"), nullptr);
}

// Traces recorded on the H200 (tests/data/trace-v3/h200): Rodinia's bfs copies a 1-byte flag
// back after each level's two launches; heat copies its residual after every step with
// --check 1, and every 100 steps with --check 100, where no item is left about it.
TEST(Application, RecordedH200TracesNameTheirSynchronousCopies) {
  Diagnostics bfs = analyze(traced("h200/bfs-path2000"), {});
  const Evidence* overview = find(bfs, "AP1");
  ASSERT_NE(overview, nullptr);
  EXPECT_TRUE(contains(overview->text, "GPU idle 99% of the run (387 ms wall; GPU busy 4.97 ms: kernels 2.79 ms, "
                                       "copies 2.18 ms)"))
      << overview->text;
  EXPECT_TRUE(contains(overview->text, "cudaMemcpy x2,009")) << overview->text;
  const Evidence* flag = find(bfs, "AP2");
  ASSERT_NE(flag, nullptr);
  EXPECT_TRUE(contains(flag->text, "1,001 synchronous device-to-host copies of 1 B, one after each launch of Kernel2"))
      << flag->text;
  EXPECT_GT(flag->gain, 1.0);
  EXPECT_LT(flag->gain, overview->gain) << "one recurring gap saves less than all of them";

  auto per_step = [](const Diagnostics& d) {
    for (const auto& e : d.evidence)
      if (e.kind == "application" && contains(e.text, "copies of 256 B, one after each launch of residual_partial"))
        return &e;
    return static_cast<const Evidence*>(nullptr);
  };
  Diagnostics check1 = analyze(traced("h200/heat-small-check1"), {});
  const Evidence* copy = per_step(check1);
  ASSERT_NE(copy, nullptr);
  EXPECT_TRUE(contains(copy->text, "500 synchronous device-to-host copies of 256 B")) << copy->text;
  EXPECT_EQ(per_step(analyze(traced("h200/heat-small-check100"), {})), nullptr);

  Diagnostics stream = analyze(traced("h200/stream-small"), {});
  bool copies_item = false;
  for (const auto& e : stream.evidence)
    copies_item |= e.kind == "application" && contains(e.text, "6 host-to-device copies, 192 MiB") &&
                   contains(e.text, "6 to or from pageable memory");
  EXPECT_TRUE(copies_item);
}

// A profile without a timeline (an older trace, an imported ncu report) has no AP items.
TEST(Application, NoTimelineNoApItems) {
  auto d = analyze(profile::import_profile(data_path("h200/heat")), {});
  EXPECT_FALSE(d.timeline);
  for (const auto& e : d.evidence) EXPECT_NE(e.kind, "application") << e.id;
  EXPECT_TRUE(to_json(d)["timeline"].is_null());
}

TEST(Application, CallsAndTimesInWords) {
  profile::Trace t = profile::read_trace(data_path("trace-v3/sync-copy"));
  EXPECT_EQ(application_calls(*profile::summarize_timeline(t)),
            (std::vector<std::string>{"cudaMemcpy", "cudaMemset", "cudaDeviceSynchronize"}));
  EXPECT_EQ(time_text(300e3), "300 us");
  EXPECT_EQ(time_text(24.25e6), "24.2 ms");
  EXPECT_EQ(time_text(1.5e9), "1.5 s");
  EXPECT_EQ(time_text(12), "12 ns");
}
