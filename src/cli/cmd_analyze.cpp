// optimas analyze: distil a profile into citable evidence for each hot kernel.
#include "cli/commands.hpp"

#include "analysis/diagnostics.hpp"
#include "analysis/json.hpp"
#include "cli/common.hpp"
#include "cli/options.hpp"
#include "profile/importer.hpp"

#include "util/json_text.hpp"
#include "util/log.hpp"

#include <iostream>

namespace optimas::cli {

namespace {

struct AnalyzeArgs {
  std::string profile = "optimas-profile";
  std::string diagnostics;
  std::string ncu;
  analysis::AnalysisOptions options;
  bool json = false;
};

void run_analyze(AnalyzeArgs a) {
  a.options.sources = analysis::parse_diagnostics(a.diagnostics).sources;
  profile::ImportOptions io;
  io.ncu = a.ncu;
  auto prof = profile::import_profile(propose::profile_dir(a.profile), io);
  auto d = analysis::analyze(prof, a.options);
  if (a.json)
    std::cout << util::json_text(analysis::to_json(d)) << "\n";
  else
    std::cout << analysis::to_text(d);
}

} // namespace

void add_analyze_command(CLI::App& app) {
  auto a = std::make_shared<AnalyzeArgs>();
  auto* cmd = app.add_subcommand("analyze",
                                 "Hot kernels, roofline, PC-stall saliency and counter selection, with evidence IDs");
  cmd->add_option("profile", a->profile, "A profile directory, a folder of ncu CSV pages, or a .ncu-rep")
      ->capture_default_str();
  add_option(cmd, "diagnostics", a->diagnostics);
  add_option(cmd, "input", a->options.config);
  add_deprecated_alias(cmd, "--config", "input", a->options.config);
  add_option(cmd, "alpha", a->options.alpha);
  cmd->add_option("--tau-sat", a->options.tau_sat, "Roofline: a resource is saturated at this utilisation")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--tau", a->options.saliency.tau,
                  "PC sampling: a line's dominant stall needs this share of its stalls")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--max-summary-bytes", a->options.saliency.max_bytes, "PC sampling: summary budget per kernel")
      ->capture_default_str();
  cmd->add_option("--kappa", a->options.eomp.kappa, "Counters: how many each OMP fit selects")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--pool", a->options.eomp.pool, "Counters: draw each pick from this many best candidates")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--ensemble", a->options.eomp.ensemble, "Counters: ensemble members")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seed", a->options.eomp.seed, "Counters: random seed (results are deterministic for a seed)")
      ->capture_default_str();
  cmd->add_option("--counters", a->options.eomp.report, "Counters: how many to report")->capture_default_str();
  add_option(cmd, "ncu", a->ncu);
  cmd->add_flag("--json", a->json, "Print the diagnostics as JSON (schema optimas.diagnostics/1)");
  cmd->callback([a] { run_analyze(*a); });
}

} // namespace optimas::cli
