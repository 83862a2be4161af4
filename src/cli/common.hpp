// Options several subcommands share: which profile, which application, which prompt and which
// backend; what they fill is propose/prepare.hpp's.
#pragma once

#include "config/options.hpp"
#include "llm/backend.hpp"
#include "propose/prepare.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace optimas::cli {

// The proposal's first step and its inputs (propose/prepare.hpp), as the commands name them.
using propose::Loaded;
using propose::Prepared;
using propose::ProfileInput;
using propose::PromptChoice;

// --profile (positional), --app, --input, --ncu and --alpha.
void add_profile_input_options(CLI::App* cmd, ProfileInput& input);

// --diagnostics, --code-only, --template and --token-budget.
void add_prompt_options(CLI::App* cmd, PromptChoice& choice);

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

// The variants of run.json whose builds were made ahead, summed (`optimas run` and `runs show`).
void print_builds_ahead(const nlohmann::json& run);
// The tuning stage of run.json (`optimas run` and `runs show`): the knobs found, the points, one
// line each, and the best one.
void print_tune(const nlohmann::json& run);

// Whether answers of this backend go through the response cache.
bool cached(const BackendChoice& choice, const llm::BackendConfig& config);

} // namespace optimas::cli
