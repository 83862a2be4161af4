#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/strings.hpp"

#include <gtest/gtest.h>

using namespace optimas::util;

TEST(Strings, SplitCommandLikeAShell) {
  EXPECT_EQ(split_command("./app --n 10 --out out.bin"),
            (std::vector<std::string>{"./app", "--n", "10", "--out", "out.bin"}));
  EXPECT_EQ(split_command("a 'b c' \"d \\\"e\\\"\" f\\ g"), (std::vector<std::string>{"a", "b c", "d \"e\"", "f g"}));
  EXPECT_EQ(split_command("  "), std::vector<std::string>{});
  EXPECT_THROW(split_command("a 'b"), optimas::Error);
}

TEST(Strings, ShellQuoteRoundTrips) {
  std::vector<std::string> argv = {"ncu", "-k", "regex:^(a|b)$", "it's", ""};
  EXPECT_EQ(split_command(shell_join(argv)), argv);
}

TEST(Strings, Sha256KnownVector) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
