// Every GPU of the node (issue #51, --gpus): where several GPUs are there, an exhaustive tuning
// search measures its points on each at once, one point at a time per GPU. Each GPU is a slot
// with copies of its own of the baseline's and the parent's scratch builds: a point's validation
// and measurement run beside those, on that GPU (CUDA_VISIBLE_DEVICES), so every ratio is of runs
// on one GPU and outputs written in a program's folder never meet another slot's. The points are
// taken in the search's order, each by the first slot free, and their results are recorded in
// that order, as the serial search records them.
//
// Only behind the sandbox's walls (bwrap, unshare): there a variant writes nothing but its own
// folders, so a slot's variant cannot touch another's, and the watch on the run folder leaves the
// slots' folders out (execute.cpp). At the watch level, whose watch is all that keeps a variant
// out of the others' folders, one GPU measures.
#include "loop/run_state.hpp"

#include "util/error.hpp"
#include "util/gpus.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <deque>
#include <thread>

namespace optimas::loop {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// `from` copied to `to` as it is: links as links, and each file with its modification time (a
// run command that calls make must find the build as new as it was).
void copy_build(const fs::path& from, const fs::path& to) {
  fs::remove_all(to);
  fs::create_directories(to.parent_path());
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  for (const auto& f : fs::recursive_directory_iterator(from))
    if (f.is_regular_file() && !f.is_symlink())
      fs::last_write_time(to / fs::relative(f.path(), from), fs::last_write_time(f.path()));
}

} // namespace

std::vector<Slot> Loop::open_slots(std::size_t points, json& rec) {
  const auto gpus = util::visible_gpus(m_settings.gpus, "--gpus");
  if (gpus.size() < 2 || points < 2) return {};
  if (m_sandbox.isolation == evaluate::Isolation::watch) {
    say("tune", fmt::format("one GPU measures at a time of the {} found ({}): at the watch level, nothing keeps one "
                            "GPU's variant out of another's folders (--sandbox; docs/sandbox.md)",
                            gpus.size(), util::join(gpus, ",")));
    return {};
  }
  std::vector<Slot> slots;
  for (std::size_t i = 0; i < std::min(gpus.size(), points); ++i) {
    Slot s;
    s.index = static_cast<int>(i);
    s.gpu = gpus[i];
    const fs::path dir = m_dir / "work" / fmt::format("slot-{}", i);
    s.baseline = dir / "baseline";
    copy_build(m_dir / "work" / "baseline", s.baseline);
    s.parent = s.baseline;
    if (!m_best.empty()) {
      s.parent = dir / "parent";
      copy_build(parent_work(), s.parent);
    }
    slots.push_back(std::move(s));
  }
  std::vector<std::string> used;
  for (const auto& s : slots) used.push_back(s.gpu);
  rec["gpus"] = used;
  say("tune", fmt::format("{} GPUs measure at once ({}), one point at a time each, beside their own baseline runs",
                          slots.size(), util::join(used, ",")));
  return slots;
}

void Loop::close_slots(const std::vector<Slot>& slots) {
  if (m_settings.keep_work) return;
  std::error_code ec;
  for (const auto& s : slots) fs::remove_all(s.baseline.parent_path(), ec);
}

bool Loop::measure_on_slots(const tune::Space& space, const TuneSearch& ts, const std::vector<Slot>& slots, int& index,
                            const std::function<bool(const tune::Point&)>& known_bad,
                            const std::function<void(const tune::Point&, const json&, int)>& done,
                            const std::function<bool()>& spent) {
  struct Finished {
    int index;
    std::size_t slot;
    json result;
    std::exception_ptr error;
  };
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Finished> finished;
  std::vector<bool> busy(slots.size(), false);
  std::vector<std::thread> threads;
  // Every slot's point ends before this returns, an error of ours (a full disk) included.
  struct Join {
    std::vector<std::thread>& threads;
    bool& running;
    ~Join() {
      for (auto& t : threads)
        if (t.joinable()) t.join();
      running = false;
    }
  } join{threads, m_slots_running};
  std::map<int, std::pair<tune::Point, json>> measured; // results not yet recorded: an earlier one is out
  std::map<int, tune::Point> started;
  int recorded = 0;
  std::exception_ptr error;
  // Takes the results in (waiting for one when `wait`), records those whose turn has come.
  auto collect = [&](bool wait) {
    std::unique_lock<std::mutex> lock(mutex);
    if (wait) changed.wait(lock, [&] { return !finished.empty(); });
    while (!finished.empty()) {
      Finished f = std::move(finished.front());
      finished.pop_front();
      busy[f.slot] = false;
      if (f.error && !error) error = f.error;
      if (!f.error) measured[f.index] = {started.at(f.index), std::move(f.result)};
    }
    lock.unlock();
    for (auto it = measured.find(recorded + 1); it != measured.end(); it = measured.find(recorded + 1)) {
      ++recorded;
      done(it->second.first, it->second.second, it->first);
      measured.erase(it);
    }
  };
  auto idle = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return std::find(busy.begin(), busy.end(), false) - busy.begin();
  };
  // As tune::search's exhaustive walk: in grid order, a point known to fail leaving its place in
  // the budget to the next one. A point started before an earlier one's crash made it known to
  // fail is measured all the same.
  bool stopped = false;
  std::size_t tried = 0;
  m_slots_running = true;
  for (const auto& p : space.allowed_points()) {
    if (static_cast<int>(tried) >= ts.budget || error) break;
    collect(false);
    if (known_bad(p)) continue;
    ++tried;
    if (ts.as_it_is && p == *ts.as_it_is) continue; // the parent's own values: nothing to build
    if (spent()) {
      stopped = true;
      break;
    }
    auto free = static_cast<std::size_t>(idle());
    while (free == slots.size() && !error) {
      collect(true);
      free = idle();
    }
    if (error) break;
    const int at = ++index;
    {
      std::lock_guard<std::mutex> lock(mutex);
      busy[free] = true;
      started.emplace(at, p);
    }
    say("tune", fmt::format("[{}/{}] {} on GPU {}", at, ts.most, space.label(p), slots[free].gpu), false);
    threads.emplace_back([&, p, at, free] {
      Finished f{at, free, {}, nullptr};
      try {
        f.result = tune_point(space, p, at, ts.cache, ts.context, &slots[free]);
      } catch (...) {
        f.error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex);
      finished.push_back(std::move(f));
      changed.notify_all();
    });
  }
  for (auto& t : threads) t.join();
  collect(false);
  if (error) std::rethrow_exception(error);
  return stopped;
}

} // namespace optimas::loop
