#include "evaluate/ear.hpp"

#include "profile/importer.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace optimas;
using evaluate::compute_ear;
using evaluate::EarInputs;
using evaluate::EarMetrics;
using evaluate::EarOptions;

namespace {

// A source of `n` lines where line i reads "line <i>;", so a find text names one line.
std::string numbered_source(int n) {
  std::string s;
  for (int i = 1; i <= n; ++i) s += "line " + std::to_string(i) + ";\n";
  return s;
}

prompt::Edit range_edit(std::string kernel, int first, int last, std::vector<std::string> evidence = {"PC1"},
                        std::string file = "main.cu") {
  prompt::Edit e;
  e.file = std::move(file);
  e.kernel = std::move(kernel);
  e.line_start = first;
  e.line_end = last;
  e.new_text = "changed";
  e.evidence = std::move(evidence);
  return e;
}

prompt::Edit find_edit(std::string kernel, std::string find, std::vector<std::string> evidence = {"PC1"}) {
  prompt::Edit e;
  e.file = "main.cu";
  e.kernel = std::move(kernel);
  e.find = std::move(find);
  e.replace = "changed";
  e.evidence = std::move(evidence);
  return e;
}

analysis::SalientLine salient(std::string id, std::string file, int line) {
  analysis::SalientLine l;
  l.id = std::move(id);
  l.file = std::move(file);
  l.line = line;
  return l;
}

// Diagnostics of one kernel with salient lines (or none: a kernel without PC data).
void add_kernel(analysis::Diagnostics& d, std::string kernel, std::vector<analysis::SalientLine> lines) {
  analysis::KernelDiagnostics kd;
  kd.time.kernel = kernel;
  if (!lines.empty()) {
    analysis::StallSummary s;
    s.kernel = kernel;
    s.total_samples = 100;
    for (const auto& l : lines) d.evidence.push_back({l.id, "pc", kernel, "line " + std::to_string(l.line)});
    s.lines = std::move(lines);
    kd.stalls = std::move(s);
  }
  d.kernels.push_back(std::move(kd));
}

std::set<std::string> ids(const analysis::Diagnostics& d) {
  std::set<std::string> out;
  for (const auto& e : d.evidence) out.insert(e.id);
  return out;
}

// One launch's PC samples: `stalled` of `total` samples on one line carry `stall`.
profile::KernelSource source_block(const std::string& kernel, profile::Stall stall, std::uint64_t stalled,
                                   std::uint64_t total) {
  profile::KernelSource b;
  b.kernel = kernel;
  b.demangled = kernel + "(double*, int)";
  profile::SourceLine hot{"/build/main.cu", 10, "a[i] = b[i];", {}};
  hot.samples.all = stalled;
  hot.samples.stalls[static_cast<std::size_t>(stall)] = stalled;
  profile::SourceLine rest{"/build/main.cu", 11, "}", {}};
  rest.samples.all = total - stalled;
  rest.samples.stalls[static_cast<std::size_t>(profile::Stall::selected)] = total - stalled;
  b.lines = {hot, rest};
  return b;
}

profile::Launch launch(const std::string& kernel, std::map<std::string, double> metrics) {
  profile::Launch l;
  l.kernel = kernel;
  l.demangled = kernel + "(double*, int)";
  for (const auto& [name, value] : metrics) l.metrics[name].value = value;
  return l;
}

profile::Profile one_run(std::vector<profile::KernelSource> sources, std::vector<profile::Launch> launches,
                         std::string config = "default") {
  profile::Profile p;
  profile::Run r;
  r.config = std::move(config);
  r.sources = std::move(sources);
  r.launches = std::move(launches);
  p.runs.push_back(std::move(r));
  return p;
}

prompt::Edit effect_edit(std::string kernel, int line, std::vector<prompt::ExpectedEffect> effects) {
  auto e = range_edit(std::move(kernel), line, line);
  e.expected_effect = std::move(effects);
  return e;
}

// Named fields, so the inputs a test leaves out keep their defaults.
EarInputs inputs(const analysis::Diagnostics& d, const prompt::Reply& r, const edit::Application& app,
                 const profile::Profile* before = nullptr, const profile::Profile* after = nullptr,
                 std::string config = "") {
  return {.diagnostics = &d,
          .reply = &r,
          .application = &app,
          .before = before,
          .after = after,
          .config = std::move(config),
          .correct = std::nullopt};
}

const evaluate::EffectCheck* find_effect(const EarMetrics& m, std::size_t edit, const std::string& metric) {
  for (const auto& c : m.effects)
    if (c.edit == edit && c.metric == metric) return &c;
  return nullptr;
}

} // namespace

