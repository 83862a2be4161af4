// The Slurm launcher: each task becomes a batch job (or one element of an array job) through
// `sbatch`, and its state is read back with `squeue` (while slurmctld holds the job) and, once
// it has ended, its exit code with `sacct`, or `scontrol show job` where the cluster keeps no
// accounting. The scheduler's commands are the only interface, so this works on any cluster the
// user can submit to; what each command is given is in docs/campaigns.md.
//
// Keys never enter a batch script: sbatch passes the submitting environment to the job
// (--export=ALL, its default), so a key variable reaches the cell the way it reaches optimas,
// and a task that names a secret variable in its own environment is refused.
#include "launch/launcher.hpp"

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/process.hpp"
#include "util/secrets.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <set>
#include <stdexcept>
#include <thread>

namespace optimas::launch {

namespace fs = std::filesystem;

namespace {

const OptionSpec k_partition = {"partition", "sbatch --partition", ""};
const OptionSpec k_account = {"account", "sbatch --account", ""};
const OptionSpec k_qos = {"qos", "sbatch --qos", ""};
const OptionSpec k_time = {"time", "sbatch --time for every job (Slurm's format); default: each task's time limit", ""};
const OptionSpec k_gres = {"gres",
                           "sbatch --gres for tasks that need GPUs; {gpus} is replaced by the count; none: no --gres",
                           "gpu:{gpus}"};
const OptionSpec k_array = {"array", "true: one array job per submission instead of one job per task", "false", false,
                            util::OptionKind::flag};
const OptionSpec k_extra = {"extra", "more sbatch arguments, as a shell would split them", ""};
const OptionSpec k_requeue = {"requeue", "true: sbatch --requeue (Slurm itself requeues a job after a node failure or "
                                         "preemption)",
                              "true", false, util::OptionKind::flag};

// Polls in a row in which Slurm knew nothing of a job before it counts as lost (a job is not
// always in squeue at once after sbatch returns, nor in sacct at once after it leaves squeue).
constexpr int k_misses_before_lost = 5;

State parse_state(std::string_view slurm, int exit_code) {
  std::string s(util::trim(slurm.substr(0, slurm.find(' ')))); // "CANCELLED by 1000"
  s = s.substr(0, s.find('+'));                                 // "CANCELLED+"
  static const std::set<std::string, std::less<>> k_pending = {
      "PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SPECIAL_EXIT"};
  static const std::set<std::string, std::less<>> k_running = {"RUNNING",  "COMPLETING", "STAGE_OUT", "SIGNALING",
                                                               "SUSPENDED", "STOPPED",   "RESIZING"};
  if (k_pending.contains(s)) return State::pending;
  if (k_running.contains(s)) return State::running;
  if (s == "COMPLETED") return exit_code == 0 ? State::done : State::failed;
  if (s == "CANCELLED" || s == "REVOKED") return State::cancelled;
  if (s == "PREEMPTED") return State::preempted;
  if (s == "TIMEOUT" || s == "DEADLINE") return State::timed_out;
  return State::failed; // FAILED, NODE_FAIL, BOOT_FAIL, OUT_OF_MEMORY, and any state a newer Slurm adds
}

// "1:0" (exit code, signal) -> 1.
int parse_exit(std::string_view text) {
  try {
    return std::stoi(std::string(text.substr(0, text.find(':'))));
  } catch (const std::exception&) {
    return -1;
  }
}

util::ProcessResult slurm_command(std::vector<std::string> argv) {
  if (!util::find_executable(argv[0]))
    throw Error(fmt::format("launcher slurm: {} is not on PATH (is this a Slurm login node? load the slurm module)",
                            argv[0]));
  util::ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.timeout_s = 120;
  return util::run_process(spec);
}

class SlurmLauncher : public Launcher {
public:
  explicit SlurmLauncher(const LauncherConfig& c) : m_options(c.options) {
    for (const auto* flag : {&k_array, &k_requeue}) {
      std::string v = util::option_value(m_options, *flag);
      if (v != "true" && v != "false")
        throw UsageError(fmt::format("launcher slurm: option {}=\"{}\" must be true or false", flag->name, v));
    }
    std::string extra = util::option_value(m_options, k_extra);
    if (!util::trim(extra).empty()) {
      auto words = util::split_simple_command(extra);
      if (!words)
        throw UsageError(fmt::format("launcher slurm: option extra=\"{}\" cannot be split into words", extra));
      m_extra = *words;
    }
  }

