// The run index's database (index.sqlite), private to store/: RAII over the sqlite3 C API and the
// schema of its tables. run_store.cpp decides what rows a run gives; this file only how they are
// kept.
#pragma once

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>

namespace optimas::store {

// How the index journals its writes. WAL lets readers go on while one writer commits, but its
// shared-memory index (index.sqlite-shm, mmap'd) is shared only by processes of one host: cells
// on two nodes of a network or cluster file system writing one WAL index would corrupt it. The
// rollback journal relies on the file system's POSIX locks instead, which those honour.
enum class JournalMode { wal, rollback };

struct JournalChoice {
  JournalMode mode = JournalMode::wal;
  std::string file_system; // the network file system found under the folder, or ""
  bool forced = false;     // set by OPTIMAS_INDEX_JOURNAL
};

// The name of the network or cluster file system whose statfs f_type is `magic` ("nfs",
// "lustre", "gpfs", ...), or "" for any other (local) file system.
std::string network_file_system_name(std::uint64_t magic);

// The network file system `folder` lies on, or "" (also when statfs fails: WAL is the default).
std::string network_file_system_at(const std::string& folder);

// WAL on a local file system (`file_system` ""), the rollback journal on a network one;
// `forced` (OPTIMAS_INDEX_JOURNAL's value, or null) "wal" or "delete" decides instead. Error
// naming the variable for another value.
JournalChoice journal_for(const std::string& file_system, const char* forced);

// journal_for(network_file_system_at(folder), $OPTIMAS_INDEX_JOURNAL).
JournalChoice choose_journal(const std::string& folder);

class Database {
public:
  // Opens (or creates) the database at `path`; Error naming it when it cannot.
  explicit Database(std::string path);
  ~Database() { sqlite3_close(m_db); }
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  sqlite3* get() const { return m_db; }
  const std::string& path() const { return m_path; }

  [[noreturn]] void fail(const std::string& what) const;
  void exec(const char* sql, const std::string& what);

  // Sets the journal mode (choose_journal) and creates or upgrades the tables. Returns true when
  // the index was (re)made empty.
  bool prepare_schema();

private:
  void set_journal_mode();

  std::string m_path;
  sqlite3* m_db = nullptr;
  JournalChoice m_journal;
};

class Statement {
public:
  Statement(Database& db, const char* sql);
  ~Statement() { sqlite3_finalize(m_stmt); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Every text the index holds passes here, redacted: a run.json from an older optimas, or one
  // edited by hand, may still carry a key.
  Statement& bind(int i, const std::optional<std::string>& v);
  Statement& bind(int i, const std::string& v) { return bind(i, std::optional<std::string>(v)); }
  Statement& bind(int i, const char* v) { return bind(i, std::optional<std::string>(v)); }
  Statement& bind(int i, std::optional<double> v);
  Statement& bind(int i, std::optional<std::int64_t> v);

  // True while there is a row to read.
  bool step();
  // Runs a statement that returns no rows, then makes it ready for the next bindings.
  void run();

  nlohmann::json column(int i) const;
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

// One connection per operation, each checking the schema: a deleted index.sqlite is recreated
// instead of failing (fill_if_fresh then refills it), and no connection is shared by threads.
struct Connection {
  Database db;
  bool fresh;
  explicit Connection(const std::string& path) : db(path), fresh(db.prepare_schema()) {}
};

// Whether the file at `path` is a damaged SQLite database (not one at all, or malformed), as
// opposed to one that merely cannot be used now (locked, disk full, no permission).
bool index_is_damaged(const std::string& path);

} // namespace optimas::store
