// evaluate/sandbox.cpp, continued from test_sandbox.cpp: a full disk, and ending what a killed
// optimas left running (process records, the self-shield).
#include "evaluate/child_record.hpp"
#include "evaluate/sandbox.hpp"
#include "evaluate/snapshot.hpp"

#include "util/secrets.hpp"

#include "config/app_config.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include "sandbox_fixture.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

using namespace optimas::evaluate;
using optimas::test::host_app;
using optimas::test::read_all;
using optimas::test::ScopedEnv;
using optimas::test::TempDir;

namespace fs = std::filesystem;

// A full disk, and what a killed optimas leaves running

namespace {

// Runs `body` in a child process whose `dir` is a tmpfs of `size` (a mount namespace of its own,
// through a user namespace when we are not root). The child reports a line through a pipe and
// its exit code; nullopt when this machine allows no such mount (the test skips).
std::optional<std::pair<int, std::string>> on_small_disk(const std::string& dir, const char* size,
                                                         const std::function<int(std::string&)>& body) {
  int report[2];
  if (::pipe(report) != 0) return std::nullopt;
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  pid_t child = ::fork();
  if (child == 0) {
    ::close(report[0]);
    if (::unshare(CLONE_NEWNS) != 0) {
      if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) ::_exit(125);
      std::ofstream("/proc/self/setgroups") << "deny";
      std::ofstream("/proc/self/uid_map") << "0 " << uid << " 1";
      std::ofstream("/proc/self/gid_map") << "0 " << gid << " 1";
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(125);
    std::string options = std::string("size=") + size;
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, options.c_str()) != 0) ::_exit(125);
    std::string message;
    int code = body(message);
    message += "\n";
    (void)!::write(report[1], message.data(), message.size());
    ::_exit(code);
  }
  ::close(report[1]);
  std::string message;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(report[0], buf, sizeof buf)) > 0) message.append(buf, static_cast<std::size_t>(n));
  ::close(report[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 125) return std::nullopt;
  return std::make_pair(WEXITSTATUS(status), message);
}

// A folder of 3 files of 100 KB: more than a 128 KB disk holds.
void three_files(const TempDir& dir) {
  for (const char* name : {"main.cu", "data/a.bin", "data/b.bin"}) dir.file(name, std::string(100'000, 'x'));
}

std::string read_fifo_line(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  std::string line;
  while (fd >= 0 && line.find('\n') == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 30'000) <= 0) break; // a test that fails never hangs
    char buf[256];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0)
      line.append(buf, static_cast<std::size_t>(n));
    else if (n == 0 && !(p.revents & POLLIN))
      break;
  }
  if (fd >= 0) ::close(fd);
  return line.substr(0, line.find('\n'));
}

bool wait_exit(pid_t pid) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno == ESRCH;
  pollfd p{fd, POLLIN, 0};
  bool exited = ::poll(&p, 1, 20'000) > 0;
  ::close(fd);
  return exited;
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

std::string boot_id() {
  return std::string(optimas::util::trim(read_all("/proc/sys/kernel/random/boot_id")));
}

// A child of ours running `sleep`, in a process group of its own.
pid_t start_sleep() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::execlp("sleep", "sleep", "1210", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  return pid;
}

// A sleep leading its own group, with `env` as its whole environment; returns once it has
// exec'd (the pipe closes on exec), so /proc shows its environment.
pid_t start_sleep_with(const char* env) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    char* const argv[] = {const_cast<char*>("sleep"), const_cast<char*>("1211"), nullptr};
    char* const envp[] = {const_cast<char*>(env), nullptr};
    ::execve("/bin/sleep", argv, envp);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(p[1]);
  char c;
  while (::read(p[0], &c, 1) > 0) {
  }
  ::close(p[0]);
  return pid;
}

} // namespace

TEST(Sandbox, CopyOnAFullDiskLeavesNoHalfCopy) {
  TempDir from, disk;
  three_files(from);
  const std::string to = (disk.path() / "work" / "baseline").string();
  auto r = on_small_disk(disk.path().string(), "128k", [&](std::string& message) {
    try {
      copy_tree(from.path().string(), to);
      message = "copied";
      return 1;
    } catch (const optimas::Error& e) {
      message = e.what();
    }
    return fs::exists(to) ? 2 : 0;
  });
  if (!r) GTEST_SKIP() << "no tmpfs can be mounted here (needs root or user namespaces)";
  EXPECT_EQ(r->first, 0) << "exit 1: the copy fit; exit 2: the half copy stayed: " << r->second;
  EXPECT_NE(r->second.find("the disk is full"), std::string::npos) << r->second;
  EXPECT_NE(r->second.find(to), std::string::npos) << r->second;
  EXPECT_NE(r->second.find("the partial copy was removed"), std::string::npos) << r->second;
}

