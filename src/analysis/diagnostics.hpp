// The analysis stage: from a profile to citable evidence per hot kernel — roofline (RF),
// PC-stall saliency (PC) and counter selection (IA) — and about the whole application where the
// profile has a timeline (AP, analysis/application.hpp), with stable evidence IDs.
#pragma once

#include "analysis/counters.hpp"
#include "analysis/roofline.hpp"
#include "analysis/saliency.hpp"
#include "profile/hot_kernels.hpp"
#include "profile/profile.hpp"

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace optimas::analysis {

// The three diagnostic sources; the paper's seven subsets are their non-empty combinations.
enum Source : unsigned { k_pc = 1, k_ia = 2, k_roofline = 4, k_all_sources = 7 };

// "pc,ia,roofline" (any order, also "all", "rf" for roofline) -> bit set; throws UsageError.
unsigned parse_sources(std::string_view list);
// "PC+IA+Roofline"; "none" for no source.
std::string sources_label(unsigned sources);

// The diagnostics setting (optimize.diagnostics, --diagnostics): a subset of the sources, or the
// paper's code-only baseline, whose prompt shows the kernels and no evidence at all.
inline constexpr const char* k_code_only = "code-only";
struct DiagnosticsChoice {
  bool code_only = false;
  unsigned sources = k_all_sources; // 0 when code_only: nothing is distilled into evidence
  // "PC+IA" (sources_label's) or "code-only".
  std::string label() const;
};
// "code-only", or a list parse_sources takes (also joined by '+': "pc+ia"); UsageError otherwise.
DiagnosticsChoice parse_diagnostics(std::string_view setting);

struct AnalysisOptions {
  double alpha = config::default_of<double>("alpha");
  double tau_sat = k_default_tau_sat;
  SaliencyOptions saliency;
  EompOptions eomp;
  unsigned sources = k_all_sources;
  std::string config; // run whose hot kernels, roofline and stalls are analysed; empty: "default" or the first
};

struct Evidence {
  std::string id;     // "RF1", "PC3", "IA2", "AP1"
  std::string kind;   // "roofline", "pc", "ia", "application"
  std::string kernel; // empty for an application item
  std::string text;   // one line a prompt can quote
  // What removing the item's cause could gain at most (issue #30, HPCToolkit GPA's estimate):
  // the share of the GPU time it accounts for, and the speedup of the GPU time were that share
  // gone, 1 / (1 - saved). NaN for counter items, which name no cause. An application item's
  // share is of the wall time, and its gain a speedup of the wall time.
  double saved = std::numeric_limits<double>::quiet_NaN();
  double gain = std::numeric_limits<double>::quiet_NaN();
};

// Sets an item's estimated gain, `saved` a share of `basis`, and says it and what it assumes at
// the end of its text: "[gain if ...: at most 1.32x of the GPU time, 24.5% of it saved; assumes ...]".
void set_gain(Evidence& e, double saved, const std::string& if_what, const std::string& basis = "the GPU time",
              const std::string& assumes = "the time falls in proportion");

// The estimated gain of removing the causes of several items at once: per kernel the shares they
// save summed, at most the kernel's headroom (KernelDiagnostics::headroom, by kernel name; the
// application items' under "", Diagnostics::application_headroom); then 1 / (1 - all of them).
// With application items among them the gain is of the wall time: the kernels' savings count
// times `gpu_of_wall`, the GPU time as a share of the wall time (none where it is NaN). NaN when
// no item has a gain.
double combined_gain(const std::vector<const Evidence*>& items, const std::map<std::string, double>& headroom,
                     double gpu_of_wall = std::numeric_limits<double>::quiet_NaN());

struct KernelDiagnostics {
  profile::KernelTime time;
  std::optional<Roofline> roofline;
  std::optional<StallSummary> stalls;
  std::optional<CounterSelection> counters;
  std::vector<std::string> notes; // what could not be analysed and why
  // The most of the GPU time the kernel could save: its share times what it lacks of its
  // roofline (it cannot run faster than that), or its whole share where that is unknown.
  double headroom = 0;
};

struct Diagnostics {
  std::string config;
  AnalysisOptions options;
  profile::HotKernels hot;
  std::vector<KernelDiagnostics> kernels;    // the hot kernels, by decreasing time
  std::vector<Evidence> evidence;            // every item, in ID order
  std::optional<profile::Timeline> timeline; // the run's, when its trace had one (format 3)
  double application_headroom = 0;           // analysis/application.hpp; 0 without a timeline
  std::uint64_t raw_bytes = 0;               // profile pages read
  std::size_t summary_bytes = 0;             // the evidence text
};

Diagnostics analyze(const profile::Profile& profile, const AnalysisOptions& options);

// combined_gain with the diagnostics' headrooms and GPU share of the wall time.
double combined_gain(const std::vector<const Evidence*>& items, const Diagnostics& diagnostics);

// The speed of light of each kernel of `kernels` (names as KernelTime::kernel gives them, with
// template arguments) in the run of `config` of `profile`, e.g. a variant's re-profile, matched by
// that name (an edit that adds const to a parameter changes the signature, not the name); kernels
// the run did not profile are absent.
std::map<std::string, SpeedOfLight> speeds_of_light(const profile::Profile& profile, const std::string& config,
                                                    const std::vector<std::string>& kernels,
                                                    double tau_sat = k_default_tau_sat);

// The readable summary.
std::string to_text(const Diagnostics& diagnostics);

} // namespace optimas::analysis
