// Isolation for untrusted builds and runs: every program Optimas evaluates works in its own
// copy of the application, with a time limit that kills its whole process group, resource
// limits, and an environment without API keys or other secrets.
#pragma once

#include "config/app_config.hpp"
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
  // With a kernel tracer (liboptimas-trace.so) every run records its kernels, and the run's
  // kernel time is the summed GPU time of all of them.
  std::string tracer;
  // With the tracer: the hot kernels (function names, no template arguments) whose launches give
  // Execution::hot_ms, the run's time in them for per-launch measurement (measure.verdict).
  std::vector<std::string> hot_kernels;
};

// Default isolation for an application: its timeout, no core dumps, files up to 16 GiB,
// a 64 GiB address space for host programs (CUDA programs reserve more, so none for them).
// The key variables (util/secrets.hpp) are kept from every child by util::run_process itself.
Sandbox sandbox_for(const config::AppConfig& app);

// Shields this process from the programs it runs, which run as our user: it becomes
// non-dumpable, so /proc/<pid>/{environ,mem,fd} of optimas and its supervisors belong to root
// (a variant running as root with CAP_SYS_PTRACE still reads them), and the secret-looking
// variables are blanked in the block /proc/<pid>/environ shows (getenv still finds them, on the
// heap). Call it before the first program starts.
void shield_self();

// A run's source snapshot: the application folder as it was when the run started, without
// anything a build makes. Baseline and variants are built from copies of it, never from a tree
// holding object files: a copied object file looks as new as the edited source beside it, and
// make would skip the compile.
struct Snapshot {
  std::map<std::string, std::string> files; // relative path -> SHA-256
  std::vector<std::string> left_out;        // build outputs found in the folder and not copied
};

// Copies the application folder into `to` (created), leaving out version-control folders,
// Optimas' own folders, the binary, the output files, build.dir, and build outputs (object
// files, CMake caches). On failure (a full disk) `to` is removed and the Error says why.
Snapshot snapshot_application(const config::AppConfig& app, const std::string& to);

// Copies a folder's regular files into `to` (created): a scratch copy of a snapshot. On
// failure `to` is removed, so no half copy is left behind, and the Error says why.
void copy_tree(const std::string& from, const std::string& to);

// A folder removed when this goes out of scope, unless kept: a copy that fails half-way (a full
// disk) leaves nothing behind to keep the disk full or to be taken for a complete copy.
class ScratchFolder {
public:
  explicit ScratchFolder(std::string path) : m_path(std::move(path)) {}
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  void keep() { m_keep = true; }

private:
  std::string m_path;
  bool m_keep = false;
};

// The environment variable that marks every program of a run (and what it starts) with the
// run's id: how a resumed run finds what a killed supervisor left behind.
inline constexpr const char* k_run_mark = "OPTIMAS_RUN";

// The programs a run has running, recorded in its folder (children.json: each supervisor and
// program group with their start times, written atomically, removed when none runs), so that a
// resumed run can end what a killed optimas left behind. While it exists it records every
// child util::run_process starts in this process, and marks it with OPTIMAS_RUN=<run_id>.
class ChildRecord {
public:
  ChildRecord(std::string path, const std::string& run_id);
  ~ChildRecord();
  ChildRecord(const ChildRecord&) = delete;
  ChildRecord& operator=(const ChildRecord&) = delete;

private:
  void changed(const util::ChildInfo& child, bool running);
  void write() const;

  std::string m_path;
  std::vector<util::ChildInfo> m_children;
  bool m_warned = false;
};

// Ends what the process that wrote `path` (a ChildRecord) left running: its supervisors (which
// end their programs' trees) and the program groups their programs still lead, each only while
// it is still the recorded process, and nothing after a reboot; then every process marked with
// OPTIMAS_RUN=<run_id>. Removes the file; returns how many it ended. Error when the process
// that wrote the record is still alive: it is working on the run, and two processes must not.
int end_recorded_children(const std::string& path, const std::string& run_id);

// What a build produced, as one hash: the binary (or, with none declared, every file the build
// added to `dir` that is not in the snapshot), with the temporary-file names nvcc writes into its
// objects (tmpxft_...) blanked, so that two builds of the same code give the same fingerprint.
std::string build_fingerprint(const config::AppConfig& app, const std::string& dir, const Snapshot& snapshot);

struct BuildResult {
  bool ok = false;
  std::string result; // "exit code 0", "timed out after ..."
  std::string log;    // the build log's path
  double wall_s = 0;
  std::string tail(std::size_t lines = 30) const; // the log's last lines, for messages and feedback
};

// Runs build.clean (when set) and then build.command in `dir`, both logged to `log_path`, with
// `env` added to their environment (a tuning point's NVCC_APPEND_FLAGS and OPTIMAS_TUNE_FLAGS).
BuildResult build_in(const config::AppConfig& app, const std::string& dir, const std::string& log_path,
                     const Sandbox& sandbox, const std::map<std::string, std::string>& env = {});

struct Execution {
  bool ok = false;
  std::string failure; // empty when ok: "exit code 1: check: FAIL (...)", "timed out after 5.0 s", ...
  double wall_s = 0;
  std::optional<double> kernel_ms; // from run.kernel_time: the run's kernel time in milliseconds
  std::optional<double> traced_ms; // with Sandbox::tracer: the traced GPU time of its kernels
  std::uint64_t traced_launches = 0;
  std::optional<double> hot_ms; // with Sandbox::hot_kernels: evaluate::hot_time of their launches
  std::uint64_t hot_launches = 0;
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
