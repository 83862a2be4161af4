#include "store/run_store.hpp"

#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/secrets.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <openssl/rand.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace optimas::store {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Bumped when the tables change; an index of an older version is dropped and rebuilt from the
// run folders, which hold everything it is made of.
constexpr int k_schema_version = 1;
// A second writer (another optimas process, the dashboard) waits this long for the lock.
constexpr int k_busy_timeout_ms = 5000;
constexpr std::size_t k_min_prefix = 4;
constexpr const char* k_index_name = "index.sqlite";
constexpr const char* k_run_file = "run.json";

constexpr const char* k_schema_sql = R"sql(
CREATE TABLE IF NOT EXISTS runs(
  id TEXT PRIMARY KEY, app TEXT, config_path TEXT, backend TEXT, model TEXT, status TEXT, outcome TEXT,
  verdict TEXT, speedup REAL, ci_low REAL, ci_high REAL, p_value REAL, started TEXT, finished TEXT,
  sha256 TEXT, dir TEXT);
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

const json& member(const json& obj, const char* key) {
  static const json k_null;
  if (!obj.is_object() || !obj.contains(key)) return k_null;
  return obj[key];
}

std::optional<double> ci_bound(const json& obj, std::size_t i) {
  const json& ci = member(obj, "ci");
  if (!ci.is_array() || ci.size() != 2) return std::nullopt;
  return ci[i].is_number() ? std::optional<double>(ci[i].get<double>()) : std::nullopt;
}

// ---- RAII over the sqlite3 C API. ----

class Database {
public:
  explicit Database(std::string path) : m_path(std::move(path)) {
    if (!fs::exists(m_path)) remove_stale_wal();
    int rc = sqlite3_open_v2(m_path.c_str(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             nullptr);
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
  ~Database() { sqlite3_close(m_db); }
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  sqlite3* get() const { return m_db; }
  const std::string& path() const { return m_path; }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("{}: {}: {}", m_path, what, sqlite3_errmsg(m_db)));
  }

