#include "store/run_store.hpp"

#include "store/index_db.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <signal.h>
#include <system_error>

namespace optimas::store {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::size_t k_min_prefix = 4;
constexpr const char* k_index_name = "index.sqlite";
constexpr const char* k_run_file = "run.json";

// ---- Tolerant reads of run.json fields: a wrong type reads as absent. ----

std::optional<std::string> text_of(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number() || j.is_boolean()) return j.dump();
  return std::nullopt;
}

std::optional<std::string> text(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key)) return std::nullopt;
  return text_of(obj[key]);
}

std::optional<double> real_of(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_boolean()) return j.get<bool>() ? 1.0 : 0.0;
  return std::nullopt;
}

std::optional<double> real(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key) || obj[key].is_boolean()) return std::nullopt;
  return real_of(obj[key]);
}

std::optional<std::int64_t> integer(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key)) return std::nullopt;
  const json& j = obj[key];
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (j.is_number_float()) return static_cast<std::int64_t>(j.get<double>());
  return std::nullopt;
}

using util::member;

std::optional<double> ci_bound(const json& obj, std::size_t i) {
  const json& ci = member(obj, "ci");
  if (!ci.is_array() || ci.size() != 2) return std::nullopt;
  return ci[i].is_number() ? std::optional<double>(ci[i].get<double>()) : std::nullopt;
}

void delete_rows(Database& db, const std::string& id) {
  for (const char* sql : {"DELETE FROM runs WHERE id = ?1", "DELETE FROM variants WHERE run_id = ?1",
                          "DELETE FROM measurements WHERE run_id = ?1", "DELETE FROM metrics WHERE run_id = ?1"}) {
    Statement s(db, sql);
    s.bind(1, id).run();
  }
}

// The measured samples of variant `key` (its measurement's configs), one row each.
void insert_samples(Statement& sample, const std::string& id, const std::string& key, const json& m) {
  const json& configs = member(m, "configs");
  if (configs.is_object()) {
    for (const auto& [config, c] : configs.items()) {
      for (const auto& [role, field] : {std::pair{"baseline", "base"}, std::pair{"variant", "variant"}}) {
        const json& samples = member(c, field);
        if (!samples.is_array()) continue;
        for (std::size_t round = 0; round < samples.size(); ++round) {
          sample.bind(1, id)
              .bind(2, key)
              .bind(3, config)
              .bind(4, role)
              .bind(5, std::optional<std::int64_t>(static_cast<std::int64_t>(round)))
              .bind(6, real(samples[round], "kernel_ms"))
              .bind(7, real(samples[round], "wall_s"))
              .run();
        }
      }
    }
  }
}

// The EAR metrics of variant `key` that are numbers, one row each.
void insert_metrics(Statement& metric, const std::string& id, const std::string& key, const json& ear) {
  if (ear.is_object()) {
    for (const auto& [name, value] : ear.items()) {
      auto number = real_of(value);
      if (!number) continue;
      metric.bind(1, id).bind(2, key).bind(3, name).bind(4, number).run();
    }
  }
}