TEST(Ear, CoverageCountsOnlyEvidenceThePromptHad) {
  analysis::Diagnostics d;
  add_kernel(d, "k", {salient("PC1", "main.cu", 5)});
  d.evidence.push_back({"RF1", "roofline", "k", "memory bound"});
  prompt::Reply r;
  r.edits = {range_edit("k", 1, 1, {"PC1"}),                // covered
             range_edit("k", 2, 2, {"PC9"}),                // only an unknown ID: not covered
             range_edit("k", 3, 3, {"RF1", "IA7"}),         // covered, and one unknown citation
             range_edit("k", 4, 4, {}),                     // cites nothing
             range_edit("k", 6, 6, {"PC9", "PC9", "IA8"})}; // an unknown ID cited twice counts once
  auto app = edit::apply_edits({{"main.cu", numbered_source(10)}}, r, ids(d));
  auto m = compute_ear(inputs(d, r, app));
  EXPECT_EQ(m.edits, 5u);
  EXPECT_EQ(m.covered, 2u);
  ASSERT_TRUE(m.evidence_coverage);
  EXPECT_DOUBLE_EQ(*m.evidence_coverage, 0.4);
  EXPECT_EQ(m.unknown_citations, 4u);
  EXPECT_EQ(m.hallucinated_edits, 0u);
  EXPECT_EQ(m.hallucinations(), 4u);
}

TEST(Ear, NoEditsLeavesTheRatiosAbsent) {
  analysis::Diagnostics d;
  add_kernel(d, "k", {salient("PC1", "main.cu", 5)});
  prompt::Reply r;
  r.withheld = {{"tile it", "not worth it", {"PC1"}}, {"unroll", "already unrolled", {}}};
  edit::Application app;
  auto m = compute_ear(inputs(d, r, app));
  EXPECT_EQ(m.edits, 0u);
  EXPECT_EQ(m.withheld, 2u);
  EXPECT_FALSE(m.evidence_coverage);
  EXPECT_FALSE(m.localization_agreement);
  EXPECT_FALSE(m.directional_consistency);
  EXPECT_FALSE(m.correct);
}

TEST(Ear, LocalisationWithinKLinesOfASalientLine) {
  analysis::Diagnostics d;
  // ncu recorded absolute paths from another machine; the prompt named the file "main.cu".
  const std::string ncu = "/home/someone/app/main.cu";
  add_kernel(d, "rhs4<0, 1>",
             {salient("PC1", ncu, 20), salient("PC2", ncu, 50), salient("PC3", ncu, 60), salient("PC4", ncu, 80)});
  add_kernel(d, "helper", {});                         // no PC data
  add_kernel(d, "sass_only", {salient("PC5", "", 0)}); // samples without line correlation
  prompt::Reply r;
  r.edits = {range_edit("rhs4", 46, 47),                      // 47 + 3 reaches 50
             range_edit("void rhs4<0, 1>(double *)", 10, 16), // 16 + 3 = 19 misses 20
             range_edit("app::rhs4<0,1>", 83, 85),            // 83 - 3 reaches 80
             range_edit("rhs4", 64, 66),                      // 64 - 3 = 61 misses 60
             range_edit("helper", 50, 50),                    // no salient lines: not in the denominator
             range_edit("sass_only", 1, 1),                   // no salient line with a line number either
             range_edit("rhs4", 200, 200)};                   // outside the file: not applied, not counted
  auto app = edit::apply_edits({{"main.cu", numbered_source(100)}}, r, ids(d));
  ASSERT_EQ(app.applied(), 6u);
  auto m = compute_ear(inputs(d, r, app));
  EXPECT_EQ(m.implemented, 6u);
  EXPECT_EQ(m.localizable, 4u);
  EXPECT_EQ(m.localized, 2u);
  ASSERT_TRUE(m.localization_agreement);
  EXPECT_DOUBLE_EQ(*m.localization_agreement, 0.5);

  // A window one line wider takes in the misses as well; a window of 0 needs an overlap.
  EarOptions wide;
  wide.k_lines = 4;
  EXPECT_EQ(compute_ear(inputs(d, r, app), wide).localized, 4u);
  EarOptions exact;
  exact.k_lines = 0;
  EXPECT_EQ(compute_ear(inputs(d, r, app), exact).localized, 0u);
}

