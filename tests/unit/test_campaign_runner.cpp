// Tests of campaign/runner.cpp with a fake launcher (registered as tests/unit/test_launch.cpp
// registers one): each submission "runs" the cell by writing its run.json into the store, as
// `optimas run --campaign --cell` would. Checked: requeue counting, state.json, table.json,
// --resume skipping finished cells (also one an earlier driver did not get to record), a cell
// of a dead driver submitted again, and a waiting manual cell resumed with `run --resume`.
#include "campaign/runner.hpp"
#include "store/run_store.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <functional>

using namespace optimas;
using namespace optimas::campaign;
using nlohmann::json;
using optimas::test::TempDir;

namespace {

// What a submitted task does: returns its end state (and writes its run, or not).
using Behaviour = std::function<launch::Status(const launch::Task&, int attempt)>;
Behaviour g_behaviour;
std::map<std::string, std::vector<std::vector<std::string>>> g_submitted; // task id -> argv of each submission

class FakeLauncher final : public launch::Launcher {
public:
  std::string name() const override { return "fake"; }
  void submit(const std::vector<launch::Task>& tasks) override {
    for (const auto& t : tasks) {
      g_submitted[t.id].push_back(t.argv);
      m_states[t.id] = g_behaviour(t, static_cast<int>(g_submitted[t.id].size()));
    }
  }
  std::map<std::string, launch::Status> poll() override { return m_states; }
  void cancel(const std::string&) override {}
  void wait(double) override {}

private:
  std::map<std::string, launch::Status> m_states;
};

const launch::Registry& fake_registry() {
  static const launch::Registry k_registry(
      {{.name = "fake",
        .description = "runs every task at once (a test)",
        .options = {},
        .make = [](const launch::LauncherConfig&) { return std::make_unique<FakeLauncher>(); }}});
  return k_registry;
}

std::string arg(const launch::Task& t, const std::string& flag) {
  for (std::size_t i = 0; i + 1 < t.argv.size(); ++i)
    if (t.argv[i] == flag) return t.argv[i + 1];
  return "";
}

int g_run_number = 0;

// What `optimas run --campaign --cell` leaves in the store: a run.json with the cell's tag.
std::string write_run(const std::string& runs_dir, const std::string& campaign, const std::string& cell,
                      const std::string& status) {
  store::RunStore st(runs_dir);
  std::string id = "run-" + std::to_string(++g_run_number);
  json run = {{"id", id},
              {"status", status},
              {"started", "2026-12-01T00:00:" + std::to_string(10 + g_run_number) + "Z"},
              {"campaign", {{"id", campaign}, {"cell", cell}, {"seed", 1}}},
              {"variants", json::array()}};
  store::write_json_atomic(st.create_run(id) + "/run.json", run);
  st.index_run(run);
  return id;
}

launch::Status ended(launch::State s, int code) {
  return {s, "fake-1", code, ""};
}

struct Campaign {
  TempDir dir;
  CampaignFile file;
  std::vector<std::string> lines;
  explicit Campaign(int requeue, const std::string& diagnostics = "[pc, ia]") {
    dir.file("app/optimas.yml", "name: app\n");
    std::string path =
        dir.file("c.yml", "campaign: c1\napplications: [app]\ndiagnostics: " + diagnostics +
                              "\nrepeats: 2\ngpus: 0\nrequeue: " + std::to_string(requeue) + "\nlauncher: fake\n");
    file = load_campaign(path, fake_registry());
    g_submitted.clear();
  }
  CampaignResult run(bool resume = false) {
    RunnerOptions o;
    o.resume = resume;
    o.optimas = "/bin/optimas";
    o.launchers = &fake_registry();
    o.poll_s = 0;
    o.progress = [this](const std::string& l) { lines.push_back(l); };
    return run_campaign(file, o);
  }
  json state() const { return load_state(file.runs_dir, "c1"); }
  json cell(const std::string& id) const {
    const json s = state(); // kept: a range over a member of a temporary would dangle
    for (const auto& c : s["cells"])
      if (c["id"] == id) return c;
    return nullptr;
  }
};

// Every cell finishes its run, except as `fails` says: (cell, attempt) -> failed, no run written.
Behaviour finishing(std::function<bool(const std::string&, int)> fails) {
  return [fails](const launch::Task& t, int attempt) {
    if (fails(t.id, attempt)) {
      write_run(arg(t, "--runs-dir"), arg(t, "--campaign"), t.id, "failed");
      return ended(launch::State::failed, 1);
    }
    write_run(arg(t, "--runs-dir"), arg(t, "--campaign"), t.id, "finished");
    return ended(launch::State::failed, 3); // exit 3: finished without improvement, still done
  };
}

} // namespace

