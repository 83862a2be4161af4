// Tests of the slurm launcher against stand-ins of sbatch, squeue, sacct, scontrol and scancel on PATH
// that record what they are given and answer what the test writes (the output formats of
// Slurm 22's commands for the options the launcher passes). The same launcher against a real
// slurmctld/slurmd is tests/scenario/slurm_launcher.sh's.
#include "launch/launcher.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

using namespace optimas;
using namespace optimas::launch;
using optimas::test::ScopedEnv;
using optimas::test::TempDir;

namespace {

class FakeSlurm {
public:
  FakeSlurm() : m_path("PATH", (m_dir.path().string() + "/bin:" + std::getenv("PATH")).c_str()),
                m_fake("FAKE", m_dir.path().c_str()) {
    tool("sbatch", "echo \"$@\" >> \"$FAKE/sbatch.args\"; n=$(cat \"$FAKE/next\" 2>/dev/null || echo 100); "
                   "echo $((n+1)) > \"$FAKE/next\"; for a; do s=$a; done; cp \"$s\" \"$FAKE/script.$n\"; "
                   "echo \"$n;cluster\"");
    tool("squeue", "echo \"$@\" >> \"$FAKE/squeue.args\"; [ -f \"$FAKE/squeue.txt\" ] || { echo 'slurm_load_jobs "
                   "error: Invalid job id specified' >&2; exit 1; }; cat \"$FAKE/squeue.txt\"");
    tool("sacct", "printf '%s\\n' \"$*\" >> \"$FAKE/sacct.args\"; [ -f \"$FAKE/sacct.fail\" ] && { cat \"$FAKE/sacct.fail\" >&2; "
                  "exit 1; }; cat \"$FAKE/sacct.txt\" 2>/dev/null; true");
    // scontrol -o show job ID: one line of KEY=VALUE words, or an error once slurmctld has purged the job.
    tool("scontrol", "echo \"$@\" >> \"$FAKE/scontrol.args\"; f=\"$FAKE/scontrol.$4.txt\"; [ -f \"$f\" ] || { echo "
                     "'slurm_load_jobs error: Invalid job id specified' >&2; exit 1; }; cat \"$f\"");
    tool("scancel", "echo \"$@\" >> \"$FAKE/scancel.args\"");
  }
  void answer(const std::string& name, const std::string& text) const { m_dir.file(name, text); }
  void forget(const std::string& name) const { std::filesystem::remove(m_dir.path() / name); }
  std::string read(const std::string& name) const { return test::read_all((m_dir.path() / name).string()); }
  const std::filesystem::path& path() const { return m_dir.path(); }

private:
  void tool(const std::string& name, const std::string& body) const {
    std::string p = m_dir.file("bin/" + name, "#!/bin/sh\n" + body + "\n");
    ::chmod(p.c_str(), 0755);
  }
  TempDir m_dir;
  ScopedEnv m_path;
  ScopedEnv m_fake;
};

Task task(const FakeSlurm& f, const std::string& id, int gpus = 0) {
  Task t;
  t.id = id;
  t.argv = {"optimas", "run", "--app", "my app/optimas.yml"};
  t.workdir = f.path() / "work";
  t.log = f.path() / "logs" / (id + ".log");
  t.gpus = gpus;
  t.time_limit_s = 90;
  t.env = {{"OPTIMAS_CAMPAIGN", "c1"}};
  return t;
}

std::unique_ptr<Launcher> slurm(const std::map<std::string, std::string>& options) {
  return make_launcher(launcher_from("slurm", options));
}

} // namespace

TEST(SlurmLauncher, OneJobPerTaskWithItsResources) {
  FakeSlurm f;
  auto l = slurm({{"partition", "gpu"}, {"extra", "--exclusive --mail-type=NONE"}});
  l->submit({task(f, "a", 1), task(f, "b")});
  std::string args = f.read("sbatch.args");
  std::string log_a = (f.path() / "logs/a.log").string(), log_b = (f.path() / "logs/b.log").string();
  EXPECT_EQ(args, "--parsable --job-name=optimas-a --partition=gpu --time=2 --gres=gpu:1 --requeue --exclusive "
                  "--mail-type=NONE --output=" + log_a + " " + (f.path() / "logs/a.sbatch").string() + "\n" +
                  "--parsable --job-name=optimas-b --partition=gpu --time=2 --requeue --exclusive --mail-type=NONE "
                  "--output=" + log_b + " " + (f.path() / "logs/b.sbatch").string() + "\n");
  EXPECT_EQ(f.read("script.100"), "#!/bin/bash\n# optimas launcher slurm: task a\nexport OPTIMAS_CAMPAIGN=c1\ncd " +
                                      (f.path() / "work").string() + " || exit 1\nexec optimas run --app 'my app/optimas.yml'\n");
  auto s = l->poll();
  EXPECT_EQ(s["a"].job, "100");
  EXPECT_EQ(s["b"].job, "101");
}