TEST(Ear, LocalisationMatchesFilesByName) {
  analysis::Diagnostics d;
  add_kernel(d, "k", {salient("PC1", "/abs/path/util.cuh", 10)});
  prompt::Reply r;
  r.edits = {range_edit("k", 10, 10, {"PC1"}, "main.cu"),   // same line, other file
             range_edit("k", 11, 11, {"PC1"}, "util.cuh")}; // the prompt's name for the profile's path
  auto app = edit::apply_edits({{"main.cu", numbered_source(20)}, {"util.cuh", numbered_source(20)}}, r, ids(d));
  ASSERT_EQ(app.applied(), 2u);
  auto m = compute_ear(inputs(d, r, app));
  EXPECT_EQ(m.localizable, 2u);
  EXPECT_EQ(m.localized, 1u);
}

// An edit at the line a PC item's stall waits on (its cause, issue #49) or where its warps split
// is localized too: there the stall is fixed. A cause not found names no line.
TEST(Ear, LocalisationCountsTheLinesAStallWaitsOn) {
  analysis::Diagnostics d;
  auto l = salient("PC1", "/abs/main.cu", 60);
  l.cause = analysis::Cause{};
  l.cause->status = analysis::Cause::Status::found;
  l.cause->file = "/abs/main.cu";
  l.cause->line = 20;
  l.divergence = analysis::Divergence{};
  l.divergence->status = analysis::Cause::Status::found;
  l.divergence->file = "/abs/main.cu";
  l.divergence->line = 40;
  auto ambiguous = salient("PC2", "/abs/main.cu", 90);
  ambiguous.cause = analysis::Cause{};
  ambiguous.cause->status = analysis::Cause::Status::ambiguous;
  ambiguous.cause->line = 5;
  add_kernel(d, "k", {l, ambiguous});
  prompt::Reply r;
  r.edits = {range_edit("k", 21, 21, {"PC1"}), range_edit("k", 39, 39, {"PC1"}), range_edit("k", 5, 5, {"PC2"})};
  auto app = edit::apply_edits({{"main.cu", numbered_source(100)}}, r, ids(d));
  ASSERT_EQ(app.applied(), 3u);
  auto m = compute_ear(inputs(d, r, app));
  EXPECT_EQ(m.localizable, 3u);
  EXPECT_EQ(m.localized, 2u);
}

TEST(Ear, LocalisationFallsBackToTheOnlySourceFile) {
  analysis::Diagnostics d;
  // Compiled from a copy under another name: no source is called main_copy.cu.
  add_kernel(d, "k", {salient("PC1", "/tmp/build/main_copy.cu", 10)});
  prompt::Reply r;
  r.edits = {range_edit("k", 9, 9)};
  auto single = edit::apply_edits({{"main.cu", numbered_source(20)}}, r, ids(d));
  EXPECT_EQ(compute_ear(inputs(d, r, single)).localized, 1u);
  // With two sources the path could mean either: no match.
  auto two = edit::apply_edits({{"main.cu", numbered_source(20)}, {"other.cu", numbered_source(20)}}, r, ids(d));
  auto m = compute_ear(inputs(d, r, two));
  EXPECT_EQ(m.localizable, 1u);
  EXPECT_EQ(m.localized, 0u);
}

