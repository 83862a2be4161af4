// Reading profiles back: a profile directory written by `optimas profile`, a folder of CSV
// pages a user exported, or a user's .ncu-rep (exported with ncu when it is on PATH).
#pragma once

#include "config/options.hpp"
#include "profile/profile.hpp"

#include <string>
#include <vector>

namespace optimas::profile {

// The exported pages of one ncu report; empty paths are pages that are absent.
struct RunPages {
  std::string details;
  std::string raw;
  std::string source;
  std::string session;
  std::string timing_raw; // raw page of the cheap timing pass (two-pass mode)
  std::string trace;      // kernel trace of the timing pass (file or folder), instead of timing_raw
  // The heavy pass's later rounds, a report each (their timing_raw, trace and rounds are unused).
  std::vector<RunPages> later_rounds;
};

// Reads one run's pages into the model; source blocks get the result IDs of the launches. Each
// report numbers its results from 0, so a later round's launches follow the rounds before it:
// their IDs are shifted past the largest ID so far, and its source blocks match its own launches.
Run read_run(const RunPages& pages);

struct ImportOptions {
  std::string ncu = config::default_of<std::string>("ncu"); // used only for .ncu-rep files
  std::string export_dir;  // where .ncu-rep pages are exported; empty: a temporary folder
  double timeout_s = 1800; // per ncu export
};

Profile import_profile(const std::string& path, const ImportOptions& options = {});

// What a run of manifest.json holds of the launches its heavy pass planned, where a round was
// cut: "2 of 3 launches of triad profiled" (with its "profiled" record); empty when nothing was cut.
std::string cut_text(const nlohmann::json& run);

// Finds the pages in a folder of CSV exports by their content, not their names.
RunPages find_pages(const std::string& folder);

} // namespace optimas::profile
