#include "analysis/diagnostics.hpp"
#include "analysis/json.hpp"
#include "profile/importer.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <set>

using namespace optimas::analysis;
using optimas::test::data_path;

TEST(Diagnostics, SevenSubsets) {
  EXPECT_EQ(sources_label(parse_sources("pc")), "PC");
  EXPECT_EQ(sources_label(parse_sources("ia")), "IA");
  EXPECT_EQ(sources_label(parse_sources("roofline")), "Roofline");
  EXPECT_EQ(sources_label(parse_sources("ia,pc")), "PC+IA");
  EXPECT_EQ(sources_label(parse_sources("pc, rf")), "PC+Roofline");
  EXPECT_EQ(sources_label(parse_sources("roofline,ia")), "IA+Roofline");
  EXPECT_EQ(sources_label(parse_sources("all")), "PC+IA+Roofline");
  EXPECT_THROW(parse_sources("pc,flops"), optimas::UsageError);
  EXPECT_THROW(parse_sources(""), optimas::UsageError);
}

// The diagnostics setting: a subset (also joined by '+', as a campaign writes it) or code-only.
TEST(Diagnostics, TheSettingTakesSubsetsAndTheCodeOnlyBaseline) {
  auto code = parse_diagnostics("code-only");
  EXPECT_TRUE(code.code_only);
  EXPECT_EQ(code.sources, 0u);
  EXPECT_EQ(code.label(), "code-only");
  EXPECT_EQ(parse_diagnostics(" Code-Only ").label(), "code-only");
  auto subset = parse_diagnostics("pc+ia");
  EXPECT_FALSE(subset.code_only);
  EXPECT_EQ(subset.sources, unsigned(k_pc | k_ia));
  EXPECT_EQ(subset.label(), "PC+IA");
  EXPECT_EQ(parse_diagnostics("roofline,pc").label(), "PC+Roofline");
  EXPECT_EQ(parse_diagnostics("all").label(), "PC+IA+Roofline");
  try {
    parse_diagnostics("pc,code");
    FAIL() << "no error";
  } catch (const optimas::UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown diagnostic source \"code\" (use pc, ia, roofline, all, or code-only for the kernels alone)");
  }
  EXPECT_THROW(parse_diagnostics("code-only,pc"), optimas::UsageError);
  // Nothing distilled: the hot kernels without evidence.
  auto prof = optimas::profile::import_profile(data_path("h200/stream"));
  AnalysisOptions o;
  o.sources = code.sources;
  auto d = analyze(prof, o);
  EXPECT_FALSE(d.kernels.empty());
  EXPECT_TRUE(d.evidence.empty());
  EXPECT_EQ(to_json(d)["sources"], "none");
}

TEST(Diagnostics, SamplesHotKernelAndEvidenceIds) {
  auto prof = optimas::profile::import_profile(data_path("ncu-samples"));
  auto d = analyze(prof, {});
  ASSERT_EQ(d.kernels.size(), 1u);
  EXPECT_EQ(d.kernels[0].time.kernel, "dloop");
  EXPECT_FALSE(d.hot.kernels[1].hot); // saxpy is dropped
  ASSERT_TRUE(d.kernels[0].roofline);
  EXPECT_EQ(d.kernels[0].roofline->id, "RF1");
  std::set<std::string> ids;
  for (const auto& e : d.evidence) EXPECT_TRUE(ids.insert(e.id).second) << "duplicate " << e.id;
  EXPECT_TRUE(ids.count("RF1"));
  EXPECT_TRUE(ids.count("PC1"));
  EXPECT_TRUE(ids.count("IA1"));
  // Two dloop launches are too few runs for counter selection to mean much, and it says so.
  ASSERT_TRUE(d.kernels[0].counters);
  EXPECT_FALSE(d.kernels[0].counters->reliable);
  EXPECT_NE(to_text(d).find("weak hint"), std::string::npos);
}

TEST(Diagnostics, SelectedSourcesOnly) {
  auto prof = optimas::profile::import_profile(data_path("h200/stencil"));
  AnalysisOptions o;
  o.sources = k_pc;
  auto d = analyze(prof, o);
  for (const auto& e : d.evidence) EXPECT_EQ(e.kind, "pc");
  for (const auto& k : d.kernels) {
    EXPECT_FALSE(k.roofline);
    EXPECT_FALSE(k.counters);
    EXPECT_TRUE(k.stalls);
  }
}

TEST(Diagnostics, StableAcrossRuns) {
  auto prof = optimas::profile::import_profile(data_path("h200/stream"));
  auto a = to_json(analyze(prof, {})), b = to_json(analyze(prof, {}));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a["config"], "default");
  // Each PC item cites a line of the example's own source.
  for (const auto& k : a["kernels"])
    for (const auto& l : k["stalls"]["lines"]) EXPECT_TRUE(l["file"].get<std::string>().ends_with("main.cu"));
}

TEST(Diagnostics, ConfigSelection) {
  auto prof = optimas::profile::import_profile(data_path("h200/stream"));
  AnalysisOptions o;
  o.config = "small";
  EXPECT_EQ(analyze(prof, o).config, "small");
  o.config = "huge";
  EXPECT_THROW(analyze(prof, o), optimas::UsageError);
}

// Recorded on the H200 with three input configurations x two repeats (tests/data/h200-repeats).
TEST(Diagnostics, CounterSelectionOnEnoughRecordedRuns) {
  auto prof = optimas::profile::import_profile(data_path("h200-repeats/stencil"));
  ASSERT_EQ(prof.runs.size(), 6u);
  auto d = analyze(prof, {});
  ASSERT_EQ(d.kernels.size(), 2u);
  for (const auto& k : d.kernels) {
    ASSERT_TRUE(k.counters);
    EXPECT_EQ(k.counters->runs, 18u) << k.time.kernel;
    EXPECT_TRUE(k.counters->reliable);
    EXPECT_TRUE(k.counters->caveat.empty());
    EXPECT_EQ(k.counters->top.size(), 5u);
    EXPECT_GT(k.counters->mean_r2, 0.9);
    for (const auto& w : k.counters->top) {
      EXPECT_FALSE(is_time_counter(w.counter));
      EXPECT_NE(w.description, w.counter) << "no plain-language description for " << w.counter;
    }
  }
}

// The roofline's evidence text, which prompts show, ends with the access sentence when the
// profile has its counters (the --set full sample does).
TEST(Diagnostics, RooflineEvidenceCarriesTheAccessSentence) {
  auto prof = optimas::profile::import_profile(data_path("ncu-samples"));
  auto d = analyze(prof, {});
  ASSERT_FALSE(d.kernels.empty());
  ASSERT_TRUE(d.kernels[0].roofline);
  const std::string& sentence = d.kernels[0].roofline->access.summary;
  EXPECT_NE(sentence, k_no_access_counters);
  bool found = false;
  for (const auto& e : d.evidence)
    if (e.id == d.kernels[0].roofline->id) {
      found = true;
      EXPECT_NE(e.text.find(sentence), std::string::npos) << e.text;
    }
  EXPECT_TRUE(found);
  EXPECT_NE(to_text(d).find(sentence), std::string::npos);
}