TEST(Ear, DirectionalConsistencyOfStallShares) {
  using profile::Stall;
  analysis::Diagnostics d;
  add_kernel(d, "drop", {salient("PC1", "main.cu", 10)});
  add_kernel(d, "rise", {salient("PC2", "main.cu", 20)});
  add_kernel(d, "flat", {salient("PC3", "main.cu", 30)});
  // drop: long_scoreboard 60% -> 30%; rise: 40% -> 50%; flat: 50% -> 49.5% (1% relative, inside
  // the 2% dead band), measured over twice as many samples in two launches: shares, not counts.
  auto before = one_run({source_block("drop", Stall::long_scoreboard, 600, 1000),
                         source_block("rise", Stall::long_scoreboard, 400, 1000),
                         source_block("flat", Stall::long_scoreboard, 500, 1000)},
                        {});
  auto after = one_run({source_block("drop", Stall::long_scoreboard, 300, 1000),
                        source_block("rise", Stall::long_scoreboard, 500, 1000),
                        source_block("flat", Stall::long_scoreboard, 495, 1000),
                        source_block("flat", Stall::long_scoreboard, 495, 1000)},
                       {});
  prompt::Reply r;
  r.edits = {effect_edit("drop", 10, {{"stall_long_scoreboard", "decrease"}}),
             effect_edit("rise", 20, {{"long_sb", "decrease"}}), // an alias of the same stall
             effect_edit("flat", 30, {{"stall_long_scoreboard", "decrease"}})};
  auto app = edit::apply_edits({{"main.cu", numbered_source(40)}}, r, ids(d));
  auto in = inputs(d, r, app, &before, &after);
  auto m = compute_ear(in);
  ASSERT_EQ(m.effects.size(), 3u);
  EXPECT_EQ(m.effects[0].kernel, "drop");
  EXPECT_DOUBLE_EQ(m.effects[0].before, 0.6);
  EXPECT_DOUBLE_EQ(m.effects[0].after, 0.3);
  EXPECT_EQ(m.effects[0].outcome, "consistent");
  EXPECT_DOUBLE_EQ(m.effects[1].before, 0.4);
  EXPECT_DOUBLE_EQ(m.effects[1].after, 0.5);
  EXPECT_EQ(m.effects[1].outcome, "inconsistent");
  EXPECT_DOUBLE_EQ(m.effects[2].after, 0.495);
  EXPECT_EQ(m.effects[2].outcome, "inconsistent");
  EXPECT_EQ(m.kernels_checked, 3u);
  EXPECT_EQ(m.kernels_consistent, 1u);
  ASSERT_TRUE(m.directional_consistency);
  EXPECT_DOUBLE_EQ(*m.directional_consistency, 1.0 / 3.0);

  // With no dead band the 1% drop counts.
  EarOptions no_band;
  no_band.dead_band = 0;
  EXPECT_EQ(compute_ear(in, no_band).effects[2].outcome, "consistent");
}

