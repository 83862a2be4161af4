// The slurm launcher (src/launch/slurm.cpp) against a real slurmctld and slurmd: jobs submitted
// one per task and as an array job, followed to their ends with their exit codes, one cancelled
// with scancel, one ended by its time limit. tests/scenario/slurm_launcher.sh starts the daemons
// (slurm_lib.sh), sets SLURM_CONF and SLURM_TEST_WORK and runs this; without them it fails, it
// does not skip (the skip is the script's, where slurm-wlm cannot be installed).
#include "launch/launcher.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

using namespace optimas::launch;
namespace fs = std::filesystem;

namespace optimas::launch {
// A failed expectation names the state ("lost"), not its bytes.
void PrintTo(State s, std::ostream* os) { *os << state_name(s); }
} // namespace optimas::launch

namespace {

fs::path work() {
  const char* w = std::getenv("SLURM_TEST_WORK");
  return w ? fs::path(w) : fs::path();
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Task shell_task(const std::string& id, const std::string& script, int gpus = 0, double time_limit_s = 0) {
  Task t;
  t.id = id;
  t.argv = {"/bin/sh", "-c", script};
  t.workdir = work() / "cells" / id;
  fs::create_directories(t.workdir);
  t.log = work() / "logs" / (id + ".log");
  t.gpus = gpus;
  t.time_limit_s = time_limit_s;
  t.env = {{"OPTIMAS_TEST_TASK", id}};
  return t;
}

std::unique_ptr<Launcher> slurm(const std::map<std::string, std::string>& options = {}) {
  return make_launcher(launcher_from("slurm", options));
}

// Polls until `done(status)` holds for every task in `ids`, at most `deadline_s` seconds; the
// states last seen otherwise (the caller's expectations then say which one is wrong).
std::map<std::string, Status> poll_until(Launcher& l, const std::vector<std::string>& ids, double deadline_s,
                                         const std::function<bool(const Status&)>& done = [](const Status& s) {
                                           return finished(s.state);
                                         }) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  for (;;) {
    auto s = l.poll();
    bool all = true;
    for (const auto& id : ids) all = all && s.contains(id) && done(s[id]);
    if (all || std::chrono::steady_clock::now() > until) return s;
    l.wait(0.5);
  }
}

bool is_number(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// The time-limited job starts first and runs while the other tests do: Slurm's limits are whole
// minutes, checked every half minute, so it ends 60 to 90 s after it starts.
std::unique_ptr<Launcher> g_limited;

class SlowJobs : public ::testing::Environment {
public:
  void SetUp() override {
    ASSERT_NE(std::getenv("SLURM_CONF"), nullptr) << "run through tests/scenario/slurm_launcher.sh (SLURM_CONF)";
    ASSERT_FALSE(work().empty()) << "SLURM_TEST_WORK is not set";
    g_limited = slurm();
    g_limited->submit({shell_task("limited", "sleep 600", 0, 30)});
  }
  void TearDown() override { g_limited.reset(); }
};

} // namespace

TEST(RealSlurm, OneJobPerTaskEndsDoneOrFailedWithItsExitCode) {
  auto l = slurm();
  l->submit({shell_task("ok", "echo \"task=$OPTIMAS_TEST_TASK dir=$(pwd) job=$SLURM_JOB_ID\""),
             shell_task("bad", "echo failing; exit 3"),
             shell_task("gpu", "echo \"gpus=$CUDA_VISIBLE_DEVICES\"", 1)});
  auto s = poll_until(*l, {"ok", "bad", "gpu"}, 60);
  EXPECT_EQ(s["ok"].state, State::done) << s["ok"].detail;
  EXPECT_EQ(s["ok"].exit_code, 0);
  EXPECT_TRUE(is_number(s["ok"].job)) << s["ok"].job;
  EXPECT_EQ(read_file(work() / "logs/ok.log"),
            "task=ok dir=" + (work() / "cells/ok").string() + " job=" + s["ok"].job + "\n");
  EXPECT_EQ(s["bad"].state, State::failed) << s["bad"].detail;
  EXPECT_EQ(s["bad"].exit_code, 3);
  EXPECT_EQ(read_file(work() / "logs/bad.log"), "failing\n");
  // --gres=gpu:1 reached Slurm: it named one of the node's (stand-in) GPUs to the job.
  EXPECT_EQ(s["gpu"].state, State::done) << s["gpu"].detail;
  EXPECT_EQ(read_file(work() / "logs/gpu.log").substr(0, 5), "gpus=");
  EXPECT_NE(read_file(work() / "logs/gpu.log"), "gpus=\n");

  // A finished task is submitted again under its id (a campaign's requeue): a new job.
  l->submit({shell_task("bad", "echo fixed")});
  auto again = poll_until(*l, {"bad"}, 60)["bad"];
  EXPECT_EQ(again.state, State::done) << again.detail;
  EXPECT_NE(again.job, s["bad"].job);
  EXPECT_EQ(read_file(work() / "logs/bad.log"), "fixed\n");
}

TEST(RealSlurm, AnArrayJobRunsEachTaskInItsOwnElement) {
  auto l = slurm({{"array", "true"}});
  l->submit({shell_task("a0", "echo zero"), shell_task("a1", "echo one; exit 4"),
             shell_task("a2", "echo \"two $SLURM_ARRAY_TASK_ID\"")});
  auto s = poll_until(*l, {"a0", "a1", "a2"}, 60);
  std::string base = s["a0"].job.substr(0, s["a0"].job.find('_'));
  EXPECT_TRUE(is_number(base)) << s["a0"].job;
  EXPECT_EQ(s["a0"].job, base + "_0");
  EXPECT_EQ(s["a2"].job, base + "_2");
  EXPECT_EQ(s["a0"].state, State::done) << s["a0"].detail;
  EXPECT_EQ(s["a1"].state, State::failed) << s["a1"].detail;
  EXPECT_EQ(s["a1"].exit_code, 4);
  EXPECT_EQ(s["a2"].state, State::done) << s["a2"].detail;
  EXPECT_EQ(read_file(work() / "logs/a0.log"), "zero\n");
  EXPECT_EQ(read_file(work() / "logs/a1.log"), "one\n");
  EXPECT_EQ(read_file(work() / "logs/a2.log"), "two 2\n");
}

TEST(RealSlurm, AJobCancelledWithScancelIsCancelled) {
  auto l = slurm();
  l->submit({shell_task("by-user", "echo started; sleep 600"), shell_task("by-launcher", "sleep 600")});
  auto s = poll_until(*l, {"by-user", "by-launcher"}, 60, [](const Status& x) { return x.state == State::running; });
  ASSERT_EQ(s["by-user"].state, State::running) << s["by-user"].detail;
  ASSERT_EQ(s["by-launcher"].state, State::running) << s["by-launcher"].detail;
  // Someone else's scancel (a user, an operator) and the launcher's own.
  ASSERT_EQ(std::system(("scancel " + s["by-user"].job).c_str()), 0);
  l->cancel("by-launcher");
  s = poll_until(*l, {"by-user", "by-launcher"}, 60);
  EXPECT_EQ(s["by-user"].state, State::cancelled) << s["by-user"].detail;
  EXPECT_EQ(s["by-launcher"].state, State::cancelled) << s["by-launcher"].detail;
}

// Last: by now the time-limited job has used most of its minute.
TEST(RealSlurm, ATimeLimitEndsAJobAsTimedOut) {
  ASSERT_TRUE(g_limited);
  auto s = poll_until(*g_limited, {"limited"}, 150)["limited"];
  EXPECT_EQ(s.state, State::timed_out) << s.detail;
  EXPECT_EQ(s.detail, "TIMEOUT");
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new SlowJobs);
  return RUN_ALL_TESTS();
}
