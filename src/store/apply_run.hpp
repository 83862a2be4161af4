// optimas apply's work: a run's variant copied over the application's sources, the one time
// Optimas writes into your tree, and only into the files the run was made from.
#pragma once

#include "store/run_store.hpp"

#include <string>
#include <utility>
#include <vector>

namespace optimas::store {

struct AppliedVariant {
  std::string run_id;
  std::string key;                                         // the variant
  std::string app_dir;                                     // where its files went
  std::string diff;                                        // its diff.patch in the store
  std::vector<std::pair<std::string, std::string>> copies; // variant file -> application file
};

// Copies variant `key` of run `id` (id or unique prefix; key empty: the run's best) over the
// application's sources, after checking that each file is one of the run's inputs and is still
// as it was when the run started. Error on a variant that was not accepted or a file changed
// since, unless `force`; UsageError on a variant the run does not have, and on a run folder that
// check_run_folder refuses (store/run_inputs.hpp: a config_path that is not the recorded
// optimas.yml, a path leading out of the folder, an edited snapshot), which --force does not
// override. Nothing is copied until every file has passed.
AppliedVariant apply_variant(const RunStore& store, const std::string& id, const std::string& key, bool force);

} // namespace optimas::store
