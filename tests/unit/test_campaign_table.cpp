// Tests of campaign/table.cpp: the arithmetic of every column on synthetic run folders (run.json
// and the attempts' replies.json, read through store_reader), the counts of cells, and the
// Markdown and CSV forms.
#include "campaign/runner.hpp"
#include "campaign/table.hpp"
#include "store/run_store.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace optimas;
using namespace optimas::campaign;
using nlohmann::json;
using optimas::test::TempDir;

namespace {

json variant(const std::string& key, int edits, std::optional<bool> valid, const std::string& status,
             std::optional<double> speedup, json ear) {
  json v = {{"key", key}, {"dir", "iterations/" + key}, {"edits", edits}, {"status", status}, {"ear", ear}};
  if (valid) v["validation"] = {{"passed", *valid}};
  if (speedup) v["measurement"] = {{"speedup", *speedup}};
  return v;
}

void put(store::RunStore& st, const std::string& id, const std::string& status, const json& variants,
         const std::map<std::string, json>& replies = {}) {
  std::string dir = st.create_run(id);
  store::write_json_atomic(dir + "/run.json", {{"id", id}, {"status", status}, {"variants", variants}});
  for (const auto& [key, r] : replies) {
    std::filesystem::create_directories(dir + "/iterations/" + key);
    store::write_json_atomic(dir + "/iterations/" + key + "/replies.json", r);
  }
}

json cell(const std::string& id, const std::string& diagnostics, const std::string& state, const std::string& run) {
  return {{"id", id},
          {"diagnostics", diagnostics},
          {"backend", "builtin"},
          {"state", state},
          {"run_id", run.empty() ? json(nullptr) : json(run)}};
}

} // namespace