TEST(CampaignRunner, AFailedCellIsRequeuedUpToItsLimit) {
  Campaign c(2);
  // app-pc-builtin-s1 fails once; app-ia-builtin-s2 always fails.
  g_behaviour = finishing([](const std::string& id, int attempt) {
    return (id == "app-pc-builtin-s1" && attempt == 1) || id == "app-ia-builtin-s2";
  });
  auto r = c.run();
  EXPECT_EQ(r.done, 3);
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(g_submitted["app-pc-builtin-s1"].size(), 2u);
  EXPECT_EQ(g_submitted["app-pc-builtin-s2"].size(), 1u);
  EXPECT_EQ(g_submitted["app-ia-builtin-s2"].size(), 3u) << "one submission and two requeues";
  json once = c.cell("app-pc-builtin-s1");
  EXPECT_EQ(once["state"], "done");
  EXPECT_EQ(once["attempts"], 2);
  EXPECT_EQ(once["runs"].size(), 2u) << "the failed attempt's run and the finished one";
  EXPECT_EQ(once["run_id"], once["runs"][1]);
  json bad = c.cell("app-ia-builtin-s2");
  EXPECT_EQ(bad["state"], "failed");
  EXPECT_EQ(bad["attempts"], 3);
  EXPECT_EQ(r.table["cells"], (json{{"total", 4}, {"done", 3}, {"failed", 1}, {"pending", 0}}));
  json written = store::read_json(c.file.runs_dir + "/campaigns/c1/table.json");
  EXPECT_EQ(written["cells"], r.table["cells"]);
  EXPECT_EQ(written["rows"].size(), 2u);
  // Each submission runs this optimas with the cell's own arguments.
  const auto& argv = g_submitted["app-pc-builtin-s1"][0];
  EXPECT_EQ(argv[0], "/bin/optimas");
  EXPECT_EQ(argv[1], "run");
  bool requeued_said = false;
  for (const auto& l : c.lines)
    requeued_said = requeued_said || l.find("app-pc-builtin-s1: failed") != std::string::npos;
  EXPECT_TRUE(requeued_said);
}

TEST(CampaignRunner, RequeueZeroMeansOneAttempt) {
  Campaign c(0);
  g_behaviour = finishing([](const std::string& id, int) { return id == "app-pc-builtin-s1"; });
  auto r = c.run();
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(g_submitted["app-pc-builtin-s1"].size(), 1u);
}

TEST(CampaignRunner, ResumeRedoesNothingThatFinished) {
  Campaign c(0);
  g_behaviour = finishing([](const std::string& id, int) { return id == "app-ia-builtin-s1"; });
  c.run();
  EXPECT_THROW(c.run(), UsageError) << "a second start without --resume";
  g_submitted.clear();
  g_behaviour = finishing([](const std::string&, int) { return false; });
  auto r = c.run(true);
  EXPECT_EQ(g_submitted.size(), 1u) << "only the failed cell runs again";
  EXPECT_EQ(g_submitted.count("app-ia-builtin-s1"), 1u);
  EXPECT_EQ(r.done, 4);
  g_submitted.clear();
  r = c.run(true);
  EXPECT_TRUE(g_submitted.empty());
  EXPECT_EQ(r.done, 4);
}

