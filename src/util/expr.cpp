#include "util/expr.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace optimas::util {

// Deeper than this, in parentheses and prefix operators or in the tree built (`1+1+...+1` is a
// chain as long as its terms, and evaluation recurses down it), is refused: both recurse on the
// stack, and a constraint has no use for more.
constexpr int k_max_depth = 200;

// Recursive descent, one function per precedence level (|| && ==/!= </<=/>/>= +/- * / % unary).
class Expr::Parser {
public:
  Parser(const std::string& text, std::vector<Node>& nodes) : m_text(text), m_nodes(nodes) {}

  int parse() {
    skip();
    if (m_pos >= m_text.size()) throw ExprError(1, "the expression is empty");
    int root = lor();
    skip();
    if (m_pos < m_text.size())
      throw ExprError(m_pos + 1, "unexpected \"" + std::string(1, m_text[m_pos]) + "\" (an operator or the end expected)");
    return root;
  }

private:
  void skip() {
    while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos]))) ++m_pos;
  }
  bool take(std::string_view op) {
    skip();
    if (m_text.compare(m_pos, op.size(), op) != 0) return false;
    // "<" must not take the first half of "<=", nor "!" that of "!=", nor "=" alone.
    if (op.size() == 1 && m_pos + 1 < m_text.size() && m_text[m_pos + 1] == '=' && (op == "<" || op == ">" || op == "!"))
      return false;
    m_pos += op.size();
    return true;
  }
  int add(Op op, int left, int right, std::size_t column) {
    int depth = 1 + std::max(left < 0 ? 0 : m_depth[left], right < 0 ? 0 : m_depth[right]);
    if (depth > k_max_depth)
      throw ExprError(column, "the expression is nested more than " + std::to_string(k_max_depth) + " operators deep");
    m_nodes.push_back({op, 0, {}, left, right, column});
    m_depth.push_back(depth);
    return static_cast<int>(m_nodes.size()) - 1;
  }
  int leaf(Node node) {
    m_nodes.push_back(std::move(node));
    m_depth.push_back(1);
    return static_cast<int>(m_nodes.size()) - 1;
  }
  // Counts one level of parentheses or prefix operators while it lives.
  struct Nesting {
    Nesting(Parser& p, std::size_t column) : m_parser(p) {
      if (++p.m_nesting > k_max_depth)
        throw ExprError(column, "the expression nests parentheses and prefix operators more than " +
                                    std::to_string(k_max_depth) + " deep");
    }
    ~Nesting() { --m_parser.m_nesting; }
    Parser& m_parser;
  };
  // One level of left-associative binary operators.
  template <typename Next> int level(std::initializer_list<std::pair<const char*, Op>> ops, Next next) {
    int left = next();
    for (;;) {
      bool found = false;
      for (const auto& [text, op] : ops) {
        std::size_t column = (skip(), m_pos + 1);
        if (take(text)) {
          left = add(op, left, next(), column);
          found = true;
          break;
        }
      }
      if (!found) return left;
    }
  }
  int lor() {
    return level({{"||", Op::lor}}, [this] { return land(); });
  }
  int land() {
    return level({{"&&", Op::land}}, [this] { return equality(); });
  }
  int equality() {
    return level({{"==", Op::eq}, {"!=", Op::ne}}, [this] { return relation(); });
  }
  int relation() {
    return level({{"<=", Op::le}, {">=", Op::ge}, {"<", Op::lt}, {">", Op::gt}}, [this] { return sum(); });
  }
  int sum() {
    return level({{"+", Op::add}, {"-", Op::sub}}, [this] { return product(); });
  }
  int product() {
    return level({{"*", Op::mul}, {"/", Op::div}, {"%", Op::mod}}, [this] { return unary(); });
  }
  int unary() {
    std::size_t column = (skip(), m_pos + 1);
    if (take("-")) {
      Nesting nesting(*this, column);
      return add(Op::neg, unary(), -1, column);
    }
    if (take("!")) {
      Nesting nesting(*this, column);
      return add(Op::lnot, unary(), -1, column);
    }
    if (take("+")) {
      Nesting nesting(*this, column);
      return unary();
    }
    return primary();
  }
  int primary() {
    skip();
    std::size_t column = m_pos + 1;
    if (m_pos >= m_text.size()) throw ExprError(column, "the expression ends where a value is expected");
    char c = m_text[m_pos];
    if (take("(")) {
      Nesting nesting(*this, column);
      int inner = lor();
      if (!take(")")) throw ExprError(m_pos + 1, "a \")\" is missing (the \"(\" is at column " + std::to_string(column) + ")");
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      std::int64_t v = 0;
      while (m_pos < m_text.size() && std::isdigit(static_cast<unsigned char>(m_text[m_pos]))) {
        int d = m_text[m_pos++] - '0';
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, d, &v))
          throw ExprError(column, "the number is too large for 64 bits");
      }
      if (m_pos < m_text.size() && (std::isalpha(static_cast<unsigned char>(m_text[m_pos])) || m_text[m_pos] == '_'))
        throw ExprError(m_pos + 1, "a number followed by letters (only whole numbers are allowed)");
      return leaf({Op::number, v, {}, -1, -1, column});
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t start = m_pos;
      while (m_pos < m_text.size() && (std::isalnum(static_cast<unsigned char>(m_text[m_pos])) || m_text[m_pos] == '_'))
        ++m_pos;
      return leaf({Op::name, 0, m_text.substr(start, m_pos - start), -1, -1, column});
    }
    throw ExprError(column, "unexpected \"" + std::string(1, c) + "\" (a number, a name or \"(\" expected)");
  }

  const std::string& m_text;
  std::vector<Node>& m_nodes;
  std::vector<int> m_depth; // of each node's subtree, beside m_nodes
  std::size_t m_pos = 0;
  int m_nesting = 0;
};

