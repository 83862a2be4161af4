// Options several subcommands share: which profile, which application, analysis settings.
#pragma once

#include "analysis/diagnostics.hpp"
#include "config/app_config.hpp"
#include "config/options.hpp"
#include "llm/backend.hpp"
#include "profile/profile.hpp"
#include "prompt/builder.hpp"

#include <CLI/CLI.hpp>

#include <string>

namespace optimas::cli {

// The defaults are the option table's (config/options.hpp), as are the options' names and help.
struct ProfileInput {
  std::string profile = "optimas-profile";
  std::string app;    // optimas.yml or its folder; empty: the one the profile's manifest names
  std::string config; // the input configuration analysed (--input)
  std::string ncu = config::default_of<std::string>("ncu");
  double alpha = config::default_of<double>("alpha");
};

void add_profile_input_options(CLI::App* cmd, ProfileInput& input);

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

void add_prompt_options(CLI::App* cmd, PromptChoice& choice);

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

// Which backend to call and how.
struct BackendChoice {
  std::string model = config::default_of<std::string>("model"); // builtin: needs no model and no network
  std::string base_url;
  std::vector<std::string> options; // key=value, checked against the backend's declared options
  std::string cache_dir = config::default_of<std::string>("cache_dir");
  std::string work_dir = config::default_of<std::string>("work_dir");
  bool no_cache = false;
};

// -m, --base-url and --option: which backend, for commands that call it without the cache.
void add_model_options(CLI::App* cmd, BackendChoice& choice);
// The model options, the cache and the manual backend's folder.
void add_backend_options(CLI::App* cmd, BackendChoice& choice);
llm::BackendConfig backend_config(const BackendChoice& choice);
// The structured inputs the builtin backend works from (Request::context).
nlohmann::json structured_context(const analysis::Diagnostics& diagnostics,
                                  const std::map<std::string, std::string>& sources);

// Whether answers of this backend go through the response cache.
bool cached(const BackendChoice& choice, const llm::BackendConfig& config);

} // namespace optimas::cli
