// The run's settings: optimas.yml's values with the command line's overrides applied, checked
// once, before a run starts (and kept in the run folder, so that a resumed run works with the
// same ones).
#pragma once

#include "config/app_config.hpp"
#include "evaluate/acceptance.hpp"
#include "llm/backend.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace optimas::loop {

// What the command line may change over optimas.yml. Keys: model, base_url, options (["k=v"]),
// diagnostics, scope, iterations, retries, runs, warmup, timing, measure_configs,
// validate_configs, fresh_seeds, tolerance ("rel=1e-12"), import, ncu, tracer, full_profile,
// execute ("auto", "yes", "no"), template, token_budget, cache_dir, no_cache, keep_work, aa,
// min_speedup, confirm, work_dir.
using Overrides = nlohmann::json;

// Applies the settings overrides to an application's configuration; UsageError on a bad value.
void apply_overrides(config::AppConfig& app, const Overrides& overrides);

// The settings that are not optimas.yml's.
struct Settings {
  std::string model = "builtin";
  std::string base_url;
  std::string import;
  std::string ncu = "ncu";
  std::string tracer = "auto"; // the kernel tracer (profile::resolve_tracer)
  bool full_profile = false;
  std::string execute = "auto";
  std::string template_path;
  std::size_t token_budget = 32000;
  std::string cache_dir = ".optimas/cache";
  bool no_cache = false;
  bool keep_work = false;
  bool aa = false; // calibration: the variant is a second build of the unchanged parent
};

Settings settings_from(const config::AppConfig& app, const Overrides& o);

// A list given as a JSON array or a comma-separated string.
std::vector<std::string> string_list(const nlohmann::json& v);

// The configurations measured: measure.configs, or all.
std::vector<const config::InputConfig*> measured_configs(const config::AppConfig& app);

evaluate::AcceptanceRule acceptance_rule(const config::AppConfig& app);

llm::BackendConfig backend_config(const config::AppConfig& app, const Settings& s, const Overrides& o);

} // namespace optimas::loop
