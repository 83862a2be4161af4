#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include <gtest/gtest.h>

using namespace optimas::util;

// A joined command line, run by /bin/sh, gives the program exactly the words it was made of.
TEST(Strings, ShellQuoteRoundTrips) {
  std::vector<std::string> argv = {"-k", "regex:^(a|b)$", "it's", "", "$HOME `x` \\ \"q\""};
  auto r = optimas::util::run_process(shell("printf '[%s]\\n' " + shell_join(argv)));
  ASSERT_TRUE(r.ok()) << r.describe();
  std::string expected;
  for (const auto& a : argv) expected += "[" + a + "]\n";
  EXPECT_EQ(r.out, expected);
}

TEST(Strings, Sha256KnownVector) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
