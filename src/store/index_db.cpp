#include "store/index_db.hpp"

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/secrets.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

namespace optimas::store {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Bumped when the tables change; an index of an older version is dropped and rebuilt from the
// run folders, which hold everything it is made of.
constexpr int k_schema_version = 2; // 2: runs.campaign
// A second writer (another optimas process, the dashboard) waits this long for the lock.
constexpr int k_busy_timeout_ms = 5000;

constexpr const char* k_schema_sql = R"sql(
CREATE TABLE IF NOT EXISTS runs(
  id TEXT PRIMARY KEY, app TEXT, config_path TEXT, backend TEXT, model TEXT, status TEXT, outcome TEXT,
  verdict TEXT, speedup REAL, ci_low REAL, ci_high REAL, p_value REAL, started TEXT, finished TEXT,
  sha256 TEXT, dir TEXT, campaign TEXT);
CREATE TABLE IF NOT EXISTS variants(
  run_id TEXT NOT NULL, key TEXT NOT NULL, iteration INTEGER, attempt INTEGER, status TEXT, reason TEXT,
  edits INTEGER, applied INTEGER, withheld INTEGER, verdict TEXT, speedup REAL, ci_low REAL, ci_high REAL,
  p_value REAL, PRIMARY KEY(run_id, key));
CREATE TABLE IF NOT EXISTS measurements(
  run_id TEXT NOT NULL, variant TEXT NOT NULL, config TEXT NOT NULL, role TEXT NOT NULL, round INTEGER NOT NULL,
  kernel_ms REAL, wall_s REAL);
CREATE INDEX IF NOT EXISTS measurements_run ON measurements(run_id);
CREATE TABLE IF NOT EXISTS metrics(run_id TEXT NOT NULL, variant TEXT NOT NULL, name TEXT NOT NULL, value REAL);
CREATE INDEX IF NOT EXISTS metrics_run ON metrics(run_id);
)sql";

constexpr const char* k_drop_sql = "DROP TABLE IF EXISTS runs; DROP TABLE IF EXISTS variants; "
                                   "DROP TABLE IF EXISTS measurements; DROP TABLE IF EXISTS metrics;";

} // namespace

Database::Database(std::string path) : m_path(std::move(path)) {
  // A -wal file left without its database would be replayed into the new one.
  if (!fs::exists(m_path)) {
    std::error_code ec;
    fs::remove(m_path + "-wal", ec);
    fs::remove(m_path + "-shm", ec);
  }
  int rc =
      sqlite3_open_v2(m_path.c_str(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
    sqlite3_close(m_db);
    m_db = nullptr;
    throw Error(fmt::format("{}: cannot open the run index: {}", m_path, message));
  }
  sqlite3_busy_timeout(m_db, k_busy_timeout_ms);
  // In WAL mode NORMAL syncs at checkpoints, not at every commit: a power cut may lose the
  // last index updates but never corrupts it, and the run folders can rebuild it anyway. Not
  // fatal if refused: it only costs speed.
  sqlite3_exec(m_db, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
}

void Database::fail(const std::string& what) const {
  throw Error(fmt::format("{}: {}: {}", m_path, what, sqlite3_errmsg(m_db)));
}

void Database::exec(const char* sql, const std::string& what) {
  char* message = nullptr;
  if (sqlite3_exec(m_db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : sqlite3_errmsg(m_db);
    sqlite3_free(message);
    throw Error(fmt::format("{}: {}: {}", m_path, what, text));
  }
}

Statement::Statement(Database& db, const char* sql) : m_db(db) {
  if (sqlite3_prepare_v2(db.get(), sql, -1, &m_stmt, nullptr) != SQLITE_OK)
    db.fail(fmt::format("cannot prepare \"{}\"", sql));
}

Statement& Statement::bind(int i, const std::optional<std::string>& v) {
  const std::string text = v ? util::redact(*v) : std::string();
  check(v ? sqlite3_bind_text(m_stmt, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT)
          : sqlite3_bind_null(m_stmt, i));
  return *this;
}

Statement& Statement::bind(int i, std::optional<double> v) {
  check(v ? sqlite3_bind_double(m_stmt, i, *v) : sqlite3_bind_null(m_stmt, i));
  return *this;
}

Statement& Statement::bind(int i, std::optional<std::int64_t> v) {
  check(v ? sqlite3_bind_int64(m_stmt, i, *v) : sqlite3_bind_null(m_stmt, i));
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(m_stmt);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  m_db.fail(fmt::format("\"{}\" failed", sqlite3_sql(m_stmt)));
}

void Statement::run() {
  while (step()) {
  }
  sqlite3_reset(m_stmt);
  sqlite3_clear_bindings(m_stmt);
}

json Statement::column(int i) const {
  switch (sqlite3_column_type(m_stmt, i)) {
  case SQLITE_INTEGER:
    return sqlite3_column_int64(m_stmt, i);
  case SQLITE_FLOAT:
    return sqlite3_column_double(m_stmt, i);
  case SQLITE_TEXT:
    return std::string(reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, i)),
                       static_cast<std::size_t>(sqlite3_column_bytes(m_stmt, i)));
  default:
    return nullptr;
  }
}

namespace {

int user_version(Database& db) {
  Statement s(db, "PRAGMA user_version");
  return s.step() ? static_cast<int>(s.integer(0)) : 0;
}

} // namespace

bool Database::prepare_schema() {
  if (user_version(*this) == k_schema_version) return false;
  {
    Statement mode(*this, "PRAGMA journal_mode=WAL");
    std::string got = mode.step() ? mode.column(0).get<std::string>() : "";
    if (got != "wal") log::warn("{}: journal_mode is \"{}\", not wal; concurrent writers may wait longer", m_path, got);
  }
  Transaction tx(*this);
  // Another process may have made the schema while we waited for the lock.
  int version = user_version(*this);
  if (version == k_schema_version) return false;
  if (version > k_schema_version)
    throw Error(fmt::format("{}: the run index has schema version {}, newer than this optimas knows ({}); use the "
                            "newer optimas, or delete the file and run `optimas reindex` to rebuild it",
                            m_path, version, k_schema_version));
  if (version > 0) {
    log::warn("{}: run index schema version {} is older than {}; rebuilding it from the run folders", m_path, version,
              k_schema_version);
    exec(k_drop_sql, "cannot drop the old tables");
  }
  exec(k_schema_sql, "cannot create the tables");
  exec(fmt::format("PRAGMA user_version = {}", k_schema_version).c_str(), "cannot set the schema version");
  tx.commit();
  return true;
}

bool index_is_damaged(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return false;
  }
  std::string result;
  int rc = sqlite3_exec(
      db, "PRAGMA quick_check",
      [](void* out, int, char** values, char**) {
        if (values[0]) *static_cast<std::string*>(out) += values[0];
        return 0;
      },
      &result, nullptr);
  int code = sqlite3_extended_errcode(db) & 0xff;
  sqlite3_close(db);
  if (rc != SQLITE_OK) return code == SQLITE_NOTADB || code == SQLITE_CORRUPT;
  return result != "ok";
}

} // namespace optimas::store
