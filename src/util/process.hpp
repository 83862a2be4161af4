// Runs a child process in its own process group with a time limit; on timeout the whole
// group is killed, so a hanging program cannot outlive the call.
#pragma once

#include <cstdint>
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
};

struct ProcessResult {
  int exit_code = -1; // valid when exited normally
  int signal = 0;     // non-zero when killed by a signal
  bool timed_out = false;
  bool spawn_failed = false;
  double wall_s = 0;
  std::string out; // captured stdout (tail kept when huge)
  std::string err; // captured stderr (tail kept when huge)
  bool ok() const { return !timed_out && !spawn_failed && signal == 0 && exit_code == 0; }
  // "exit code 3", "killed by signal 9", "timed out after 5 s", ...
  std::string describe() const;
};

ProcessResult run_process(const ProcessSpec& spec);

// Convenience: `sh -c command`.
ProcessSpec shell(const std::string& command);

// Looks an executable up on PATH; nullopt when absent.
std::optional<std::string> find_executable(const std::string& name);

} // namespace optimas::util
