// Ending what an earlier optimas left running: its recorded supervisors and program groups,
// checked by start time so that a reused pid is never signalled, and the processes that carry
// its run's mark (util/process.hpp).
#include "util/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <iterator>
#include <set>
#include <sstream>
#include <vector>

namespace optimas::util {

namespace {

int pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

// The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses):
// [0] is the 3rd field, the state. Empty when the process is gone.
std::vector<std::string> stat_fields(const std::string& pid) {
  std::string text = read_proc_file("/proc/" + pid + "/stat");
  auto paren = text.rfind(')');
  if (paren == std::string::npos) return {};
  std::istringstream words(text.substr(paren + 1));
  return {std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
}

// Sends `sig` to the process `pid` when it still started at `start`. Through a pidfd (Linux
// 5.3), opened before the check, the signal cannot reach a process that reused the pid; then
// waits up to `wait_s` for it to exit and returns whether it did. Without pidfds, the check and
// the kill are a moment apart, and the wait looks at /proc.
bool signal_if_same(pid_t pid, std::uint64_t start, int sig, double wait_s, bool& signalled) {
  int fd = pidfd_open(pid);
  if (fd >= 0) {
    bool exited = true;
    if (process_start_time(pid) == start) {
#ifdef SYS_pidfd_send_signal
      if (::syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0) == 0) signalled = true;
#else
      if (::kill(pid, sig) == 0) signalled = true;
#endif
      pollfd p{fd, POLLIN, 0};
      exited = ::poll(&p, 1, static_cast<int>(wait_s * 1000)) > 0;
    }
    ::close(fd);
    return exited;
  }
  if (process_start_time(pid) != start) return true;
  if (::kill(pid, sig) == 0) signalled = true;
  for (double t0 = monotonic_s(); monotonic_s() - t0 < wait_s;) {
    auto now = process_start_time(pid);
    if (now != start) return true;
    auto fields = stat_fields(std::to_string(pid));
    if (!fields.empty() && fields[0] == "Z") return true;
    ::usleep(10000);
  }
  return false;
}

// Whether a process whose environment read empty may still show one: a user process (not a
// kernel thread, whose environment is always empty, nor a zombie). One caught inside execve,
// between its new memory and its environment's place being set, reads empty for that moment
// (a loaded machine can stop it there); so does one started with an empty environment.
bool may_show_environment(const std::string& pid) {
  auto fields = stat_fields(pid);
  if (fields.size() < 7) return false;                  // gone
  constexpr unsigned long k_kernel_thread = 0x00200000; // PF_KTHREAD, in the 9th field: the flags
  unsigned long flags = 0;
  try {
    flags = std::stoul(fields[6]);
  } catch (const std::exception&) {
    return false;
  }
  return fields[0] != "Z" && fields[0] != "X" && (flags & k_kernel_thread) == 0;
}

// Process `pid`'s environment as /proc shows it: NUL-terminated entries; a zombie's is empty.
std::string environment_of(const std::string& pid) {
  return read_proc_file("/proc/" + pid + "/environ");
}

bool holds_entry(const std::string& env, const std::string& entry) {
  return env.compare(0, entry.size() + 1, entry + '\0') == 0 || env.find('\0' + entry + '\0') != std::string::npos;
}

} // namespace

// Read with read(2): std::ifstream turns a failed read into an exception ("basic_filebuf::
// underflow error reading the file: No such process"), which ended a run whose sweep for marked
// processes met one exiting (scenario.loop_cheats_escapes, under load).
std::string read_proc_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      text.clear(); // half a file of a process that went away says nothing
      break;
    }
  }
  ::close(fd);
  return text;
}

std::optional<std::uint64_t> process_start_time(int pid) {
  if (pid <= 0) return std::nullopt;
  auto fields = stat_fields(std::to_string(pid));
  if (fields.size() < 20) return std::nullopt; // the start time is the 22nd field
  try {
    return std::stoull(fields[19]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool carries_mark(int pid, const std::string& name, const std::string& value) {
  return pid > 0 && !name.empty() && holds_entry(environment_of(std::to_string(pid)), name + "=" + value);
}

std::optional<int> parent_pid(int pid) {
  if (pid <= 0) return std::nullopt;
  auto fields = stat_fields(std::to_string(pid));
  if (fields.size() < 2) return std::nullopt; // the parent is the 4th field
  try {
    return std::stoi(fields[1]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool end_child(const ChildInfo& child) {
  bool signalled = false;
  // Never a pid or group that names more than one process (0, -1, 1) or ourselves: kill(-1)
  // would end every process the user may signal.
  if (child.supervisor != 0 && (child.supervisor <= 1 || child.supervisor == ::getpid())) return false;
  if (child.group != 0 && (child.group <= 1 || child.group == ::getpgrp() || child.group == ::getpid())) return false;
  if (child.supervisor > 0) {
    // The supervisor ends its program's tree itself, as when optimas dies; SIGKILL only when
    // it does not finish in time.
    if (!signal_if_same(child.supervisor, child.supervisor_start, SIGTERM, k_grace_s + k_supervisor_slack_s, signalled))
      signal_if_same(child.supervisor, child.supervisor_start, SIGKILL, 5.0, signalled);
  }
  if (child.group > 0 && child.group_start != 0 && process_start_time(child.group) == child.group_start) {
    // The supervisor was gone (killed itself) and the program lives on: the group it leads is
    // its own. Once the program has gone, a group of that id may be another's (the pid can be
    // reused, as a new group leader that exits before its members), so it is not signalled:
    // what is left there carries the run's mark (end_marked).
    if (::kill(-child.group, SIGKILL) == 0) signalled = true;
  }
  return signalled;
}

int end_marked(const std::string& name, const std::string& value) {
  if (name.empty()) return 0;
  const std::string mark = name + "=" + value;
  const std::string self = std::to_string(::getpid());
  std::set<std::string> ended;
  // A marked process may start another while we look: look again until a pass finds none. A
  // pass that read an empty environment where one may yet show (a process inside execve) is not
  // the last: up to 3 more look again, 10 ms apart.
  int unsure_passes = 0;
  for (int pass = 0; pass < 100; ++pass) {
    int found = 0;
    bool unsure = false;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string pid = entry.path().filename().string();
      if (pid.find_first_not_of("0123456789") != std::string::npos || pid == self) continue;
      const std::string env = environment_of(pid);
      if (holds_entry(env, mark) && ::kill(std::stoi(pid), SIGKILL) == 0) {
        ended.insert(pid);
        ++found;
      }
      if (env.empty() && may_show_environment(pid)) unsure = true;
    }
    if (found == 0 && (!unsure || ++unsure_passes > 3)) break;
    if (found == 0) {
      struct timespec pause {
        0, 10'000'000
      };
      ::nanosleep(&pause, nullptr);
    }
  }
  return static_cast<int>(ended.size());
}

} // namespace optimas::util
