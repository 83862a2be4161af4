// What the dashboard reads of a run: run.json through the store's public API, and the artifacts
// beside it (diagnostics, replies, diffs, samples, sources) through path_in_run(), which refuses
// every path that leaves the run's folder (.., absolute, a symbolic link out of the store).
#pragma once

#include "store/run_store.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace optimas::serve {

// The largest artifact the dashboard reads or serves; bigger ones are cut with a note.
inline constexpr std::size_t k_max_file_bytes = 8u << 20;

struct VariantData {
  nlohmann::json result;               // the variant's object in run.json
  nlohmann::json reply;                // reply.json (the edits as the backend gave them), or null
  nlohmann::json replies;              // replies.json (model, tokens, cost), or null
  nlohmann::json build;                // build.json (ok, result, wall_s), or null
  std::string diff;                    // diff.patch, empty when none
  std::vector<nlohmann::json> samples; // measurements.jsonl, one object per timed run
  nlohmann::json after;                // diagnostics of the variant's re-profile, or null
};

struct RunData {
  std::string id;
  nlohmann::json run;                         // run.json
  nlohmann::json diagnostics;                 // diagnostics.json (the baseline's evidence), or null
  std::map<std::string, std::string> sources; // file name -> the run's snapshot of it, for profiled files
  std::vector<VariantData> variants;
  std::vector<std::string> problems; // artifacts that could not be read, each naming its file
};

// root/id/relative when it is a plain relative path whose real location (symbolic links
// resolved) lies inside the run's folder, which itself lies inside the store; nullopt otherwise.
// The file need not exist.
std::optional<std::filesystem::path> path_in_run(const store::RunStore& store, const std::string& id,
                                                 const std::string& relative);

// The text of root/id/relative, at most k_max_file_bytes (longer files end with a note);
// nullopt when the path is refused or the file is absent or not a regular file.
std::optional<std::string> read_run_file(const store::RunStore& store, const std::string& id,
                                         const std::string& relative);

// Everything the run page shows. `id_or_prefix` is resolved by the store (Error when unknown or
// ambiguous); unreadable artifacts are listed in problems, never fatal. A variant's re-profile
// (its profile/ folder, when complete) is analysed here with the run's analysis options.
RunData load_run_data(const store::RunStore& store, const std::string& id_or_prefix);

// The same data as one JSON document (the /api/runs/ID endpoint).
nlohmann::json to_json(const RunData& data);

} // namespace optimas::serve
