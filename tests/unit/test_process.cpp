#include "util/process.hpp"

#include "util/secrets.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace optimas::util;

namespace {

// The first line a child writes into the FIFO `path`; empty when none comes within `timeout_s`
// (a test that fails never hangs).
std::string read_fifo(const std::string& path, double timeout_s = 30) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (line.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[256];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0)
      line.append(buf, static_cast<std::size_t>(n));
    else if (n == 0 && !(p.revents & POLLIN))
      break; // the writer closed without a line
  }
  ::close(fd);
  return line.substr(0, line.find('\n'));
}

std::string make_fifo(const optimas::test::TempDir& dir, const std::string& name) {
  std::string path = (dir.path() / name).string();
  EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
  return path;
}

pid_t read_pid(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

// Whether `pid` is gone for good: no such process (exited and reaped).
bool gone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

pid_t parent_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::istringstream fields(text.substr(text.rfind(')') + 1));
  std::string state;
  pid_t ppid = 0;
  fields >> state >> ppid;
  return ppid;
}

// Waits (bounded) until `pid` exits, through a pidfd; false when it is still running.
bool wait_exit(pid_t pid, double timeout_s = 20) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno == ESRCH;
  pollfd p{fd, POLLIN, 0};
  bool exited = ::poll(&p, 1, static_cast<int>(timeout_s * 1000)) > 0;
  ::close(fd);
  return exited;
}

// For the scope of a test, orphans below us become our children (as the supervisor's do when
// it dies), so the test can reap them and see them gone.
class Subreaper {
public:
  Subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }
  ~Subreaper() {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  }
};

} // namespace

// A read that fails after the open reads as empty and throws nothing: a process that exits
// while its environ is read fails it with ESRCH (a run's sweep for marked processes met one
// under load and ended with "internal error: basic_filebuf::underflow error reading the file");
// a folder fails it the same way, with EISDIR, which std::ifstream turned into that exception.
TEST(Process, ReadProcFileIsEmptyWhereTheReadFails) {
  EXPECT_EQ(read_proc_file("/proc/self"), "");
  EXPECT_EQ(read_proc_file("/proc/0/environ"), "");
  const std::string stat = read_proc_file("/proc/self/stat");
  EXPECT_EQ(stat.rfind(std::to_string(::getpid()) + " (", 0), 0u) << stat;
}

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

// One list (util/secrets) decides what no child sees: keys named like keys, and variables
// registered because a backend reads a key from them (api_key_env), whatever their name.
TEST(Process, NoChildSeesAKeyVariable) {
  optimas::test::ScopedEnv a("OPTIMAS_TEST_CHILD_API_KEY", "child-api-key-123456");
  optimas::test::ScopedEnv b("OPTIMAS_TEST_CHILD_ACCESS", "child-access-value-9");
  optimas::util::register_secret_variable("OPTIMAS_TEST_CHILD_ACCESS");
  auto r = run_process(shell("env"));
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.out.find("OPTIMAS_TEST_CHILD_API_KEY"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("OPTIMAS_TEST_CHILD_ACCESS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PATH="), std::string::npos);
}

