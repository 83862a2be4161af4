// The campaign's summary table (table.json, `optimas campaign table`): one row per diagnostic
// subset, backend, rounds and candidates, computed from the run.json of each cell's run (and the token counts its
// attempts' replies.json recorded). How each column is computed: docs/campaigns.md.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace optimas::campaign {

inline constexpr const char* k_table_schema = "optimas.campaign-table/1";

// A cell's run as the table reads it: run.json, each variant carrying "usage" ({input_tokens,
// output_tokens, cost_usd}) from its replies.json when it has one. nullopt: no such run.
using RunReader = std::function<std::optional<nlohmann::json>(const std::string& run_id)>;

// The table of `cells` (state.json's: id, diagnostics, backend, state, run_id). A cell counts
// in the rates once its state is done and its run finished.
nlohmann::json compute_table(const std::string& campaign, const std::vector<nlohmann::json>& cells,
                             const RunReader& read_run);

// The two-sided 97.5% quantile of Student's t with `df` degrees of freedom (df >= 1).
double t_quantile_975(int df);

// The table as Markdown (one header row, one line per row) and as CSV (flat columns).
std::string table_markdown(const nlohmann::json& table);
std::string table_csv(const nlohmann::json& table);

} // namespace optimas::campaign