TEST(Ear, DirectionalConsistencyOfMetricMeans) {
  analysis::Diagnostics d;
  add_kernel(d, "k", {salient("PC1", "main.cu", 10)});
  const std::string dram = "dram__bytes.sum";
  const std::string occ = "sm__warps_active.avg.pct_of_peak_sustained_active";
  // Means over launches, NaN ignored: before dram 100, after (80 + 60) / 2 = 70; occupancy
  // before 0 rises to 25.
  auto before = one_run(
      {}, {launch("k", {{dram, 90}, {occ, 0}}), launch("k", {{dram, 110}, {occ, 0}}), launch("other", {{dram, 1e9}})});
  auto after = one_run({}, {launch("k", {{dram, 80}, {occ, 25}}), launch("k", {{dram, 60}, {occ, profile::k_nan}})});
  prompt::Reply r;
  r.edits = {effect_edit("k", 10, {{dram, "decrease"}, {occ, "increase"}}),
             effect_edit("k", 20, {{occ, "decrease"}, {"l1tex__t_bytes.sum", "decrease"}})};
  auto app = edit::apply_edits({{"main.cu", numbered_source(40)}}, r, ids(d));
  auto m = compute_ear(inputs(d, r, app, &before, &after));
  ASSERT_EQ(m.effects.size(), 4u);
  const auto* c = find_effect(m, 0, dram);
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->before, 100);
  EXPECT_DOUBLE_EQ(c->after, 70);
  EXPECT_EQ(c->outcome, "consistent");
  c = find_effect(m, 0, occ);
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->before, 0);
  EXPECT_DOUBLE_EQ(c->after, 25);
  EXPECT_EQ(c->outcome, "consistent"); // from zero, any rise is a rise
  c = find_effect(m, 1, occ);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->outcome, "unmeasured"); // nothing falls below zero: no relative change to judge
  c = find_effect(m, 1, "l1tex__t_bytes.sum");
  ASSERT_TRUE(c);
  EXPECT_TRUE(std::isnan(c->before));
  EXPECT_EQ(c->outcome, "unmeasured"); // not collected
  EXPECT_EQ(m.kernels_checked, 1u);
  EXPECT_EQ(m.kernels_consistent, 1u);
}

TEST(Ear, AKernelIsConsistentOnlyWithAMajority) {
  analysis::Diagnostics d;
  add_kernel(d, "k", {salient("PC1", "main.cu", 10)});
  // a falls, b rises, c and d move by exactly the dead band: not beyond it.
  auto before = one_run({}, {launch("k", {{"a", 10}, {"b", 10}, {"c", 100}, {"d", 100}})});
  auto after = one_run({}, {launch("k", {{"a", 5}, {"b", 20}, {"c", 98}, {"d", 102}})});
  prompt::Reply r;
  r.edits = {effect_edit("k", 10, {{"a", "decrease"}, {"b", "decrease"}}),
             effect_edit("k", 20, {{"c", "decrease"}, {"d", "increase"}})};
  auto app = edit::apply_edits({{"main.cu", numbered_source(40)}}, r, ids(d));
  auto m = compute_ear(inputs(d, r, app, &before, &after));
  ASSERT_EQ(m.effects.size(), 4u);
  EXPECT_EQ(m.effects[2].outcome, "inconsistent");
  EXPECT_EQ(m.effects[3].outcome, "inconsistent");
  r.edits.pop_back();
  m = compute_ear(inputs(d, r, app, &before, &after));
  EXPECT_EQ(m.kernels_checked, 1u);
  EXPECT_EQ(m.kernels_consistent, 0u); // one of two is not more than half
  ASSERT_TRUE(m.directional_consistency);
  EXPECT_DOUBLE_EQ(*m.directional_consistency, 0);
  // before 0 and the model promised an increase that did not come.
  auto zero = one_run({}, {launch("k", {{"a", 0}})});
  r.edits = {effect_edit("k", 10, {{"a", "increase"}})};
  app = edit::apply_edits({{"main.cu", numbered_source(40)}}, r, ids(d));
  m = compute_ear(inputs(d, r, app, &zero, &zero));
  ASSERT_EQ(m.effects.size(), 1u);
  EXPECT_EQ(m.effects[0].outcome, "inconsistent");
}

TEST(Ear, WithoutARerunThereIsNoDirectionalConsistency) {
  analysis::Diagnostics d;
  add_kernel(d, "k", {salient("PC1", "main.cu", 10)});
  auto before = one_run({source_block("k", profile::Stall::wait, 50, 100)}, {});
  prompt::Reply r;
  r.edits = {effect_edit("k", 10, {{"stall_wait", "decrease"}})};
  auto app = edit::apply_edits({{"main.cu", numbered_source(40)}}, r, ids(d));
  auto m = compute_ear(inputs(d, r, app, &before, nullptr));
  ASSERT_EQ(m.effects.size(), 1u);
  EXPECT_DOUBLE_EQ(m.effects[0].before, 0.5);
  EXPECT_TRUE(std::isnan(m.effects[0].after));
  EXPECT_EQ(m.effects[0].outcome, "unmeasured");
  EXPECT_EQ(m.kernels_checked, 0u);
  EXPECT_FALSE(m.directional_consistency);
  // A config neither profile has is just as unmeasured.
  auto in = inputs(d, r, app, &before, &before, "huge");
  auto none = compute_ear(in);
  EXPECT_EQ(none.effects[0].outcome, "unmeasured");
  EXPECT_FALSE(none.directional_consistency);
}

