// Runs a child process with a time limit under a small supervisor that ends everything the
// child started (its process group, and processes that left the group with setsid) when the
// child ends, times out, or optimas itself dies, so a hanging program cannot outlive the call.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace optimas::util {

// Limits applied in the child before exec (0: unchanged). A limit caps what one runaway
// program can do to the machine; exceeding it ends the program with a signal or an error.
struct ResourceLimits {
  std::uint64_t file_bytes = 0;    // RLIMIT_FSIZE: largest file it may write
  std::uint64_t address_space = 0; // RLIMIT_AS (CUDA reserves huge virtual ranges: leave 0 for GPU programs)
  std::uint64_t cpu_s = 0;         // RLIMIT_CPU
  std::uint64_t open_files = 0;    // RLIMIT_NOFILE
  bool core_dumps = true;          // false: RLIMIT_CORE 0
};

struct ChildInfo;

struct ProcessSpec {
  std::vector<std::string> argv;          // argv[0] is looked up on PATH
  std::string cwd;                        // empty: inherit
  std::map<std::string, std::string> env; // set or override
  std::vector<std::string> unset_env;     // removed from the child's environment
  double timeout_s = 0;                   // 0: no limit
  std::string stdout_path;                // empty: capture into ProcessResult::out
  bool append_stdout = false;             // add to stdout_path instead of replacing it
  std::string stderr_path;                // empty: capture into ProcessResult::err
  bool stderr_to_stdout = false;
  ResourceLimits limits;
  // Told once the child is recorded and about to start, from the calling thread: who holds the
  // child can end it early (end_child), e.g. a launcher cancelling a task.
  std::function<void(const ChildInfo& child)> on_start;
};

struct ProcessResult {
  int exit_code = -1; // valid when exited normally
  int signal = 0;     // non-zero when killed by a signal
  bool timed_out = false;
  bool spawn_failed = false;
  // Processes it started that it left when it exited: still running (the supervisor ended
  // them), or ended but never waited for. One may have gone on writing what the program left.
  int left_running = 0;
  double wall_s = 0;
  std::string out; // captured stdout (tail kept when huge)
  std::string err; // captured stderr (tail kept when huge)
  bool ok() const { return !timed_out && !spawn_failed && signal == 0 && exit_code == 0; }
  // "exit code 3", "killed by signal 9", "timed out after 5 s", ...
  std::string describe() const;
};

// Runs `spec` and waits for it. The child is a supervisor, a fork of this process that is a
// child subreaper (PR_SET_CHILD_SUBREAPER: orphans anywhere below it become its children) and
// dies with us (PR_SET_PDEATHSIG). It starts the program in a process group of its own (the
// program dies with the supervisor). When the program exits, the supervisor kills whatever it
// left; on timeout or when optimas dies, it sends SIGTERM to the program's group, gives it 2 s,
// then kills the group and every descendant, the ones that escaped with setsid included.
ProcessResult run_process(const ProcessSpec& spec);

// A running child as another process can find it again: the supervisor and the program's
// process group, each with its start time, which a recycled pid does not share.
struct ChildInfo {
  int supervisor = 0;
  std::uint64_t supervisor_start = 0; // clock ticks after boot (field 22 of /proc/<pid>/stat)
  int group = 0;                      // the program's process group: the program's pid
  std::uint64_t group_start = 0;      // 0 when the program had ended before it could be read
};

// Told by run_process when a child starts (running = true) and when it has ended; a run folder
// records its children this way (evaluate::ChildRecord). One observer per process; an empty
// function removes it.
using ChildObserver = std::function<void(const ChildInfo& child, bool running)>;
void set_child_observer(ChildObserver observer);

// Seconds a program gets between SIGTERM and SIGKILL (on timeout, or when optimas dies).
inline constexpr double k_grace_s = 2.0;
// Seconds we give the supervisor beyond that before killing it and the program's group
// ourselves (it only overruns when a process ignores SIGKILL, e.g. stuck in a driver).
inline constexpr double k_supervisor_slack_s = 10.0;

// A file of /proc (a process's stat or environ), whole; empty when it cannot be read, as when its
// process exits while it is read (read(2) fails with ESRCH).
std::string read_proc_file(const std::string& path);

// The start time of process `pid` in clock ticks after boot; nullopt when there is none.
std::optional<std::uint64_t> process_start_time(int pid);

// Ends a child that an earlier process started and left running (it was killed): the
// supervisor gets SIGTERM and ends its program's tree as above (SIGKILL if it does not finish),
// and the program's process group gets SIGKILL while the program still leads it. Each only
// while it is still the recorded process (same start time), so a recycled pid is never hit.
// A group whose leader is gone is left alone: its id may have been given to a new group since.
// Returns whether anything was signalled.
// Never signals a pid or group <= 1, our own pid or our own group (false then).
bool end_child(const ChildInfo& child);

// Whether process `pid`'s environment (as /proc shows it) holds `name=value`.
bool carries_mark(int pid, const std::string& name, const std::string& value);
// The parent of process `pid`; nullopt when there is no such process.
std::optional<int> parent_pid(int pid);

// Every child run_process starts gets `name=value` in its environment, and so does whatever it
// starts unless it clears its environment: the mark by which a later process finds what this
// one left running when even the supervisor was killed (end_marked). An empty name: no mark.
void set_child_mark(const std::string& name, const std::string& value);

// Sends SIGKILL to every process but us whose environment holds `name=value`, until none is
// left; returns how many there were. A process caught inside execve reads an empty environment
// for a moment, so a pass that saw one (not a kernel thread's or a zombie's) is followed by up
// to 3 more, 10 ms apart.
int end_marked(const std::string& name, const std::string& value);

// Seconds on CLOCK_MONOTONIC (async-signal-safe: the supervisor's timing uses it too).
double monotonic_s();

// Convenience: `sh -c command`.
ProcessSpec shell(const std::string& command);

// Looks an executable up on PATH; nullopt when absent.
std::optional<std::string> find_executable(const std::string& name);

} // namespace optimas::util