// A child may find a key elsewhere (here, a file): what it writes is redacted before anyone reads it.
TEST(Process, WhatAChildWritesIsRedacted) {
  optimas::test::TempDir dir;
  optimas::test::ScopedEnv a("OPTIMAS_TEST_CHILD_TOKEN", "child-token-abcdef12");
  std::string key_file = dir.file("key.txt", "child-token-abcdef12");
  ProcessSpec spec = shell("cat " + key_file + "; cat " + key_file + " >&2");
  spec.stdout_path = (dir.path() / "out.log").string();
  spec.stderr_path = (dir.path() / "err.log").string();
  ASSERT_TRUE(run_process(spec).ok());
  EXPECT_EQ(optimas::test::read_all(spec.stdout_path), "[REDACTED]");
  EXPECT_EQ(optimas::test::read_all(spec.stderr_path), "[REDACTED]");
  auto captured = run_process(shell("cat " + key_file + "; cat " + key_file + " >&2"));
  EXPECT_EQ(captured.out, "[REDACTED]");
  EXPECT_EQ(captured.err, "[REDACTED]");
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

TEST(Process, SignalOfTheProgramIsReported) {
  ProcessSpec spec = shell("kill -SEGV $$");
  spec.limits.core_dumps = false;
  auto r = run_process(spec);
  EXPECT_EQ(r.signal, SIGSEGV) << r.describe();
  EXPECT_NE(r.describe().find("killed by signal"), std::string::npos) << r.describe();
}

// A variant that starts `setsid sleep` and then hangs: the sleep left the process group, and
// still dies with the timeout.
TEST(Process, SetsidEscapeeDiesWithTheTimeout) {
  optimas::test::TempDir dir;
  std::string fifo = make_fifo(dir, "started");
  std::string pid_file = (dir.path() / "escapee.pid").string();
  ProcessSpec spec = shell("setsid sh -c 'echo $$ > " + fifo + "; exec sleep 1203' & read p < " + fifo +
                           "; echo $p > " + pid_file + "; exec sleep 1201");
  // Not captured: an escapee holding a pipe would make a regression hang instead of fail.
  spec.stdout_path = (dir.path() / "out.log").string();
  spec.stderr_to_stdout = true;
  spec.timeout_s = 1;
  auto r = run_process(spec);
  EXPECT_TRUE(r.timed_out) << r.describe();
  pid_t escapee = read_pid(pid_file);
  ASSERT_GT(escapee, 0) << "the command did not get to write the escapee's pid before the timeout";
  EXPECT_TRUE(gone(escapee)) << "pid " << escapee << " (setsid sleep) survived the timeout";
}

// The same escapee left behind by a program that exits normally is ended too.
TEST(Process, SetsidEscapeeDiesWhenTheProgramExits) {
  optimas::test::TempDir dir;
  std::string fifo = make_fifo(dir, "started");
  std::string pid_file = (dir.path() / "escapee.pid").string();
  ProcessSpec spec =
      shell("(setsid sh -c 'echo $$ > " + fifo + "; exec sleep 1204' &); read p < " + fifo + "; echo $p > " + pid_file);
  spec.stdout_path = (dir.path() / "out.log").string();
  spec.stderr_to_stdout = true;
  spec.timeout_s = 60;
  auto r = run_process(spec);
  ASSERT_TRUE(r.ok()) << r.describe();
  pid_t escapee = read_pid(pid_file);
  ASSERT_GT(escapee, 0);
  EXPECT_TRUE(gone(escapee)) << "pid " << escapee << " (setsid sleep) outlived its program";
}

// What was still running when the program exited is counted (a variant that leaves a process to
// rewrite its output is faulted for it, loop/execute.cpp): an escapee, a child in the program's
// group; an orphan that ended while the program ran, and a child it waited for, are not.
TEST(Process, CountsWhatWasLeftRunningWhenTheProgramExited) {
  optimas::test::TempDir dir;
  auto left = [&](const std::string& command) {
    ProcessSpec spec = shell(command);
    spec.stdout_path = (dir.path() / "out.log").string();
    spec.stderr_to_stdout = true;
    spec.timeout_s = 60;
    auto r = run_process(spec);
    EXPECT_TRUE(r.ok()) << command << ": " << r.describe();
    return r.left_running;
  };
  std::string fifo = make_fifo(dir, "started");
  EXPECT_EQ(left("(setsid sh -c 'echo $$ > " + fifo + "; exec sleep 1207' &); read p < " + fifo), 1);
  std::string fifo2 = make_fifo(dir, "started2");
  EXPECT_EQ(left("sh -c 'echo $$ > " + fifo2 + "; exec sleep 1208' & read p < " + fifo2), 1);
  EXPECT_EQ(left("sleep 0.01 & wait"), 0);
  // The orphan's end is awaited by the program itself, through a fifo it holds open until exit.
  std::string done = make_fifo(dir, "done");
  EXPECT_EQ(left("(sh -c 'exec 3> " + done + "; exit 0' &); cat " + done + " > /dev/null; sleep 0.2"), 0);
}

// optimas killed with SIGKILL: the supervisor notices its parent is gone and ends the program
// and what it started, setsid or not, with no time limit left to do it.
TEST(Process, AChildWhoseParentDiesIsKilled) {
  optimas::test::TempDir dir;
  Subreaper subreaper; // the supervisor, orphaned, becomes ours: we can reap it and look
  std::string ready = make_fifo(dir, "ready");
  std::string started = make_fifo(dir, "started");
  pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    // The stand-in for optimas: runs a program with no time limit, and is killed.
    ProcessSpec spec = shell("setsid sh -c 'echo $$ > " + started + "; exec sleep 1205' & read p < " + started +
                             "; echo $$ $p > " + ready + "; exec sleep 1206");
    run_process(spec);
    ::_exit(0);
  }
  std::istringstream line(read_fifo(ready));
  pid_t program = 0, escapee = 0;
  line >> program >> escapee;
  ASSERT_GT(program, 0) << "the program did not start";
  ASSERT_GT(escapee, 0);
  pid_t supervisor = parent_of(program);
  ASSERT_GT(supervisor, 0);
  EXPECT_NE(supervisor, parent) << "the program runs under a supervisor";

  ::kill(parent, SIGKILL);
  ASSERT_EQ(::waitpid(parent, nullptr, 0), parent);
  // No sleep here: each wait returns as the process exits (or fails after 20 s).
  EXPECT_TRUE(wait_exit(supervisor)) << "the supervisor " << supervisor << " outlived its parent";
  ::waitpid(supervisor, nullptr, 0);
  EXPECT_TRUE(gone(program)) << "the program " << program << " outlived optimas";
  EXPECT_TRUE(gone(escapee)) << "the setsid sleep " << escapee << " outlived optimas";
}

