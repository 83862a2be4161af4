// optimas analyze: distil a profile into citable evidence for each hot kernel.
#include "cli/commands.hpp"

#include "analysis/diagnostics.hpp"
#include "analysis/json.hpp"
#include "cli/common.hpp"
#include "cli/options.hpp"
#include "profile/importer.hpp"

#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iostream>

namespace optimas::cli {

namespace {

struct AnalyzeArgs {
  std::string profile = "optimas-profile";
  std::string diagnostics;
  std::string ncu;
  analysis::AnalysisOptions options;
  std::vector<std::string> estimate; // evidence IDs whose combined gain to print
  bool json = false;
};

// The combined gain bound of the evidence items `ids` (analysis::combined_gain: what a variant's
// run records as its estimate), each item's own beside it. UsageError naming an unknown ID.
nlohmann::json estimate(const analysis::Diagnostics& d, const std::vector<std::string>& ids) {
  std::vector<const analysis::Evidence*> items;
  nlohmann::json each = nlohmann::json::object();
  for (const auto& id : ids) {
    if (each.contains(id)) continue; // an item named twice saves its time once
    auto e =
        std::find_if(d.evidence.begin(), d.evidence.end(), [&](const analysis::Evidence& x) { return x.id == id; });
    if (e == d.evidence.end()) {
      std::vector<std::string> known;
      for (const auto& x : d.evidence) known.push_back(x.id);
      throw UsageError(fmt::format("--estimate: no evidence item {} in this profile's diagnostics (it has {})", id,
                                   fmt::join(known, ", ")));
    }
    items.push_back(&*e);
    each[id] = std::isfinite(e->gain) ? nlohmann::json(e->gain) : nlohmann::json(nullptr);
  }
  const double gain = analysis::combined_gain(items, d);
  return {{"gain", std::isfinite(gain) ? nlohmann::json(gain) : nlohmann::json(nullptr)}, {"evidence", each}};
}

void run_analyze(AnalyzeArgs a) {
  a.options.sources = analysis::parse_diagnostics(a.diagnostics).sources;
  profile::ImportOptions io;
  io.ncu = a.ncu;
  auto prof = profile::import_profile(propose::profile_dir(a.profile), io);
  auto d = analysis::analyze(prof, a.options);
  nlohmann::json bound = a.estimate.empty() ? nlohmann::json(nullptr) : estimate(d, a.estimate);
  if (a.json) {
    nlohmann::json out = analysis::to_json(d);
    if (!bound.is_null()) out["estimate"] = bound;
    std::cout << util::json_text(out) << "\n";
    return;
  }
  std::cout << analysis::to_text(d);
  if (bound.is_null()) return;
  std::vector<std::string> parts;
  for (const auto& [id, g] : bound["evidence"].items())
    parts.push_back(g.is_number() ? fmt::format("{} {:.2f}x", id, g.get<double>()) : id + " none");
  std::cout << fmt::format("\nEstimated gain of {}{}: {} ({})\n", fmt::join(a.estimate, ", "),
                           a.estimate.size() > 1 ? " together" : "",
                           bound["gain"].is_number() ? fmt::format("at most {:.2f}x", bound["gain"].get<double>())
                                                     : std::string("none (no item has a gain)"),
                           fmt::join(parts, ", "));
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
  cmd->add_option("--estimate", a->estimate,
                  "Evidence IDs (PC1,RF2,...): print their combined gain bound, as a variant citing them records "
                  "it (the GPA estimate)")
      ->delimiter(',');
  cmd->add_flag("--json", a->json, "Print the diagnostics as JSON (schema optimas.diagnostics/1)");
  cmd->callback([a] { run_analyze(*a); });
}

} // namespace optimas::cli
