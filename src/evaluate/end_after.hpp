// Measurement runs that end after their kernels (measure.end_after_kernels, docs/loop.md): a
// measured run may stop once its hot kernels have launched as often as the baseline's
// validation runs launched them, so the host work after them (reference checks, writing
// outputs) is not paid on every measured run. Validation runs always run whole, traced; their
// traces decide where the early end is fair.
#pragma once

#include "evaluate/sandbox.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace optimas::evaluate {

// What a validation run's trace says for the early end (null when the run had no trace):
// {hot_launches, launches, symbols, after_hot_s}, and its times for the sequential rule's first
// round (loop/measure.cpp): {hot_ms, wall_s, kernel_ms, kernel_ms_to_hot_end}.
nlohmann::json trace_summary(const Execution& e);

struct EndAfterPlan {
  std::optional<Sandbox::EndAfter> end; // where the runs of the configuration may end early
  std::string reason;                   // where they end, or why they run whole
};

// From validation.jsonl's records (each with "config" and, where traced, "trace": {"variant",
// "baseline"}) for `config`. The runs end early only where every validation run of the
// configuration was traced and
// - the baseline launched the hot kernels equally often on every input (N > 0 times),
// - the variant launched them N times too, and as many kernels in all as the baseline,
// - the variant spent no longer after its last hot launch than the baseline did (25% and 0.1 s
//   of slack): work moved behind the kernels would be missed by runs that end there.
EndAfterPlan plan_end_after(const std::vector<nlohmann::json>& checks, const std::string& config);

} // namespace optimas::evaluate