TEST(Process, ObserverSeesEachChildStartAndEnd) {
  struct Event {
    ChildInfo child;
    bool running;
  };
  std::vector<Event> events;
  set_child_observer([&](const ChildInfo& c, bool running) { events.push_back({c, running}); });
  auto r = run_process(shell("echo $$"));
  set_child_observer({});
  ASSERT_TRUE(r.ok()) << r.describe();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_TRUE(events[0].running);
  EXPECT_FALSE(events[1].running);
  EXPECT_GT(events[0].child.supervisor, 0);
  EXPECT_GT(events[0].child.supervisor_start, 0u);
  EXPECT_EQ(std::to_string(events[0].child.group) + "\n", r.out) << "the group is the program's";
  EXPECT_EQ(events[1].child.supervisor, events[0].child.supervisor);
  EXPECT_TRUE(gone(events[0].child.supervisor));
  EXPECT_EQ(process_start_time(events[0].child.supervisor), std::nullopt);
  EXPECT_NE(process_start_time(::getpid()), std::nullopt);
}

// The supervisor itself was killed (SIGKILL, no chance to clean up): its program died with it,
// but a background process of the program's group lives on. Its group has no leader, so its id
// proves nothing (it may be another's by now) and end_child leaves it; the mark ends it.
TEST(Process, WhatAKilledSupervisorLeftIsEndedByItsMark) {
  optimas::test::TempDir dir;
  Subreaper subreaper;
  std::string ready = make_fifo(dir, "ready");
  const std::string mark = "test-" + std::to_string(::getpid());
  pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    set_child_mark("OPTIMAS_TEST_MARK", mark);
    run_process(shell("sleep 1207 & echo $$ $! > " + ready + "; wait"));
    ::_exit(0);
  }
  std::istringstream line(read_fifo(ready));
  pid_t program = 0, background = 0;
  line >> program >> background;
  ASSERT_GT(program, 0);
  ASSERT_GT(background, 0);
  ChildInfo child;
  child.supervisor = parent_of(program);
  child.supervisor_start = process_start_time(child.supervisor).value_or(0);
  child.group = program;
  child.group_start = process_start_time(program).value_or(0);

  // The parent stopped (it cannot react), the supervisor killed: the program dies with it, the
  // background sleep is orphaned and comes to us.
  ::kill(parent, SIGSTOP);
  ::kill(child.supervisor, SIGKILL);
  EXPECT_TRUE(wait_exit(program));
  ::kill(parent, SIGKILL);
  ASSERT_EQ(::waitpid(parent, nullptr, 0), parent);
  ::waitpid(child.supervisor, nullptr, 0);
  ::waitpid(program, nullptr, 0);
  ASSERT_EQ(::waitpid(background, nullptr, WNOHANG), 0) << "the background sleep should still run";

  EXPECT_FALSE(end_child(child)) << "a group without its leader was signalled";
  EXPECT_EQ(::waitpid(background, nullptr, WNOHANG), 0);
  EXPECT_EQ(end_marked("OPTIMAS_TEST_MARK", "other-" + mark), 0);
  EXPECT_EQ(end_marked("OPTIMAS_TEST_MARK", mark), 1);
  const bool ended = wait_exit(background);
  EXPECT_TRUE(ended);
  if (!ended) ::kill(background, SIGKILL); // not 20 minutes of waiting for the sleep below
  ASSERT_EQ(::waitpid(background, nullptr, 0), background);
  EXPECT_TRUE(gone(background));
  EXPECT_EQ(end_marked("OPTIMAS_TEST_MARK", mark), 0) << "nothing is left to end";
}

