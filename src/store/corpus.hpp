// Corpus export: the store's runs as JSON Lines in the paper's schema (App, Prompt, LLM, HW, SW,
// Compile, Exec, Opt_Code, Applied, Ignored, Errors, Base_RT, Opt_RT) followed by our own fields.
// docs/corpus.md describes the format.
#pragma once

#include "store/run_store.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace optimas::store {

struct CorpusOptions {
  std::vector<std::string> runs; // ids or unique prefixes; empty: every run in the store
  bool all_variants = false;     // false: only each run's best variant; true: every measured variant
};

// The records of one run: one per (variant, input configuration measured). A run without a
// selected measured variant gives one record with config and Opt_RT null and Errors saying why,
// so failures are in the corpus too. `run_id` names the run folder (paths are relative to the
// store root).
std::vector<nlohmann::ordered_json> corpus_records(const std::string& run_id, const nlohmann::json& run,
                                                   bool all_variants);

// Writes one JSON line per record: named runs in the order given (each once), or every run oldest
// first (by "started", then id) except A/A runs (run.json aa: true), which only a name exports. A named run that cannot
// be read is an Error; with no names, broken run.json files are skipped with a warning. Returns the number of records
// written.
std::size_t export_corpus(const RunStore& store, const CorpusOptions& options, std::ostream& out);

// export_corpus into the file `path`, written beside it first and renamed into place, so that a
// failed export (a full disk) leaves no half file under that name. Error when it cannot be written.
std::size_t export_corpus_file(const RunStore& store, const CorpusOptions& options, const std::string& path);

// A run time as the paper prints it: fmt "{:.4g}ms", e.g. "12.4ms", "0.01234ms".
std::string format_runtime_ms(double ms);

} // namespace optimas::store