TEST(SlurmLauncher, StatesFromSqueueThenSacct) {
  FakeSlurm f;
  auto l = slurm({});
  l->submit({task(f, "a"), task(f, "b"), task(f, "c"), task(f, "d")});
  f.answer("squeue.txt", "100|RUNNING\n101|PENDING\n");
  f.answer("sacct.txt", "102|FAILED|1:0\n103|CANCELLED by 1000|0:15\n");
  auto s = l->poll();
  EXPECT_EQ(s["a"].state, State::running);
  EXPECT_EQ(s["b"].state, State::pending);
  EXPECT_EQ(s["c"].state, State::failed);
  EXPECT_EQ(s["c"].exit_code, 1);
  EXPECT_EQ(s["d"].state, State::cancelled);
  EXPECT_EQ(f.read("squeue.args"), "-h -r -t all -o %i|%T -j 100,101,102,103\n");
  // squeue knows none of them any more (it fails so): sacct says how they ended.
  f.forget("squeue.txt");
  f.answer("sacct.txt", "100|COMPLETED|0:0\n101|PREEMPTED|0:0\n");
  s = l->poll();
  EXPECT_EQ(s["a"].state, State::done);
  EXPECT_EQ(s["a"].exit_code, 0);
  EXPECT_EQ(s["b"].state, State::preempted);
  // Finished jobs are not asked about again.
  EXPECT_EQ(f.read("squeue.args"), "-h -r -t all -o %i|%T -j 100,101,102,103\n-h -r -t all -o %i|%T -j 100,101\n");
}

// Without accounting (accounting_storage/none) sacct fails; squeue still shows a finished job
// for MinJobAge seconds, without its exit code, and scontrol has it.
TEST(SlurmLauncher, WithoutAccountingEndsComeFromScontrol) {
  FakeSlurm f;
  auto l = slurm({});
  l->submit({task(f, "a"), task(f, "b"), task(f, "c")});
  f.answer("sacct.fail", "Slurm accounting storage is disabled\n");
  f.answer("squeue.txt", "100|FAILED\n101|RUNNING\n102|CANCELLED\n");
  f.answer("scontrol.100.txt", "JobId=100 JobName=optimas-a JobState=FAILED Reason=NonZeroExitCode Dependency=(null) "
                               "Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=3:0 RunTime=00:00:01\n");
  f.answer("scontrol.102.txt", "JobId=102 JobName=optimas-c JobState=CANCELLED Reason=None ExitCode=0:15\n");
  auto s = l->poll();
  EXPECT_EQ(s["a"].state, State::failed);
  EXPECT_EQ(s["a"].exit_code, 3);
  EXPECT_EQ(s["b"].state, State::running);
  EXPECT_EQ(s["c"].state, State::cancelled);
  EXPECT_EQ(f.read("scontrol.args"), "-o show job 100\n-o show job 102\n");
  f.answer("squeue.txt", "101|COMPLETED\n");
  f.answer("scontrol.101.txt", "JobId=101 JobName=optimas-b JobState=COMPLETED Reason=None ExitCode=0:0\n");
  s = l->poll();
  EXPECT_EQ(s["b"].state, State::done);
  EXPECT_EQ(s["b"].exit_code, 0);
  // sacct was asked once: a cluster without accounting does not get one.
  EXPECT_EQ(f.read("sacct.args"), "-n -P -X -o JobID,State,ExitCode -j 100,101,102\n");
}

// A final state whose exit code nobody has yet (sacct lags, scontrol no longer has it) is not
// taken as done: the task waits for the next poll.
TEST(SlurmLauncher, AFinalStateWithoutItsExitCodeWaits) {
  FakeSlurm f;
  auto l = slurm({});
  l->submit({task(f, "a")});
  f.answer("squeue.txt", "100|COMPLETED\n");
  EXPECT_EQ(l->poll()["a"].state, State::pending);
  f.answer("sacct.txt", "100|COMPLETED|0:0\n");
  auto s = l->poll()["a"];
  EXPECT_EQ(s.state, State::done);
  EXPECT_EQ(s.exit_code, 0);
}

