// Options several subcommands share: which profile, which application, analysis settings.
#pragma once

#include "analysis/diagnostics.hpp"
#include "config/app_config.hpp"
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

} // namespace optimas::cli