  std::string name() const override { return "slurm"; }

  void submit(const std::vector<Task>& tasks) override {
    for (const auto& t : tasks) {
      auto it = m_entries.find(t.id);
      if (it != m_entries.end() && !finished(it->second.status.state))
        throw std::logic_error("launcher slurm: task \"" + t.id + "\" is already submitted");
      for (const auto& [name, value] : t.env)
        if (util::is_secret_variable(name))
          throw UsageError(fmt::format("launcher slurm: task {} sets {}, a key variable; keys are never written to a "
                                       "batch script (the job inherits them from the environment sbatch runs in)",
                                       t.id, name));
    }
    if (tasks.empty()) return;
    if (util::option_flag(m_options, k_array))
      submit_array(tasks);
    else
      for (const auto& t : tasks) submit_one(t);
  }

  std::map<std::string, Status> poll() override {
    std::vector<std::string> live;
    for (const auto& [id, e] : m_entries)
      if (!finished(e.status.state)) live.push_back(e.status.job);
    if (!live.empty()) refresh(live);
    std::map<std::string, Status> out;
    for (const auto& [id, e] : m_entries) out[id] = e.status;
    return out;
  }

  void cancel(const std::string& task_id) override {
    auto it = m_entries.find(task_id);
    if (it == m_entries.end() || finished(it->second.status.state)) return;
    auto r = slurm_command({"scancel", it->second.status.job});
    if (!r.ok())
      throw Error(fmt::format("launcher slurm: scancel {} (task {}) failed: {}", it->second.status.job, task_id,
                              util::trim(r.err.empty() ? r.describe() : r.err)));
  }

  void wait(double max_s) override { std::this_thread::sleep_for(std::chrono::duration<double>(max_s)); }

private:
  struct Entry {
    Task task;
    Status status;
    int misses = 0;
  };

  // The sbatch arguments every job of these tasks shares: resources, names, options.
  std::vector<std::string> common_args(const std::string& name, int gpus, double time_limit_s) const {
    std::vector<std::string> a = {"sbatch", "--parsable", "--job-name=" + name};
    for (const auto* o : {&k_partition, &k_account, &k_qos}) {
      std::string v = util::option_value(m_options, *o);
      if (!v.empty()) a.push_back(fmt::format("--{}={}", o->name, v));
    }
    std::string time = util::option_value(m_options, k_time);
    if (time.empty() && time_limit_s > 0) time = std::to_string(static_cast<long>(std::ceil(time_limit_s / 60)));
    if (!time.empty()) a.push_back("--time=" + time);
    std::string gres = util::option_value(m_options, k_gres);
    if (gpus > 0 && gres != "none") {
      for (std::size_t p; (p = gres.find("{gpus}")) != std::string::npos;) gres.replace(p, 6, std::to_string(gpus));
      a.push_back("--gres=" + gres);
    }
    if (util::option_flag(m_options, k_requeue)) a.push_back("--requeue");
    a.insert(a.end(), m_extra.begin(), m_extra.end());
    return a;
  }

  static std::string task_lines(const Task& t) {
    std::string s;
    for (const auto& [name, value] : t.env) s += fmt::format("export {}={}\n", name, util::shell_quote(value));
    s += fmt::format("cd {} || exit 1\n", util::shell_quote(t.workdir.string()));
    return s;
  }

