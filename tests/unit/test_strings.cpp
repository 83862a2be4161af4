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

TEST(Strings, SimpleCommandsSplitAsAShellWould) {
  using optimas::util::split_simple_command;
  using V = std::vector<std::string>;
  EXPECT_EQ(split_simple_command("./heat --nx 256  --out 'out dir/x.out'"),
            (V{"./heat", "--nx", "256", "--out", "out dir/x.out"}));
  EXPECT_EQ(split_simple_command("prog --name \"a b\" -x=1,2:3@%^+"), (V{"prog", "--name", "a b", "-x=1,2:3@%^+"}));
  EXPECT_EQ(split_simple_command("prog ''"), (V{"prog", ""}));
  EXPECT_EQ(split_simple_command("prog a'b c'd"), (V{"prog", "ab cd"}));
  // What a shell interprets stays with the shell.
  for (const char* c : {"prog > out", "a | b", "a; b", "a && b", "prog &", "prog $HOME", "prog *.cu", "prog ~/x",
                        "X=1 prog", "exec prog", "cd d", "prog \"$x\"", "prog \"`id`\"", "prog 'open", "prog a\\ b",
                        "", "   ", "prog (x)", "prog #c"})
    EXPECT_FALSE(split_simple_command(c).has_value()) << c;
}