TEST(SlurmLauncher, AJobNobodyKnowsIsLostAfterSomePolls) {
  FakeSlurm f;
  auto l = slurm({});
  l->submit({task(f, "a")});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(l->poll()["a"].state, State::pending);
  auto s = l->poll()["a"];
  EXPECT_EQ(s.state, State::lost);
  EXPECT_EQ(s.detail, "neither squeue nor sacct knows job 100");
}

TEST(SlurmLauncher, TimeoutAndACompletedJobWithAnExitCode) {
  FakeSlurm f;
  auto l = slurm({{"time", "00:30:00"}, {"gres", "gpu:h200:{gpus}"}, {"requeue", "false"}});
  l->submit({task(f, "a", 2), task(f, "b")});
  std::string args = f.read("sbatch.args");
  EXPECT_EQ(args.rfind("--parsable --job-name=optimas-a --time=00:30:00 --gres=gpu:h200:2 --output=", 0), 0u) << args;
  EXPECT_EQ(args.find("--requeue"), std::string::npos);
  f.answer("sacct.txt", "100|TIMEOUT|0:0\n101|COMPLETED|2:0\n");
  auto s = l->poll();
  EXPECT_EQ(s["a"].state, State::timed_out);
  EXPECT_EQ(s["b"].state, State::failed);
  EXPECT_EQ(s["b"].exit_code, 2);
}

TEST(SlurmLauncher, OneArrayJobForAllTasks) {
  FakeSlurm f;
  auto l = slurm({{"array", "true"}});
  Task a = task(f, "a", 1), b = task(f, "b");
  b.time_limit_s = 600;
  l->submit({a, b});
  std::string args = f.read("sbatch.args");
  EXPECT_NE(args.find("--job-name=optimas-array --time=10 --gres=gpu:1 --requeue --array=0-1 --output=/dev/null "),
            std::string::npos)
      << args;
  std::string script = f.read("script.100");
  EXPECT_NE(script.find("case \"$SLURM_ARRAY_TASK_ID\" in\n0)\n# task a\n"), std::string::npos) << script;
  EXPECT_NE(script.find("1)\n# task b\n"), std::string::npos);
  EXPECT_NE(script.find(">" + (f.path() / "logs/b.log").string() + " 2>&1\n"), std::string::npos);
  f.answer("squeue.txt", "100_0|RUNNING\n");
  f.answer("sacct.txt", "100_1|COMPLETED|0:0\n");
  auto s = l->poll();
  EXPECT_EQ(s["a"].job, "100_0");
  EXPECT_EQ(s["a"].state, State::running);
  EXPECT_EQ(s["b"].state, State::done);
}

TEST(SlurmLauncher, CancelCallsScancelWithTheJob) {
  FakeSlurm f;
  auto l = slurm({});
  l->submit({task(f, "a")});
  l->cancel("a");
  EXPECT_EQ(f.read("scancel.args"), "100\n");
}

TEST(SlurmLauncher, KeysNeverEnterABatchScript) {
  FakeSlurm f;
  ScopedEnv key("OPENAI_API_KEY", "sk-test-000000000000");
  auto l = slurm({});
  Task t = task(f, "a");
  t.env["OPENAI_API_KEY"] = "sk-test-000000000000";
  EXPECT_THROW(l->submit({t}), UsageError);
  EXPECT_FALSE(std::filesystem::exists(f.path() / "sbatch.args"));
}

TEST(SlurmLauncher, ClearErrors) {
  FakeSlurm f;
  EXPECT_THROW(slurm({{"array", "yes"}}), UsageError);
  EXPECT_THROW(slurm({{"extra", "--comment='open"}}), UsageError);
  f.answer("bin/sbatch", "#!/bin/sh\necho 'sbatch: error: invalid partition specified: nope' >&2; exit 1\n");
  auto l = slurm({{"partition", "nope"}});
  try {
    l->submit({task(f, "a")});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("launcher slurm: sbatch for task a failed: sbatch: error: invalid partition "
                                         "specified: nope"),
              std::string::npos)
        << e.what();
  }
}