  static fs::path script_path(const Task& t, const std::string& stem) {
    fs::path dir = t.log.empty() ? t.workdir : t.log.parent_path();
    fs::create_directories(dir);
    return dir / (stem + ".sbatch");
  }

  std::string sbatch(std::vector<std::string> args, const fs::path& script, const std::string& what) {
    args.push_back(script.string());
    auto r = slurm_command(args);
    std::string out(util::trim(r.out));
    std::string job = out.substr(0, out.find(';')); // --parsable: "jobid" or "jobid;cluster"
    if (!r.ok() || job.empty() || job.find_first_not_of("0123456789") != std::string::npos)
      throw Error(fmt::format("launcher slurm: sbatch for {} failed: {} (script {})", what,
                              util::trim(r.err.empty() ? r.describe() + " " + out : r.err), script.string()));
    log::info("launcher slurm: {} submitted as job {}", what, job);
    return job;
  }

  void submit_one(const Task& t) {
    fs::path script = script_path(t, t.id);
    util::write_file(script.string(), fmt::format("#!/bin/bash\n# optimas launcher slurm: task {}\n{}exec {}\n", t.id,
                                                  task_lines(t), util::shell_join(t.argv)));
    auto args = common_args("optimas-" + t.id, t.gpus, t.time_limit_s);
    args.push_back("--output=" + (t.log.empty() ? std::string("/dev/null") : t.log.string()));
    Entry& e = m_entries[t.id];
    e = Entry{t, {}, 0};
    e.status.job = sbatch(args, script, "task " + t.id);
  }

  // One array job: element i runs task i, its output to its own log; the array asks for the
  // most GPUs and the longest time any of its tasks needs.
  void submit_array(const std::vector<Task>& tasks) {
    int gpus = 0;
    double time_s = 0;
    std::string body = fmt::format("#!/bin/bash\n# optimas launcher slurm: {} tasks\ncase \"$SLURM_ARRAY_TASK_ID\" in\n",
                                   tasks.size());
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const Task& t = tasks[i];
      gpus = std::max(gpus, t.gpus);
      time_s = std::max(time_s, t.time_limit_s);
      std::string log = t.log.empty() ? "/dev/null" : t.log.string();
      body += fmt::format("{})\n# task {}\n{}exec {} >{} 2>&1\n;;\n", i, t.id, task_lines(t), util::shell_join(t.argv),
                          util::shell_quote(log));
    }
    body += "*) echo \"optimas: no task for array index $SLURM_ARRAY_TASK_ID\" >&2; exit 1;;\nesac\n";
    fs::path script = script_path(tasks.front(), "array-" + tasks.front().id);
    util::write_file(script.string(), body);
    auto args = common_args("optimas-array", gpus, time_s);
    args.push_back(fmt::format("--array=0-{}", tasks.size() - 1));
    args.push_back("--output=/dev/null");
    std::string job = sbatch(args, script, fmt::format("{} tasks (array)", tasks.size()));
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      Entry& e = m_entries[tasks[i].id];
      e = Entry{tasks[i], {}, 0};
      e.status.job = fmt::format("{}_{}", job, i);
    }
  }

