// The cells of a campaign: applications x diagnostic subsets x backends x rounds x candidates x
// seeds, each one `optimas run` with a stable id, `<app>-<subset>-<backend>[-r<rounds>]
// [-k<candidates>]-s<seed>` (a file name; the search's parts only where the file lists more than
// one value), so that a resumed campaign, its logs and the table find the same cell again.
#pragma once

#include "campaign/campaign_file.hpp"

#include <string>
#include <vector>

namespace optimas::campaign {

struct Cell {
  std::string id; // "shmem-pc_ia-builtin-s1"
  const Application* app = nullptr;
  const Subset* diagnostics = nullptr;
  const BackendEntry* backend = nullptr;
  int rounds = 1, candidates = 1; // optimize.rounds and optimize.candidates of its run
  int seed = 1;
};

// Every cell, application by application, then subset, backend, rounds, candidates and seed (the
// file's order).
// The cells point into `file`, which must outlive them.
std::vector<Cell> expand_cells(const CampaignFile& file);

// <runs_dir>/campaigns/<id>: the copy of the file, state.json, logs/, table.json.
std::string campaign_dir(const CampaignFile& file);
// Where a manual cell's prompts and replies go: <campaign dir>/manual/<cell>.
std::string manual_dir(const CampaignFile& file, const Cell& cell);

// The `optimas run` arguments of a cell, without the executable: what every attempt runs.
std::vector<std::string> run_arguments(const CampaignFile& file, const Cell& cell);

// The same command as one line a shell takes (for --dry-run and the logs).
std::string shell_line(const std::vector<std::string>& argv);

} // namespace optimas::campaign
