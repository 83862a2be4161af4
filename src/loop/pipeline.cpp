#include "loop/pipeline.hpp"

#include "util/process.hpp"

#include <algorithm>
#include <cmath>

namespace optimas::loop {

namespace {

double seconds(std::chrono::steady_clock::time_point from) {
  auto s = std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
  return std::round(s * 1000) / 1000;
}

} // namespace

BuildAhead::BuildAhead(int jobs) {
  for (int lane = 0; lane < std::max(1, jobs); ++lane) m_workers.emplace_back([this, lane] { work(lane); });
}

void BuildAhead::stop() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stopping = true;
    m_queue.clear();
  }
  m_changed.notify_all();
}

BuildAhead::~BuildAhead() {
  stop();
  for (auto& t : m_workers) t.join();
}

void BuildAhead::submit(const std::string& key, Build build) {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_stopping || m_tasks.count(key)) return;
    m_tasks[key].build = std::move(build);
    m_queue.push_back(key);
  }
  m_changed.notify_all();
}

void BuildAhead::hold_lane0(bool held) {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_lane0_held = held;
  }
  m_changed.notify_all();
}

bool BuildAhead::submitted(const std::string& key) const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_tasks.count(key) > 0;
}

void BuildAhead::work(int lane) {
  std::unique_lock<std::mutex> lock(m_mutex);
  for (;;) {
    m_changed.wait(lock, [&] { return m_stopping || (!m_queue.empty() && !(lane == 0 && m_lane0_held)); });
    if (m_stopping) return;
    const std::string key = m_queue.front();
    m_queue.pop_front();
    Task& task = m_tasks.at(key); // std::map: the reference outlives other insertions
    task.state = Task::State::running;
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    nlohmann::json record;
    std::exception_ptr error;
    try {
      record = task.build(lane);
      record["build_s"] = seconds(start);
      record["lane"] = lane;
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    task.record = std::move(record);
    task.error = error;
    task.state = Task::State::done;
    m_changed.notify_all();
  }
}

std::optional<nlohmann::json> BuildAhead::take(const std::string& key) {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(m_mutex);
  auto it = m_tasks.find(key);
  if (it == m_tasks.end()) return std::nullopt;
  Task& task = it->second;
  if (task.state == Task::State::queued) {
    // Its turn came before a worker's: build it here, in lane 0.
    m_queue.erase(std::find(m_queue.begin(), m_queue.end(), key));
    task.state = Task::State::running;
    lock.unlock();
    nlohmann::json record;
    try {
      record = task.build(0);
    } catch (...) {
      lock.lock();
      m_tasks.erase(key);
      throw;
    }
    record["build_s"] = seconds(start);
    record["lane"] = 0;
    record["waited_s"] = seconds(start);
    lock.lock();
    m_tasks.erase(key);
    return record;
  }
  m_changed.wait(lock, [&] { return task.state == Task::State::done; });
  nlohmann::json record = std::move(task.record);
  std::exception_ptr error = task.error;
  m_tasks.erase(key);
  if (error) std::rethrow_exception(error);
  record["waited_s"] = seconds(start);
  return record;
}

bool private_build_folders() {
  static const bool works = [] {
    util::ProcessSpec spec;
    spec.argv = {"unshare",
                 "--user",
                 "--map-root-user",
                 "--mount",
                 "/bin/sh",
                 "-c",
                 "mount -t tmpfs optimas /mnt 2>/dev/null || mount -t tmpfs optimas /tmp"};
    spec.timeout_s = 10;
    return util::find_executable("unshare").has_value() && util::run_process(spec).ok();
  }();
  return works;
}

int build_lanes(int requested) {
  if (requested == 0) return 0;
  if (!private_build_folders()) return 1;
  if (requested > 0) return requested;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores - 1);
}

} // namespace optimas::loop