  // Asks squeue (every state: slurmctld keeps a finished job for MinJobAge seconds), then how
  // the finished ones ended: sacct, or where accounting is off (sacct fails so) scontrol, which
  // knows what squeue still shows. squeue alone has no exit code.
  void refresh(const std::vector<std::string>& jobs) {
    std::map<std::string, std::pair<std::string, int>> seen; // job -> (state, exit code)
    std::set<std::string> base;
    for (const auto& j : jobs) base.insert(j.substr(0, j.find('_')));
    std::string list = util::join(std::vector<std::string>(base.begin(), base.end()), ",");
    // squeue fails outright when every id is unknown to it (all purged): that is not an error.
    // Without -t all it shows pending and running jobs only, and a job that ended between two
    // polls would wait for sacct, which a cluster without accounting does not have.
    auto q = slurm_command({"squeue", "-h", "-r", "-t", "all", "-o", "%i|%T", "-j", list});
    for (auto line : util::split(q.out, '\n')) {
      auto bar = line.find('|');
      if (bar != std::string_view::npos)
        seen[std::string(util::trim(line.substr(0, bar)))] = {std::string(util::trim(line.substr(bar + 1))), -1};
    }
    std::vector<std::string> ended; // not in squeue, or in it in a final state
    for (const auto& j : jobs) {
      auto it = seen.find(j);
      if (it == seen.end() || finished(parse_state(it->second.first, 0))) ended.push_back(j);
    }
    if (!ended.empty()) read_ends(ended, list, seen);
    for (auto& [id, e] : m_entries) {
      if (finished(e.status.state)) continue;
      auto it = seen.find(e.status.job);
      // A final state without its exit code waits for the next poll (sacct may lag slurmctld).
      if (it == seen.end() || (it->second.second < 0 && finished(parse_state(it->second.first, 0)))) {
        if (++e.misses >= k_misses_before_lost) {
          e.status.state = State::lost;
          e.status.detail = fmt::format("neither squeue nor sacct knows job {}", e.status.job);
        }
        continue;
      }
      e.misses = 0;
      e.status.state = parse_state(it->second.first, it->second.second);
      e.status.exit_code = finished(e.status.state) ? it->second.second : -1;
      e.status.detail = it->second.first;
    }
  }

  // The final state and exit code of jobs that have ended, into `seen`: from sacct, and for what
  // it does not know (no accounting, or not yet) from scontrol.
  void read_ends(const std::vector<std::string>& ended, const std::string& list,
                 std::map<std::string, std::pair<std::string, int>>& seen) {
    if (m_sacct) {
      auto a = slurm_command({"sacct", "-n", "-P", "-X", "-o", "JobID,State,ExitCode", "-j", list});
      for (auto line : util::split(a.out, '\n')) {
        auto f = util::split(line, '|');
        if (f.size() >= 3) seen[std::string(util::trim(f[0]))] = {std::string(f[1]), parse_exit(f[2])};
      }
      if (!a.ok()) { // "Slurm accounting storage is disabled": not asked again
        m_sacct = false;
        log::info("launcher slurm: sacct failed ({}); finished jobs are read with scontrol while slurmctld keeps "
                  "them (MinJobAge)",
                  util::trim(a.err.empty() ? a.describe() : a.err));
      }
    }
    for (const auto& job : ended) {
      auto it = seen.find(job);
      if (it != seen.end() && it->second.second >= 0) continue;
      auto r = slurm_command({"scontrol", "-o", "show", "job", job});
      if (!r.ok()) continue; // purged: counts as a miss
      std::string state, exit;
      for (auto word : util::split(util::split(r.out, '\n').front(), ' ')) {
        if (word.starts_with("JobState=")) state = word.substr(9);
        if (word.starts_with("ExitCode=")) exit = word.substr(9);
      }
      if (!state.empty()) seen[job] = {state, exit.empty() ? -1 : parse_exit(exit)};
    }
  }

  std::map<std::string, std::string> m_options;
  std::vector<std::string> m_extra;
  std::map<std::string, Entry> m_entries;
  bool m_sacct = true; // false once sacct has failed: no accounting on this cluster
};

} // namespace

LauncherSpec slurm_launcher() {
  return {.name = "slurm",
          .description =
              "A Slurm cluster: one batch job per task (or one array job), followed with squeue and sacct (or scontrol)",
          .options = {k_partition, k_account, k_qos, k_time, k_gres, k_array, k_extra, k_requeue},
          .make = [](const LauncherConfig& c) { return std::make_unique<SlurmLauncher>(c); }};
}

} // namespace optimas::launch
