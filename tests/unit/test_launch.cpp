// Tests of launch/: a new launcher is one spec and one registry line (listed, reached through
// launcher_from, callable); the registry's checks; the local launcher's slots, GPU exclusivity
// (checked by the tasks themselves), cancel, time limit and failures.
#include "launch/launcher.hpp"
#include "util/error.hpp"
#include "util/gpus.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <stdexcept>

using namespace optimas;
using namespace optimas::launch;
using optimas::test::TempDir;

namespace optimas::launch {
LauncherSpec local_launcher(); // the lines of launch/registry.cpp
LauncherSpec slurm_launcher();
} // namespace optimas::launch

namespace {

// ---- What a newcomer's src/launch/inline.cpp holds (docs/campaigns.md shows the same) ----

const OptionSpec k_verdict = {"verdict", "the state every task ends in: done or failed", "done"};

// Runs nothing: a task is finished the moment it is submitted, in the state the option names.
class InlineLauncher final : public Launcher {
public:
  explicit InlineLauncher(const LauncherConfig& c) : m_done(util::option_value(c.options, k_verdict) == "done") {}
  std::string name() const override { return "inline"; }
  void submit(const std::vector<Task>& tasks) override {
    for (const auto& t : tasks) m_states[t.id] = {m_done ? State::done : State::failed, "inline-" + t.id, 0, ""};
  }
  std::map<std::string, Status> poll() override { return m_states; }
  void cancel(const std::string&) override {}
  void wait(double) override {}

private:
  bool m_done;
  std::map<std::string, Status> m_states;
};

LauncherSpec inline_launcher() {
  return {.name = "inline",
          .description = "Finishes every task at once (a test)",
          .options = {k_verdict},
          .make = [](const LauncherConfig& c) { return std::make_unique<InlineLauncher>(c); }};
}

// ---- the registry line: the same table as registry.cpp, plus the newcomer's ----
Registry with_inline() {
  return Registry({local_launcher(), slurm_launcher(), inline_launcher()});
}

Task shell_task(const TempDir& dir, const std::string& id, const std::string& script, int gpus = 0) {
  Task t;
  t.id = id;
  t.argv = {"sh", "-c", script};
  t.workdir = dir.path();
  t.log = dir.path() / "logs" / (id + ".log");
  t.gpus = gpus;
  return t;
}

std::unique_ptr<Launcher> local(const std::map<std::string, std::string>& options) {
  return make_launcher(launcher_from("local", options));
}

// A task's wait for a condition other tasks make true (a rendezvous): at most 20 s.
std::string until(const std::string& condition) {
  return "i=0; until " + condition + "; do i=$((i+1)); [ $i -gt 4000 ] && exit 9; sleep 0.005; done";
}

} // namespace

TEST(LaunchRegistry, ANewLauncherIsOneSpecAndOneLine) {
  Registry r = with_inline();
  EXPECT_EQ(r.names(), (std::vector<std::string>{"local", "slurm", "inline"}));
  std::string listed = describe_launchers(r);
  EXPECT_NE(listed.find("inline   Finishes every task at once (a test)"), std::string::npos) << listed;
  EXPECT_NE(listed.find("option verdict: the state every task ends in: done or failed (default done)"),
            std::string::npos);
  EXPECT_EQ(launchers_json(r)[2]["options"][0]["name"], "verdict");
  auto l = make_launcher(launcher_from("inline", {{"verdict", "failed"}}, r), r);
  EXPECT_EQ(l->name(), "inline");
  Task a, b;
  a.id = "a";
  b.id = "b";
  l->submit({a, b});
  auto states = wait_all(*l, {"a", "b"}, 0.01);
  EXPECT_EQ(states["a"].state, State::failed);
  EXPECT_EQ(states["b"].job, "inline-b");
}

TEST(LaunchRegistry, TheBuiltInTableListsLocalAndSlurm) {
  EXPECT_EQ(registry().names(), (std::vector<std::string>{"local", "slurm"}));
}

