// The rules that turn what a step of the loop observed into a variant's status and reason: which
// statuses end an attempt, when a reply or a build is worth a retry, when a build or a run gives
// a variant away as a cheat, when a printed kernel time is credible, and what a finished run's
// outcome is. Pure functions of what they are given: loop/ runs the steps and records what these
// rules say; the statistics of acceptance are evaluate/acceptance.hpp's.
#pragma once

#include "evaluate/acceptance.hpp"
#include "evaluate/tree_guard.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace optimas::evaluate {

// Whether a variant with this status is done: result.json then holds the attempt's last word,
// and a resumed run reads it back instead of trying again.
bool is_final_status(std::string_view status);

// How an attempt ends before anything is measured.
struct Outcome {
  std::string status;
  std::string reason;
  bool retry = false;   // whether the backend gets another attempt
  std::string feedback; // what that attempt is told
};

// A proposal that cannot be built: invalid_reply when a reply did not parse, guardrail_rejected
// when the guardrails stopped an edit, else no_edits. A reply without edits is an answer, not a
// mistake to correct, so only the others are retried, and not when the backend gave the same
// replies as the attempt before. `why` is the proposal's own account of what is wrong.
Outcome unusable_proposal(bool parse_errors, bool violations, bool proposed_edits, bool same_replies,
                          const std::string& why);

// Whether edits change anything the compiler sees: comments and layout do not. Both maps are file
// name -> text; a file missing from `before` counts as changed.
bool edits_change_code(const std::map<std::string, std::string>& before,
                       const std::map<std::string, std::string>& after);

// Edits that change only comments or layout: build_stale, nothing built or measured.
Outcome unchanged_code(bool same_replies);

// Edits that give the code an earlier candidate of the round (`twin`) has: duplicate, nothing
// built or measured; a retry is asked for a different approach.
Outcome duplicate_candidate(const std::string& twin, bool same_replies);

// A build that failed: build_failed, retried with the compiler's errors unless the replies were
// those of the attempt before. `result` is the build's one-line result, `tail` its log's end.
Outcome failed_build(const std::string& result, const std::string& tail, bool same_replies);

// A build whose product is byte-identical to the parent's (nvcc's temporary names aside) did not
// compile the edits: build_stale, never measured and not retried. Not for an A/A run, whose
// variant is the unchanged parent on purpose. `binary` is build.binary ("" when none).
std::optional<Outcome> stale_build(const std::string& fingerprint, const std::string& parent_fingerprint,
                                   const std::string& binary, bool aa);

// What a variant changed that it must not while it ran: files of the run outside its scratch copy
// (`outside`), or its own build in that copy (`own`). What it only added to its copy is removed
// after the run, not held against it. Empty: nothing.
std::string tampering(const TreeChanges& outside, const TreeChanges& own);

// A check on a configuration's own input (label == config) must give the output the baseline gave
// when the run started: otherwise the baseline is not deterministic and byte-for-byte validation
// cannot work. The error to stop the run with (the loop names the run), or nothing.
std::optional<std::string> baseline_drift(const std::string& label, const std::string& config,
                                          const std::string& output_sha256, const std::string& recorded_sha256);

// The reason of a variant that failed validation on check `label`.
std::string validation_failure(const std::string& label, bool held_out, bool tampered, const std::string& detail);

// While measured, with exact validation, the variant's output on a round's input (a fresh seed
// each round) must be the baseline's on the same input: otherwise it computed something else when
// timed. `round` < 0 is a warm-up; `seed` is "" when the program takes none.
std::optional<std::string> measured_output_differs(const std::string& tolerance, const std::string& config, int round,
                                                   const std::string& seed, const std::string& baseline_sha256,
                                                   const std::string& variant_sha256);

// A printed kernel time is the program's claim; these say when it is not credible.
// No run may print more kernel time than its process ran (5% and 1 ms of slack for the clocks).
std::optional<std::string> kernel_time_exceeds_process(double kernel_ms, double wall_ms);
// The time outside the kernels (per run, variant minus baseline) may not grow by more than half of
// what the kernels claim to save, where it grew significantly (`growth_low_ms`, the low end of its
// interval at `confidence`, above 0).
std::optional<std::string> overhead_absorbs_saving(double claimed_ms, double growth_ms, double growth_low_ms,
                                                   double confidence);
// Beside a traced time, the printed speedup may exceed the traced one by no more than half the
// traced saving and 2 points: printed - 1 > 1.5 x max(traced - 1, 0) + 0.02 is not credible.
std::optional<std::string> printed_exceeds_traced(double printed_speedup, double traced_speedup);

// The status of a measured variant after the acceptance rule's last word.
std::string measured_status(Stage stage);

// With `runs` samples a side the rank test cannot reach the rule's corrected significance, so no
// variant can be accepted: the warning that says so and how many runs would do. `configs` and
// `iterations` are the family the significance is shared by.
std::optional<std::string> unreachable_significance(int runs, const AcceptanceRule& rule, std::size_t configs,
                                                    int iterations);

// Outputs smaller than this prove little ("PASS" alone validates almost nothing).
inline constexpr std::uintmax_t k_small_output = 256;

// The warning for a configuration whose baseline output has `bytes` bytes, or nothing.
std::optional<std::string> small_output(std::uintmax_t bytes, const std::string& config);

// A finished run: improved when a variant was accepted, else no_improvement where programs ran,
// not_measured where none could.
std::string run_outcome(bool accepted, bool executed);

// The word shown for configuration `name` of a variant's measurement record (measurement.json):
// its verdict, but "whole runs, screened" for the sequential rule's primary configuration, whose
// hot kernels' looks decide (the overall figure) while its whole runs, as few as 3 a side, are
// only a screen, where a rank test calls nothing: "no significant change" there read as a
// contradiction beside an accepted 1.37x.
std::string config_verdict(const nlohmann::json& measurement, const std::string& name);

} // namespace optimas::evaluate
