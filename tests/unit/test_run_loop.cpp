// Tests of the loop through its public face (loop::run, loop::plan) without a GPU: the host
// stand-in of examples/stream (tests/scenario/loop-app, built with g++) and the profile of stream
// recorded on the H200. What needs a GPU or a model server is the scenario tests' (loop_*.sh).
#include "loop/run_loop.hpp"

#include "evaluate/verdict.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace optimas;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A copy of the stand-in in a folder of its own, and a run store beside it.
class RunLoop : public ::testing::Test {
protected:
  void SetUp() override {
    fs::copy(test::data_path("../scenario/loop-app"), m_dir.path() / "app", fs::copy_options::recursive);
  }

  std::string app() const { return (m_dir.path() / "app").string(); }
  std::string runs() const { return (m_dir.path() / "runs").string(); }
  std::string manual() const { return (m_dir.path() / "manual").string(); }

  loop::RunOptions options(json overrides) const {
    loop::RunOptions o;
    o.config_path = app();
    o.runs_root = runs();
    overrides["import"] = test::data_path("h200/stream");
    overrides["cache_dir"] = (m_dir.path() / "cache").string();
    o.overrides = overrides;
    return o;
  }

  json run_json(const std::string& id) const { return json::parse(test::read_all(runs() + "/" + id + "/run.json")); }

  // The one run folder in the store.
  std::string only_run() const {
    std::vector<std::string> ids;
    for (const auto& e : fs::directory_iterator(runs()))
      if (e.is_directory()) ids.push_back(e.path().filename().string());
    EXPECT_EQ(ids.size(), 1u);
    return ids.empty() ? "" : ids[0];
  }

  // Answers the manual backend's pending prompt with `reply`.
  void answer(const std::string& reply) const {
    std::vector<fs::path> prompts;
    for (const auto& e : fs::directory_iterator(manual()))
      if (e.path().filename().string().starts_with("prompt-")) prompts.push_back(e.path());
    ASSERT_EQ(prompts.size(), 1u);
    std::string name = prompts[0].filename().string();
    std::ofstream(fs::path(manual()) / ("reply-" + name.substr(7))) << reply;
  }

  test::TempDir m_dir;
};

json step(const json& plan, const std::string& name) {
  for (const auto& s : plan["steps"])
    if (s["step"] == name) return s;
  return nullptr;
}

} // namespace

TEST_F(RunLoop, PlanSaysWhatARunWouldDoAndTouchesNothing) {
  auto plan = loop::plan(options({{"runs", 7}, {"warmup", 2}, {"iterations", 2}}));
  EXPECT_EQ(plan["app"], "stream");
  EXPECT_EQ(plan["execute"], true); // a host program runs without a GPU
  EXPECT_EQ(plan["why_not"], "");
  EXPECT_EQ(plan["commands"].size(), 3u);
  EXPECT_TRUE(has(plan["commands"]["default"].get<std::string>(), "--seed 42")) << plan["commands"];

  EXPECT_TRUE(has(step(plan, "baseline")["build"].get<std::string>(), "g++")) << plan;
  EXPECT_EQ(step(plan, "profile")["import"], test::data_path("h200/stream"));
  EXPECT_EQ(step(plan, "optimize")["backend"], "builtin");
  EXPECT_EQ(step(plan, "optimize")["rounds"], 2);
  const json measure = step(plan, "measure");
  ASSERT_TRUE(measure.is_object()) << plan;
  EXPECT_EQ(measure["configs"], 1u); // measure.configs: [default]
  EXPECT_EQ(measure["runs"], 7);
  EXPECT_EQ(measure["program_runs"], 1 * 2 * (7 + 2));
  EXPECT_EQ(measure["confirmation_runs"], measure["confirm"] == true ? 14 : 0);
  const json validate = step(plan, "validate");
  ASSERT_TRUE(validate.is_object()) << plan;
  EXPECT_EQ(validate["checks"], validate["labels"].size());
  EXPECT_GE(validate["checks"].get<int>(), 3); // every configuration, the held-out one included
  EXPECT_FALSE(fs::exists(runs())) << "a dry run made the run store";
}

TEST_F(RunLoop, PlanWithoutExecutionLeavesOutValidationAndMeasurement) {
  auto plan = loop::plan(options({{"execute", "no"}}));
  EXPECT_EQ(plan["execute"], false);
  EXPECT_EQ(plan["why_not"], "--execute no");
  EXPECT_EQ(step(plan, "baseline")["runs"], 0);
  EXPECT_TRUE(step(plan, "validate").is_null());
  EXPECT_TRUE(step(plan, "measure").is_null());
}

TEST_F(RunLoop, BadSettingsFailBeforeARunFolderExists) {
  EXPECT_THROW(loop::plan(options({{"runs", 1}})), UsageError);
  EXPECT_THROW(loop::run(options({{"scope", "program"}})), UsageError);
  EXPECT_FALSE(fs::exists(runs())) << "a run folder was made for settings that cannot run";
}

