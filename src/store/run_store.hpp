// The run store: one folder per run under a root, each holding run.json (the summary the loop
// rewrites as it goes) and its artifacts. The folders are the source of truth; index.sqlite is
// an index of them for listing and querying, and can always be rebuilt with reindex().
#pragma once

#include "store/journal.hpp" // write_json_atomic, which the run folder's writers use with it

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace optimas::store {

// The version of the run.json document this module reads and the loop writes.
inline constexpr const char* k_run_schema = "optimas.run/1";

// A random UUID v4 (RFC 4122), lowercase, from OpenSSL's RAND_bytes.
std::string new_run_id();

// True for ids that are safe as one folder name: [A-Za-z0-9._-], not starting with '.'.
bool is_valid_run_id(const std::string& id);

class RunStore {
public:
  // Creates root and index.sqlite (WAL, or the rollback journal on a network file system:
  // index_db.hpp's choose_journal; busy_timeout 5 s, 30 s with the rollback journal; schema
  // version in PRAGMA user_version) if absent. Each operation opens its own connection, so a RunStore may be used from several
  // threads and processes at once; an index that had to be made (absent, deleted, or of an older
  // schema) is first filled from the run folders, so no existing run goes missing from it.
  explicit RunStore(std::string root);

  const std::string& root() const { return m_root; }
  const std::string& index_path() const { return m_index_path; }

  // root/id (no check that it exists).
  std::string run_dir(const std::string& id) const;

  // Makes root/id and returns it. Error if it exists or the id is not a safe folder name.
  std::string create_run(const std::string& id);

  // Full id of a run folder (one holding run.json) from its id or a unique prefix of at least
  // 4 characters. Error naming the candidates when ambiguous, Error when none matches.
  std::string resolve(const std::string& id_or_prefix) const;

  // Ids of the folders under root that hold a run.json, sorted.
  std::vector<std::string> run_ids() const;

  // Parses root/id/run.json. Error when absent, ParseError(file, line) when broken or not an
  // object.
  nlohmann::json load_run(const std::string& id) const;

  // Replaces the index rows of run["id"] (run, variants, measurements, metrics) in one
  // transaction. Tolerates missing, null or mistyped fields; only "id" is required.
  void index_run(const nlohmann::json& run);

  // One object per indexed run, newest first: {id, app, status, outcome, backend, verdict,
  // speedup, ci_low, ci_high, started, finished, variants (count), campaign}. Missing values are
  // null. A non-empty `campaign` keeps the runs of that campaign (run.json's campaign.id) only.
  std::vector<nlohmann::json> list_runs(const std::string& campaign = "") const;

  // list_runs with what only the folders know: "status" "interrupted" for a run marked running
  // whose process is gone, "model", "aa" (true for an A/A run), and for a run whose run.json is
  // gone or broken "status" "missing" or "unreadable" with the "problem"; folders the index lacks
  // because their run.json was gone (lost_runs) or broken when it was built are listed so too.
  std::vector<nlohmann::json> list_runs_now(const std::string& campaign = "") const;

  // Empties the index and indexes every root/*/run.json in one transaction; broken run.json
  // files, run folders without one and runs whose folder is gone are named in warnings. Returns
  // the number of runs indexed.
  std::size_t reindex();

  // Folders under root that hold what a run writes (options.json, snapshot, iterations, ...) but
  // no run.json: runs whose record was deleted or lost.
  std::vector<std::string> lost_runs() const;
  // "run ID: root/ID/run.json is gone from its folder ..." or "... its folder is gone".
  std::string lost_run_problem(const std::string& id) const;

private:
  std::string m_root;
  std::string m_index_path;
};

// What is missing from run folder `dir` that its run.json says was written: a variant with a
// validation or a measurement whose journal (validation.jsonl, measurements.jsonl) is gone.
// One line each, naming the file.
std::vector<std::string> check_journals(const std::string& dir, const nlohmann::json& run);

} // namespace optimas::store
