// The campaign file (docs/campaigns.md): which applications, diagnostic subsets, backends and
// seeds make the cells of an ablation, how each cell's `optimas run` is called, and where and
// how the cells execute (the launcher). Every bad key or value is a ConfigError naming file:line.
#pragma once

#include "launch/launcher.hpp"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace optimas::campaign {

struct Application {
  std::string path;                 // the folder holding optimas.yml, absolute
  std::string name;                 // the folder's name: the cell id's first part
  std::vector<std::string> configs; // the input configurations measured (--measure-configs); empty: optimas.yml's
};

struct Subset {
  std::string setting; // what `optimas run --diagnostics` takes: "pc,ia" or "code-only"
  std::string label;   // analysis::DiagnosticsChoice::label(): "PC+IA", "code-only"
  std::string id;      // in cell ids: "pc_ia", "code-only"
};

struct BackendEntry {
  std::string model;                          // as `optimas run --model` takes it: "builtin", "openai/gpt-5"
  std::map<std::string, std::string> options; // --option key=value, checked against the backend's spec
  std::string name;                           // in cell ids and the table: `name:`, else the model made filename-safe
};

struct CampaignFile {
  std::string path; // the file, as given
  std::string id;   // campaign:
  std::vector<Application> applications;
  std::vector<Subset> diagnostics;
  std::vector<BackendEntry> backends;
  int repeats = 1;
  // The search's axes (optimize.rounds and optimize.candidates of each cell's run): every value
  // of each makes cells of its own, so that the table can ask whether feedback or more
  // candidates help.
  std::vector<int> rounds = {1};
  std::vector<int> candidates = {1};
  std::vector<std::string> run_options; // more `optimas run` arguments for every cell
  std::string runs_dir;                 // absolute
  int gpus = 1;
  double time_limit_s = 0; // 0: none
  int requeue = 2;
  launch::LauncherConfig launcher{"local", {}};
};

// The paper's seven subsets and the code-only baseline, the default of `diagnostics:`.
std::vector<std::string> default_subsets();

// "60m" -> 3600, "90s", "2h", "45" (seconds); UsageError otherwise.
double parse_time_limit(std::string_view text);

// `name` with every character other than [A-Za-z0-9._-] made '_' (a cell id is a file name).
std::string filename_safe(std::string_view name);

// Reads and checks a campaign file; paths in it are relative to its folder. ConfigError naming
// file:line for an unknown key, a bad value, an unknown launcher or launcher option, a missing
// application folder or optimas.yml, two entries giving the same cell id part.
CampaignFile load_campaign(const std::string& path, const launch::Registry& launchers = launch::registry());

} // namespace optimas::campaign
