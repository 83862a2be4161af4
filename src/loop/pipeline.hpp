// The variant pipeline (issue #51): builds run ahead on worker threads, up to `jobs` at once,
// while the loop validates and measures one variant at a time on the GPU. A stage that knows
// which variants it will try (the tuning stage's points in the order its search takes them)
// submits their builds first; when it comes to a variant it takes the build's record, waiting
// only for what is not finished yet, and a build that failed is known before its turn.
//
// Each worker builds in a lane of its own (BuildAhead::Lane): lane 0 is the run's one build
// folder, work/building, which the loop's own builds share under a lock; lanes 1 and up exist
// only where the machine lets a build see a folder of its own at that same path
// (private_build_folders(): a mount namespace per build), so that every build's product stays
// byte for byte what a build in work/building makes (the fingerprints that tell a stale build
// compare such bytes).
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace optimas::loop {

class BuildAhead {
public:
  // A build: runs in `lane` and returns its record (any JSON object; the pipeline adds
  // "build_s" and, once taken, "waited_s").
  using Build = std::function<nlohmann::json(int lane)>;

  // `jobs` worker threads, lanes 0 to jobs - 1.
  explicit BuildAhead(int jobs);
  // Waits for the builds that started (stop()).
  ~BuildAhead();
  BuildAhead(const BuildAhead&) = delete;
  BuildAhead& operator=(const BuildAhead&) = delete;

  // Queues the build of `key`, after those queued before it; a key submitted before is ignored.
  void submit(const std::string& key, Build build);
  bool submitted(const std::string& key) const;
  // The record of key's build, once it is done: waits for a build that is running; one still
  // queued is run now on the caller's thread, in lane 0 (a worker takes none of it then). Its
  // "waited_s" is how long the caller waited. nullopt when key was never submitted; rethrows what
  // the build threw. A key is taken once.
  std::optional<nlohmann::json> take(const std::string& key);
  int jobs() const { return static_cast<int>(m_workers.size()); }
  // The builds still queued never start (a search that ends early); those running finish.
  void stop();
  // While held, lane 0's worker starts no build: its folder, work/building, is where a
  // re-profile reads the sources of the build it profiles (Loop::reprofile), and the other lanes
  // go on. A build is held only where lane 0 has a worker to spare: where it is the only lane,
  // its build and the re-profile wait for each other either way.
  void hold_lane0(bool held);

private:
  struct Task {
    Build build;
    enum class State { queued, running, done } state = State::queued;
    nlohmann::json record;
    std::exception_ptr error;
  };
  void work(int lane);

  mutable std::mutex m_mutex;
  std::condition_variable m_changed;
  std::deque<std::string> m_queue;
  std::map<std::string, Task> m_tasks;
  bool m_stopping = false;
  bool m_lane0_held = false;
  std::vector<std::thread> m_workers;
};

// Whether builds can each see a folder of their own at one path here: `unshare` can make a user
// and mount namespace (some clusters disable user namespaces). Asked once per process.
bool private_build_folders();

// The worker threads BuildAhead gets for --build-jobs: N where given (auto, -1: the cores less one,
// at least 1), and at most 1 where builds cannot have folders of their own. 0: none (nothing is
// built ahead).
int build_lanes(int requested);

} // namespace optimas::loop
