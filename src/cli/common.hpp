// Options several subcommands share: which profile, which application, analysis settings.
#pragma once

#include "analysis/diagnostics.hpp"
#include "config/app_config.hpp"
#include "llm/backend.hpp"
#include "profile/profile.hpp"

#include <CLI/CLI.hpp>

#include <string>

namespace optimas::cli {

struct ProfileInput {
  std::string profile = "optimas-profile";
  std::string app; // optimas.yml or its folder; empty: the one the profile's manifest names
  std::string config;
  std::string ncu = "ncu";
};

void add_profile_input_options(CLI::App* cmd, ProfileInput& input);

struct Loaded {
  profile::Profile profile;
  config::AppConfig app;
  analysis::AnalysisOptions analysis;
};

// Imports the profile, finds and loads the application's optimas.yml.
Loaded load_profile_and_app(const ProfileInput& input);

// Which backend to call and how.
struct BackendChoice {
  std::string model = "builtin"; // the default needs no model and no network
  std::string base_url;
  std::vector<std::string> options; // key=value, checked against the backend's declared options
  std::string cache_dir = ".optimas/cache";
  std::string work_dir = "optimas-manual";
  bool no_cache = false;
};

void add_backend_options(CLI::App* cmd, BackendChoice& choice);
llm::BackendConfig backend_config(const BackendChoice& choice);
// The structured inputs the builtin backend works from (Request::context).
nlohmann::json structured_context(const analysis::Diagnostics& diagnostics, const config::AppConfig& app);

// Whether answers of this backend go through the response cache.
bool cached(const BackendChoice& choice, const llm::BackendConfig& config);

} // namespace optimas::cli