// Inserts the rows of one run; the caller holds the transaction.
void insert_rows(Database& db, const std::string& id, const std::string& dir, const json& run) {
  Statement runs(db, "INSERT INTO runs(id, app, config_path, backend, model, status, outcome, verdict, speedup, "
                     "ci_low, ci_high, p_value, started, finished, sha256, dir, campaign) "
                     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)");
  runs.bind(1, id)
      .bind(2, text(run, "app"))
      .bind(3, text(run, "config_path"))
      .bind(4, text(run, "backend"))
      .bind(5, text(run, "model"))
      .bind(6, text(run, "status"))
      .bind(7, text(run, "outcome"))
      .bind(8, text(run, "verdict"))
      .bind(9, real(run, "speedup"))
      .bind(10, ci_bound(run, 0))
      .bind(11, ci_bound(run, 1))
      .bind(12, real(run, "p_value"))
      .bind(13, text(run, "started"))
      .bind(14, text(run, "finished"))
      .bind(15, text(run, "sha256"))
      .bind(16, dir)
      .bind(17, text(member(run, "campaign"), "id"))
      .run();

  const json& variants = member(run, "variants");
  if (!variants.is_array()) return;
  // OR REPLACE: a run.json that repeats a key keeps the last variant instead of failing.
  Statement var(db, "INSERT OR REPLACE INTO variants(run_id, key, iteration, attempt, status, reason, edits, applied, "
                    "withheld, verdict, speedup, ci_low, ci_high, p_value) "
                    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
  Statement sample(db, "INSERT INTO measurements(run_id, variant, config, role, round, kernel_ms, wall_s) "
                       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  Statement metric(db, "INSERT INTO metrics(run_id, variant, name, value) VALUES(?1, ?2, ?3, ?4)");
  for (std::size_t n = 0; n < variants.size(); ++n) {
    const json& v = variants[n];
    if (!v.is_object()) continue;
    std::string key = text(v, "key").value_or(fmt::format("#{}", n + 1));
    const json& m = member(v, "measurement");
    var.bind(1, id)
        .bind(2, key)
        .bind(3, integer(v, "iteration"))
        .bind(4, integer(v, "attempt"))
        .bind(5, text(v, "status"))
        .bind(6, text(v, "reason"))
        .bind(7, integer(v, "edits"))
        .bind(8, integer(v, "applied"))
        .bind(9, integer(v, "withheld"))
        .bind(10, text(m, "verdict"))
        .bind(11, real(m, "speedup"))
        .bind(12, ci_bound(m, 0))
        .bind(13, ci_bound(m, 1))
        .bind(14, real(m, "p_value"))
        .run();

    insert_samples(sample, id, key, m);
    insert_metrics(metric, id, key, member(v, "ear"));
  }
}

std::string run_id_of(const json& run) {
  auto id = text(run, "id");
  if (!id || !member(run, "id").is_string()) throw Error("cannot index a run document without a string \"id\"");
  if (!is_valid_run_id(*id)) throw Error(fmt::format("cannot index run \"{}\": not a valid run id", *id));
  return *id;
}

// Moves the damaged index at `path` to a name of its own, `<path>.damaged-<time>` or, when a
// repair in the same second took that, `...-2`, `-3`: link() never replaces a file, so no damaged
// index overwrites another (rename() did: one of two repairs in a second was lost).
std::string set_aside(const std::string& path) {
  const std::string base = fmt::format("{}.damaged-{}", path, util::utc_now_iso8601());
  for (int n = 1; n <= 1000; ++n) {
    std::string aside = n == 1 ? base : fmt::format("{}-{}", base, n);
    std::error_code ec;
    fs::create_hard_link(path, aside, ec);
    if (ec == std::errc::file_exists) continue;
    if (ec) { // a file system without hard links: rename, having looked first
      if (fs::exists(aside)) continue;
      fs::rename(path, aside);
      return aside;
    }
    fs::remove(path);
    return aside;
  }
  throw Error(fmt::format("{}: damaged, and 1000 damaged copies beside it already; remove them", path));
}

// Files the loop writes into a run folder early, before or beside run.json: a folder holding one
// of them and no run.json is a run whose record was lost, not some other folder.
bool looks_like_run(const fs::path& dir) {
  std::error_code ec;
  for (const char* name : {"options.json", "snapshot", "snapshot.json", "diagnostics.json", "iterations", "baseline"})
    if (fs::exists(dir / name, ec)) return true;
  return false;
}

std::vector<std::string> indexed_ids(Database& db) {
  std::vector<std::string> ids;
  Statement s(db, "SELECT id FROM runs");
  while (s.step()) ids.push_back(s.column(0).get<std::string>());
  return ids;
}

// Empties the index and fills it from the run folders, in one transaction. A run the index had
// and the folders no longer have, and a run folder without its run.json, are named: they would
// otherwise vanish from every listing without a word.
std::size_t rebuild(Database& db, const RunStore& store) {
  Transaction tx(db);
  auto ids = store.run_ids();
  std::set<std::string> lost;
  for (auto& id : indexed_ids(db))
    if (!std::binary_search(ids.begin(), ids.end(), id)) lost.insert(id);
  for (auto& id : store.lost_runs()) lost.insert(id);
  for (const auto& id : lost) log::warn("{}; not indexed", store.lost_run_problem(id));
  db.exec("DELETE FROM runs; DELETE FROM variants; DELETE FROM measurements; DELETE FROM metrics;",
          "cannot empty the run index");
  std::size_t indexed = 0;
  for (const auto& id : ids) {
    json run;
    try {
      run = store.load_run(id);
    } catch (const Error& e) {
      log::warn("{}; not indexed (fix or remove the file, then run reindex again)", e.what());
      continue;
    }
    // The folder is the source of truth: a copied folder whose run.json names another id is
    // indexed under its folder name.
    auto doc_id = text(run, "id");
    if (doc_id != id) {
      log::warn("{}: id is \"{}\", not the folder name; indexed as {}", store.run_dir(id) + "/" + k_run_file,
                doc_id.value_or("(none)"), id);
      run["id"] = id;
    }
    try {
      insert_rows(db, id, store.run_dir(id), run);
    } catch (const Error& e) {
      throw Error(fmt::format("cannot index run {}: {}", id, e.what()));
    }
    ++indexed;
  }
  tx.commit();
  return indexed;
}

// An index that had to be made (deleted, or of an older schema) is filled from the run folders
// at once, so that a listing never silently misses runs that exist.
void fill_if_fresh(Connection& c, const RunStore& store) {
  if (!c.fresh || store.run_ids().empty()) return;
  log::info("{}: new run index; indexing the run folders under {}", c.db.path(), store.root());
  rebuild(c.db, store);
}

} // namespace

std::string new_run_id() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) throw Error("cannot make a run id: OpenSSL RAND_bytes failed");
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40); // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80); // RFC 4122 variant
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += fmt::format("{:02x}", b[i]);
  }
  return out;
}

