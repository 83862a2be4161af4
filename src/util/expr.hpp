// A small integer expression language for constraints over named values (tune.constraints in
// optimas.yml: `BX * BY <= 1024`): integers, names, + - * / %, comparisons, && || !, unary
// minus and parentheses, with C's precedence. Evaluated in 64-bit arithmetic; an overflow, a
// division by zero or an unknown name is an error, never a wrapped or made-up value.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace optimas::util {

// What is wrong with an expression and where: `column` is 1-based in its text.
class ExprError : public std::runtime_error {
public:
  ExprError(std::size_t column, const std::string& what)
      : std::runtime_error(what), m_column(column) {}
  std::size_t column() const { return m_column; }

private:
  std::size_t m_column;
};

class Expr {
public:
  // Parses `text`; ExprError on a syntax error, naming the column.
  static Expr parse(const std::string& text);

  // The value with `values` for the names; comparisons and && || ! give 1 or 0. ExprError on a
  // name `values` lacks, a division by zero or an overflow.
  std::int64_t evaluate(const std::map<std::string, std::int64_t>& values) const;

  // The names it reads.
  std::set<std::string> names() const;
  const std::string& text() const { return m_text; }

private:
  enum class Op { number, name, neg, lnot, add, sub, mul, div, mod, lt, le, gt, ge, eq, ne, land, lor };
  struct Node {
    Op op;
    std::int64_t value = 0; // number
    std::string name;       // name
    int left = -1, right = -1;
    std::size_t column = 0;
  };
  class Parser;
  std::int64_t eval(int node, const std::map<std::string, std::int64_t>& values) const;

  std::string m_text;
  std::vector<Node> m_nodes; // children before parents; the root is last
};

} // namespace optimas::util
