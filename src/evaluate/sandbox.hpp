// Isolation for untrusted builds and runs: every program Optimas evaluates works in its own
// copy of the application, with a time limit that kills its whole process group, resource
// limits, and an environment without API keys or other secrets.
#pragma once

#include "config/app_config.hpp"
#include "util/process.hpp"

#include <optional>
#include <string>
#include <vector>

namespace optimas::evaluate {

struct Sandbox {
  double timeout_s = 600;
  util::ResourceLimits limits;
  std::vector<std::string> unset_env; // variables the child must not see
};

// Default isolation for an application: its timeout, no core dumps, files up to 16 GiB,
// a 64 GiB address space for host programs (CUDA programs reserve more, so none for them),
// and every secret-looking variable removed.
Sandbox sandbox_for(const config::AppConfig& app);

// Names in our environment that look like credentials (…KEY…, …TOKEN…, …SECRET…, …PASSWORD…,
// …CREDENTIAL…): none of them reach a built or run program.
std::vector<std::string> secret_variables();

// Copies the application folder into `to` (created), leaving out the binary, the output
// file, version-control folders and Optimas' own folders, so a variant starts from sources only.
void copy_application(const config::AppConfig& app, const std::string& to);

struct BuildResult {
  bool ok = false;
  std::string result; // "exit code 0", "timed out after ..."
  std::string log;    // the build log's path
  double wall_s = 0;
  std::string tail(std::size_t lines = 30) const; // the log's last lines, for messages and feedback
};

BuildResult build_in(const config::AppConfig& app, const std::string& dir, const std::string& log_path,
                     const Sandbox& sandbox);

struct Execution {
  bool ok = false;
  std::string failure; // empty when ok: "exit code 1: check: FAIL (...)", "timed out after 5.0 s", ...
  double wall_s = 0;
  std::optional<double> kernel_ms; // from run.kernel_time (sum of all matches)
  std::string output;              // path of the output it produced (absolute)
};

// Runs one configuration in `dir` with `params` (the config's placeholders, maybe with a fresh
// seed). The output lands in `output_path` (absolute): through {output} when the command has
// it, else moved from run.output, else the program's stdout without the kernel-time lines.
Execution execute_in(const config::AppConfig& app, const std::string& dir, const config::InputConfig& config,
                     const std::string& output_path, const std::string& log_path, const Sandbox& sandbox);

// The kernel time printed in `text`: the sum of every match of `pattern`'s first group.
std::optional<double> parse_kernel_time(const std::string& pattern, const std::string& text);

// Whether this machine has a usable NVIDIA GPU (nvidia-smi lists one).
bool gpu_present();
// The first GPU's name ("NVIDIA H200"); empty when there is none.
std::string gpu_name();

} // namespace optimas::evaluate
