// The one table of launchers. Adding a launcher: one file defining its spec (name, options,
// factory), one line here (docs/campaigns.md).
#include "launch/launcher.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <set>
#include <stdexcept>

namespace optimas::launch {

// The launchers, in the order `optimas launchers` lists them, one line each: LAUNCHER(x) stands
// for LauncherSpec x_launcher(), defined in launch/<x>.cpp (built by the glob in
// src/CMakeLists.txt) with its options next to the code that reads them.
#define OPTIMAS_LAUNCHERS(LAUNCHER)                                                                                    \
  LAUNCHER(local)                                                                                                      \
  LAUNCHER(slurm)

#define OPTIMAS_DECLARE_LAUNCHER(x) LauncherSpec x##_launcher();
OPTIMAS_LAUNCHERS(OPTIMAS_DECLARE_LAUNCHER)
#undef OPTIMAS_DECLARE_LAUNCHER

const Registry& registry() {
#define OPTIMAS_LIST_LAUNCHER(x) x##_launcher(),
  static const Registry k_registry({OPTIMAS_LAUNCHERS(OPTIMAS_LIST_LAUNCHER)});
#undef OPTIMAS_LIST_LAUNCHER
  return k_registry;
}

std::string_view state_name(State s) {
  switch (s) {
  case State::pending:
    return "pending";
  case State::running:
    return "running";
  case State::done:
    return "done";
  case State::failed:
    return "failed";
  case State::cancelled:
    return "cancelled";
  case State::preempted:
    return "preempted";
  case State::timed_out:
    return "timed_out";
  case State::lost:
    return "lost";
  }
  return "?";
}

bool finished(State s) {
  return s != State::pending && s != State::running;
}

LauncherConfig launcher_from(std::string_view name, const std::map<std::string, std::string>& options,
                             const Registry& from) {
  const LauncherSpec* spec = from.find(name);
  if (!spec) throw UsageError(fmt::format("unknown launcher \"{}\" (known: {})", name, util::join(from.names(), ", ")));
  for (const auto& [key, value] : options) {
    bool known = false;
    for (const auto& o : spec->options) known = known || o.name == key;
    if (!known) {
      std::vector<std::string> names;
      for (const auto& o : spec->options) names.push_back(o.name);
      throw UsageError(fmt::format("launcher {} has no option \"{}\" (its options: {})", spec->name, key,
                                   names.empty() ? "none" : util::join(names, ", ")));
    }
    for (const auto& o : spec->options)
      if (o.name == key && !value.empty())
        if (std::string why = util::option_problem(o, value); !why.empty())
          throw UsageError(fmt::format("launcher {} option {} {}", spec->name, key, why));
  }
  return {spec->name, options};
}

std::unique_ptr<Launcher> make_launcher(const LauncherConfig& config, const Registry& from) {
  const LauncherSpec* spec = from.find(config.name);
  if (!spec) throw UsageError(fmt::format("unknown launcher \"{}\"", config.name));
  return spec->make(config);
}

std::string describe_launchers(const Registry& from) {
  std::string out;
  for (const auto& l : from.specs()) {
    out += fmt::format("{:<8} {}\n", l.name, l.description);
    for (const auto& o : l.options)
      out += fmt::format("{:<8}   option {}: {}{}\n", "", o.name, o.description,
                         o.default_value.empty() ? "" : " (default " + o.default_value + ")");
  }
  return out;
}

nlohmann::json launchers_json(const Registry& from) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& l : from.specs()) {
    nlohmann::json options = nlohmann::json::array();
    for (const auto& o : l.options)
      options.push_back({{"name", o.name}, {"description", o.description}, {"default", o.default_value}});
    out.push_back({{"name", l.name}, {"description", l.description}, {"options", options}});
  }
  return out;
}

std::map<std::string, Status> wait_all(Launcher& launcher, const std::vector<std::string>& ids, double poll_s,
                                       const std::function<void(const std::string&, const Status&)>& on_change) {
  std::map<std::string, Status> last;
  for (;;) {
    auto now = launcher.poll();
    bool all = true;
    for (const auto& id : ids) {
      auto it = now.find(id);
      if (it == now.end()) throw std::logic_error("wait_all: task \"" + id + "\" was never submitted");
      auto before = last.find(id);
      if (on_change && (before == last.end() || before->second.state != it->second.state)) on_change(id, it->second);
      last[id] = it->second;
      all = all && finished(it->second.state);
    }
    if (all) return last;
    launcher.wait(poll_s);
  }
}

} // namespace optimas::launch
