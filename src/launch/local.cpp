// The local launcher: tasks run as child processes of optimas on this machine, at most `jobs`
// at a time, each under run_process's supervisor (its time limit, nothing it starts outlives
// it). CPU-only tasks run side by side; a task that needs GPUs gets GPUs no other running task
// holds, named to it by CUDA_VISIBLE_DEVICES, so GPU work is serialised per visible GPU and
// timings of two cells never share a GPU.
#include "launch/launcher.hpp"

#include "util/error.hpp"
#include "util/gpus.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

namespace optimas::launch {

namespace fs = std::filesystem;

namespace {

std::string not_negative(const std::string& v) {
  return v.front() == '-' ? fmt::format("takes a count of at least 0, got \"{}\"", v) : "";
}
const OptionSpec k_jobs = {
    "jobs", "tasks running at once (0: one per CPU core)", "0", false, util::OptionKind::integer, not_negative};
const OptionSpec k_gpus = {"gpus",
                           "GPU ids tasks may use, comma-separated (\"0,1\"), or auto: $CUDA_VISIBLE_DEVICES, else the "
                           "GPUs nvidia-smi lists, else one (0)",
                           "auto"};

// "0,1,3" -> {"0","1","3"}; auto: those found (util/gpus.hpp), else one (0).
std::vector<std::string> visible_gpus(const std::string& option) {
  if (option != "auto") return util::gpu_ids(option, "launcher local: option gpus");
  auto found = util::found_gpus();
  return found.empty() ? std::vector<std::string>{"0"} : found;
}

class LocalLauncher : public Launcher {
public:
  explicit LocalLauncher(const LauncherConfig& c) {
    // launcher_from checked the value; a count of a few thousand at most is what a machine runs.
    const long long jobs = std::strtoll(util::option_value(c.options, k_jobs).c_str(), nullptr, 10);
    m_slots = static_cast<int>(std::min(jobs, 1LL << 16));
    if (m_slots < 0) throw UsageError(fmt::format("launcher local: option jobs={} is not a count", jobs));
    if (m_slots == 0) m_slots = std::max(1u, std::thread::hardware_concurrency());
    m_free_gpus = visible_gpus(util::option_value(c.options, k_gpus));
    m_gpu_count = m_free_gpus.size();
  }

  ~LocalLauncher() override {
    std::unique_lock lock(m_mutex);
    m_queue.clear();
    for (auto& [id, e] : m_entries)
      if (e.status.state == State::running) end_locked(e);
    m_changed.wait(lock, [&] { return m_running == 0; });
    lock.unlock();
    for (auto& t : m_threads) t.join();
  }

  std::string name() const override { return "local"; }

  void submit(const std::vector<Task>& tasks) override {
    std::lock_guard lock(m_mutex);
    for (const auto& t : tasks) {
      auto it = m_entries.find(t.id);
      if (it != m_entries.end() && !finished(it->second.status.state))
        throw std::logic_error("launcher local: task \"" + t.id + "\" is already submitted");
      Entry& e = m_entries[t.id];
      e = Entry{};
      e.task = t;
      e.status.job = fmt::format("local-{}", ++m_submitted);
      if (t.gpus > static_cast<int>(m_gpu_count)) {
        e.status.state = State::failed;
        e.status.detail = fmt::format("needs {} GPUs; this launcher has {} ({})", t.gpus, m_gpu_count,
                                      m_gpu_count ? "option gpus" : "none found");
        continue;
      }
      m_queue.push_back(t.id);
    }
    dispatch_locked();
  }

  std::map<std::string, Status> poll() override {
    std::lock_guard lock(m_mutex);
    std::map<std::string, Status> out;
    for (const auto& [id, e] : m_entries) out[id] = e.status;
    return out;
  }

  void cancel(const std::string& task_id) override {
    std::lock_guard lock(m_mutex);
    auto it = m_entries.find(task_id);
    if (it == m_entries.end()) return;
    Entry& e = it->second;
    if (e.status.state == State::pending) {
      m_queue.erase(std::remove(m_queue.begin(), m_queue.end(), task_id), m_queue.end());
      e.status.state = State::cancelled;
      e.status.detail = "cancelled before it started";
      ++m_generation;
      m_changed.notify_all();
    } else if (e.status.state == State::running) {
      end_locked(e);
    }
  }

