// Memory across runs (optimize.memory, docs/loop.md): accepted edits of earlier runs in the store,
// recalled for a kernel whose evidence resembles theirs, and shown to the model as worked
// examples with their measured speedups. Deterministic: the same store and diagnostics give the
// same examples, in the same order, each with the reason it was chosen.
#pragma once

#include "store/run_store.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace optimas::store {

// What retrieval compares, from a kernel of the analysis JSON (diagnostics.json's kernels[]):
// "class:memory-bound", "stall:long_scoreboard" (the kernel's dominant stall), "line:..." (each
// line's dominant stall), and access traits ("access:uncoalesced_loads", "access:local_memory",
// "access:bank_conflicts"). Sorted, no duplicates.
std::vector<std::string> kernel_features(const nlohmann::json& kernel);

// One accepted variant's edits of one kernel, as an earlier run recorded them.
struct Memory {
  std::string run_id, app, variant, kernel;
  std::vector<std::string> features;
  double speedup = 0;
  double ci_low = 0, ci_high = 0;
  std::vector<std::string> edits; // "kernel citing PC1 (rule restrict): rationale"
  std::string diff;               // the variant's diff.patch, cut to its first lines
};

// Every accepted variant of the store's runs (A/A runs left out, and run `except`), one Memory per
// kernel its applied edits touched, with that kernel's features from the run's diagnostics.json.
// A cell of campaign `campaign` leaves out the runs of that campaign, so that what a cell is shown
// does not depend on the order its cells ran in: an ablation's cells stay independent (a 3-round
// cell does not learn from the 1-round cell's accepted edit of the same kernel).
std::vector<Memory> collect_memories(const RunStore& store, const std::string& except = "",
                                     const std::string& campaign = "");

// The memories of one run of the store (none for an A/A run).
std::vector<Memory> run_memories(const RunStore& store, const std::string& id);

// A memory as an exported corpus carries it (the "memory" list of an accepted variant's records,
// docs/corpus.md), and back; Error saying what is missing.
nlohmann::ordered_json memory_to_json(const Memory& m);
Memory memory_from_json(const nlohmann::json& j);

// The memories of an exported corpus file (optimas corpus export): each accepted variant's kernel
// once, whatever number of records (one per configuration) carries it. Error naming file:line for
// a line that is not a JSON record or a memory that is not whole.
std::vector<Memory> corpus_memories(const std::string& path);

// `more` added to `memories`, less those already there (the same run, variant and kernel).
void add_memories(std::vector<Memory>& memories, const std::vector<Memory>& more);

struct Recall {
  Memory memory;
  std::string for_kernel;          // the current hot kernel it resembles
  std::vector<std::string> shared; // the features both have: the reason it is shown
  double score = 0;                // shared / all features of both (Jaccard)
};

// Up to `n` memories for the hot kernels of `diagnostics` (the analysis JSON): those sharing the
// roofline class or the dominant stall with a hot kernel, best score first, then the larger
// speedup, then run id and variant; each memory once, for the kernel it resembles most.
std::vector<Recall> recall(const std::vector<Memory>& memories, const nlohmann::json& diagnostics, std::size_t n);

// The prompt section that shows them ("## Worked examples from earlier runs"); empty for none.
std::string render_recall(const std::vector<Recall>& recalled);

} // namespace optimas::store