TEST(Sandbox, SnapshotOnAFullDiskLeavesNoHalfSnapshot) {
  TempDir app_dir, disk;
  three_files(app_dir);
  auto app = host_app(app_dir, "  command: 'true'\n");
  const std::string to = (disk.path() / "snapshot").string();
  auto r = on_small_disk(disk.path().string(), "128k", [&](std::string& message) {
    try {
      snapshot_application(app, to);
      message = "copied";
      return 1;
    } catch (const optimas::Error& e) {
      message = e.what();
    }
    return fs::exists(to) ? 2 : 0;
  });
  if (!r) GTEST_SKIP() << "no tmpfs can be mounted here (needs root or user namespaces)";
  EXPECT_EQ(r->first, 0) << r->second;
  EXPECT_NE(r->second.find("the disk is full"), std::string::npos) << r->second;
}

TEST(Sandbox, ScratchFolderIsRemovedUnlessKept) {
  TempDir dir;
  const fs::path a = dir.path() / "a", b = dir.path() / "b";
  {
    ScratchFolder scratch(a.string());
    dir.file("a/x", "1");
  }
  EXPECT_FALSE(fs::exists(a));
  {
    ScratchFolder scratch(b.string());
    dir.file("b/x", "1");
    scratch.keep();
  }
  EXPECT_TRUE(fs::exists(b / "x"));
}

TEST(Sandbox, ChildRecordListsTheRunningPrograms) {
  TempDir dir;
  const std::string path = (dir.path() / "children.json").string();
  {
    ChildRecord record(path, "run-1");
    // The program sees the record that names its supervisor (its parent) and itself: it is
    // written before the program starts (run_process holds the program back until then).
    auto r = optimas::util::run_process(
        optimas::util::shell("cat " + path + "; echo; echo $PPID $$ $" + std::string(k_run_mark)));
    ASSERT_TRUE(r.ok()) << r.describe();
    auto cut = r.out.rfind('\n', r.out.size() - 2);
    auto doc = nlohmann::json::parse(r.out.substr(0, cut));
    std::istringstream ids(r.out.substr(cut + 1));
    int supervisor = 0, program = 0;
    std::string mark;
    ids >> supervisor >> program >> mark;
    EXPECT_EQ(mark, "run-1") << "the program carries the run's mark";
    ASSERT_EQ(doc["children"].size(), 1u) << r.out;
    EXPECT_EQ(doc["children"][0]["supervisor"], supervisor);
    EXPECT_EQ(doc["children"][0]["group"], program);
    EXPECT_EQ(doc["owner"]["pid"], ::getpid());
    EXPECT_EQ(doc["boot_id"], boot_id());
    EXPECT_FALSE(fs::exists(path)) << "removed when no program runs";
  }
  // Once the record is gone, nothing is written or marked.
  auto r = optimas::util::run_process(
      optimas::util::shell("test ! -e " + path + " && test -z \"$" + std::string(k_run_mark) + "\""));
  EXPECT_TRUE(r.ok()) << "a program was recorded or marked after the record ended";
}

