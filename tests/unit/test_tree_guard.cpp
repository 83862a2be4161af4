#include "evaluate/tree_guard.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

using namespace optimas;
using optimas::evaluate::tree_changes;
using optimas::evaluate::tree_state;
namespace fs = std::filesystem;

TEST(TreeGuard, AnUntouchedTreeHasNoChanges) {
  test::TempDir t;
  t.file("a/bin", "binary");
  t.file("b.txt", "text");
  auto before = tree_state(t.path().string());
  EXPECT_EQ(before.size(), 3u); // a, a/bin, b.txt
  EXPECT_TRUE(tree_changes(before, tree_state(t.path().string())).empty());
}

TEST(TreeGuard, AddedChangedAndRemovedFiles) {
  test::TempDir t;
  t.file("keep", "1");
  t.file("edit", "2");
  t.file("gone", "3");
  auto before = tree_state(t.path().string());
  std::ofstream(t.path() / "edit", std::ios::app) << "more";
  fs::remove(t.path() / "gone");
  t.file("new/cache.bin", "x");
  auto c = tree_changes(before, tree_state(t.path().string()));
  EXPECT_EQ(c.changed, std::vector<std::string>{"edit"});
  EXPECT_EQ(c.removed, std::vector<std::string>{"gone"});
  EXPECT_EQ(c.added, (std::vector<std::string>{"new", "new/cache.bin"}));
  EXPECT_EQ(c.describe(2), "edit (changed), new (added) and 2 more");
}

// A cheat that writes the same number of bytes and puts the old mtime back is still seen: the
// change time moves with every write and cannot be set.
TEST(TreeGuard, ARestoredMtimeDoesNotHideAWrite) {
  test::TempDir t;
  std::string path = t.file("stream", "abcd");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  auto before = tree_state(t.path().string());
  ::usleep(20000); // the change time must be able to move on a coarse clock
  std::ofstream(path, std::ios::binary | std::ios::in) << "wxyz";
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  auto c = tree_changes(before, tree_state(t.path().string()));
  EXPECT_EQ(c.changed, std::vector<std::string>{"stream"});
}

TEST(TreeGuard, AFileRenamedOverAnotherIsAChange) {
  test::TempDir t;
  t.file("stream", "real");
  auto before = tree_state(t.path().string());
  t.file("stream.next", "fake");
  fs::rename(t.path() / "stream.next", t.path() / "stream");
  auto c = tree_changes(before, tree_state(t.path().string()));
  EXPECT_EQ(c.changed, std::vector<std::string>{"stream"});
  EXPECT_TRUE(c.added.empty());
}

// Skipped paths (the variant's own copy, its logs) are neither entered nor compared; a folder
// counts only when it appears or goes, not because its entries changed.
TEST(TreeGuard, SkippedPathsAndFolderTimes) {
  test::TempDir t;
  t.file("work/i1a1/stream", "x");
  t.file("runs/check-1.log", "");
  t.file("baseline/stream", "y");
  const std::set<std::string> skip = {"work/i1a1", "runs/check-1.log"};
  auto before = tree_state(t.path().string(), skip);
  EXPECT_FALSE(before.count("work/i1a1/stream"));
  t.file("work/i1a1/cache", "z");
  t.file("runs/check-1.log", "printed");
  fs::remove(t.path() / "baseline" / "stream");
  t.file("baseline/stream", "y");
  auto c = tree_changes(before, tree_state(t.path().string(), skip));
  EXPECT_EQ(c.changed, std::vector<std::string>{"baseline/stream"}); // a new inode, though the same bytes
  EXPECT_TRUE(c.added.empty());
  EXPECT_TRUE(c.removed.empty());
}