// The builtin backend's edits built, not run (--execute no): the run finishes, says why nothing
// was measured, and keeps what it did.
TEST_F(RunLoop, ARunWithoutExecutionBuildsTheVariantAndSaysWhyNothingWasMeasured) {
  auto r = loop::run(options({{"execute", "no"}, {"retries", 0}}));
  EXPECT_EQ(r.exit_code, k_exit_no_improvement);
  EXPECT_EQ(r.summary["status"], "finished");
  EXPECT_EQ(r.summary["outcome"], "not_measured");
  EXPECT_EQ(r.summary["not_executed_because"], "--execute no");
  EXPECT_EQ(r.summary["model"], "builtin");
  ASSERT_FALSE(r.summary["variants"].empty());
  for (const auto& v : r.summary["variants"]) {
    EXPECT_TRUE(evaluate::is_final_status(v.value("status", ""))) << v;
    EXPECT_FALSE(v.contains("measurement")) << v;
    // The phases it went through, each with its time (the dashboard's Steps table).
    ASSERT_TRUE(v.contains("times")) << v;
    EXPECT_TRUE(v["times"]["ask_s"].is_number()) << v;
    EXPECT_FALSE(v["times"].contains("measure_s")) << v;
  }
  for (const char* step : {"snapshot_s", "baseline_s", "profile_s", "analysis_s", "iterations_s"})
    EXPECT_GE(r.summary["times"].value(step, -1.0), 0.0) << step;
  EXPECT_EQ(run_json(r.id), r.summary); // run.json is the summary
  for (const char* file : {"options.json", "snapshot.json", "baseline/baseline.json", "diagnostics.json",
                           "config/optimas.yml", "profile/.complete"})
    EXPECT_TRUE(fs::exists(fs::path(r.dir) / file)) << file;
  EXPECT_FALSE(fs::exists(fs::path(r.dir) / "work")) << "scratch copies are removed at the end";
  // A finished run has nothing left to resume.
  loop::RunOptions again;
  again.runs_root = runs();
  again.resume = r.id;
  try {
    loop::run(again);
    FAIL() << "a finished run resumed";
  } catch (const UsageError& e) {
    EXPECT_TRUE(has(e.what(), "has finished")) << e.what();
  }
}

// A run waits for the manual backend's reply; resumed, it works with the settings it started
// with (options.json), not with the ones the resuming call passes, and refuses an optimas.yml
// that changed meanwhile.
TEST_F(RunLoop, AResumedRunKeepsItsSettings) {
  json overrides = {{"model", "manual"}, {"work_dir", manual()}, {"execute", "no"}, {"retries", 0}};
  try {
    loop::run(options(overrides));
    FAIL() << "the manual backend did not wait for its reply";
  } catch (const PendingError& e) {
    EXPECT_TRUE(has(e.what(), "--resume")) << e.what();
  }
  const std::string id = only_run();
  EXPECT_EQ(run_json(id)["status"], "waiting");
  const json recorded = json::parse(test::read_all(runs() + "/" + id + "/options.json"));
  EXPECT_EQ(recorded["model"], "manual");
  EXPECT_EQ(recorded["work_dir"], manual());
  const std::string baseline = test::read_all(runs() + "/" + id + "/baseline/baseline.json");

  loop::RunOptions resume;
  resume.runs_root = runs();
  resume.resume = id.substr(0, 8);
  resume.overrides = {{"model", "builtin"}, {"execute", "yes"}}; // not the run's: ignored

  // An optimas.yml that changed since the run started would mix two configurations.
  const std::string yml = app() + "/optimas.yml";
  const std::string original = test::read_all(yml);
  std::ofstream(yml, std::ios::app) << "# edited\n";
  try {
    loop::run(resume);
    FAIL() << "resumed with a changed optimas.yml";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "changed since run " + id)) << e.what();
  }
  std::ofstream(yml, std::ios::trunc) << original;

  answer(R"({"summary": "nothing to change", "edits": [], "withheld": []})");
  auto r = loop::run(resume);
  EXPECT_EQ(r.id, id);
  EXPECT_EQ(r.summary["status"], "finished");
  EXPECT_EQ(r.summary["model"], "manual");
  EXPECT_EQ(r.summary["execute"], false);
  EXPECT_EQ(r.summary["outcome"], "not_measured");
  ASSERT_EQ(r.summary["variants"].size(), 1u);
  EXPECT_EQ(r.summary["variants"][0]["status"], "no_edits");
  EXPECT_EQ(r.summary["variants"][0]["reason"], "the backend proposed no edit");
  // The baseline was built once, before the wait.
  EXPECT_EQ(test::read_all(runs() + "/" + id + "/baseline/baseline.json"), baseline);
}

// Every build is made in work/building (its line table names that folder) and moved to its own;
// work/building then leads to the last build, so that ncu, profiling it, finds its sources there.
TEST_F(RunLoop, TheBuildFolderLeadsToTheLastBuild) {
  auto r = loop::run(options({{"execute", "no"}, {"retries", 0}, {"keep_work", true}}));
  fs::path building = fs::path(r.dir) / "work" / "building";
  ASSERT_TRUE(fs::is_symlink(building));
  EXPECT_EQ(fs::read_symlink(building), fs::path("baseline")); // the builtin proposed nothing to build
  EXPECT_TRUE(fs::exists(building / "main.cu"));
}

