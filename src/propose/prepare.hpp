// The first step of a proposal: a profile imported, its application's optimas.yml loaded, the
// diagnostics distilled and the prompts built from them, and the sources the backend sees.
// `optimas analyze`, `prompt`, `ask` and `optimize` start here (the closed loop builds its prompts
// from its own run state).
#pragma once

#include "analysis/diagnostics.hpp"
#include "config/app_config.hpp"
#include "config/options.hpp"
#include "profile/profile.hpp"
#include "prompt/builder.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace optimas::propose {

// Which profile and application. The defaults are the option table's (config/options.hpp).
struct ProfileInput {
  std::string profile = "optimas-profile";
  std::string app;    // optimas.yml or its folder; empty: the one the profile's manifest names
  std::string config; // the input configuration analysed (--input)
  std::string ncu = config::default_of<std::string>("ncu");
  double alpha = config::default_of<double>("alpha");
};

struct Loaded {
  profile::Profile profile;
  config::AppConfig app;
  analysis::AnalysisOptions analysis;
};

// Imports the profile, finds and loads the application's optimas.yml.
Loaded load_profile_and_app(const ProfileInput& input);

// The profile directory `path` means. `optimas profile` writes optimas-profile/<app>/, so the
// default path is the folder above the profiles: there, the one named `app` is meant (when
// given: another application's is an error), else the only one; of several, the error lists
// them. Any other path is returned as is.
std::string profile_dir(const std::string& path, const std::string& app = "");

// Which prompt to build: the diagnostic subset or the baseline, the template, the budget.
struct PromptChoice {
  std::string diagnostics = config::default_of<std::string>("diagnostics");
  bool code_only = false;
  std::string template_path;
  std::size_t token_budget = config::default_of<std::size_t>("token_budget");
  std::string scope; // empty: optimas.yml's optimize.scope (optimize --scope sets it)
};

// A profiled application, its diagnostics and the prompts built from them.
struct Prepared {
  Loaded loaded;
  analysis::Diagnostics diagnostics;
  prompt::PromptOptions options;
  std::vector<prompt::Prompt> prompts;
};

Prepared prepare_prompts(const ProfileInput& input, const PromptChoice& choice);

// The application's sources by file name (as prompts and edits name them).
std::map<std::string, std::string> read_sources(const config::AppConfig& app);

// The application's other C, C++ and CUDA files under `root` (its folder, or a copy of it) that
// launch or declare kernels, by path relative to `root`: where the builtin looks for the
// launches and declarations of the kernels it edits (nw keeps its kernels in one file and
// launches them from another). Never edited. Build trees, run stores and hidden folders are
// skipped; two levels deep at most, files up to 1 MiB, 8 MiB in all.
std::map<std::string, std::string> read_host_sources(const config::AppConfig& app, const std::filesystem::path& root);

// The structured inputs the builtin backend works from (Request::context): `host_sources`
// only where there are any; `scope` is optimize.scope (the application rules run only under
// "application").
nlohmann::json structured_context(const analysis::Diagnostics& diagnostics,
                                  const std::map<std::string, std::string>& sources,
                                  const std::map<std::string, std::string>& host_sources = {},
                                  const std::string& scope = "kernel");

} // namespace optimas::propose