Expr Expr::parse(const std::string& text) {
  Expr e;
  e.m_text = text;
  Parser(text, e.m_nodes).parse();
  return e;
}

std::int64_t Expr::evaluate(const std::map<std::string, std::int64_t>& values) const {
  return eval(static_cast<int>(m_nodes.size()) - 1, values);
}

std::set<std::string> Expr::names() const {
  std::set<std::string> out;
  for (const auto& n : m_nodes)
    if (n.op == Op::name) out.insert(n.name);
  return out;
}

std::int64_t Expr::eval(int index, const std::map<std::string, std::int64_t>& values) const {
  const Node& n = m_nodes.at(static_cast<std::size_t>(index));
  auto overflow = [&]() -> std::int64_t {
    throw ExprError(n.column, "the value overflows 64 bits in \"" + m_text + "\"");
  };
  switch (n.op) {
  case Op::number:
    return n.value;
  case Op::name: {
    auto it = values.find(n.name);
    if (it == values.end()) throw ExprError(n.column, "unknown name \"" + n.name + "\"");
    return it->second;
  }
  case Op::neg: {
    std::int64_t v = eval(n.left, values), out = 0;
    return __builtin_sub_overflow(std::int64_t{0}, v, &out) ? overflow() : out;
  }
  case Op::lnot:
    return eval(n.left, values) == 0;
  case Op::land: // both sides are evaluated: a name unknown on either side is a mistake either way
  {
    bool a = eval(n.left, values) != 0, b = eval(n.right, values) != 0;
    return a && b;
  }
  case Op::lor: {
    bool a = eval(n.left, values) != 0, b = eval(n.right, values) != 0;
    return a || b;
  }
  default:
    break;
  }
  std::int64_t a = eval(n.left, values), b = eval(n.right, values), out = 0;
  switch (n.op) {
  case Op::add:
    return __builtin_add_overflow(a, b, &out) ? overflow() : out;
  case Op::sub:
    return __builtin_sub_overflow(a, b, &out) ? overflow() : out;
  case Op::mul:
    return __builtin_mul_overflow(a, b, &out) ? overflow() : out;
  case Op::div:
  case Op::mod:
    if (b == 0) throw ExprError(n.column, "division by zero in \"" + m_text + "\"");
    if (a == INT64_MIN && b == -1) return overflow();
    return n.op == Op::div ? a / b : a % b;
  case Op::lt:
    return a < b;
  case Op::le:
    return a <= b;
  case Op::gt:
    return a > b;
  case Op::ge:
    return a >= b;
  case Op::eq:
    return a == b;
  case Op::ne:
    return a != b;
  default:
    throw ExprError(n.column, "internal: unknown operator");
  }
}

} // namespace optimas::util
