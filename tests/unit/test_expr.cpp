// util/expr: the constraint language of tune.constraints.
#include "util/expr.hpp"

#include <gtest/gtest.h>

using optimas::util::Expr;
using optimas::util::ExprError;

namespace {

std::int64_t eval(const std::string& text, const std::map<std::string, std::int64_t>& v = {}) {
  return Expr::parse(text).evaluate(v);
}

// The column an error names, or 0 when there is none.
std::size_t error_column(const std::string& text, const std::map<std::string, std::int64_t>& v = {}) {
  try {
    Expr::parse(text).evaluate(v);
  } catch (const ExprError& e) {
    return e.column();
  }
  return 0;
}

} // namespace

TEST(Expr, ArithmeticWithCPrecedence) {
  EXPECT_EQ(eval("1 + 2 * 3"), 7);
  EXPECT_EQ(eval("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval("10 - 4 - 3"), 3); // left-associative
  EXPECT_EQ(eval("17 / 5"), 3);
  EXPECT_EQ(eval("17 % 5"), 2);
  EXPECT_EQ(eval("-3 * -2"), 6);
  EXPECT_EQ(eval("- (2 + 3)"), -5);
}

TEST(Expr, ComparisonsAndLogic) {
  std::map<std::string, std::int64_t> v = {{"BX", 32}, {"BY", 16}};
  EXPECT_EQ(eval("BX * BY <= 1024", v), 1);
  EXPECT_EQ(eval("BX * BY < 512", v), 0);
  EXPECT_EQ(eval("BX >= BY && BX % BY == 0", v), 1);
  EXPECT_EQ(eval("BX != 32 || BY > 8", v), 1);
  EXPECT_EQ(eval("!(BX == 32)", v), 0);
  EXPECT_EQ(eval("1 || 0 && 0"), 1); // && binds tighter than ||
  EXPECT_EQ(eval("1 < 2 == 1"), 1);  // comparisons bind tighter than ==
}

TEST(Expr, Names) {
  auto e = Expr::parse("BX * BY <= MAX_THREADS && BX > 0");
  EXPECT_EQ(e.names(), (std::set<std::string>{"BX", "BY", "MAX_THREADS"}));
  EXPECT_EQ(e.text(), "BX * BY <= MAX_THREADS && BX > 0");
}

TEST(Expr, SyntaxErrorsNameTheColumn) {
  EXPECT_EQ(error_column(""), 1u);
  EXPECT_EQ(error_column("BX * "), 6u);     // a value is missing at the end
  EXPECT_EQ(error_column("BX = 4"), 4u);    // "=" is not a comparison
  EXPECT_EQ(error_column("(BX + 1"), 8u);   // the ")" is missing
  EXPECT_EQ(error_column("BX 4"), 4u);      // two values in a row
  EXPECT_EQ(error_column("3.5 < BX"), 2u);  // whole numbers only
  EXPECT_EQ(error_column("12abc"), 3u);
  EXPECT_EQ(error_column("BX & 4"), 4u);
  EXPECT_EQ(error_column("99999999999999999999"), 1u);
}

TEST(Expr, EvaluationErrors) {
  EXPECT_EQ(error_column("BX + 1", {}), 1u); // unknown name
  EXPECT_EQ(error_column("4 / (BX - 2)", {{"BX", 2}}), 3u);
  EXPECT_EQ(error_column("4 % 0"), 3u);
  EXPECT_EQ(error_column("BX * BX", {{"BX", 4000000000LL}}), 4u); // overflows 64 bits
  EXPECT_EQ(eval("-BX / -1", {{"BX", INT64_MAX}}), INT64_MAX);
  EXPECT_NE(error_column("(0 - BX - 1) / -1", {{"BX", INT64_MAX}}), 0u); // INT64_MIN / -1
}

// Parentheses, prefix operators and operator chains all recurse, in parsing or in evaluation:
// deep ones are an error naming where the limit was crossed, never a stack overflow (fuzz bug 10).
TEST(Expr, DepthIsBounded) {
  EXPECT_EQ(eval(std::string(150, '(') + "1" + std::string(150, ')')), 1);
  EXPECT_EQ(eval(std::string(150, '-') + "1"), 1); // an even count of negations
  std::string chain = "1";
  for (int i = 0; i < 150; ++i) chain += " + 1";
  EXPECT_EQ(eval(chain), 151);

  EXPECT_EQ(error_column(std::string(5000, '(') + "1" + std::string(5000, ')')), 201u);
  EXPECT_EQ(error_column(std::string(100000, '!') + "1"), 201u);
  EXPECT_EQ(error_column("+-" + std::string(100000, '(')), 201u);
  std::string long_chain = "1";
  for (int i = 0; i < 100000; ++i) long_chain += "+1";
  EXPECT_EQ(error_column(long_chain), 400u); // the 200th "+", at column 400, makes the 201st level
  try {
    Expr::parse(std::string(5000, '(') + "1" + std::string(5000, ')'));
  } catch (const ExprError& e) {
    EXPECT_NE(std::string(e.what()).find("200"), std::string::npos) << e.what();
  }
}
