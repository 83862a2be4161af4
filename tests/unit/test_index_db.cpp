// Tests of store/index_db's journal choice: the network file systems recognised by their statfs
// magic numbers, OPTIMAS_INDEX_JOURNAL, and the mode an index really gets (and is switched to).
#include "store/index_db.hpp"
#include "store/run_store.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

using namespace optimas;
using namespace optimas::store;

namespace {

std::string journal_mode_of(const std::string& path) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
      out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return out;
}

} // namespace

// The magic numbers as linux/magic.h and the vendors' headers spell them.
TEST(IndexDb, NetworkFileSystemsAreKnownByTheirMagicNumbers) {
  EXPECT_EQ(network_file_system_name(0x6969), "nfs");
  EXPECT_EQ(network_file_system_name(0x0BD00BD0), "lustre");
  EXPECT_EQ(network_file_system_name(0x47504653), "gpfs");
  EXPECT_EQ(network_file_system_name(0xFF534D42), "cifs");
  EXPECT_EQ(network_file_system_name(0xFE534D42), "smb2");
  EXPECT_EQ(network_file_system_name(0x517B), "smb");
  EXPECT_EQ(network_file_system_name(0x19830326), "beegfs");
  EXPECT_EQ(network_file_system_name(0x00C36400), "cephfs");
  EXPECT_EQ(network_file_system_name(0x5346414F), "afs");
  EXPECT_EQ(network_file_system_name(0x7461636F), "ocfs2");
  EXPECT_EQ(network_file_system_name(0x01161970), "gfs2");
  EXPECT_EQ(network_file_system_name(0x65735546), "fuse");
  // Local ones: ext4, xfs, btrfs, tmpfs, overlayfs, zfs.
  for (std::uint64_t local : {0xEF53ULL, 0x58465342ULL, 0x9123683EULL, 0x01021994ULL, 0x794C7630ULL, 0x2FC12FC1ULL})
    EXPECT_EQ(network_file_system_name(local), "") << std::hex << local;
}

TEST(IndexDb, LocalFoldersAndUnreadableOnesAreNotNetworkFileSystems) {
  EXPECT_EQ(network_file_system_at("/proc"), ""); // procfs: always local
  EXPECT_EQ(network_file_system_at("/no/such/folder"), "");
}

TEST(IndexDb, TheJournalIsWalLocallyAndTheRollbackJournalOnANetworkFileSystem) {
  EXPECT_EQ(journal_for("", nullptr).mode, JournalMode::wal);
  EXPECT_EQ(journal_for("", "").mode, JournalMode::wal);
  JournalChoice nfs = journal_for("nfs", nullptr);
  EXPECT_EQ(nfs.mode, JournalMode::rollback);
  EXPECT_EQ(nfs.file_system, "nfs");
  EXPECT_FALSE(nfs.forced);
  // The variable decides, both ways.
  EXPECT_EQ(journal_for("lustre", "wal").mode, JournalMode::wal);
  EXPECT_TRUE(journal_for("lustre", "wal").forced);
  EXPECT_EQ(journal_for("", "delete").mode, JournalMode::rollback);
  try {
    journal_for("", "truncate");
    FAIL() << "an unknown journal was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("OPTIMAS_INDEX_JOURNAL=truncate"), std::string::npos) << e.what();
  }
}

TEST(IndexDb, TheVariableSetsTheModeOfANewIndexAndSwitchesAnOldOne) {
  test::TempDir dir;
  std::string root = dir.path().string();
  {
    test::ScopedEnv env("OPTIMAS_INDEX_JOURNAL", nullptr);
    RunStore store(root);
    EXPECT_EQ(journal_mode_of(store.index_path()), "wal");
  }
  {
    // An index made in WAL (an older optimas on a network file system) gets the rollback journal
    // from the next process that opens it alone, and keeps its rows.
    test::ScopedEnv env("OPTIMAS_INDEX_JOURNAL", "delete");
    RunStore store(root);
    std::string dir_r1 = store.create_run("r1");
    write_json_atomic(dir_r1 + "/run.json", {{"id", "r1"}});
    store.index_run({{"id", "r1"}});
    EXPECT_EQ(journal_mode_of(store.index_path()), "delete");
    EXPECT_EQ(store.list_runs().size(), 1u);
  }
  {
    test::ScopedEnv env("OPTIMAS_INDEX_JOURNAL", "wal");
    RunStore store(root);
    EXPECT_EQ(journal_mode_of(store.index_path()), "wal");
    EXPECT_EQ(store.list_runs().size(), 1u);
  }
  test::ScopedEnv env("OPTIMAS_INDEX_JOURNAL", "rollback");
  EXPECT_THROW(RunStore store(root), Error);
}