bool is_valid_run_id(const std::string& id) {
  if (id.empty() || id.front() == '.' || id.size() > 200) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
  });
}

// The root is made absolute once: every path below it is handed to programs that run in their
// own scratch folders (trace folders, output files), where a relative one would point elsewhere.
RunStore::RunStore(std::string root) : m_root(fs::absolute(root).lexically_normal().string()) {
  std::error_code ec;
  fs::create_directories(m_root, ec);
  if (ec) throw Error(fmt::format("cannot create the run store {}: {}", m_root, ec.message()));
  m_index_path = (fs::path(m_root) / k_index_name).string();
  try {
    Connection c(m_index_path);
    fill_if_fresh(c, *this);
  } catch (const Error& e) {
    // The run folders are the record and the index only a view of them: a damaged index is set
    // aside (kept for a post-mortem) and made again, so no command is stuck on it.
    if (!fs::exists(m_index_path) || !index_is_damaged(m_index_path)) throw;
    std::string aside = set_aside(m_index_path);
    for (const char* suffix : {"-wal", "-shm", "-journal"}) fs::remove(m_index_path + suffix, ec);
    log::warn("{} was damaged ({}); it was moved to {} and the index is rebuilt from the run folders", m_index_path,
              e.what(), aside);
    Connection c(m_index_path);
    fill_if_fresh(c, *this);
  }
}

std::string RunStore::run_dir(const std::string& id) const {
  return (fs::path(m_root) / id).string();
}

std::string RunStore::create_run(const std::string& id) {
  if (!is_valid_run_id(id))
    throw Error(fmt::format("run id \"{}\" is not a valid folder name (letters, digits, '.', '_', '-')", id));
  std::string dir = run_dir(id);
  std::error_code ec;
  // create_directory is atomic: of two processes making the same run, exactly one succeeds.
  bool made = fs::create_directory(dir, ec);
  if (ec) throw Error(fmt::format("cannot create run folder {}: {}", dir, ec.message()));
  if (!made) throw Error(fmt::format("run {} already exists: {}", id, dir));
  return dir;
}

