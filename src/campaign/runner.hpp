// Running a campaign: every cell submitted as a launcher task (launch/), its state followed by
// polling, recorded in state.json after every change (atomically), failed, cancelled, preempted,
// timed-out and lost cells submitted again up to `requeue` times, and table.json rewritten
// after every cell that finishes. `resume` redoes nothing that finished: a cell whose run is in
// the store and finished is skipped; one whose run waits for a manual reply is resumed.
#pragma once

#include "campaign/campaign_file.hpp"
#include "campaign/cells.hpp"
#include "campaign/table.hpp"
#include "store/run_store.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace optimas::campaign {

inline constexpr const char* k_state_schema = "optimas.campaign-state/1";

struct RunnerOptions {
  bool resume = false;
  // How long a launcher waits between asks: local wakes at once on a change, a scheduler is asked
  // (squeue, sacct) this often.
  double poll_s = 10;
  std::string optimas; // the executable each cell runs; empty: this one
  const launch::Registry* launchers = &launch::registry();
  std::function<void(const std::string& line)> progress; // one line per change of a cell
};

struct CampaignResult {
  int done = 0, failed = 0, waiting = 0; // cells at the end
  nlohmann::json table;
};

// Runs every cell that has not finished done, to its end. UsageError when the campaign has
// state already and `resume` is not set.
CampaignResult run_campaign(const CampaignFile& file, const RunnerOptions& options);

// What --dry-run shows: each cell with its id, settings and `optimas run` command line.
nlohmann::json plan_cells(const CampaignFile& file, const std::string& optimas = "optimas");

// <runs_dir>/campaigns/<id>/state.json, read back; Error naming the campaign when it has none.
nlohmann::json load_state(const std::string& runs_dir, const std::string& campaign);

// A cell's run as compute_table reads it, from the store: run.json, each variant's
// replies.json token counts and cost as its "usage".
RunReader store_reader(const store::RunStore& store);

// The table of a campaign from its state.json and the store.
nlohmann::json campaign_table(const std::string& runs_dir, const std::string& campaign);

} // namespace optimas::campaign
