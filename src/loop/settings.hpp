// The run's settings: optimas.yml's values with the command line's overrides applied, checked
// once, before a run starts (and kept in the run folder, so that a resumed run works with the
// same ones).
#pragma once

#include "config/app_config.hpp"
#include "config/options.hpp"
#include "evaluate/acceptance.hpp"
#include "llm/backend.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace optimas::loop {

// What the command line may change over optimas.yml: an object keyed by the option table's names
// (config/options.hpp; the CLI fills it from the table's rows): model, base_url, options
// (["k=v"]), diagnostics, scope, iterations, retries, runs, warmup, timing, measure_configs,
// validate_configs, fresh_seeds, tolerance ("rel=1e-12"), import, ncu, tracer, full_profile,
// execute, template, token_budget, cache_dir, no_cache, keep_work, build_jobs, gpus, sandbox, aa, min_speedup, confirm,
// work_dir, alpha, tune, tune_only, tune_point, tune_search, tune_budget, campaign, cell, seed.
using Overrides = nlohmann::json;

// Applies the settings overrides to an application's configuration; UsageError on a bad value
// (each value checked by its row of the option table, as optimas.yml's values are).
void apply_overrides(config::AppConfig& app, const Overrides& overrides);

// The settings that are not optimas.yml's; the defaults are the option table's.
struct Settings {
  std::string model = config::default_of<std::string>("model");
  std::string base_url;
  std::string import;
  std::string ncu = config::default_of<std::string>("ncu");
  std::string tracer = config::default_of<std::string>("tracer"); // the kernel tracer (profile::resolve_tracer)
  bool full_profile = config::default_of<bool>("full_profile");
  std::string execute = config::default_of<std::string>("execute");
  std::string template_path;
  std::size_t token_budget = config::default_of<std::size_t>("token_budget");
  std::string cache_dir = config::default_of<std::string>("cache_dir");
  bool no_cache = config::default_of<bool>("no_cache");
  bool keep_work = config::default_of<bool>("keep_work");
  int build_jobs = -1; // builds made ahead at once (loop/pipeline.hpp): -1 auto, 0 none ahead
  std::string gpus = config::default_of<std::string>("gpus");       // those measuring at once (loop/slots.cpp)
  std::string sandbox = config::default_of<std::string>("sandbox"); // auto, bwrap, unshare, watch
  bool aa = config::default_of<bool>("aa"); // calibration: the variant is a second build of the unchanged parent
  double alpha = config::default_of<double>("alpha"); // hot kernels' share of the time
  // The campaign cell this run is (optimas campaign); empty when it is a run of its own.
  std::string campaign;
  std::string cell;
  std::optional<std::int64_t> seed; // sent to backends that take one
  // The search's budgets: no further candidate is asked once one is spent (what was measured stays).
  std::optional<double> budget_usd, budget_minutes;
  std::optional<int> budget_verdicts;
  // An exported corpus whose accepted edits join the store's as memories (absolute; empty: none).
  std::string memory_file;
};

Settings settings_from(const config::AppConfig& app, const Overrides& o);

// A list given as a JSON array or a comma-separated string.
std::vector<std::string> string_list(const nlohmann::json& v);

// The configurations measured: measure.configs, or all.
std::vector<const config::InputConfig*> measured_configs(const config::AppConfig& app);

// The comparisons each measured configuration takes part in: one per iteration of the edit step
// and, when the tuning stage runs, one per point it may measure (the budget, or the whole grid
// when smaller). The acceptance rule's significance is corrected for all of them.
int tests_per_config(const config::AppConfig& app);

evaluate::AcceptanceRule acceptance_rule(const config::AppConfig& app);

llm::BackendConfig backend_config(const config::AppConfig& app, const Settings& s, const Overrides& o);

// The one place a model name becomes a backend: `model` parsed, its server and the manual
// backend's folder, then the options, optimas.yml's (`file_options`) overridden by the command
// line's key=value ones. UsageError on a malformed option.
llm::BackendConfig make_backend_config(const std::string& model, const std::string& base_url,
                                       const std::string& work_dir,
                                       const std::map<std::string, std::string>& file_options,
                                       const std::vector<std::string>& given_options);

} // namespace optimas::loop
