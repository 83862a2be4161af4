// A run folder read back as input. optimas run --resume and optimas apply work in a folder that an
// earlier process wrote, and anything may have changed it since (a hand edit, a copied store, a
// variant's program): nothing its files name is trusted before it is checked here. Each refusal
// is a UsageError naming the run and the file or field, raised before anything is written.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace optimas::store {

// `dir` / `rel`, resolved, for a path that run `id`'s files name inside its folder `dir` (or a
// folder of it; `what` says which path: "run.json's variants[2].source"); UsageError when it is
// absolute or leads out of `dir`, by ".." or by a symbolic link.
std::filesystem::path path_in_run(const std::string& dir, const std::string& id, const std::string& rel,
                                  const std::string& what);

// Checks run folder `dir` of run `id` (`run`: its run.json) before a command works in it, and
// returns the optimas.yml the run was made from (run.json's config_path):
//   - no symbolic link in the folder leads out of it (work/ or iterations/ linked elsewhere
//     would send builds there);
//   - every path run.json names (variants' source, dir and prompt, tuning points' dir) lies
//     inside it;
//   - config_path is the optimas.yml the run recorded: its SHA-256 is that of the run's copy
//     (config/optimas.yml) and of run.json's inputs;
//   - the snapshot, which every build of the run starts from, is as snapshot.json recorded: each
//     file with its SHA-256, and no other.
// A run stopped before its snapshot was taken (no snapshot.json, no variant) has neither record
// yet: what exists of them is checked.
std::string check_run_folder(const std::string& dir, const std::string& id, const nlohmann::json& run);

} // namespace optimas::store