TEST(CampaignTable, EveryColumnFromTheRunsOfItsRow) {
  TempDir dir;
  store::RunStore st(dir.path().string());
  put(st, "run-a", "finished",
      {variant("i1a1", 2, true, "accepted", 1.44,
               {{"evidence_coverage", 1.0}, {"localization_agreement", 0.5}, {"hallucinations", 1}}),
       variant("i1a2", 1, false, "validation_failed", std::nullopt,
               {{"evidence_coverage", 0.5}, {"localization_agreement", nullptr}, {"hallucinations", 0}})},
      {{"i1a1", {{"input_tokens", 100}, {"output_tokens", 50}, {"cost_usd", 0.01}}},
       {"i1a2", {{"input_tokens", 10}, {"output_tokens", 5}, {"cost_usd", 0.02}}}});
  // No edit proposed: not in the valid-edit rate; a speedup of 1.0 in the mean.
  put(st, "run-b", "finished",
      json::array({variant("i1a1", 0, std::nullopt, "no_edits", std::nullopt, json::object())}),
      {{"i1a1", {{"input_tokens", 7}, {"output_tokens", 3}, {"cost_usd", nullptr}}}});
  // A run that did not finish does not count, though its cell says done.
  put(st, "run-c", "running", json::array({variant("i1a1", 1, true, "accepted", 3.0, json::object())}));
  std::vector<json> cells = {
      cell("x-pc-builtin-s1", "PC", "done", "run-a"), cell("x-pc-builtin-s2", "PC", "done", "run-b"),
      cell("x-pc-builtin-s3", "PC", "done", "run-c"), cell("x-code-only-builtin-s1", "code-only", "failed", ""),
      cell("x-code-only-builtin-s2", "code-only", "running", "")};
  json t = compute_table("c1", cells, store_reader(st));
  EXPECT_EQ(t["schema"], "optimas.campaign-table/1");
  EXPECT_EQ(t["campaign"], "c1");
  EXPECT_TRUE(t["generated"].is_string());
  EXPECT_EQ(t["cells"], (json{{"total", 5}, {"done", 3}, {"failed", 1}, {"pending", 1}}));
  ASSERT_EQ(t["rows"].size(), 2u);
  const json& pc = t["rows"][0];
  EXPECT_EQ(pc["diagnostics"], "PC");
  EXPECT_EQ(pc["backend"], "builtin");
  EXPECT_EQ(pc["cells"], 3);
  EXPECT_EQ(pc["runs"], 2);
  EXPECT_DOUBLE_EQ(pc["valid_edit_rate"].get<double>(), 0.5); // 1 of 2 proposed
  EXPECT_DOUBLE_EQ(pc["accepted_rate"].get<double>(), 0.5);   // 1 of 2 runs
  // Speedups 1.44 and 1.0: geometric mean 1.2; a t interval (df 1: 12.706) on the logs.
  const double mean = std::log(1.2), sd = std::log(1.44) / std::sqrt(2.0), half = 12.706 * sd / std::sqrt(2.0);
  EXPECT_NEAR(pc["speedup"]["geomean"].get<double>(), 1.2, 1e-12);
  EXPECT_NEAR(pc["speedup"]["ci_low"].get<double>(), std::exp(mean - half), 1e-9);
  EXPECT_NEAR(pc["speedup"]["ci_high"].get<double>(), std::exp(mean + half), 1e-9);
  EXPECT_EQ(pc["speedup"]["n"], 2);
  EXPECT_DOUBLE_EQ(pc["evidence_coverage"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(pc["localisation"].get<double>(), 0.5);
  EXPECT_TRUE(pc["directional_consistency"].is_null());
  EXPECT_EQ(pc["hallucinations"], 1);
  EXPECT_EQ(pc["tokens"], (json{{"prompt", 117}, {"completion", 58}}));
  EXPECT_TRUE(pc["cost_usd"].is_null()) << "one answer's cost is unknown";

  const json& base = t["rows"][1];
  EXPECT_EQ(base["diagnostics"], "code-only");
  EXPECT_EQ(base["cells"], 2);
  EXPECT_EQ(base["runs"], 0);
  EXPECT_TRUE(base["valid_edit_rate"].is_null());
  EXPECT_TRUE(base["accepted_rate"].is_null());
  EXPECT_TRUE(base["speedup"]["geomean"].is_null());
  EXPECT_EQ(base["speedup"]["n"], 0);
  EXPECT_TRUE(base["hallucinations"].is_null());
}

TEST(CampaignTable, KnownCostsAreSummedAndOneRunHasNoInterval) {
  TempDir dir;
  store::RunStore st(dir.path().string());
  put(st, "r1", "finished",
      {variant("i1a1", 1, true, "accepted", 1.1, json::object()),
       variant("i2a1", 1, true, "accepted", 1.3, json::object())},
      {{"i1a1", {{"input_tokens", 1}, {"output_tokens", 2}, {"cost_usd", 0.25}}},
       {"i2a1", {{"input_tokens", 3}, {"output_tokens", 4}, {"cost_usd", 0.5}}}});
  json t = compute_table("c1", {cell("a", "PC+IA", "done", "r1")}, store_reader(st));
  const json& row = t["rows"][0];
  EXPECT_NEAR(row["speedup"]["geomean"].get<double>(), 1.3, 1e-12) << "the run's best accepted variant";
  EXPECT_TRUE(row["speedup"]["ci_low"].is_null());
  EXPECT_DOUBLE_EQ(row["cost_usd"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(row["valid_edit_rate"].get<double>(), 1.0);
  EXPECT_EQ(row["tokens"], (json{{"prompt", 4}, {"completion", 6}}));
}

TEST(CampaignTable, TQuantilesMatchTheTablesAndTheLimit) {
  EXPECT_DOUBLE_EQ(t_quantile_975(1), 12.706);
  EXPECT_DOUBLE_EQ(t_quantile_975(30), 2.042);
  EXPECT_NEAR(t_quantile_975(40), 2.021, 1e-3);
  EXPECT_NEAR(t_quantile_975(120), 1.980, 1e-3);
  EXPECT_NEAR(t_quantile_975(100000), 1.960, 1e-3);
  EXPECT_TRUE(std::isnan(t_quantile_975(0)));
}

TEST(CampaignTable, MarkdownAndCsvShowEveryRow) {
  TempDir dir;
  store::RunStore st(dir.path().string());
  put(st, "r1", "finished", json::array({variant("i1a1", 2, true, "accepted", 1.5, {{"evidence_coverage", 1.0}})}),
      {{"i1a1", {{"input_tokens", 10}, {"output_tokens", 20}, {"cost_usd", 0.0}}}});
  json t =
      compute_table("c1", {cell("a", "PC+IA", "done", "r1"), cell("b", "code-only", "failed", "")}, store_reader(st));
  std::string md = table_markdown(t);
  EXPECT_NE(md.find("Campaign c1: 2 cell(s), 1 done, 1 failed, 0 pending"), std::string::npos) << md;
  EXPECT_NE(
      md.find("| PC+IA | builtin | 1 | 1 | 1 | 1 | 100% | 100% | 1.500x | 100% | - | - | 0 | 10/20 | 0.0000 | 0.0 | "
              "0.0 |"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("| code-only | builtin | 1 | 1 | 1 | 0 | - | - | - |"), std::string::npos) << md;
  std::string csv = table_csv(t);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "diagnostics,backend,cells,runs,valid_edit_rate,accepted_rate,speedup_geomean,speedup_ci_low,"
            "speedup_ci_high,speedup_n,evidence_coverage,localisation,directional_consistency,hallucinations,"
            "prompt_tokens,completion_tokens,cost_usd,aa_runs,rounds,candidates,seconds_per_run,verdicts_per_run,"
            "sol_median");
  EXPECT_NE(csv.find("\nPC+IA,builtin,1,1,1,1,1.5,,,1,1,,,0,10,20,0,0,1,1,0,0,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\ncode-only,builtin,1,0,,,,,,0,,,,,0,0,0,0,1,1,,,\n"), std::string::npos) << csv;
}

// An A/A run (run.json aa: true) measures the baseline against itself: its "no significant
// change" is counted apart, in aa_runs, not as a run with speedup 1 and nothing accepted
// (issue 32: it pulled the accepted rate and the geomean towards 1).
TEST(CampaignTable, AARunsAreCountedApartFromTheRates) {
  TempDir dir;
  store::RunStore st(dir.path().string());
  put(st, "real", "finished", json::array({variant("i1a1", 1, true, "accepted", 1.5, json::object())}));
  put(st, "aa", "finished", json::array({variant("i1a1", 0, std::nullopt, "rejected", 1.0, json::object())}));
  json run = st.load_run("aa");
  run["aa"] = true;
  run["variants"][0]["aa"] = true;
  store::write_json_atomic(st.run_dir("aa") + "/run.json", run);
  json t = compute_table("c1", {cell("a", "PC", "done", "real"), cell("b", "PC", "done", "aa")}, store_reader(st));
  const json& row = t["rows"][0];
  EXPECT_EQ(row["cells"], 2);
  EXPECT_EQ(row["runs"], 1);
  EXPECT_EQ(row["aa_runs"], 1);
  EXPECT_DOUBLE_EQ(row["accepted_rate"].get<double>(), 1.0);
  EXPECT_NEAR(row["speedup"]["geomean"].get<double>(), 1.5, 1e-12);
  std::string md = table_markdown(t);
  EXPECT_NE(md.find("| PC | builtin | 1 | 1 | 2 | 1 + 1 A/A | 100% | 100% | 1.500x"), std::string::npos) << md;
}

// The search's axes (issue 28): cells of one subset and backend but other rounds or candidates
// are rows of their own, each with the search's cost per run (its candidates' seconds and the
// verdicts reached, from run.json's search tree), so that the table answers "does feedback help?".
TEST(CampaignTable, RoundsAndCandidatesAreRowsWithTheirCost) {
  TempDir dir;
  store::RunStore st(dir.path().string());
  auto searched = [&](const std::string& id, double speedup, const json& nodes) {
    put(st, id, "finished", json::array({variant("i1a1", 1, true, "accepted", speedup, json::object())}));
    json run = st.load_run(id);
    run["search"] = {{"nodes", nodes}};
    store::write_json_atomic(st.run_dir(id) + "/run.json", run);
  };
  searched("one", 1.2, json::array({{{"key", "i1a1"}, {"seconds", 30.0}, {"verdict", "faster"}}}));
  searched("three", 1.5,
           json::array({{{"key", "i1a1"}, {"seconds", 30.0}, {"verdict", "faster"}},
                        {{"key", "i2a1"}, {"seconds", 20.0}, {"status", "validation_failed"}},
                        {{"key", "i3a1"}, {"seconds", 40.0}, {"verdict", "faster"}}}));
  auto with = [](json c, int rounds, int candidates) {
    c["rounds"] = rounds;
    c["candidates"] = candidates;
    return c;
  };
  json t = compute_table("c1",
                         {with(cell("a-r1", "PC", "done", "one"), 1, 1),
                          with(cell("a-r3", "PC", "done", "three"), 3, 1), cell("old", "PC", "pending", "")},
                         store_reader(st));
  ASSERT_EQ(t["rows"].size(), 2u) << "a cell without the axes (an older campaign) has 1 round and 1 candidate";
  const json &one = t["rows"][0], &three = t["rows"][1];
  EXPECT_EQ(one["rounds"], 1);
  EXPECT_EQ(one["cells"], 2);
  EXPECT_DOUBLE_EQ(one["seconds_per_run"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(one["verdicts_per_run"].get<double>(), 1.0);
  EXPECT_EQ(three["rounds"], 3);
  EXPECT_EQ(three["candidates"], 1);
  EXPECT_DOUBLE_EQ(three["seconds_per_run"].get<double>(), 90.0);
  EXPECT_DOUBLE_EQ(three["verdicts_per_run"].get<double>(), 2.0);
  EXPECT_NEAR(three["speedup"]["geomean"].get<double>(), 1.5, 1e-12);
  EXPECT_NE(table_markdown(t).find("| PC | builtin | 3 | 1 | 1 | 1 | 100% | 100% | 1.500x"), std::string::npos)
      << table_markdown(t);
}

// The speed of light a run reached (issue 30): its hottest kernel's fraction of the roofline after
// its fastest accepted variant, or before any variant when none was accepted; the row's median.
TEST(CampaignTable, TheMedianSpeedOfLightReached) {
  TempDir dir;
  store::RunStore st(dir.path().string());
  auto with_sol = [&](const std::string& id, const std::string& status, double speedup, double before, double after) {
    put(st, id, "finished", json::array({variant("i1a1", 1, true, status, speedup, json::object())}));
    json run = st.load_run(id);
    json sol = json::object();
    sol["hot"] = {{"before", before}, {"after", after}, {"share", 0.7}};
    sol["cold"] = {{"before", 0.99}, {"after", 0.99}, {"share", 0.2}};
    run["variants"][0]["speed_of_light"] = sol;
    store::write_json_atomic(st.run_dir(id) + "/run.json", run);
  };
  with_sol("a", "accepted", 1.5, 0.40, 0.80); // accepted: after, 0.80
  with_sol("b", "rejected", 0.9, 0.30, 0.35); // none accepted: before, 0.30
  with_sol("c", "accepted", 1.2, 0.50, 0.60); // 0.60
  put(st, "d", "finished", json::array());    // no re-profile: not counted
  json t = compute_table("c1",
                         {cell("a", "PC", "done", "a"), cell("b", "PC", "done", "b"), cell("c", "PC", "done", "c"),
                          cell("d", "PC", "done", "d")},
                         store_reader(st));
  EXPECT_DOUBLE_EQ(t["rows"][0]["sol_median"].get<double>(), 0.60);
  EXPECT_NE(table_markdown(t).find("| 60% |"), std::string::npos) << table_markdown(t);
}