// A process with an empty environment may be one caught inside execve, so end_marked looks
// again (a few times) before it answers; one that stays empty (env -i) is left alone, and the
// answer still comes.
TEST(Process, EndMarkedLeavesAProcessWithAnEmptyEnvironmentAlone) {
  pid_t bare = ::fork();
  ASSERT_GE(bare, 0);
  if (bare == 0) {
    char* const argv[] = {const_cast<char*>("sleep"), const_cast<char*>("1211"), nullptr};
    char* const envp[] = {nullptr};
    ::execve("/bin/sleep", argv, envp);
    ::_exit(127);
  }
  // Until it has exec'd, it is a copy of this process, environment included: looked at every
  // millisecond, for up to 10 s.
  std::string environment = "?";
  for (int i = 0; i < 10000 && !environment.empty(); ++i) {
    std::ifstream cmdline("/proc/" + std::to_string(bare) + "/cmdline", std::ios::binary);
    std::string args((std::istreambuf_iterator<char>(cmdline)), {});
    if (args.rfind(std::string("sleep\0", 6), 0) == 0) {
      std::ifstream env("/proc/" + std::to_string(bare) + "/environ", std::ios::binary);
      environment.assign((std::istreambuf_iterator<char>(env)), {});
    } else {
      struct timespec ms {
        0, 1'000'000
      };
      ::nanosleep(&ms, nullptr);
    }
  }
  ASSERT_TRUE(environment.empty()) << "the sleep did not start with an empty environment";
  EXPECT_EQ(end_marked("OPTIMAS_TEST_MARK", "test-bare-" + std::to_string(::getpid())), 0);
  EXPECT_EQ(::waitpid(bare, nullptr, WNOHANG), 0) << "an unmarked process was ended";
  ::kill(bare, SIGKILL);
  ASSERT_EQ(::waitpid(bare, nullptr, 0), bare);
}

// While the program leads its group (its supervisor killed, the program not), end_child ends
// the group.
TEST(Process, EndChildEndsTheGroupOfALiveProgram) {
  pid_t leader = ::fork();
  ASSERT_GE(leader, 0);
  if (leader == 0) {
    ::setpgid(0, 0);
    ::execlp("sh", "sh", "-c", "sleep 1209 & wait", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(leader, leader);
  ChildInfo child;
  child.group = leader;
  child.group_start = process_start_time(leader).value_or(0);
  EXPECT_TRUE(end_child(child));
  int status = 0;
  ASSERT_EQ(::waitpid(leader, &status, 0), leader);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

TEST(Process, MarkReachesTheProgramAndWhatItStarts) {
  set_child_mark("OPTIMAS_TEST_MARK", "m1");
  auto r = run_process(shell("echo $OPTIMAS_TEST_MARK; sh -c 'echo $OPTIMAS_TEST_MARK'"));
  set_child_mark("", "");
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.out, "m1\nm1\n");
  r = run_process(shell("echo ${OPTIMAS_TEST_MARK:-none}"));
  EXPECT_EQ(r.out, "none\n");
}

// A recorded pid that now belongs to another process (another start time) is never signalled.
TEST(Process, EndChildLeavesARecycledPidAlone) {
  pid_t other = ::fork();
  ASSERT_GE(other, 0);
  if (other == 0) {
    ::execlp("sleep", "sleep", "1208", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(other, other);
  auto start = process_start_time(other);
  ASSERT_TRUE(start);
  ChildInfo child;
  child.supervisor = other;
  child.supervisor_start = *start + 1;
  child.group = other;
  child.group_start = *start + 1;
  EXPECT_FALSE(end_child(child));
  EXPECT_EQ(::waitpid(other, nullptr, WNOHANG), 0) << "the process was signalled";
  ::kill(other, SIGKILL);
  ::waitpid(other, nullptr, 0);
}
