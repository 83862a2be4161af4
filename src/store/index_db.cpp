#include "store/index_db.hpp"

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/secrets.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
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
// With the rollback journal readers wait for writers too, and SQLite's busy handler polls, so a
// waiter can lose the lock to the others many times in a row: test_run_store's eight writers saw
// index updates wait 2-3 s there (0.15 s in WAL), too close to 5 s.
constexpr int k_busy_timeout_rollback_ms = 30000;

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

// statfs f_type of the file systems where processes on two hosts may open one file: network
// file systems and cluster file systems on shared disks (linux/magic.h, and the vendors' own
// headers for Lustre, GPFS, BeeGFS, PanFS, OrangeFS). FUSE is on the list because GlusterFS,
// sshfs and many cluster stores are FUSE mounts; a local FUSE file system only pays the rollback
// journal's speed.
struct NetworkFs {
  std::uint64_t magic;
  const char* name;
};
constexpr NetworkFs k_network_fs[] = {
    {0x6969, "nfs"},           {0x517B, "smb"},        {0xFF534D42, "cifs"},      {0xFE534D42, "smb2"},
    {0x0BD00BD0, "lustre"},    {0x47504653, "gpfs"},   {0x19830326, "beegfs"},    {0x00C36400, "cephfs"},
    {0x5346414F, "afs"},       {0x6B414653, "kafs"},   {0x73757245, "coda"},      {0x564C, "ncp"},
    {0x01021997, "9p"},        {0x7461636F, "ocfs2"},  {0x01161970, "gfs2"},      {0xAAD7AAEA, "panfs"},
    {0x20030528, "orangefs"},  {0x65735546, "fuse"},
};

constexpr const char* k_journal_env = "OPTIMAS_INDEX_JOURNAL";

// One notice per index, kind and process, not one per connection.
void notice_once(const std::string& key, log::Level level, const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string> told;
  std::lock_guard lock(mutex);
  if (!told.insert(key).second) return;
  if (level == log::Level::warn) log::warn("{}", message);
  else log::info("{}", message);
}

constexpr const char* k_drop_sql = "DROP TABLE IF EXISTS runs; DROP TABLE IF EXISTS variants; "
                                   "DROP TABLE IF EXISTS measurements; DROP TABLE IF EXISTS metrics;";

} // namespace

std::string network_file_system_name(std::uint64_t magic) {
  for (const auto& f : k_network_fs)
    if (f.magic == magic) return f.name;
  return "";
}

std::string network_file_system_at(const std::string& folder) {
  struct statfs st{};
  if (::statfs(folder.c_str(), &st) != 0) return "";
  // f_type is a signed word on some ABIs: CIFS's 0xFF534D42 comes back negative there.
  return network_file_system_name(static_cast<std::uint32_t>(st.f_type));
}

JournalChoice journal_for(const std::string& file_system, const char* forced) {
  JournalChoice c;
  c.file_system = file_system;
  c.mode = c.file_system.empty() ? JournalMode::wal : JournalMode::rollback;
  if (forced && *forced) {
    std::string want = forced;
    if (want != "wal" && want != "delete")
      throw Error(fmt::format("{}={}: the run index's journal is wal or delete", k_journal_env, want));
    c.mode = want == "wal" ? JournalMode::wal : JournalMode::rollback;
    c.forced = true;
  }
  return c;
}

JournalChoice choose_journal(const std::string& folder) {
  return journal_for(network_file_system_at(folder), std::getenv(k_journal_env));
}

namespace {

// A -wal or -journal file left without its database would be replayed into the new one, so they
// are removed when the database is absent. Unlocked, that raced with another process creating it:
// the other's fresh journal was removed mid-commit ("cannot commit: disk I/O error", 3 rounds in
// 60 of 8 store_writer processes on a fresh store with the rollback journal). So the check, the
// removal and the creation of the file happen under a POSIX lock on <index>.lock, which network
// file systems honour too; without the lock file (a read-only store) it goes on unlocked.
void remove_orphan_journals(const std::string& path) {
  if (fs::exists(path)) return;
  int fd = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  struct flock whole{};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  if (fd >= 0) ::fcntl(fd, F_SETLKW, &whole); // unlocked if refused: as before the lock
  if (!fs::exists(path)) {
    std::error_code ec;
    for (const char* suffix : {"-wal", "-shm", "-journal"}) fs::remove(path + suffix, ec);
    // Made now, under the lock: a process that finds the file absent after this is impossible.
    int db = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (db >= 0) ::close(db);
  }
  if (fd >= 0) ::close(fd); // releases the lock
}

} // namespace

Database::Database(std::string path) : m_path(std::move(path)) {
  remove_orphan_journals(m_path);
  m_journal = choose_journal(fs::path(m_path).parent_path().string());
  int rc =
      sqlite3_open_v2(m_path.c_str(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
    sqlite3_close(m_db);
    m_db = nullptr;
    throw Error(fmt::format("{}: cannot open the run index: {}", m_path, message));
  }
  sqlite3_busy_timeout(m_db, m_journal.mode == JournalMode::wal ? k_busy_timeout_ms : k_busy_timeout_rollback_ms);
  // In WAL mode NORMAL syncs at checkpoints, not at every commit: a power cut may lose the
  // last index updates but never corrupts it, and the run folders can rebuild it anyway. Not
  // fatal if refused: it only costs speed. The rollback journal keeps FULL, its safe default.
  if (m_journal.mode == JournalMode::wal) sqlite3_exec(m_db, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
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

// The mode is kept in the database file, so an index made by an older optimas (always WAL) on a
// network file system is switched here. Leaving WAL needs every other connection closed; when
// one is open the switch is tried again by the next connection, and the warning says so.
void Database::set_journal_mode() {
  const bool wal = m_journal.mode == JournalMode::wal;
  std::string why = m_journal.forced ? fmt::format("{} says so", k_journal_env)
                                     : fmt::format("it lies on {}, where WAL's shared memory does not reach other hosts "
                                                   "({}=wal if only this host writes it)",
                                                   m_journal.file_system, k_journal_env);
  if (!wal) notice_once(m_path + " rollback", log::Level::info, fmt::format("{}: the run index uses the rollback journal (journal_mode=DELETE): {}", m_path, why));
  std::string now;
  {
    Statement current(*this, "PRAGMA journal_mode");
    now = current.step() ? current.column(0).get<std::string>() : "";
  }
  if (now == (wal ? "wal" : "delete")) return;
  sqlite3_stmt* raw = nullptr;
  std::string got;
  if (sqlite3_prepare_v2(m_db, wal ? "PRAGMA journal_mode=WAL" : "PRAGMA journal_mode=DELETE", -1, &raw, nullptr) == SQLITE_OK &&
      sqlite3_step(raw) == SQLITE_ROW && sqlite3_column_text(raw, 0))
    got = reinterpret_cast<const char*>(sqlite3_column_text(raw, 0));
  sqlite3_finalize(raw);
  if (got == (wal ? "wal" : "delete")) return;
  if (wal)
    notice_once(m_path + " not wal", log::Level::warn,
                fmt::format("{}: journal_mode is \"{}\", not wal; concurrent writers may wait longer", m_path, got));
  else
    notice_once(m_path + " still wal", log::Level::warn,
                fmt::format("{}: the run index is still in WAL mode (another process has it open: {}); stop every "
                            "optimas using this store once so that the next one switches it, since {}",
                            m_path, sqlite3_errmsg(m_db), why));
}

bool Database::prepare_schema() {
  set_journal_mode();
  if (user_version(*this) == k_schema_version) return false;
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
