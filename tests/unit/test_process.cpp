#include "util/process.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>

using namespace optimas::util;

TEST(Process, ExitCodeAndCapture) {
  auto r = run_process(shell("echo out; echo err >&2; exit 3"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(r.describe(), "exit code 3");
}

TEST(Process, EnvironmentAndWorkingDirectory) {
  optimas::test::TempDir dir;
  ProcessSpec spec = shell("pwd; echo \"$OPTIMAS_X-${HOME:-unset}\"");
  spec.cwd = dir.path().string();
  spec.env = {{"OPTIMAS_X", "1"}};
  spec.unset_env = {"HOME"};
  auto r = run_process(spec);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.out, dir.path().string() + "\n1-unset\n");
}

TEST(Process, TimeoutKillsTheWholeProcessGroup) {
  optimas::test::TempDir dir;
  std::string pid_file = (dir.path() / "child.pid").string();
  // The shell starts a grandchild that would outlive a plain kill of the shell.
  ProcessSpec spec = shell("sleep 300 & echo $! > " + pid_file + "; wait");
  spec.timeout_s = 0.5;
  auto r = run_process(spec);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.wall_s, 10.0);
  std::ifstream in(pid_file);
  pid_t child = 0;
  ASSERT_TRUE(in >> child);
  // The grandchild got the kill: it is gone, or a zombie waiting for init. The kernel
  // delivers the signal asynchronously, so look again (bounded) until its state shows it.
  auto dead = [&] {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string pid, comm, state;
    if (!(stat >> pid >> comm >> state)) return true;
    return state == "Z" || state == "X";
  };
  bool gone = dead();
  for (int i = 0; i < 200 && !gone; ++i) {
    struct timespec ts {
      0, 10'000'000
    };
    nanosleep(&ts, nullptr);
    gone = dead();
  }
  EXPECT_TRUE(gone) << "pid " << child << " survived the timeout";
}

TEST(Process, MissingProgram) {
  ProcessSpec spec;
  spec.argv = {"/nonexistent/program"};
  auto r = run_process(spec);
  EXPECT_TRUE(r.spawn_failed);
  EXPECT_NE(r.describe().find("cannot run"), std::string::npos);
}

TEST(Process, OutputToFile) {
  optimas::test::TempDir dir;
  ProcessSpec spec = shell("printf 'a,b\\n'; echo oops >&2");
  spec.stdout_path = (dir.path() / "out.csv").string();
  spec.stderr_to_stdout = true;
  auto r = run_process(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(optimas::test::read_all(spec.stdout_path), "a,b\noops\n");
}

TEST(Process, RelativeOutputPathIsOursNotTheChilds) {
  optimas::test::TempDir dir;
  auto here = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  std::filesystem::create_directories("work");
  ProcessSpec spec = shell("echo built");
  spec.cwd = "work";
  spec.stdout_path = "build.log"; // relative to the caller's directory
  auto r = run_process(spec);
  std::filesystem::current_path(here);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(optimas::test::read_all((dir.path() / "build.log").string()), "built\n");
}

TEST(Process, FileSizeLimitStopsALargeWrite) {
  optimas::test::TempDir dir;
  std::string big = (dir.path() / "big.bin").string();
  ProcessSpec spec = shell("head -c 3000000 /dev/zero > " + big);
  spec.limits.file_bytes = 1'000'000;
  auto r = run_process(spec);
  EXPECT_FALSE(r.ok()) << r.describe();
  ASSERT_TRUE(std::filesystem::exists(big));
  EXPECT_LE(std::filesystem::file_size(big), 1'000'000u);

  // Under the limit the same write succeeds.
  spec = shell("head -c 3000 /dev/zero > " + big);
  spec.limits.file_bytes = 1'000'000;
  r = run_process(spec);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(std::filesystem::file_size(big), 3000u);
}
