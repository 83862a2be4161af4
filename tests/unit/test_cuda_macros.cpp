#include "cuda/macros.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace optimas::cuda;

namespace {

// The one define of `source`; fails the test when there is not exactly one.
Macro only(const std::string& source) {
  auto m = object_macros(source);
  EXPECT_EQ(m.size(), 1u) << source;
  return m.empty() ? Macro{} : m.front();
}

std::string names(const std::vector<Macro>& ms) {
  std::string out;
  for (const auto& m : ms) out += (out.empty() ? "" : " ") + m.name;
  return out;
}

} // namespace

TEST(CudaMacros, NameTextOffsetsAndLine) {
  std::string src = "#include <cstdio>\n\n#define TPB 256\nint x = TPB;\n";
  Macro m = only(src);
  EXPECT_EQ(m.name, "TPB");
  EXPECT_EQ(m.text, "256");
  EXPECT_EQ(m.line, 3);
  EXPECT_EQ(src.substr(m.begin, m.end - m.begin), "#define TPB 256");
  EXPECT_FALSE(m.guarded);
}

TEST(CudaMacros, CommentsAreNotPartOfTheText) {
  EXPECT_EQ(only("#define N 256 // threads per block\n").text, "256");
  EXPECT_EQ(only("#define N 4 /* a \"comment\" with __global__ inside */\n").text, "4");
  // Before the value, and between its words: a block comment is a space.
  EXPECT_EQ(only("#define N /* blocks */ 256\n").text, "256");
  EXPECT_EQ(only("#define N (A/**/+ B)\n").text, "(A + B)");
  // A "//" inside a string literal is no comment; a digit separator is no character literal.
  EXPECT_EQ(only("#define URL \"http://x\" // where\n").text, "\"http://x\"");
  EXPECT_EQ(only("#define BIG 1'000 // a thousand\n").text, "1'000");
  // The directive's offsets still cover its comment.
  std::string src = "#define N 256 // threads\nint y;\n";
  Macro m = only(src);
  EXPECT_EQ(src.substr(m.begin, m.end - m.begin), "#define N 256 // threads");
}

TEST(CudaMacros, ContinuationsAreJoined) {
  std::string src = "#define N \\\n  256\n#define SUM (A + \\\n B)\n#define M 8\n";
  auto ms = object_macros(src);
  ASSERT_EQ(ms.size(), 3u);
  EXPECT_EQ(ms[0].text, "256");
  EXPECT_EQ(ms[0].line, 1);
  EXPECT_EQ(src.substr(ms[0].begin, ms[0].end - ms[0].begin), "#define N \\\n  256");
  EXPECT_EQ(ms[1].text, "(A +   B)");
  EXPECT_EQ(ms[1].line, 3);
  EXPECT_EQ(ms[2].line, 5); // lines after a continuation are counted
}

TEST(CudaMacros, SpacesAndTabsAroundTheKeyword) {
  EXPECT_EQ(only("#  define N 64\n").name, "N");
  EXPECT_EQ(only("# define N 64\n").text, "64");
  EXPECT_EQ(only("  #\tdefine\tN\t64\n").text, "64");
  EXPECT_EQ(only("/* x */ #define N 64\n").text, "64");
}

TEST(CudaMacros, FunctionLikeAndOtherDirectivesAreLeftOut) {
  auto ms = object_macros("#define SQ(x) ((x) * (x))\n#define PAREN (256)\n#defined X 1\n#defineY 2\n"
                          "#undef PAREN\n#include \"a.h\"\n#pragma unroll\n#define\n#define 9 1\n#define EMPTY\n");
  ASSERT_EQ(names(ms), "PAREN EMPTY");
  EXPECT_EQ(ms[0].text, "(256)"); // a space before '(': object-like
  EXPECT_EQ(ms[1].text, "");
}