TEST(Ear, ComparesTheNamedConfiguration) {
  analysis::Diagnostics d;
  add_kernel(d, "k", {salient("PC1", "main.cu", 10)});
  auto before = one_run({}, {launch("k", {{"a", 10}})}, "small");
  before.runs.push_back(one_run({}, {launch("k", {{"a", 100}})}, "default").runs[0]);
  auto after = one_run({}, {launch("k", {{"a", 50}})}, "default");
  prompt::Reply r;
  r.edits = {effect_edit("k", 10, {{"a", "decrease"}})};
  auto app = edit::apply_edits({{"main.cu", numbered_source(40)}}, r, ids(d));
  auto in = inputs(d, r, app, &before, &after, "default");
  auto m = compute_ear(in);
  EXPECT_DOUBLE_EQ(m.effects[0].before, 100);
  EXPECT_EQ(m.effects[0].outcome, "consistent");
  in.config.clear(); // the first run of each: small (10) against default (50)
  EXPECT_EQ(compute_ear(in).effects[0].outcome, "inconsistent");
  // Repeats of the configuration are pooled: the mean over all their launches.
  before.runs.push_back(one_run({}, {launch("k", {{"a", 80}})}, "default").runs[0]);
  before.runs.back().repeat = 1;
  in.config = "default";
  EXPECT_DOUBLE_EQ(compute_ear(in).effects[0].before, 90);
}

TEST(Ear, HallucinatedEditsAndUnappliedEffects) {
  analysis::Diagnostics d;
  add_kernel(d, "k", {salient("PC1", "main.cu", 3)});
  prompt::Reply r;
  r.edits = {find_edit("k", "line 3;"),                 // applied
             find_edit("k", "a[i] = c[i];", {"PC1"}),   // the text is not in the code
             range_edit("k", 3, 3),                     // overlaps the first edit
             range_edit("k", 50, 60, {"PC4"}),          // past the end, and an unknown ID
             find_edit("k", "line 7;", {"PC1", "XX"})}; // applied, with an unknown ID
  r.edits[1].expected_effect = {{"stall_wait", "decrease"}};
  auto app = edit::apply_edits({{"main.cu", numbered_source(10)}}, r, ids(d));
  auto in = inputs(d, r, app);
  in.correct = false;
  auto m = compute_ear(in);
  EXPECT_EQ(m.implemented, 2u);
  EXPECT_EQ(m.hallucinated_edits, 3u);
  EXPECT_EQ(m.unknown_citations, 2u);
  EXPECT_EQ(m.hallucinations(), 5u);
  EXPECT_TRUE(m.effects.empty()); // only applied edits promise measurable effects
  ASSERT_TRUE(m.correct);
  EXPECT_FALSE(*m.correct);

  // An edit the application has no outcome for was not applied either.
  edit::Application partial = app;
  partial.outcomes.resize(1);
  EXPECT_EQ(compute_ear(inputs(d, r, partial)).hallucinated_edits, 4u);
}