std::vector<std::string> RunStore::run_ids() const {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(m_root, ec)) {
    std::error_code e2;
    if (!entry.is_directory(e2)) continue;
    if (fs::is_regular_file(entry.path() / k_run_file, e2)) ids.push_back(entry.path().filename().string());
  }
  if (ec) throw Error(fmt::format("cannot list the run store {}: {}", m_root, ec.message()));
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<std::string> RunStore::lost_runs() const {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(m_root, ec)) {
    std::error_code e2;
    std::string name = entry.path().filename().string();
    if (is_valid_run_id(name) && entry.is_directory(e2) && !fs::exists(entry.path() / k_run_file, e2) &&
        looks_like_run(entry.path()))
      ids.push_back(name);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::string RunStore::lost_run_problem(const std::string& id) const {
  std::string dir = run_dir(id);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return fmt::format("run {}: its folder {} is gone", id, dir);
  return fmt::format("run {}: {} is gone from its folder (deleted?); restore it, or remove the folder", id,
                     (fs::path(dir) / k_run_file).string());
}

std::string RunStore::resolve(const std::string& id_or_prefix) const {
  if (is_valid_run_id(id_or_prefix) && fs::is_regular_file(fs::path(run_dir(id_or_prefix)) / k_run_file))
    return id_or_prefix;
  if (is_valid_run_id(id_or_prefix) && fs::is_directory(run_dir(id_or_prefix)) && looks_like_run(run_dir(id_or_prefix)))
    throw Error(lost_run_problem(id_or_prefix));
  if (id_or_prefix.size() < k_min_prefix)
    throw Error(fmt::format("no run \"{}\" in {}; a run id prefix needs at least {} characters", id_or_prefix, m_root,
                            k_min_prefix));
  std::vector<std::string> matches;
  for (auto& id : run_ids())
    if (id.starts_with(id_or_prefix)) matches.push_back(id);
  if (matches.empty()) {
    // A folder that was a run and lost its run.json: say so rather than that nothing matches.
    for (auto& id : lost_runs())
      if (id.starts_with(id_or_prefix)) throw Error(lost_run_problem(id));
    throw Error(fmt::format("no run matches \"{}\" in {}", id_or_prefix, m_root));
  }
  if (matches.size() > 1)
    throw Error(fmt::format("run id prefix \"{}\" is ambiguous in {}: {}; give more characters", id_or_prefix, m_root,
                            util::join(matches, ", ")));
  return matches.front();
}

json RunStore::load_run(const std::string& id) const {
  if (!is_valid_run_id(id)) throw Error(fmt::format("run id \"{}\" is not a valid folder name", id));
  std::string path = (fs::path(run_dir(id)) / k_run_file).string();
  if (!fs::is_regular_file(path)) throw Error(fmt::format("run {}: no {} in {}", id, k_run_file, run_dir(id)));
  json doc = parse_json(util::read_file(path), path, "run " + id + ": ");
  if (!doc.is_object()) throw ParseError(path, 1, "run " + id + ": run.json is not a JSON object");
  return doc;
}

void RunStore::index_run(const json& run) {
  std::string id = run_id_of(run);
  Connection c(m_index_path);
  fill_if_fresh(c, *this);
  Transaction tx(c.db);
  try {
    delete_rows(c.db, id);
    insert_rows(c.db, id, run_dir(id), run);
  } catch (const Error& e) {
    throw Error(fmt::format("cannot index run {}: {}", id, e.what()));
  }
  tx.commit();
}

std::vector<json> RunStore::list_runs(const std::string& campaign) const {
  Connection c(m_index_path);
  fill_if_fresh(c, *this);
  Statement s(c.db, "SELECT id, app, status, outcome, backend, verdict, speedup, ci_low, ci_high, started, finished, "
                    "(SELECT COUNT(*) FROM variants v WHERE v.run_id = runs.id) AS variants, campaign "
                    "FROM runs WHERE ?1 IS NULL OR campaign = ?1 ORDER BY started DESC, id DESC");
  s.bind(1, campaign.empty() ? std::nullopt : std::optional<std::string>(campaign));
  std::vector<json> out;
  while (s.step()) {
    json row = json::object();
    for (int i = 0; i < s.columns(); ++i) row[s.name(i)] = s.column(i);
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<json> RunStore::list_runs_now(const std::string& campaign) const {
  auto runs = list_runs(campaign);
  std::set<std::string> listed;
  for (auto& r : runs) {
    std::string id = r["id"].get<std::string>();
    listed.insert(id);
    r["aa"] = false;
    json run;
    try {
      run = load_run(id);
    } catch (const Error& e) {
      // The index row stays with what it knew, marked: the record itself is gone or broken.
      std::error_code ec;
      bool gone = !fs::exists(fs::path(run_dir(id)) / k_run_file, ec);
      r["status"] = gone ? "missing" : "unreadable";
      r["problem"] = gone ? lost_run_problem(id) : std::string(e.what());
      continue;
    }
    // The index holds the status when it was written; the folder knows whether it still runs.
    std::string status = text(run, "status").value_or("");
    if (status == "running" && member(run, "pid").is_number_integer() && ::kill(run["pid"].get<pid_t>(), 0) != 0 &&
        errno == ESRCH)
      status = "interrupted";
    r["status"] = status;
    r["model"] = member(run, "model");
    // An A/A run measures the baseline against itself: a calibration, not a backend's result.
    r["aa"] = member(run, "aa") == true;
  }
  if (!campaign.empty()) return runs;
  // Folders the index does not have because their run.json was lost or broken when it was built.
  for (auto& id : lost_runs())
    if (!listed.count(id))
      runs.push_back({{"id", id}, {"status", "missing"}, {"aa", false}, {"problem", lost_run_problem(id)}});
  for (auto& id : run_ids()) {
    if (listed.count(id)) continue;
    try {
      load_run(id);
    } catch (const Error& e) {
      runs.push_back({{"id", id}, {"status", "unreadable"}, {"aa", false}, {"problem", std::string(e.what())}});
    }
  }
  return runs;
}

std::vector<std::string> check_journals(const std::string& dir, const json& run) {
  std::vector<std::string> out;
  const json& variants = member(run, "variants");
  for (const auto& v : variants.is_array() ? variants : json::array()) {
    const json& rel = member(v, "dir");
    if (!rel.is_string()) continue;
    fs::path vdir = fs::path(dir) / rel.get<std::string>();
    std::string key = text(v, "key").value_or(rel.get<std::string>());
    std::error_code ec;
    // A variant's record says what its journals held: their lines are the evidence behind it.
    for (const auto& [field, journal] :
         {std::pair{"validation", "validation.jsonl"}, std::pair{"measurement", "measurements.jsonl"}})
      if (member(v, field).is_object() && !fs::exists(vdir / journal, ec))
        out.push_back(fmt::format("{}: variant {} has a {} in run.json, but its journal {} is missing",
                                  (vdir / journal).string(), key, field, journal));
  }
  return out;
}

std::size_t RunStore::reindex() {
  Connection c(m_index_path);
  return rebuild(c.db, *this);
}

} // namespace optimas::store
