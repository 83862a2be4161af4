// Campaigns in the dashboard: the campaign folders of the run store
// (<runs_dir>/campaigns/<id>/ with table.json and state.json, issue #16's contract), their list
// on the Runs page, and the Campaign page (summary table, speedup and rate charts, cells).
#pragma once

#include "store/run_store.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace optimas::serve {

// What the dashboard read of one campaign folder. A file that is absent or does not parse
// leaves its document null and a line in problems naming it (file:line); never an exception.
struct CampaignData {
  std::string id;
  nlohmann::json table; // table.json (optimas.campaign-table/1), or null
  nlohmann::json state; // state.json, or null
  std::vector<std::string> problems;
  bool table_unreadable = false; // table.json is there but does not parse or has no rows
};

// The folder of campaign `id` in the store: root/campaigns/id.
std::string campaign_dir(const store::RunStore& store, const std::string& id);

// Every folder under root/campaigns holding a table.json or a state.json, sorted by id; a
// folder whose name is not a valid id, or that is a link out of the store, is left out.
std::vector<CampaignData> list_campaigns(const store::RunStore& store);

// One campaign; Error naming it when the id is not a valid one or there is no such campaign.
CampaignData load_campaign(const store::RunStore& store, const std::string& id);

// The cells of state.json, whichever way it holds them ({"cells": [...]}, {"cells": {id: {...}}},
// or a bare array); each an object, with "id" filled in from its key where it had none.
std::vector<nlohmann::json> campaign_cells(const nlohmann::json& state);

// True while a cell is pending or running (state.json), or, without one, table.json counts
// cells still pending: the page then reloads itself.
bool campaign_in_progress(const CampaignData& c);

// The Runs page's section listing the campaigns, each linking to its page; "" when there are none.
std::string campaigns_section(const std::vector<CampaignData>& campaigns);

// The whole Campaign page.
std::string campaign_page(const CampaignData& c);

// {"schema": "optimas.dashboard.campaign/1", id, table, state, problems} for /api/campaigns/ID.
nlohmann::json campaign_json(const CampaignData& c);

} // namespace optimas::serve