TEST(CampaignRunner, ResumeFindsWhatADeadDriverLeft) {
  Campaign c(0, "[pc]");
  // A driver died with both cells running: one's run had finished, the other's had not started.
  std::string finished = write_run(c.file.runs_dir, "c1", "app-pc-builtin-s1", "finished");
  // A run of another campaign with the same cell id is not this one's.
  write_run(c.file.runs_dir, "other", "app-pc-builtin-s2", "finished");
  std::filesystem::create_directories(c.file.runs_dir + "/campaigns/c1");
  json cells = json::array();
  for (const char* id : {"app-pc-builtin-s1", "app-pc-builtin-s2"})
    cells.push_back({{"id", id},
                     {"state", "running"},
                     {"job", "fake-1"},
                     {"attempts", 1},
                     {"run_id", nullptr},
                     {"runs", json::array()}});
  store::write_json_atomic(c.file.runs_dir + "/campaigns/c1/state.json", {{"campaign", "c1"}, {"cells", cells}});
  g_behaviour = finishing([](const std::string&, int) { return false; });
  auto r = c.run(true);
  EXPECT_EQ(r.done, 2);
  EXPECT_EQ(g_submitted.count("app-pc-builtin-s1"), 0u);
  EXPECT_EQ(g_submitted["app-pc-builtin-s2"].size(), 1u);
  EXPECT_EQ(c.cell("app-pc-builtin-s1")["run_id"], finished);
  EXPECT_EQ(c.cell("app-pc-builtin-s2")["attempts"], 2);
}

TEST(CampaignRunner, AWaitingManualCellIsResumedWithItsRun) {
  Campaign c(2, "[pc]");
  std::string waiting_run;
  g_behaviour = [&](const launch::Task& t, int) {
    if (t.id == "app-pc-builtin-s1") {
      waiting_run = write_run(arg(t, "--runs-dir"), "c1", t.id, "waiting");
      return ended(launch::State::failed, 4);
    }
    write_run(arg(t, "--runs-dir"), "c1", t.id, "finished");
    return ended(launch::State::done, 0);
  };
  auto r = c.run();
  EXPECT_EQ(r.waiting, 1);
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(g_submitted["app-pc-builtin-s1"].size(), 1u) << "a waiting cell is not requeued";
  EXPECT_EQ(c.cell("app-pc-builtin-s1")["state"], "waiting");
  // The reply is saved; the campaign resumes the run (here the fake marks it finished).
  g_submitted.clear();
  g_behaviour = [&](const launch::Task&, int) {
    store::RunStore st(c.file.runs_dir);
    json run = st.load_run(waiting_run);
    run["status"] = "finished";
    store::write_json_atomic(st.run_dir(waiting_run) + "/run.json", run);
    return ended(launch::State::done, 0);
  };
  r = c.run(true);
  ASSERT_EQ(g_submitted["app-pc-builtin-s1"].size(), 1u);
  const auto& argv = g_submitted["app-pc-builtin-s1"][0];
  EXPECT_EQ(std::vector<std::string>(argv.begin() + 1, argv.begin() + 4),
            (std::vector<std::string>{"run", "--resume", waiting_run}));
  EXPECT_EQ(r.done, 2);
  EXPECT_EQ(c.cell("app-pc-builtin-s1")["run_id"], waiting_run);
}

TEST(CampaignRunner, ADryRunPlanListsEveryCellAndItsCommand) {
  Campaign c(0);
  json plan = plan_cells(c.file, "optimas");
  ASSERT_EQ(plan["cells"].size(), 4u);
  EXPECT_EQ(plan["cells"][0]["id"], "app-pc-builtin-s1");
  EXPECT_NE(plan["cells"][0]["command"].get<std::string>().find("optimas run --app "), std::string::npos);
  EXPECT_NE(plan["cells"][3]["command"].get<std::string>().find("--cell app-ia-builtin-s2 --seed 2"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(c.file.runs_dir)) << "a dry run writes nothing";
}