// Function-like macros on their own: the replacement after the parameter list.
TEST(CudaMacros, FunctionLikeMacrosHaveTheirReplacement) {
  auto ms = function_macros("#define SQ(x) ((x) * (x))\n#define PAREN (256)\n#define IN_RANGE(x, lo, hi) \\\n"
                            "  ((x) >= (lo) && (x) <= (hi)) // inclusive\n#define BAD(x\n");
  ASSERT_EQ(names(ms), "SQ IN_RANGE");
  EXPECT_EQ(ms[0].text, "((x) * (x))");
  EXPECT_EQ(ms[1].text, "((x) >= (lo) && (x) <= (hi))");
}

TEST(CudaMacros, DefinesInCommentsAndStringsAreNotDefines) {
  auto ms = object_macros("// #define A 1\n/* #define B 2 */\nconst char* s = \"#define C 3\";\n#define D 4\n");
  EXPECT_EQ(names(ms), "D");
}

TEST(CudaMacros, EveryDefinitionInFileOrderBothBranchesIncluded) {
  auto ms = object_macros("#ifdef FAST\n#define N 128\n#else\n#define N 256\n#endif\n#define M 1\n");
  EXPECT_EQ(names(ms), "N N M");
  EXPECT_EQ(ms[0].text, "128");
  EXPECT_EQ(ms[1].text, "256");
}

TEST(CudaMacros, GuardForItsOwnName) {
  for (const char* guard : {"#ifndef TPB", "#  ifndef  TPB // overridable", "#if !defined(TPB)", "#if !defined( TPB )",
                            "#if !defined TPB", "# if ! defined(TPB)"}) {
    Macro m = only(std::string(guard) + "\n#define TPB 256\n#endif\n");
    EXPECT_EQ(m.name, "TPB") << guard;
    EXPECT_TRUE(m.guarded) << guard;
  }
}

TEST(CudaMacros, GuardAnywhereInsideItsFirstBranch) {
  // Other directives between the guard and the define, and conditionals nested inside it.
  auto ms = object_macros("#ifndef TPB\n#include <cstdio>\n#define OTHER 1\n#ifdef FAST\n#define TPB 128\n#else\n"
                          "#define TPB 256\n#endif\n#endif\n");
  ASSERT_EQ(names(ms), "OTHER TPB TPB");
  EXPECT_FALSE(ms[0].guarded); // guarded by TPB's guard, not its own
  EXPECT_TRUE(ms[1].guarded);
  EXPECT_TRUE(ms[2].guarded);
}

TEST(CudaMacros, NotGuarded) {
  struct Case {
    const char* source;
    const char* why;
  };
  for (const auto& c : std::initializer_list<Case>{
           {"#define TPB 256\n", "no conditional"},
           {"#ifndef OTHER\n#define TPB 256\n#endif\n", "another name's guard"},
           {"#ifdef TPB\n#define TPB 256\n#endif\n", "#ifdef"},
           {"#if defined(TPB)\n#define TPB 256\n#endif\n", "#if defined"},
           {"#if !defined(TPB) && FAST\n#define TPB 256\n#endif\n", "a condition with more in it"},
           {"#ifndef TPB\n#else\n#define TPB 256\n#endif\n", "the #else branch"},
           {"#ifndef TPB\n#elif FAST\n#define TPB 256\n#endif\n", "an #elif branch"},
           {"#ifndef TPB\n#endif\n#define TPB 256\n", "after the guard's #endif"},
           {"#ifndef TPB\n#if FAST\n#endif\n#endif\n#define TPB 256\n", "after nested conditionals closed"},
           {"#ifndef TPBX\n#define TPB 256\n#endif\n", "a longer name"},
           {"// #ifndef TPB\n#define TPB 256\n", "a guard in a comment"},
       }) {
    Macro m = only(c.source);
    EXPECT_EQ(m.name, "TPB") << c.why;
    EXPECT_FALSE(m.guarded) << c.why;
  }
}

TEST(CudaMacros, UnbalancedConditionalsDoNotThrow) {
  auto ms = object_macros("#endif\n#else\n#define A 1\n#ifndef B\n#define B 2\n");
  ASSERT_EQ(names(ms), "A B");
  EXPECT_FALSE(ms[0].guarded);
  EXPECT_TRUE(ms[1].guarded);
}