  void exec(const char* sql, const std::string& what) {
    char* message = nullptr;
    if (sqlite3_exec(m_db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
      std::string text = message ? message : sqlite3_errmsg(m_db);
      sqlite3_free(message);
      throw Error(fmt::format("{}: {}: {}", m_path, what, text));
    }
  }

  // Sets WAL and creates or upgrades the tables. Returns true when the index was (re)made empty.
  bool prepare_schema();

private:
  // A -wal file left without its database would be replayed into the new one.
  void remove_stale_wal() const {
    std::error_code ec;
    fs::remove(m_path + "-wal", ec);
    fs::remove(m_path + "-shm", ec);
  }

  std::string m_path;
  sqlite3* m_db = nullptr;
};

class Statement {
public:
  Statement(Database& db, const char* sql) : m_db(db) {
    if (sqlite3_prepare_v2(db.get(), sql, -1, &m_stmt, nullptr) != SQLITE_OK)
      db.fail(fmt::format("cannot prepare \"{}\"", sql));
  }
  ~Statement() { sqlite3_finalize(m_stmt); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Every text the index holds passes here, redacted: a run.json from an older optimas, or one
  // edited by hand, may still carry a key.
  Statement& bind(int i, const std::optional<std::string>& v) {
    const std::string text = v ? util::redact(*v) : std::string();
    check(v ? sqlite3_bind_text(m_stmt, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT)
            : sqlite3_bind_null(m_stmt, i));
    return *this;
  }
  Statement& bind(int i, const std::string& v) { return bind(i, std::optional<std::string>(v)); }
  Statement& bind(int i, const char* v) { return bind(i, std::optional<std::string>(v)); }
  Statement& bind(int i, std::optional<double> v) {
    check(v ? sqlite3_bind_double(m_stmt, i, *v) : sqlite3_bind_null(m_stmt, i));
    return *this;
  }
  Statement& bind(int i, std::optional<std::int64_t> v) {
    check(v ? sqlite3_bind_int64(m_stmt, i, *v) : sqlite3_bind_null(m_stmt, i));
    return *this;
  }

  // True while there is a row to read.
  bool step() {
    int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    m_db.fail(fmt::format("\"{}\" failed", sqlite3_sql(m_stmt)));
  }
  // Runs a statement that returns no rows, then makes it ready for the next bindings.
  void run() {
    while (step()) {
    }
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
  }

  json column(int i) const {
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
  std::int64_t integer(int i) const { return sqlite3_column_int64(m_stmt, i); }
  int columns() const { return sqlite3_column_count(m_stmt); }
  const char* name(int i) const { return sqlite3_column_name(m_stmt, i); }

private:
  void check(int rc) {
    if (rc != SQLITE_OK) m_db.fail("cannot bind a parameter");
  }

  Database& m_db;
  sqlite3_stmt* m_stmt = nullptr;
};

// BEGIN IMMEDIATE takes the write lock at once, so two writers queue on busy_timeout instead of
// one failing with SQLITE_BUSY when it upgrades a read lock. Rolls back unless committed.
class Transaction {
public:
  explicit Transaction(Database& db) : m_db(db) { m_db.exec("BEGIN IMMEDIATE", "cannot start a transaction"); }
  ~Transaction() {
    if (!m_done) sqlite3_exec(m_db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    m_db.exec("COMMIT", "cannot commit");
    m_done = true;
  }

private:
  Database& m_db;
  bool m_done = false;
};

int user_version(Database& db) {
  Statement s(db, "PRAGMA user_version");
  return s.step() ? static_cast<int>(s.integer(0)) : 0;
}

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

// One connection per operation, each checking the schema: a deleted index.sqlite is recreated
// instead of failing (fill_if_fresh then refills it), and no connection is shared by threads.
struct Connection {
  Database db;
  bool fresh;
  explicit Connection(const std::string& path) : db(path), fresh(db.prepare_schema()) {}
};

void delete_rows(Database& db, const std::string& id) {
  for (const char* sql : {"DELETE FROM runs WHERE id = ?1", "DELETE FROM variants WHERE run_id = ?1",
                          "DELETE FROM measurements WHERE run_id = ?1", "DELETE FROM metrics WHERE run_id = ?1"}) {
    Statement s(db, sql);
    s.bind(1, id).run();
  }
}

// Inserts the rows of one run; the caller holds the transaction.
void insert_rows(Database& db, const std::string& id, const std::string& dir, const json& run) {
  Statement runs(db, "INSERT INTO runs(id, app, config_path, backend, model, status, outcome, verdict, speedup, "
                     "ci_low, ci_high, p_value, started, finished, sha256, dir) "
                     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
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

    const json& ear = member(v, "ear");
    if (ear.is_object()) {
      for (const auto& [name, value] : ear.items()) {
        auto number = real_of(value);
        if (!number) continue;
        metric.bind(1, id).bind(2, key).bind(3, name).bind(4, number).run();
      }
    }
  }
}

std::string run_id_of(const json& run) {
  auto id = text(run, "id");
  if (!id || !member(run, "id").is_string()) throw Error("cannot index a run document without a string \"id\"");
  if (!is_valid_run_id(*id)) throw Error(fmt::format("cannot index run \"{}\": not a valid run id", *id));
  return *id;
}

std::size_t line_of(const std::string& text, std::size_t byte) {
  std::size_t end = std::min(byte > 0 ? byte - 1 : 0, text.size());
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
}

[[noreturn]] void throw_errno(const std::string& what, const std::string& path) {
  throw Error(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

// Empties the index and fills it from the run folders, in one transaction.
std::size_t rebuild(Database& db, const RunStore& store) {
  Transaction tx(db);
  db.exec("DELETE FROM runs; DELETE FROM variants; DELETE FROM measurements; DELETE FROM metrics;",
          "cannot empty the run index");
  std::size_t indexed = 0;
  for (const auto& id : store.run_ids()) {
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
// Whether the file at `path` is a damaged SQLite database (not one at all, or malformed), as
// opposed to one that merely cannot be used now (locked, disk full, no permission).
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

void write_json_atomic(const std::string& path, const json& doc) {
  const std::string content = util::json_text(doc) + "\n";
  // Unique per process and call, so concurrent writers never share a temporary file.
  static std::atomic<unsigned> counter{0};
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), counter++);
  // Removes the temporary file and throws, keeping the errno that says why.
  auto fail = [&tmp](const char* what, const std::string& target) {
    int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    throw_errno(what, target);
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw_errno("cannot create", tmp);
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int saved = errno;
      ::close(fd);
      errno = saved;
      fail("cannot write", tmp);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    int saved = errno;
    ::close(fd);
    errno = saved;
    fail("cannot flush", tmp);
  }
  if (::close(fd) != 0) fail("cannot close", tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot move into place", path);
  // The rename is durable only once the folder holding it is synced; losing it is not fatal.
  std::string dir = fs::path(path).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

bool is_valid_run_id(const std::string& id) {
  if (id.empty() || id.front() == '.' || id.size() > 200) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
  });
}

RunStore::RunStore(std::string root) : m_root(std::move(root)) {
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
    std::string aside = fmt::format("{}.damaged-{}", m_index_path, util::utc_now_iso8601());
    fs::rename(m_index_path, aside);
    for (const char* suffix : {"-wal", "-shm"}) fs::remove(m_index_path + suffix, ec);
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

std::string RunStore::resolve(const std::string& id_or_prefix) const {
  if (is_valid_run_id(id_or_prefix) && fs::is_regular_file(fs::path(run_dir(id_or_prefix)) / k_run_file))
    return id_or_prefix;
  if (id_or_prefix.size() < k_min_prefix)
    throw Error(fmt::format("no run \"{}\" in {}; a run id prefix needs at least {} characters", id_or_prefix, m_root,
                            k_min_prefix));
  std::vector<std::string> matches;
  for (auto& id : run_ids())
    if (id.starts_with(id_or_prefix)) matches.push_back(id);
  if (matches.empty()) throw Error(fmt::format("no run matches \"{}\" in {}", id_or_prefix, m_root));
  if (matches.size() > 1)
    throw Error(fmt::format("run id prefix \"{}\" is ambiguous in {}: {}; give more characters", id_or_prefix, m_root,
                            util::join(matches, ", ")));
  return matches.front();
}

json RunStore::load_run(const std::string& id) const {
  if (!is_valid_run_id(id)) throw Error(fmt::format("run id \"{}\" is not a valid folder name", id));
  std::string path = (fs::path(run_dir(id)) / k_run_file).string();
  if (!fs::is_regular_file(path)) throw Error(fmt::format("run {}: no {} in {}", id, k_run_file, run_dir(id)));
  std::string content = util::read_file(path);
  json doc;
  try {
    doc = json::parse(content);
  } catch (const json::parse_error& e) {
    // nlohmann's message starts with "[json.exception.parse_error.101] "; the rest is the useful part.
    std::string what = e.what();
    auto close = what.find("] ");
    if (close != std::string::npos) what = what.substr(close + 2);
    throw ParseError(path, line_of(content, e.byte), "run " + id + ": not valid JSON: " + what);
  } catch (const json::exception& e) {
    // A number past double's range (1e400) is out_of_range, not parse_error.
    throw ParseError(path, 0, "run " + id + ": not valid JSON: " + std::string(e.what()));
  }
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

std::vector<json> RunStore::list_runs() const {
  Connection c(m_index_path);
  fill_if_fresh(c, *this);
  Statement s(c.db, "SELECT id, app, status, outcome, backend, verdict, speedup, ci_low, ci_high, started, finished, "
                    "(SELECT COUNT(*) FROM variants v WHERE v.run_id = runs.id) AS variants "
                    "FROM runs ORDER BY started DESC, id DESC");
  std::vector<json> out;
  while (s.step()) {
    json row = json::object();
    for (int i = 0; i < s.columns(); ++i) row[s.name(i)] = s.column(i);
    out.push_back(std::move(row));
  }
  return out;
}

std::size_t RunStore::reindex() {
  Connection c(m_index_path);
  return rebuild(c.db, *this);
}

} // namespace optimas::store
