// util/paths.cpp: a path named by a file Optimas did not just write stays in its folder, links
// on its way resolved (dangling ones too: writing through one creates what it names).
#include "util/paths.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <filesystem>

using namespace optimas;
using optimas::test::TempDir;
namespace fs = std::filesystem;

TEST(Paths, LiesInsideComparesWholeParts) {
  EXPECT_TRUE(util::lies_inside("/a/b", "/a/b"));
  EXPECT_TRUE(util::lies_inside("/a/b", "/a/b/c"));
  EXPECT_TRUE(util::lies_inside("/a/b/", "/a/b/c"));
  EXPECT_FALSE(util::lies_inside("/a/b", "/a/bc"));
  EXPECT_FALSE(util::lies_inside("/a/b", "/a"));
}

TEST(Paths, RelativePathsInsideTheFolderResolve) {
  TempDir root;
  root.file("run/iterations/1/src/main.cu", "x");
  const fs::path run = root.path() / "run";
  const fs::path real = fs::canonical(run);
  EXPECT_EQ(util::resolve_inside(run, "iterations/1/src"), real / "iterations/1/src");
  EXPECT_EQ(util::resolve_inside(run, "iterations/./1/../1/src"), real / "iterations/1/src");
  EXPECT_EQ(util::resolve_inside(run, "not/yet/made"), real / "not/yet/made"); // need not exist
  EXPECT_EQ(util::resolve_inside(run, "."), real);
}

TEST(Paths, AbsoluteEmptyAndClimbingPathsAreRefused) {
  TempDir root;
  fs::create_directories(root.path() / "run" / "a");
  const fs::path run = root.path() / "run";
  EXPECT_FALSE(util::resolve_inside(run, ""));
  EXPECT_FALSE(util::resolve_inside(run, "/etc"));
  EXPECT_FALSE(util::resolve_inside(run, (run / "a").string())); // absolute, even inside
  EXPECT_FALSE(util::resolve_inside(run, ".."));
  EXPECT_FALSE(util::resolve_inside(run, "a/../../run2"));
}

TEST(Paths, LinksAreFollowedDanglingOnesToo) {
  TempDir root;
  fs::create_directories(root.path() / "run" / "baseline");
  fs::create_directories(root.path() / "outside");
  const fs::path run = root.path() / "run";
  fs::create_directory_symlink("baseline", run / "building"); // inside: as work/building
  fs::create_directory_symlink(root.path() / "outside", run / "work");
  fs::create_directory_symlink(root.path() / "nowhere", run / "iterations"); // dangling, outside
  fs::create_directory_symlink("../outside", run / "relative");
  fs::create_symlink("loop", run / "loop"); // a loop of one
  EXPECT_EQ(util::resolve_inside(run, "building/x"), fs::canonical(run) / "baseline/x");
  EXPECT_FALSE(util::resolve_inside(run, "work/baseline"));
  EXPECT_FALSE(util::resolve_inside(run, "iterations/1"));
  EXPECT_FALSE(util::resolve_inside(run, "relative"));
  EXPECT_FALSE(util::resolve_inside(run, "loop"));
  // The folder itself may be reached through a link (a store on another disk).
  fs::create_directory_symlink(run, root.path() / "alias");
  EXPECT_EQ(util::resolve_inside(root.path() / "alias", "building"), fs::canonical(run) / "baseline");
}

TEST(Paths, LinksOutOfAFolderAreFoundAtAnyDepth) {
  TempDir root;
  fs::create_directories(root.path() / "run" / "work" / "baseline");
  fs::create_directories(root.path() / "outside");
  const fs::path run = root.path() / "run";
  EXPECT_TRUE(util::links_out_of(run).empty());
  fs::create_directory_symlink("baseline", run / "work" / "building");
  EXPECT_TRUE(util::links_out_of(run).empty()) << "a link inside is not one out";
  fs::create_directory_symlink(root.path() / "outside", run / "iterations");
  fs::create_symlink("/nonexistent/file", run / "work" / "baseline" / "out.bin");
  EXPECT_EQ(util::links_out_of(run), (std::vector<std::string>{"iterations", "work/baseline/out.bin"}));
  EXPECT_TRUE(util::links_out_of(root.path() / "nosuch").empty());
}