// optimas and the supervisor were both killed (SIGKILL): a background process of the program
// lives on, and the resumed run's end_recorded_children ends it.
TEST(Sandbox, RecordedChildrenOfAKilledProcessAreEnded) {
  TempDir dir;
  ::prctl(PR_SET_CHILD_SUBREAPER, 1); // orphans come to us, so we can reap them and see them gone
  const std::string path = (dir.path() / "children.json").string();
  const std::string ready = (dir.path() / "ready").string();
  ASSERT_EQ(::mkfifo(ready.c_str(), 0600), 0);
  pid_t earlier = ::fork();
  ASSERT_GE(earlier, 0);
  if (earlier == 0) {
    ChildRecord record(path, "run-2");
    optimas::util::run_process(optimas::util::shell("sleep 1209 & echo $$ $! > " + ready + "; wait"));
    ::_exit(0);
  }
  std::istringstream line(read_fifo_line(ready));
  pid_t program = 0, background = 0;
  line >> program >> background;
  ASSERT_GT(background, 0) << "the program did not start";
  pid_t supervisor = parent_of(program);
  ::kill(earlier, SIGSTOP); // it cannot update its record any more
  ::kill(supervisor, SIGKILL);
  EXPECT_TRUE(wait_exit(program));
  ::kill(earlier, SIGKILL);
  ::waitpid(earlier, nullptr, 0);
  ::waitpid(supervisor, nullptr, 0);
  ::waitpid(program, nullptr, 0);
  ASSERT_EQ(::waitpid(background, nullptr, WNOHANG), 0) << "the background sleep should still run";
  ASSERT_TRUE(fs::exists(path));

  EXPECT_EQ(end_recorded_children(path, "run-2"), 1);
  const bool ended = wait_exit(background);
  EXPECT_TRUE(ended);
  // A failure above must not leave the test waiting out the sleep's 20 minutes.
  if (!ended) ::kill(background, SIGKILL);
  EXPECT_EQ(::waitpid(background, nullptr, 0), background);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(end_recorded_children(path, "run-3"), 0) << "nothing recorded, nothing to end";
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(Sandbox, RecordedChildrenAreCheckedBeforeTheyAreSignalled) {
  TempDir dir;
  const std::string path = (dir.path() / "children.json").string();
  pid_t other = start_sleep();
  const auto start = optimas::util::process_start_time(other).value_or(0);
  ASSERT_GT(start, 0u);
  auto record = [&](std::uint64_t child_start, const std::string& boot, nlohmann::json owner) {
    nlohmann::json child = {
        {"supervisor", other}, {"supervisor_start", child_start}, {"group", other}, {"group_start", child_start}};
    std::ofstream(path) << nlohmann::json{{"owner", owner}, {"boot_id", boot}, {"children", {child}}}.dump();
  };
  const nlohmann::json gone_owner = {{"pid", other}, {"start", start + 1}};
  // Its pid now belongs to another process (another start time): not ours.
  record(start + 1, boot_id(), gone_owner);
  EXPECT_EQ(end_recorded_children(path, "run-3"), 0);
  EXPECT_EQ(::waitpid(other, nullptr, WNOHANG), 0) << "a process with a recycled pid was signalled";
  EXPECT_FALSE(fs::exists(path));
  // Recorded before the machine restarted: nothing recorded can still run.
  record(start, "another-boot", gone_owner);
  EXPECT_EQ(end_recorded_children(path, "run-3"), 0);
  EXPECT_EQ(::waitpid(other, nullptr, WNOHANG), 0) << "a record of another boot was acted on";
  // The process that wrote the record is alive: it is still working on the run.
  record(start, boot_id(), {{"pid", other}, {"start", start}});
  try {
    end_recorded_children(path, "run-3");
    ADD_FAILURE() << "a record whose writer is alive was acted on";
  } catch (const optimas::Error& e) {
    EXPECT_NE(std::string(e.what()).find("still working on this run"), std::string::npos) << e.what();
  }
  EXPECT_EQ(::waitpid(other, nullptr, WNOHANG), 0);
  // A record that is not one is set aside with a warning.
  std::ofstream(path) << "{not json";
  EXPECT_EQ(end_recorded_children(path, "run-3"), 0);
  EXPECT_FALSE(fs::exists(path));
  ::kill(other, SIGKILL);
  ::waitpid(other, nullptr, 0);
}

// Issue #52's probe: a record that names a live process the run did not start, with that
// process's own start time, must not end it. Only a program that carries the run's mark and
// started after the record's writer is signalled; never a group or pid of 1 or less, nor ours.
TEST(Sandbox, RecordedChildrenMustCarryTheRunsMark) {
  TempDir dir;
  const std::string path = (dir.path() / "children.json").string();
  const nlohmann::json gone_owner = {{"pid", 0}, {"start", 0}};
  auto record = [&](pid_t pid, std::uint64_t start, nlohmann::json owner) {
    nlohmann::json child = {{"supervisor", pid}, {"supervisor_start", start}, {"group", pid}, {"group_start", start}};
    std::ofstream(path) << nlohmann::json{{"owner", owner}, {"boot_id", boot_id()}, {"children", {child}}}.dump();
  };
  // An unrelated process (no mark), named with its true start time: left alone.
  pid_t unrelated = start_sleep_with("PATH=/bin");
  const auto unrelated_start = optimas::util::process_start_time(unrelated).value_or(0);
  record(unrelated, unrelated_start, gone_owner);
  EXPECT_EQ(end_recorded_children(path, "run-7"), 0);
  EXPECT_EQ(::waitpid(unrelated, nullptr, WNOHANG), 0) << "a process without the run's mark was signalled";
  // Marked with another run's id: left alone.
  pid_t other_run = start_sleep_with("OPTIMAS_RUN=run-6");
  record(other_run, optimas::util::process_start_time(other_run).value_or(0), gone_owner);
  EXPECT_EQ(end_recorded_children(path, "run-7"), 0);
  EXPECT_EQ(::waitpid(other_run, nullptr, WNOHANG), 0) << "another run's program was signalled";
  // The run's own program, but recorded by a process that started after it: not one it started.
  pid_t marked = start_sleep_with("OPTIMAS_RUN=run-7");
  const auto marked_start = optimas::util::process_start_time(marked).value_or(0);
  std::string why;
  optimas::util::ChildInfo c{.supervisor = 0, .supervisor_start = 0, .group = marked, .group_start = marked_start};
  auto ours = recorded_child_to_end(c, marked_start + 1, "run-7", why);
  EXPECT_EQ(ours.group, 0);
  EXPECT_NE(why.find("started before the process that recorded it"), std::string::npos) << why;
  // Groups and pids that name more than one process, or ours: refused before anything is read.
  for (auto [supervisor, group] :
       {std::pair{0, 1}, std::pair{1, marked}, std::pair{0, -1}, std::pair{0, 0},
        std::pair{0, static_cast<int>(::getpgrp())}, std::pair{static_cast<int>(::getpid()), marked}}) {
    why.clear();
    c = {.supervisor = supervisor, .supervisor_start = 1, .group = group, .group_start = 1};
    ours = recorded_child_to_end(c, 0, "run-7", why);
    EXPECT_EQ(ours.group, 0) << supervisor << " " << group;
    EXPECT_EQ(ours.supervisor, 0) << supervisor << " " << group;
    EXPECT_FALSE(why.empty()) << supervisor << " " << group;
  }
  // The run's program, recorded by its writer: ended.
  record(marked, marked_start, gone_owner);
  EXPECT_GE(end_recorded_children(path, "run-7"), 1);
  EXPECT_EQ(::waitpid(marked, nullptr, 0), marked);
  for (pid_t p : {unrelated, other_run}) {
    ::kill(p, SIGKILL);
    ::waitpid(p, nullptr, 0);
  }
}

namespace {

std::string proc_self_environ() {
  std::ifstream in("/proc/self/environ", std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace

// Run by ShieldSelfHidesSecretsFromProc in a fresh process, whose exec placed the secret in the
// block /proc/<pid>/environ shows; skipped when run on its own.
TEST(Sandbox, ShieldSelfInAFreshProcess) {
  const char* secret = std::getenv("SHIELD_TEST_API_KEY");
  if (!std::getenv("OPTIMAS_SHIELD_CHILD") || !secret) GTEST_SKIP() << "run by ShieldSelfHidesSecretsFromProc";
  const std::string value = secret;
  ASSERT_NE(proc_self_environ().find(value), std::string::npos); // what a variant of ours could read before
  optimas::evaluate::shield_self();
  optimas::evaluate::shield_self(); // twice: setenv hands back its own string, which must stay
  EXPECT_EQ(proc_self_environ().find(value), std::string::npos);
  ASSERT_NE(std::getenv("SHIELD_TEST_API_KEY"), nullptr);
  EXPECT_EQ(std::string(std::getenv("SHIELD_TEST_API_KEY")), value); // still ours to use
  EXPECT_EQ(::prctl(PR_GET_DUMPABLE), 0);
}

TEST(Sandbox, ShieldSelfHidesSecretsFromProc) {
  optimas::util::ProcessSpec spec;
  spec.argv = {fs::read_symlink("/proc/self/exe").string(), "--gtest_filter=Sandbox.ShieldSelfInAFreshProcess"};
  spec.env = {{"OPTIMAS_SHIELD_CHILD", "1"}, {"SHIELD_TEST_API_KEY", "sk-shield-4711"}};
  spec.timeout_s = 60;
  auto r = optimas::util::run_process(spec);
  EXPECT_TRUE(r.ok()) << r.describe() << "\n" << r.out << r.err;
  EXPECT_NE(r.out.find("[  PASSED  ] 1 test"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("SKIPPED"), std::string::npos) << r.out;
}

// end_child itself refuses group 1 (kill(-1) ends every process the user may signal). Checked
// inside a PID namespace of its own, where the test is pid 1 and kill(-1) could only reach a
// process of that namespace: a victim that must survive. Skipped where namespaces are not allowed.
TEST(Sandbox, EndChildNeverSignalsGroupOne) {
  pid_t t = ::fork();
  ASSERT_GE(t, 0);
  if (t == 0) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWPID) != 0) ::_exit(77);
    pid_t init = ::fork();
    if (init < 0) ::_exit(78);
    if (init == 0) {
      pid_t victim = ::fork();
      if (victim == 0) {
        ::pause();
        ::_exit(0);
      }
      const bool signalled =
          optimas::util::end_child({.supervisor = 0, .supervisor_start = 0, .group = 1, .group_start = 1}) ||
          optimas::util::end_child({.supervisor = -1, .supervisor_start = 1, .group = 0, .group_start = 0});
      int status = 0;
      const bool alive = ::waitpid(victim, &status, WNOHANG) == 0;
      ::_exit(signalled ? 2 : alive ? 0 : 1);
    }
    int status = 0;
    ::waitpid(init, &status, 0);
    ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 3);
  }
  int status = 0;
  ::waitpid(t, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no user and PID namespace here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the victim was killed; 2: end_child said it signalled";
}
