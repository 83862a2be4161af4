// Launchers: where the loop runs of a campaign execute. A launcher takes tasks (one command
// each: an `optimas run` of one campaign cell), runs them on this machine (`local`) or through a
// batch scheduler (`slurm`), and reports their states when polled. Each launcher is one file
// (launch/<name>.cpp) defining its spec, and one line in launch/registry.cpp, as backends are
// in llm/ (docs/campaigns.md).
#pragma once

#include "util/option_spec.hpp"
#include "util/registry.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace optimas::launch {

using util::OptionSpec;

// One unit of work: a command, where it runs, what it needs.
struct Task {
  std::string id;                         // unique among the tasks given to one launcher: "c03-pc-builtin-s1"
  std::vector<std::string> argv;          // argv[0] is looked up on PATH where the task runs
  std::filesystem::path workdir;          // the command's working directory
  std::filesystem::path log;              // its stdout and stderr, together
  std::map<std::string, std::string> env; // set for the command (never keys: those stay in the environment)
  int gpus = 0;                           // GPUs it needs; 0: CPU only
  double time_limit_s = 0;                // 0: none
};

enum class State { pending, running, done, failed, cancelled, preempted, timed_out, lost };
std::string_view state_name(State s);
// Whether a task in this state will not change any more (until it is submitted again).
bool finished(State s);

struct Status {
  State state = State::pending;
  std::string job;    // the launcher's id for it: "local-3", a Slurm job id ("4711" or "4711_2")
  int exit_code = -1; // when finished and known
  std::string detail; // "exit code 1", "killed by signal 9", "TIMEOUT", "CUDA_VISIBLE_DEVICES=1"
};

class Launcher {
public:
  virtual ~Launcher() = default;
  virtual std::string name() const = 0;
  // Hands tasks over: they start when the launcher has room (local) or the scheduler says.
  // Task ids already submitted and not finished are a logic error. Throws Error when the
  // submission itself fails (sbatch missing, refused), naming the task.
  virtual void submit(const std::vector<Task>& tasks) = 0;
  // The state of every task submitted so far, by task id.
  virtual std::map<std::string, Status> poll() = 0;
  // Ends a task (running or waiting); its state becomes cancelled once that has happened.
  virtual void cancel(const std::string& task_id) = 0;
  // Waits until a task may have changed state, at most `max_s` seconds: local wakes on a task's
  // end; a scheduler is asked again after that time (its commands are the only way to know).
  virtual void wait(double max_s) = 0;
};

// What a user chose: a launcher and its options, checked against its spec (launcher_from).
struct LauncherConfig {
  std::string name;
  std::map<std::string, std::string> options;
};

struct LauncherSpec {
  std::string name = {};        // "slurm"
  std::string description = {}; // one line for `optimas launchers`
  std::vector<OptionSpec> options = {};
  std::function<std::unique_ptr<Launcher>(const LauncherConfig&)> make = {};
};

// A table of launchers. The one optimas uses is registry() (registry.cpp, one line per
// launcher); a test builds its own from the same lines plus a fake, as a new one is added.
// The launchers of a registry (util/registry.hpp: one line each, checked when it is built).
class Registry : public util::Registry<LauncherSpec> {
public:
  explicit Registry(std::vector<LauncherSpec> specs) : util::Registry<LauncherSpec>(std::move(specs), "launcher") {}
};

const Registry& registry();

// The one way from what a user wrote (a campaign file's `launcher:` or --launcher/--option) to
// a launcher's settings. UsageError naming the known launchers for an unknown one, and the
// launcher's options for an unknown option.
LauncherConfig launcher_from(std::string_view name, const std::map<std::string, std::string>& options,
                             const Registry& from = registry());
std::unique_ptr<Launcher> make_launcher(const LauncherConfig& config, const Registry& from = registry());

// `optimas launchers`: each launcher, its description and options.
std::string describe_launchers(const Registry& from = registry());
nlohmann::json launchers_json(const Registry& from = registry());

// Polls until every task in `ids` has finished, calling `on_change` for each change of state
// (also the first one seen); `poll_s` is how long a launcher waits between asks.
std::map<std::string, Status> wait_all(Launcher& launcher, const std::vector<std::string>& ids, double poll_s,
                                       const std::function<void(const std::string&, const Status&)>& on_change = {});

} // namespace optimas::launch