// A campaign's cell: run.json carries its tag; the code-only baseline's prompt shows the kernels
// and no evidence at all, and the analysis distils none.
TEST_F(RunLoop, ACodeOnlyCampaignCellIsTaggedAndShownNoEvidence) {
  json overrides = {{"model", "manual"},
                    {"work_dir", manual()},
                    {"execute", "no"},
                    {"retries", 0},
                    {"diagnostics", "code-only"},
                    {"campaign", "c1"},
                    {"cell", "app-code-only-manual-s7"},
                    {"seed", 7}};
  EXPECT_THROW(loop::run(options(overrides)), PendingError);
  json run = run_json(only_run());
  EXPECT_EQ(run["diagnostics"], "code-only");
  EXPECT_EQ(run["campaign"], (json{{"id", "c1"}, {"cell", "app-code-only-manual-s7"}, {"seed", 7}}));
  json diagnostics = json::parse(test::read_all(runs() + "/" + only_run() + "/diagnostics.json"));
  EXPECT_TRUE(diagnostics["evidence"].empty());
  EXPECT_FALSE(diagnostics["kernels"].empty()) << "the hot kernels are still found";
  std::string prompt;
  for (const auto& e : fs::directory_iterator(manual()))
    if (e.path().filename().string().starts_with("prompt-")) prompt = test::read_all(e.path().string());
  EXPECT_TRUE(has(prompt, "code-only baseline")) << prompt;
  EXPECT_TRUE(has(prompt, "triad_kernel"));
  EXPECT_FALSE(has(prompt, "[PC1]") || has(prompt, "[RF1]") || has(prompt, "[IA1]"));
  // A cell names both its campaign and itself; a subset the analysis does not know fails early.
  EXPECT_THROW(loop::plan(options({{"campaign", "c1"}})), UsageError);
  EXPECT_THROW(loop::plan(options({{"diagnostics", "code-only,pc"}})), UsageError);
  EXPECT_THROW(loop::plan(options({{"campaign", "c/1"}, {"cell", "x"}})), UsageError);
}

// What a later round is told of an earlier variant measured by the sequential rule: the primary
// configuration's whole runs are only screened (3 runs a side, where the rank test cannot call
// anything), so their line does not read "no significant change" beside the decided speedup;
// the other configurations keep their verdicts.
TEST(DescribeAttempt, TheSequentialRulesPrimaryConfigurationIsScreenedNotJudged) {
  const json config = {{"speedup", 1.542}, {"ci", {1.538, 1.545}}, {"verdict", "no significant change"}};
  json variant = {
      {"key", "i1a1"},
      {"iteration", 1},
      {"candidate", 1},
      {"parent", "baseline"},
      {"status", "accepted"},
      {"measurement",
       {{"verdict_rule", "sequential"},
        {"primary", "default"},
        {"speedup", 1.618},
        {"ci", {1.583, 1.654}},
        {"configs",
         {{"default", config}, {"large", {{"speedup", 1.594}, {"ci", {1.593, 1.594}}, {"verdict", "faster"}}}}}}}};
  const std::string sequential = loop::describe_attempt(variant, "/nonexistent");
  EXPECT_TRUE(has(sequential, "- Measured: 1.618x [1.583, 1.654] overall; default 1.542x [1.538, 1.545] (whole runs, "
                              "screened); large 1.594x [1.593, 1.594] (faster)."))
      << sequential;
  // Under the fixed rule every configuration is judged on its own runs: its verdict stands.
  variant["measurement"].erase("verdict_rule");
  const std::string fixed = loop::describe_attempt(variant, "/nonexistent");
  EXPECT_TRUE(has(fixed, "default 1.542x [1.538, 1.545] (no significant change)")) << fixed;
}

// A later round is told where the time is that an earlier variant's edits left (issue #50); a
// variant without applied edits (or recorded before coverage existed) says nothing of it.
TEST(DescribeAttempt, SaysWhereTheTimeIsThatTheEditsLeft) {
  json variant = {{"key", "i1a1"},
                  {"status", "rejected"},
                  {"applied_edits", json::array({{{"kernel", "k"}, {"evidence", {"PC2"}}}})},
                  {"coverage",
                   {{"text", "addresses 13% of the stalled samples; PC1 main.cu:41 (59%): no edit acts on "
                             "it"}}}};
  const std::string told = loop::describe_attempt(variant, "/nonexistent");
  EXPECT_TRUE(
      has(told, "- Its edits: addresses 13% of the stalled samples; PC1 main.cu:41 (59%): no edit acts on it.\n"))
      << told;
  variant["applied_edits"] = json::array();
  EXPECT_FALSE(has(loop::describe_attempt(variant, "/nonexistent"), "stalled samples"));
}
