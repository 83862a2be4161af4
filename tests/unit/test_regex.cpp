#include "util/regex.hpp"

#include <gtest/gtest.h>

#include <string>

using optimas::util::BadRegex;
using optimas::util::compile_regex;

TEST(Regex, CompilesOrdinaryPatterns) {
  EXPECT_EQ(compile_regex(R"(kernel_time_ms: ([0-9.]+))").mark_count(), 1u);
  EXPECT_TRUE(std::regex_search("a aaa", compile_regex("a{3}")));
  EXPECT_TRUE(std::regex_search("xx", compile_regex("x{1,1000}")));
  EXPECT_TRUE(std::regex_search("abab", compile_regex(R"((ab)\1)")));
}

TEST(Regex, RefusesRepeatCountsOverTheLimit) {
  EXPECT_THROW(compile_regex("x{7777777777777777777}"), BadRegex); // UB inside libstdc++ otherwise
  EXPECT_THROW(compile_regex("x{1001}"), BadRegex);
  EXPECT_THROW(compile_regex("x{2,5000}"), BadRegex);
  EXPECT_THROW(compile_regex("x{12345,}"), BadRegex);
  EXPECT_THROW(compile_regex(R"((a)\7777777777777777777777)"), BadRegex); // a back-reference, read the same way
  try {
    compile_regex("(a){2000}");
    FAIL() << "no error";
  } catch (const BadRegex& e) {
    EXPECT_NE(std::string(e.what()).find("2000"), std::string::npos) << e.what();
  }
}

TEST(Regex, ControlEscapesTakeTheirLetter) {
  // `\c\` is one control character (its letter a backslash), so what follows is a repeat or a
  // back-reference: the check must see them as libstdc++ does (the fuzzer found the second).
  EXPECT_THROW(compile_regex(R"(\c\{5000})"), BadRegex);
  EXPECT_THROW(compile_regex(R"((a)\c\\99999)"), BadRegex);
  EXPECT_NO_THROW(compile_regex(R"(\cA+)")); // (libstdc++ reads the letter itself, not a control code)
  // No run of digits long enough to overflow libstdc++'s long, wherever it stands.
  EXPECT_THROW(compile_regex("1234567890123456789"), BadRegex);
  EXPECT_NO_THROW(compile_regex("123456789012345678"));
}

TEST(Regex, BracesThatAreNotRepeatsAreLeftAlone) {
  // An escaped brace and one in a bracket expression are characters, not repeat counts.
  EXPECT_TRUE(std::regex_search("{99999}", compile_regex(R"(\{99999\})")));
  EXPECT_TRUE(std::regex_search("9", compile_regex("[{99999}]")));
}

TEST(Regex, RefusesLongAndInvalidPatterns) {
  EXPECT_THROW(compile_regex(std::string(optimas::util::k_regex_max_length + 1, 'a')), BadRegex);
  EXPECT_NO_THROW(compile_regex(std::string(optimas::util::k_regex_max_length, 'a')));
  EXPECT_THROW(compile_regex("(unclosed"), BadRegex);
}

// libstdc++ backtracks without a step limit: (a+)+ against a line of a's ending in b takes
// exponential time, so patterns that can match one stretch of text in many ways are refused.
TEST(Regex, RefusesCatastrophicBacktracking) {
  for (const char* bad : {"(a+)+", "(a*)*", "(a|a)*", "(x*)*(x*)*y", "kernel: ((\\d+)+) ms", "(a|ab)+", "(?:a+)+",
                          "([0-9]+,?)+", "(a|)*", "(b?a|a)+", "((a)+){2}", "(.*)+", "(a+){2,}"}) {
    try {
      compile_regex(bad);
      ADD_FAILURE() << bad << " is accepted";
    } catch (const BadRegex& e) {
      EXPECT_NE(std::string(e.what()).find("catastrophic backtracking"), std::string::npos) << bad << ": " << e.what();
    }
  }
  // Repeats side by side, a repeated group of plain characters, alternatives with different
  // first characters, and an optional group holding a repeat are left alone.
  for (const char* good : {R"(kernel_ms: ([0-9.eE+-]+))", "(ab)+", "(ms|us)+", "time: ([0-9]+(\\.[0-9]+)?) ms", "a+b+",
                           "(a+)?", "(a+){1}", "[(a+)+]", "\\(a+\\)+", "(ab){2}", R"((\d+) (ms|us|ns))"})
    EXPECT_NO_THROW(compile_regex(good)) << good;
  // However long the repeated group.
  EXPECT_THROW(compile_regex("(" + std::string(4000, 'a') + "+)+"), BadRegex);
}
