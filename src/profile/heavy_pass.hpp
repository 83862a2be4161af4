// The heavy pass of one run of `optimas profile`, in rounds (docs/profiling-cost.md): each round
// one ncu process with its own report, planned by heavy_rounds.hpp. Internal to profile/:
// ncu_agent.cpp's profile_app runs it after the timing pass.
#pragma once

#include "profile/ncu_agent.hpp"
#include "util/process.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace optimas::profile {

using Say = std::function<void(const std::string&)>;

// ncu run with the C locale (its numbers must not depend on the user's), its output into
// `log_path`, killed with everything it started after `timeout_s`.
util::ProcessResult run_logged(const std::vector<std::string>& argv, const std::string& cwd,
                               const std::string& log_path, double timeout_s);

// Seconds on the profile's clock, which --budget and the rounds' estimates read: the steady wall
// clock. A test seam: where $OPTIMAS_PROFILE_CLOCK names a file, the number in it (0 while there
// is none), which tests/scenario/fake-ncu advances by its replays' seconds instead of sleeping
// them, so that a budget test's verdict does not depend on how loaded the machine is. Process
// time limits stay on the wall clock.
double profile_clock_s();

// The end of a log, for an error message.
std::string log_tail(const std::string& path, std::size_t max_chars = 2000);

// What the heavy pass's rounds need from the profile around them.
struct RoundContext {
  const NcuOptions& o;
  const std::vector<std::string>& app_argv;
  const std::string& cwd;
  const std::string& out_abs;
  std::filesystem::path run_dir;
  std::function<double()> first_limit;             // the first round's time limit; throws when the budget is spent
  std::function<double()> budget_left;             // seconds left of --budget; infinity without one
  std::function<double()> elapsed;                 // seconds since the profile started
  double reserve_per_run = 0;                      // set after round 1: what each later run needs at least
  int runs_after = 0;                              // runs of the profile after this one
  std::function<void(const nlohmann::json&)> keep; // puts the run into manifest.json and saves it
  Say progress;
};

// The heavy pass of one run, in rounds: round 1 profiles one picked launch of each hot kernel,
// each later round as many of the rest as the time left allows by the rounds before. Every
// finished round is kept in the manifest at once. A later round that the budget or --timeout
// cuts, or that ncu fails, ends the pass with what was kept, and run["cut"] says why; the first
// failing is an error, since the run would hold nothing.
void heavy_pass(RoundContext& c, nlohmann::json& run, const std::vector<std::string>& hot,
                const std::vector<LaunchPick>& picks);

} // namespace optimas::profile
