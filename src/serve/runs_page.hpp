// The Runs page (every run of the store, filtered and sorted by query parameters, no script
// needed) and the Compare page (two runs, or a run's baseline and a variant's re-profile, side
// by side), with the data behind them as JSON for the endpoints.
#pragma once

#include "serve/run_files.hpp"
#include "store/run_store.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace optimas::serve {

// The index's rows (RunStore::list_runs) with each status as the run folder has it now: a run
// marked running whose process is gone shows as interrupted.
std::vector<nlohmann::json> runs_now(const store::RunStore& store);

struct RunsQuery {
  std::string filter;           // substring of id, app, status, outcome or backend (case-insensitive)
  std::string sort = "started"; // started, app, status, backend, speedup
  bool ascending = false;
};

// The rows that pass the filter, in the asked order.
std::vector<nlohmann::json> select_runs(std::vector<nlohmann::json> runs, const RunsQuery& query);

// The whole page, with `campaigns` (campaign_page.hpp's campaigns_section) above the runs. A
// running run makes the page reload itself every few seconds (live progress without JavaScript).
std::string runs_page(const std::vector<nlohmann::json>& runs, const RunsQuery& query,
                      const std::string& campaigns = "");

// One side of a comparison: a run ("ID") or one of its variants ("ID:i1a1", whose counters are
// those of its re-profile when it has one).
struct CompareSide {
  std::string label;
  nlohmann::json run;         // run.json
  nlohmann::json variant;     // the variant's object of run.json, or null
  nlohmann::json diagnostics; // what the counters come from
};

// "ID" or "ID:KEY" read from the store; Error naming what is unknown.
CompareSide compare_side(const store::RunStore& store, const std::string& spec);

// Per hot kernel, the counters of each side (time share, class, utilisation, FLOP/s, DRAM
// bandwidth, occupancy, dominant stall) as {kernel: {metric: [a, b]}}.
nlohmann::json compare_json(const CompareSide& a, const CompareSide& b);

// The page; with no sides, a form to choose them.
std::string compare_page(const std::vector<nlohmann::json>& runs, const CompareSide* a, const CompareSide* b);

} // namespace optimas::serve
