// Isolation for untrusted builds and runs: every program Optimas evaluates works in its own
// copy of the application, with a time limit that kills its whole process group, resource
// limits, and an environment without API keys or other secrets.
#pragma once

#include "config/app_config.hpp"
#include "evaluate/isolation.hpp"
#include "util/process.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace optimas::evaluate {

struct Sandbox {
  double timeout_s = 600;
  util::ResourceLimits limits;
  // The walls around every build and run (evaluate/isolation.hpp); the run's --sandbox.
  Isolation isolation = Isolation::watch;
  // With a kernel tracer (liboptimas-trace.so) every run records its kernels, and the run's
  // kernel time is the summed GPU time of all of them.
  std::string tracer;
  // With the tracer: the hot kernels (function names, no template arguments) whose launches give
  // Execution::hot_ms, the run's time in them for per-launch measurement (measure.verdict).
  std::vector<std::string> hot_kernels;
  // A measurement run that may end after its kernels (measure.end_after_kernels): the tracer
  // ends the process once `launches` launches of the kernels `symbols` (mangled names) have
  // completed, and every trace figure covers the launches up to that one, whether the run ended
  // there or ran whole, so both kinds of run measure the same thing.
  struct EndAfter {
    std::uint64_t launches = 0; // 0: the runs are whole
    std::vector<std::string> symbols;
  };
  EndAfter end_after;
  // A run whose trace is missing or incomplete still counts, without trace figures (validation
  // runs: the trace only informs measurement).
  bool trace_optional = false;
  // Added to every run's environment: CUDA_VISIBLE_DEVICES for the GPU a run measures on, where
  // several measure at once (loop/slots.cpp).
  std::map<std::string, std::string> env;
  // Paths under /tmp that the application's commands name (`-I/tmp/suite/Common`): behind the
  // walls' private /tmp they would be gone, so builds and runs see them, read-only, with their
  // folders right below /tmp (isolated_argv).
  std::vector<std::string> readable;
};

// Default isolation for an application: its timeout, no core dumps, files up to 16 GiB,
// a 64 GiB address space for host programs (CUDA programs reserve more, so none for them), and
// the paths under /tmp its commands name (tmp_paths_named).
// The key variables (util/secrets.hpp) are kept from every child by util::run_process itself.
Sandbox sandbox_for(const config::AppConfig& app);

// The absolute paths under /tmp that exist and that `commands` name: a word, a value after `=`
// or `:`, or what follows -I or -L. Each once, without a trailing '/'.
std::vector<std::string> tmp_paths_named(const std::vector<std::string>& commands);

// Shields this process from the programs it runs, which run as our user: it becomes
// non-dumpable, so /proc/<pid>/{environ,mem,fd} of optimas and its supervisors belong to root
// (a variant running as root with CAP_SYS_PTRACE still reads them), and the secret-looking
// variables are blanked in the block /proc/<pid>/environ shows (getenv still finds them, on the
// heap). Call it before the first program starts.
void shield_self();

struct BuildResult {
  bool ok = false;
  std::string result; // "exit code 0", "timed out after ..."
  std::string log;    // the build log's path
  double wall_s = 0;
  std::string tail(std::size_t lines = 30) const; // the log's last lines, for messages and feedback
};

// Where a build sees its folder at another path, alone (the variant pipeline's lanes,
// loop/pipeline.hpp): the build runs in a user and mount namespace of its own in which the
// parent of `seen_as` is an empty tmpfs and `dir` is bound at `seen_as`, so that what the build
// writes into its products (nvcc -lineinfo's paths) is what a build at `seen_as` writes
// (evaluate::Seen).
struct SeenAs {
  std::string path;
};

// Runs build.clean (when set) and then build.command in `dir`, both logged to `log_path`, with
// `env` added to their environment (a tuning point's NVCC_APPEND_FLAGS and OPTIMAS_TUNE_FLAGS);
// with `seen_as`, in `dir` seen at that path (SeenAs). Behind the sandbox's walls, the build
// writes only `dir` (and a private /tmp).
BuildResult build_in(const config::AppConfig& app, const std::string& dir, const std::string& log_path,
                     const Sandbox& sandbox, const std::map<std::string, std::string>& env = {},
                     const SeenAs* seen_as = nullptr);

struct Execution {
  bool ok = false;
  std::string failure; // empty when ok: "exit code 1: check: FAIL (...)", "timed out after 5.0 s", ...
  double wall_s = 0;
  int left_running = 0;            // processes it started still running when it exited (then ended)
  std::optional<double> kernel_ms; // from run.kernel_time: the run's kernel time in milliseconds
  std::optional<double> traced_ms; // with Sandbox::tracer: the traced GPU time of its kernels
  std::uint64_t traced_launches = 0;
  std::optional<double> hot_ms; // with Sandbox::hot_kernels: evaluate::hot_time of their launches
  std::uint64_t hot_launches = 0;
  std::vector<std::string> hot_symbols; // the mangled names of the hot kernels it launched
  std::optional<double> after_hot_s;    // from its last hot launch's end to its trace's end line
  // The traced time of the launches up to its last hot launch: what a run that ended after its
  // kernels would have measured, so that a whole run can join such runs (loop/measure.cpp).
  std::optional<double> traced_ms_to_hot_end;
  bool ended_early = false;         // the tracer ended it (Sandbox::end_after): it has no outputs
  std::string output;               // path of the (first) output it produced (absolute)
  std::vector<std::string> outputs; // every output: `output`, then `output`.1, .2, ... (run.output's files)
};

// Runs one configuration in `dir` with `params` (the config's placeholders, maybe with a fresh
// seed). The output lands in `output_path` (absolute): through {output} when the command has
// it, else moved from run.output (a second file to `output_path`.1, and so on), else the
// program's stdout without the kernel-time lines and the lines validate.ignore matches.
Execution execute_in(const config::AppConfig& app, const std::string& dir, const config::InputConfig& config,
                     const std::string& output_path, const std::string& log_path, const Sandbox& sandbox);

// The outputs of a run as one hash (one output: its file's SHA-256), their total size, and
// their removal once compared.
std::string outputs_sha256(const Execution& e);

// Whether the output compared is the program's stdout (neither run.outputs nor {output}).
bool compares_stdout(const config::AppConfig& app);

// Rewrites the file at `path` without the lines (newline not counted) that one of `patterns`
// matches whole; a line longer than the searched limit stays.
void drop_whole_lines(const std::string& path, const std::vector<std::string>& patterns);
std::uintmax_t outputs_bytes(const Execution& e);
void remove_outputs(const Execution& e);

// The kernel time printed in `text`: the sum of every match of `pattern`'s first group, as
// printed (the caller converts units and per-call figures).
std::optional<double> parse_kernel_time(const std::string& pattern, const std::string& text);

// Whether this machine has a usable NVIDIA GPU (nvidia-smi lists one).
bool gpu_present();
// The first GPU's name ("NVIDIA H200"); empty when there is none.
std::string gpu_name();
// One field of the first GPU as nvidia-smi --query-gpu names it ("compute_cap" -> "9.0"); empty
// when there is no GPU or nvidia-smi fails.
std::string gpu_query(const std::string& field);

} // namespace optimas::evaluate