TEST(LaunchRegistry, UnknownNamesAndOptionsSayWhatIsKnown) {
  try {
    launcher_from("pbs", {});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "unknown launcher \"pbs\" (known: local, slurm)");
  }
  try {
    launcher_from("local", {{"partition", "gpu"}});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "launcher local has no option \"partition\" (its options: jobs, gpus)");
  }
  auto refused = [](const char* launcher, const char* key, const char* value) {
    try {
      launcher_from(launcher, {{key, value}});
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Each value is checked by its option's kind and check (util/option_spec.hpp).
  EXPECT_EQ(refused("local", "jobs", "two"), "launcher local option jobs takes a whole number, got \"two\"");
  EXPECT_EQ(refused("local", "jobs", "-1"), "launcher local option jobs takes a count of at least 0, got \"-1\"");
  EXPECT_EQ(refused("slurm", "array", "yes"), "launcher slurm option array takes true or false, got \"yes\"");
  EXPECT_EQ(refused("slurm", "requeue", "false"), "no error");
  EXPECT_THROW(local({{"gpus", "0,,1"}}), UsageError);
}

TEST(LaunchRegistry, ItsOwnChecksRefuseBadLines) {
  auto twice = [] { Registry({local_launcher(), local_launcher()}); };
  EXPECT_THROW(twice(), std::logic_error);
  LauncherSpec no_factory = inline_launcher();
  no_factory.make = nullptr;
  EXPECT_THROW(Registry({no_factory}), std::logic_error);
}

TEST(LocalLauncher, RunsTasksSideBySide) {
  TempDir dir;
  auto l = local({{"jobs", "2"}});
  // Each waits for the other to have started: both finish only if they ran at the same time.
  l->submit({shell_task(dir, "a", "touch a.started; " + until("[ -f b.started ]")),
             shell_task(dir, "b", "touch b.started; " + until("[ -f a.started ]"))});
  auto s = wait_all(*l, {"a", "b"}, 5);
  EXPECT_EQ(s["a"].state, State::done) << s["a"].detail;
  EXPECT_EQ(s["b"].state, State::done) << s["b"].detail;
}

TEST(LocalLauncher, NeverRunsMoreThanItsSlots) {
  TempDir dir;
  auto l = local({{"jobs", "1"}});
  // A task holds "inside" while it works; a second task inside at the same time fails to make it.
  std::string body = "mkdir inside || exit 3; i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; rmdir inside";
  l->submit({shell_task(dir, "a", body), shell_task(dir, "b", body), shell_task(dir, "c", body)});
  auto s = wait_all(*l, {"a", "b", "c"}, 5);
  for (const auto& [id, st] : s) EXPECT_EQ(st.state, State::done) << id << ": " << st.detail;
}

TEST(LocalLauncher, GpuTasksNeverShareAGpu) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "locks");
  auto l = local({{"jobs", "4"}, {"gpus", "0,1"}});
  // A task holds its GPU's lock directory while it runs: mkdir fails if another task has it.
  // Two tasks meet while both hold locks, so both GPUs are in use at once.
  std::vector<Task> tasks;
  for (int i = 0; i < 4; ++i)
    tasks.push_back(shell_task(dir, "g" + std::to_string(i),
                               "mkdir locks/gpu$CUDA_VISIBLE_DEVICES || exit 3; echo $CUDA_VISIBLE_DEVICES > dev.$T; " +
                                   until("[ $(ls locks | wc -l) -ge 2 ] || [ -f meet.$CUDA_VISIBLE_DEVICES ]") +
                                   "; touch meet.0 meet.1; rmdir locks/gpu$CUDA_VISIBLE_DEVICES",
                               1));
  for (int i = 0; i < 4; ++i) tasks[i].env["T"] = std::to_string(i);
  l->submit(tasks);
  std::vector<std::string> ids = {"g0", "g1", "g2", "g3"};
  auto states = wait_all(*l, ids, 5);
  std::set<std::string> devices;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(states[ids[i]].state, State::done) << ids[i] << ": " << states[ids[i]].detail;
    std::string d = test::read_all((dir.path() / ("dev." + std::to_string(i))).string());
    devices.insert(d.substr(0, d.find('\n')));
  }
  EXPECT_EQ(devices, (std::set<std::string>{"0", "1"}));
}

TEST(LocalLauncher, ATaskNeedingMoreGpusThanThereAreFailsAtOnce) {
  TempDir dir;
  auto l = local({{"gpus", "0"}});
  l->submit({shell_task(dir, "big", "true", 2)});
  auto s = l->poll()["big"];
  EXPECT_EQ(s.state, State::failed);
  EXPECT_EQ(s.detail, "needs 2 GPUs; this launcher has 1 (option gpus)");
}

