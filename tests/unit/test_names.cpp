// Names that become file names (util/names.hpp): the one rule, and the check where a path is
// built from a name.
#include "util/error.hpp"
#include "util/names.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace optimas;

TEST(Names, TheRule) {
  for (const char* good : {"small", "default", "held-out", "x_1.5", "4k", "_hidden", "a+b", "stream-pc_ia-builtin-s1"})
    EXPECT_EQ(util::name_problem(good), "") << good;
  EXPECT_EQ(util::name_problem(std::string(util::k_max_name, 'a')), "");
  // What reached outside the runs folder (../../victim), what makes a folder (/), a NUL byte
  // (the name would end there), hidden files, options, spaces, and names too long for a file.
  for (std::string bad :
       {std::string("../../../../../decoy/victim"), std::string("a/b"), std::string("/etc"), std::string("."),
        std::string(".."), std::string(".hidden"), std::string("-rf"), std::string("+x"), std::string("a b"),
        std::string("x\0y", 3), std::string(""), std::string("caf\xc3\xa9"), std::string("a\\b"), std::string("a\nb"),
        std::string(util::k_max_name + 1, 'a')}) {
    std::string why = util::name_problem(bad);
    EXPECT_NE(why.find("takes 1 to 128 letters, digits"), std::string::npos) << bad << ": " << why;
  }
  // A NUL byte is shown, not cut at.
  EXPECT_NE(util::name_problem(std::string("x\0y", 3)).find("got \"x\\x00y\""), std::string::npos);
}

// Every log or output name the loop builds from a configuration's name ("<name>.log",
// "measure-<name>-baseline-0.log", a profile's "<name>.r1"), and a cell's log: a name that got
// past its reader still cannot leave the folder.
TEST(Names, APathFromANameStaysInItsFolder) {
  EXPECT_EQ(util::path_in("/runs/x/baseline/runs", "small.log"), "/runs/x/baseline/runs/small.log");
  EXPECT_EQ(util::path_in("out", "measure-small-baseline-0.out"), "out/measure-small-baseline-0.out");
  const std::string victim = "../../../../../decoy/victim";
  for (const std::string& file :
       {victim + ".log", victim + ".stderr.log", "measure-" + victim + "-baseline-0.log", victim + ".r1",
        victim + ".out", std::string(".."), std::string("."), std::string(), std::string("a/b.log")})
    EXPECT_THROW(util::path_in("/runs/x", file), Error) << file;
  EXPECT_THROW(util::path_in("/runs/x", std::string("a\0b.log", 7)), Error);
  try {
    util::path_in("/runs/x/baseline/runs", "../../../../../decoy/victim.log");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"../../../../../decoy/victim.log\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("/runs/x/baseline/runs"), std::string::npos) << e.what();
  }
}
