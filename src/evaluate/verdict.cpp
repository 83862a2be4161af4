#include "evaluate/verdict.hpp"

#include "cuda/source.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace optimas::evaluate {

namespace {

constexpr const char* k_final_statuses[] = {"accepted",           "rejected",   "build_failed",  "build_stale",
                                            "guardrail_rejected", "no_edits",   "invalid_reply", "validation_failed",
                                            "not_measured",       "run_failed", "duplicate"};

} // namespace

bool is_final_status(std::string_view status) {
  return std::any_of(std::begin(k_final_statuses), std::end(k_final_statuses),
                     [&](const char* f) { return status == f; });
}

Outcome unusable_proposal(bool parse_errors, bool violations, bool proposed_edits, bool same_replies,
                          const std::string& why) {
  Outcome o;
  o.status = parse_errors ? "invalid_reply" : violations ? "guardrail_rejected" : "no_edits";
  o.reason = o.status == "no_edits" && !proposed_edits ? "the backend proposed no edit" : why;
  o.retry = o.status != "no_edits" && !same_replies;
  o.feedback = why;
  return o;
}

bool edits_change_code(const std::map<std::string, std::string>& before,
                       const std::map<std::string, std::string>& after) {
  for (const auto& [name, text] : after) {
    auto it = before.find(name);
    if (it == before.end() || cuda::normalise(text) != cuda::normalise(it->second)) return true;
  }
  return false;
}

Outcome unchanged_code(bool same_replies) {
  std::string why = "the edits change nothing the compiler sees (only comments or layout); nothing was built "
                    "or measured";
  return {"build_stale", why, !same_replies, why};
}

Outcome duplicate_candidate(const std::string& twin, bool same_replies) {
  std::string why = fmt::format("the edits give the same code as {}, an earlier variant of this run; it was not "
                                "built or measured again",
                                twin);
  return {"duplicate", why, !same_replies,
          why + ". Give a different approach: other lines, other evidence, another transformation."};
}

Outcome failed_build(const std::string& result, const std::string& tail, bool same_replies) {
  return {"build_failed", result, !same_replies, fmt::format("the variant does not build ({}):\n{}", result, tail)};
}

std::optional<Outcome> stale_build(const std::string& fingerprint, const std::string& parent_fingerprint,
                                   const std::string& binary, bool aa) {
  if (aa || fingerprint != parent_fingerprint) return std::nullopt;
  return Outcome{"build_stale",
                 fmt::format("the build did not pick up the edits: its {} is identical to the parent's. Check that "
                             "build.command compiles the sources in its working folder (no absolute paths into your "
                             "tree, no prebuilt objects)",
                             binary.empty() ? "output" : binary),
                 false, ""};
}

std::string tampering(const TreeChanges& outside, const TreeChanges& own) {
  if (!outside.empty()) return "it changed files of the run outside its scratch copy: " + outside.describe();
  if (own.changed.empty() && own.removed.empty()) return "";
  TreeChanges changed = own;
  changed.added.clear();
  return "it changed its own build in its scratch copy: " + changed.describe();
}

std::optional<std::string> baseline_drift(const std::string& label, const std::string& config,
                                          const std::string& output_sha256, const std::string& recorded_sha256) {
  if (label != config || output_sha256 == recorded_sha256) return std::nullopt;
  return fmt::format("the baseline's output for {} changed between two runs: it is not deterministic, so "
                     "byte-for-byte validation cannot work (set validate.tolerance, or validate.ignore for the lines "
                     "that vary)",
                     config);
}

std::string validation_failure(const std::string& label, bool held_out, bool tampered, const std::string& detail) {
  return fmt::format("{} {}{}: {}", tampered ? "caught on" : "wrong output on", label, held_out ? " (held out)" : "",
                     detail);
}

std::optional<std::string> measured_output_differs(const std::string& tolerance, const std::string& config, int round,
                                                   const std::string& seed, const std::string& baseline_sha256,
                                                   const std::string& variant_sha256) {
  if (tolerance != "exact" || baseline_sha256 == variant_sha256) return std::nullopt;
  return fmt::format("the variant's output on {} while measured (round {}{}) differs from the baseline's on the same "
                     "input: it computed something else when timed",
                     config, round < 0 ? "warm-up" : std::to_string(round + 1), seed.empty() ? "" : ", seed " + seed);
}

std::optional<std::string> kernel_time_exceeds_process(double kernel_ms, double wall_ms) {
  if (!(kernel_ms > wall_ms * 1.05 + 1.0)) return std::nullopt;
  return fmt::format("it reports {:.4g} ms of kernel time in a process that ran {:.4g} ms", kernel_ms, wall_ms);
}

std::optional<std::string> overhead_absorbs_saving(double claimed_ms, double growth_ms, double growth_low_ms,
                                                   double confidence) {
  // Where the wall time is too noisy to tell (a GPU program whose kernels are a sliver of its
  // run), the printed time stands; where it grew significantly, by more than half the claim, not.
  if (!(growth_low_ms > 0 && growth_ms > 0.5 * claimed_ms)) return std::nullopt;
  return fmt::format("it reports {:.4g} ms less kernel time per run, but the rest of the process took {:.4g} ms "
                     "longer (at least {:.4g} ms, {:.0f}% interval): the wall time did not fall",
                     claimed_ms, growth_ms, growth_low_ms, 100 * confidence);
}

std::optional<std::string> printed_exceeds_traced(double printed_speedup, double traced_speedup) {
  if (!(printed_speedup - 1 > 1.5 * std::max(traced_speedup - 1, 0.0) + 0.02)) return std::nullopt;
  return fmt::format("its printed kernel time says {:.3f}x, its traced GPU time {:.3f}x", printed_speedup,
                     traced_speedup);
}

std::string measured_status(Stage stage) {
  return stage == Stage::accepted ? "accepted" : "rejected";
}

std::optional<std::string> unreachable_significance(int runs, const AcceptanceRule& rule, std::size_t configs,
                                                    int iterations) {
  if (smallest_p_value(runs) < rule.corrected_significance()) return std::nullopt;
  int need = runs;
  while (smallest_p_value(need) >= rule.corrected_significance()) ++need;
  return fmt::format("with {} runs the rank test cannot reach p < {:.3g} ({} measured configuration(s) x {} "
                     "iteration(s) share the significance {:g}), so no variant can be accepted: set measure.runs "
                     "(--runs) to at least {}",
                     runs, rule.corrected_significance(), configs, iterations, rule.significance, need);
}

std::optional<std::string> small_output(std::uintmax_t bytes, const std::string& config) {
  if (bytes >= k_small_output) return std::nullopt;
  return fmt::format("validation compares {} bytes of output on {}: a wrong result may pass unseen; compare a result "
                     "file (run.output) or more of what the program prints",
                     bytes, config);
}

std::string run_outcome(bool accepted, bool executed) {
  return accepted ? "improved" : executed ? "no_improvement" : "not_measured";
}

std::string config_verdict(const nlohmann::json& measurement, const std::string& name) {
  if (!measurement.is_object()) return "?";
  if (measurement.value("verdict_rule", "") == "sequential" && measurement.value("primary", "") == name)
    return "whole runs, screened";
  const auto& configs = measurement.value("configs", nlohmann::json::object());
  if (!configs.is_object() || !configs.contains(name) || !configs[name].is_object() ||
      !configs[name].contains("verdict") || !configs[name]["verdict"].is_string())
    return "?";
  return configs[name]["verdict"].get<std::string>();
}

} // namespace optimas::evaluate