TEST(LocalLauncher, FailuresTimeLimitsAndLogs) {
  TempDir dir;
  auto l = local({{"jobs", "3"}});
  Task slow = shell_task(dir, "slow", "exec sleep 30");
  slow.time_limit_s = 0.5;
  l->submit({shell_task(dir, "bad", "echo out; echo err >&2; exit 3"), slow, shell_task(dir, "good", "pwd")});
  auto s = wait_all(*l, {"bad", "slow", "good"}, 5);
  EXPECT_EQ(s["bad"].state, State::failed);
  EXPECT_EQ(s["bad"].exit_code, 3);
  EXPECT_EQ(test::read_all((dir.path() / "logs/bad.log").string()), "out\nerr\n");
  EXPECT_EQ(s["slow"].state, State::timed_out) << s["slow"].detail;
  EXPECT_EQ(s["good"].state, State::done);
  EXPECT_EQ(test::read_all((dir.path() / "logs/good.log").string()), dir.path().string() + "\n");
}

TEST(LocalLauncher, CancelEndsARunningTaskAndAWaitingOne) {
  TempDir dir;
  auto l = local({{"jobs", "1"}});
  l->submit({shell_task(dir, "running", "touch started; exec sleep 60"), shell_task(dir, "waiting", "true")});
  std::string started = (dir.path() / "started").string();
  for (int i = 0; i < 2000 && !std::filesystem::exists(started); ++i) l->wait(0.01);
  ASSERT_TRUE(std::filesystem::exists(started));
  EXPECT_EQ(l->poll()["waiting"].state, State::pending);
  l->cancel("waiting");
  l->cancel("running");
  auto s = wait_all(*l, {"running", "waiting"}, 5);
  EXPECT_EQ(s["running"].state, State::cancelled) << s["running"].detail;
  EXPECT_EQ(s["waiting"].state, State::cancelled);
  EXPECT_EQ(s["waiting"].detail, "cancelled before it started");
}

TEST(LocalLauncher, ATaskIdIsSubmittedOnceUntilItHasFinished) {
  TempDir dir;
  auto l = local({{"jobs", "1"}});
  l->submit({shell_task(dir, "x", "exec sleep 60")});
  EXPECT_THROW(l->submit({shell_task(dir, "x", "true")}), std::logic_error);
  l->cancel("x");
  EXPECT_EQ(wait_all(*l, {"x"}, 5)["x"].state, State::cancelled);
  l->submit({shell_task(dir, "x", "true")}); // a requeue
  EXPECT_EQ(wait_all(*l, {"x"}, 5)["x"].state, State::done);
}

// --gpus (loop/slots.cpp) and the local launcher's gpus option: the GPUs work is spread over.
TEST(Gpus, AutoAllCountAndIdsFromCudaVisibleDevices) {
  const char* before = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string saved = before ? before : "";
  ::setenv("CUDA_VISIBLE_DEVICES", "3, 5,7", 1);
  EXPECT_EQ(util::visible_gpus("auto", "--gpus"), (std::vector<std::string>{"3", "5", "7"}));
  EXPECT_EQ(util::visible_gpus("all", "--gpus"), (std::vector<std::string>{"3", "5", "7"}));
  EXPECT_EQ(util::visible_gpus("2", "--gpus"), (std::vector<std::string>{"3", "5"}));
  EXPECT_EQ(util::visible_gpus("0,2", "--gpus"), (std::vector<std::string>{"0", "2"}));
  try {
    util::visible_gpus("4", "--gpus");
    ADD_FAILURE() << "4 of 3 GPUs was taken";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--gpus: 4 GPU(s) asked for, 3 found (3,5,7)"), std::string::npos) << e.what();
  }
  try {
    util::visible_gpus("0,,1", "--gpus");
    ADD_FAILURE() << "an empty id was taken";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--gpus: \"0,,1\" has an empty GPU id"), std::string::npos) << e.what();
  }
  if (before)
    ::setenv("CUDA_VISIBLE_DEVICES", saved.c_str(), 1);
  else
    ::unsetenv("CUDA_VISIBLE_DEVICES");
}
