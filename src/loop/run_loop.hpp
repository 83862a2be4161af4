// The closed loop behind `optimas run` (paper section 3): baseline -> profile -> analyze ->
// prompt -> backend -> edits + guardrails -> build -> validate -> measure -> re-profile ->
// EAR metrics -> store, with retries on build failures and guardrail rejections, iterations
// from the best variant, and a run folder from which an interrupted run resumes.
#pragma once

#include "config/app_config.hpp"
#include "loop/settings.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>

namespace optimas::loop {

struct Progress {
  std::string step;   // "baseline", "profile", "i1a1 build", ...
  std::string detail; // one line
  bool done = true;   // false: an update of a step still running (a live view overwrites it)
};

struct RunOptions {
  std::string config_path; // the application's optimas.yml (or its folder)
  std::string runs_root = "runs";
  Overrides overrides = Overrides::object();
  std::string resume; // a run id (or unique prefix) to continue
  std::function<void(const Progress&)> progress;
};

struct RunResult {
  std::string id;
  std::string dir;
  nlohmann::json summary; // run.json
  int exit_code = 0;      // k_exit_ok when a variant improved significantly, k_exit_no_improvement otherwise
};

RunResult run(const RunOptions& options);

// One earlier variant of a run (its record in run.json; run_dir holds its diff.patch) as a later
// candidate's prompt sees it: its edits, and what validation and measurement found (search.cpp).
std::string describe_attempt(const nlohmann::json& variant, const std::string& run_dir);

// What a run would do, without doing it (--dry-run).
nlohmann::json plan(const RunOptions& options);

} // namespace optimas::loop