  void wait(double max_s) override {
    std::unique_lock lock(m_mutex);
    std::uint64_t seen = m_generation;
    m_changed.wait_for(lock, std::chrono::duration<double>(max_s), [&] { return m_generation != seen; });
  }

private:
  struct Entry {
    Task task;
    Status status;
    std::vector<std::string> gpus; // held while running
    util::ChildInfo child;
    bool started = false;
    bool cancel_requested = false;
  };

  void end_locked(Entry& e) {
    e.cancel_requested = true;
    if (e.started) util::end_child(e.child); // else on_start ends it as soon as it is recorded
  }

  // Starts queued tasks in order while there are slots; a GPU task waiting for GPUs lets CPU
  // tasks behind it start (they need nothing it waits for).
  void dispatch_locked() {
    for (auto it = m_queue.begin(); it != m_queue.end() && m_running < m_slots;) {
      Entry& e = m_entries[*it];
      if (static_cast<std::size_t>(e.task.gpus) > m_free_gpus.size()) {
        ++it;
        continue;
      }
      e.gpus.assign(m_free_gpus.begin(), m_free_gpus.begin() + e.task.gpus);
      m_free_gpus.erase(m_free_gpus.begin(), m_free_gpus.begin() + e.task.gpus);
      e.status.state = State::running;
      if (!e.gpus.empty()) e.status.detail = "CUDA_VISIBLE_DEVICES=" + util::join(e.gpus, ",");
      ++m_running;
      ++m_generation;
      m_threads.emplace_back([this, id = *it] { run(id); });
      it = m_queue.erase(it);
    }
    m_changed.notify_all();
  }

  void run(const std::string& id) {
    util::ProcessSpec spec;
    {
      std::lock_guard lock(m_mutex);
      const Entry& e = m_entries[id];
      spec.argv = e.task.argv;
      spec.cwd = e.task.workdir.string();
      spec.env = e.task.env;
      if (!e.gpus.empty()) spec.env["CUDA_VISIBLE_DEVICES"] = util::join(e.gpus, ",");
      spec.timeout_s = e.task.time_limit_s;
      spec.stdout_path = e.task.log.string();
      spec.stderr_to_stdout = true;
    }
    std::error_code ec;
    if (!spec.stdout_path.empty()) fs::create_directories(fs::path(spec.stdout_path).parent_path(), ec);
    if (spec.stdout_path.empty()) spec.stdout_path = "/dev/null";
    spec.on_start = [this, id](const util::ChildInfo& child) {
      std::lock_guard lock(m_mutex);
      Entry& e = m_entries[id];
      e.child = child;
      e.started = true;
      if (e.cancel_requested) util::end_child(child);
    };
    util::ProcessResult r = util::run_process(spec);
    std::lock_guard lock(m_mutex);
    Entry& e = m_entries[id];
    e.status.exit_code = r.exit_code;
    if (e.cancel_requested) {
      e.status.state = State::cancelled;
      e.status.detail = "cancelled (" + r.describe() + ")";
    } else if (r.timed_out) {
      e.status.state = State::timed_out;
      e.status.detail = r.describe();
    } else {
      e.status.state = r.ok() ? State::done : State::failed;
      e.status.detail = r.describe();
    }
    m_free_gpus.insert(m_free_gpus.end(), e.gpus.begin(), e.gpus.end());
    e.gpus.clear();
    --m_running;
    ++m_generation;
    dispatch_locked();
  }

  std::mutex m_mutex;
  std::condition_variable m_changed;
  std::map<std::string, Entry> m_entries;
  std::deque<std::string> m_queue;
  std::vector<std::string> m_free_gpus;
  std::size_t m_gpu_count = 0;
  std::vector<std::thread> m_threads;
  int m_slots = 1;
  int m_running = 0;
  std::uint64_t m_submitted = 0;
  std::uint64_t m_generation = 0; // bumped on every change of state, for wait()
};

} // namespace

LauncherSpec local_launcher() {
  return {.name = "local",
          .description = "This machine: tasks side by side, GPU tasks each on GPUs of their own (CUDA_VISIBLE_DEVICES)",
          .options = {k_jobs, k_gpus},
          .make = [](const LauncherConfig& c) { return std::make_unique<LocalLauncher>(c); }};
}

} // namespace optimas::launch