TEST(Ear, JsonHasFlatStableKeys) {
  analysis::Diagnostics d;
  add_kernel(d, "k", {salient("PC1", "main.cu", 10)});
  prompt::Reply r;
  r.edits = {effect_edit("k", 10, {{"stall_wait", "decrease"}})};
  r.withheld = {{"tile", "later", {}}};
  auto app = edit::apply_edits({{"main.cu", numbered_source(20)}}, r, ids(d));
  auto j = evaluate::to_json(compute_ear(inputs(d, r, app)));
  std::set<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.insert(key);
  EXPECT_EQ(keys, (std::set<std::string>{"evidence_coverage", "localization_agreement", "directional_consistency",
                                         "hallucinations", "hallucinated_edits", "unknown_citations", "implemented",
                                         "withheld", "edits", "covered", "localizable", "localized", "kernels_checked",
                                         "kernels_consistent", "correct", "effects"}));
  EXPECT_EQ(j["evidence_coverage"], 1.0);
  EXPECT_EQ(j["localization_agreement"], 1.0);
  EXPECT_TRUE(j["directional_consistency"].is_null());
  EXPECT_TRUE(j["correct"].is_null());
  EXPECT_EQ(j["hallucinations"], 0);
  EXPECT_EQ(j["withheld"], 1);
  ASSERT_EQ(j["effects"].size(), 1u);
  const auto& e = j["effects"][0];
  EXPECT_EQ(e["edit"], 0);
  EXPECT_EQ(e["kernel"], "k");
  EXPECT_EQ(e["metric"], "stall_wait");
  EXPECT_EQ(e["direction"], "decrease");
  EXPECT_TRUE(e["before"].is_null());
  EXPECT_TRUE(e["after"].is_null());
  EXPECT_EQ(e["outcome"], "unmeasured");
}

TEST(Ear, BadInputIsAnError) {
  analysis::Diagnostics d;
  prompt::Reply r;
  edit::Application app;
  EarInputs missing; // no application
  missing.diagnostics = &d;
  missing.reply = &r;
  EXPECT_THROW(compute_ear(missing), Error);
  EarOptions o;
  o.k_lines = -1;
  EXPECT_THROW(compute_ear(inputs(d, r, app), o), UsageError);
  o = {};
  o.dead_band = profile::k_nan;
  EXPECT_THROW(compute_ear(inputs(d, r, app), o), UsageError);
}

// Recorded on the H200 (tests/data/h200/stream): the ncu paths are absolute, the prompt's file is
// "main.cu", and a profile compared with itself moves nothing.
TEST(Ear, RecordedStreamProfile) {
  auto prof = profile::import_profile(test::data_path("h200/stream"));
  auto d = analysis::analyze(prof, {});
  const std::string src = test::read_all(test::data_path("../../examples/stream/main.cu"));
  ASSERT_FALSE(src.empty());
  prompt::Reply r;
  prompt::Edit e;
  e.file = "main.cu";
  e.kernel = "triad_kernel";
  e.find = "if (i < n) a[i] = b[i] + scalar * c[i];";
  e.replace = "if (i < n) a[i] = __ldg(&b[i]) + scalar * __ldg(&c[i]);";
  e.evidence = {"PC1"};
  e.expected_effect = {{"stall_long_scoreboard", "decrease"}, {"gpu__time_duration.sum", "decrease"}};
  r.edits = {e};
  auto app = edit::apply_edits({{"main.cu", src}}, r, ids(d));
  ASSERT_EQ(app.applied(), 1u);
  auto in = inputs(d, r, app, &prof, &prof, "default");
  auto m = compute_ear(in);
  EXPECT_EQ(m.covered, 1u);
  EXPECT_EQ(m.localizable, 1u);
  EXPECT_EQ(m.localized, 1u);
  ASSERT_EQ(m.effects.size(), 2u);
  // PC1: line 53 holds 95% of the samples, 97% of its stalls long_scoreboard.
  EXPECT_GT(m.effects[0].before, 0.85);
  EXPECT_LT(m.effects[0].before, 1.0);
  EXPECT_GT(m.effects[1].before, 0);
  for (const auto& c : m.effects) {
    EXPECT_EQ(c.before, c.after);
    EXPECT_EQ(c.outcome, "inconsistent") << c.metric;
  }
  EXPECT_EQ(m.kernels_checked, 1u);
  EXPECT_EQ(m.kernels_consistent, 0u);
}
