// Evidence-Aligned Reasoning (paper 2.3, 5.2): whether a model's edits rest on the evidence it
// was shown — coverage of cited evidence IDs, closeness of edits to salient PC lines, whether the
// effects it promised show up in a re-profile — and how many edits it claimed but did not make.
// Definitions, formulas and edge cases: docs/ear.md.
#pragma once

#include "analysis/diagnostics.hpp"
#include "edit/apply.hpp"
#include "profile/profile.hpp"
#include "prompt/reply.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace optimas::evaluate {

inline constexpr int k_default_ear_lines = 3;
inline constexpr double k_default_dead_band = 0.02;

struct EarOptions {
  int k_lines = k_default_ear_lines;      // localisation window, in lines either side of an edit
  double dead_band = k_default_dead_band; // relative change at or below this counts as "did not move"
};

struct EarInputs {
  const analysis::Diagnostics* diagnostics = nullptr; // the diagnostics the prompt was built from (required)
  const prompt::Reply* reply = nullptr;               // required
  const edit::Application* application = nullptr;     // outcomes of applying reply->edits (required)
  const profile::Profile* before = nullptr;           // baseline profile (for directional consistency; may be null)
  const profile::Profile* after = nullptr;            // re-profile of the variant (may be null: not re-profiled)
  // Which run of before/after to compare ("default"), its repeats pooled; empty: the first run's.
  std::string config;
  std::optional<bool> correct; // validation verdict; nullopt when not validated
};

struct EffectCheck {
  std::string kernel; // the edit's kernel, without namespaces, template arguments or parameters
  std::string metric; // as the model wrote it
  std::string direction;
  double before = profile::k_nan;
  double after = profile::k_nan;
  std::string outcome;  // "consistent", "inconsistent", "unmeasured"
  std::size_t edit = 0; // index into reply->edits
};

struct EarMetrics {
  std::size_t edits = 0, implemented = 0, withheld = 0;
  std::size_t covered = 0;                 // edits citing >= 1 evidence ID the prompt had
  std::optional<double> evidence_coverage; // covered / edits (nullopt when no edits)
  // Applied edits in kernels with salient PC lines / of those, the ones within k lines of one.
  std::size_t localizable = 0, localized = 0;
  std::optional<double> localization_agreement; // localized / localizable (nullopt when none is localizable)
  std::vector<EffectCheck> effects;
  std::size_t kernels_checked = 0, kernels_consistent = 0;
  // kernels_consistent / kernels_checked; nullopt without a re-profile or without measurable effects.
  std::optional<double> directional_consistency;
  // Edits claimed but not present in the code (not applied: find text absent, bad range...).
  std::size_t hallucinated_edits = 0;
  std::size_t unknown_citations = 0; // cited evidence IDs the prompt never had (distinct per edit)
  std::size_t hallucinations() const { return hallucinated_edits + unknown_citations; }
  std::optional<bool> correct;
};

// Throws Error when a required input is missing and UsageError for a negative k_lines or dead_band.
EarMetrics compute_ear(const EarInputs& inputs, const EarOptions& options = {});

// Flat keys (null where a value is absent) plus "effects": [...]; see docs/ear.md.
nlohmann::json to_json(const EarMetrics& m);

} // namespace optimas::evaluate
