#include "analysis/diagnostics.hpp"
#include "analysis/json.hpp"
#include "profile/importer.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
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

// Each item's estimated gain (issue 30): what removing its cause could gain at most, from its
// share of the GPU time. A roofline item: the kernel's share times what it lacks of its roofline;
// a PC item: the kernel's share times the line's samples stalled for its dominant reason; counter
// items name no cause and have none. The text says it and what it assumes.
TEST(Diagnostics, EachItemHasItsEstimatedGain) {
  auto prof = optimas::profile::import_profile(data_path("h200/stream"));
  auto d = analyze(prof, {});
  int with_gain = 0;
  for (const auto& k : d.kernels) {
    for (const auto& e : d.evidence) {
      if (e.kernel != k.time.kernel) continue;
      if (e.kind == "roofline") {
        ASSERT_TRUE(k.roofline);
        EXPECT_NEAR(e.saved, k.time.share * (1 - k.roofline->sol.fraction), 1e-12) << e.id;
        EXPECT_NEAR(k.headroom, e.saved, 1e-12);
      } else if (e.kind == "pc") {
        ASSERT_TRUE(k.stalls);
        for (const auto& l : k.stalls->lines)
          if (l.id == e.id)
            EXPECT_NEAR(e.saved,
                        std::min(k.headroom, k.time.share * l.kernel_share *
                                                 (static_cast<double>(l.stalled) / l.samples) * l.dominant_fraction),
                        1e-12);
      } else {
        EXPECT_TRUE(std::isnan(e.gain)) << e.id;
        continue;
      }
      EXPECT_NEAR(e.gain, 1 / (1 - e.saved), 1e-12) << e.id;
      EXPECT_GE(e.gain, 1.0);
      EXPECT_NE(e.text.find(fmt::format("at most {:.3g}x of the GPU time", e.gain)), std::string::npos) << e.text;
      ++with_gain;
    }
  }
  EXPECT_GE(with_gain, 8);
}

// Several items together: per kernel their savings add up to at most the kernel's headroom.
TEST(Diagnostics, CombinedGainIsCappedByEachKernelsShare) {
  Evidence a{"PC1", "pc", "k", "", 0.3, 1 / 0.7}, b{"RF1", "roofline", "k", "", 0.3, 1 / 0.7},
      c{"PC2", "pc", "j", "", 0.1, 1 / 0.9}, none{"IA1", "ia", "k", ""};
  std::map<std::string, double> share = {{"k", 0.4}, {"j", 0.5}};
  EXPECT_NEAR(combined_gain({&a}, share), 1 / 0.7, 1e-12);
  EXPECT_NEAR(combined_gain({&a, &b}, share), 1 / 0.6, 1e-12) << "k saves at most its headroom, 40%";
  EXPECT_NEAR(combined_gain({&a, &c, &none}, share), 1 / 0.6, 1e-12);
  EXPECT_TRUE(std::isnan(combined_gain({&none}, share)));
}
