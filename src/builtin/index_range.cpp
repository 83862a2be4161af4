// The index analysis behind the local_to_registers rule (local.cpp): local arrays,
// constant-trip loops, variables assigned once, the interval an index expression lies in, and a
// statement's extent, all over cuda::lex tokens.
#include "builtin/access.hpp"
#include "builtin/local.hpp"

#include "cuda/source.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <set>

namespace optimas::builtin::local {

namespace {

// Exact for the magnitudes intervals hold (below 2^63): long double has a 64-bit mantissa.
long long sat(long double v) {
  return v > k_inf ? k_inf : v < -k_inf ? -k_inf : static_cast<long long>(v);
}

} // namespace

bool is_assignment_op(const std::vector<cuda::Token>& t, std::size_t i) {
  // `=` not part of ==, <=, >=, !=; or the `=` of a compound assignment.
  if (t[i].text != "=") return false;
  if (i + 1 < t.size() && t[i + 1].text == "=") return false;
  if (i > 0 && (t[i - 1].text == "=" || t[i - 1].text == "!")) return false;
  if (i > 1 && (t[i - 1].text == "<" || t[i - 1].text == ">") && t[i - 2].text != t[i - 1].text) return false;
  return true;
}

// Identifiers assigned (=, op=, ++, --) anywhere in [b, e).
std::set<std::string> assigned(const std::vector<cuda::Token>& t, std::size_t b, std::size_t e) {
  std::set<std::string> out;
  for (std::size_t i = b; i < e && i < t.size(); ++i) {
    if (t[i].kind != cuda::TokenKind::identifier) continue;
    std::size_t j = i + 1;
    if (j < t.size() && t[j].text == "[") j = matching_token(t, j) + 1;
    if (j >= t.size()) continue;
    bool compound = j + 1 < t.size() && t[j + 1].text == "=" && t[j].text.size() == 1 &&
                    std::string_view("+-*/%&|^").find(t[j].text) != std::string_view::npos;
    bool incdec = (j + 1 < t.size() && (t[j].text == "+" || t[j].text == "-") && t[j + 1].text == t[j].text) ||
                  (i > 1 && (t[i - 1].text == "+" || t[i - 1].text == "-") && t[i - 2].text == t[i - 1].text);
    if (is_assignment_op(t, j) || compound || incdec) out.insert(std::string(t[i].text));
  }
  return out;
}

std::string tokens_text(const Facts& f, std::size_t b, std::size_t e) {
  const auto& t = *f.t;
  if (b >= e) return {};
  return std::string(f.body.substr(t[b].offset, t[e - 1].offset + t[e - 1].text.size() - t[b].offset));
}

namespace {

// Interval arithmetic over an index expression: a recursive-descent parser like ConstantParser.
class IntervalParser {
public:
  IntervalParser(const Facts& f, std::size_t b, std::size_t e, std::size_t where, int depth)
      : m_f(f), m_t(*f.t), m_at(b), m_end(e), m_where(where), m_depth(depth) {}

  std::optional<Interval> parse() {
    auto v = bit_and();
    if (!v || m_at != m_end) return std::nullopt;
    return v;
  }

private:
  bool at(std::string_view s, std::size_t ahead = 0) const {
    return m_at + ahead < m_end && m_t[m_at + ahead].text == s;
  }
  static Interval join(const Interval& a, const Interval& b, long long lo, long long hi) {
    return {lo, hi, a.data || b.data};
  }

  std::optional<Interval> bit_and() {
    auto a = shift();
    while (a && at("&") && !at("&", 1)) {
      ++m_at;
      auto b = shift();
      if (!b) return std::nullopt;
      // x & m lies in [0, m] for any x when m >= 0 (two's complement).
      long long hi = k_inf;
      if (b->lo >= 0) hi = std::min(hi, b->hi);
      if (a->lo >= 0) hi = std::min(hi, a->hi);
      a = join(*a, *b, hi < k_inf ? 0 : -k_inf, hi);
    }
    return a;
  }
  std::optional<Interval> shift() {
    auto a = additive();
    while (a && at(">") && at(">", 1)) {
      m_at += 2;
      auto b = additive();
      if (!b) return std::nullopt;
      if (a->lo >= 0 && b->lo >= 0 && b->lo < 63)
        a = join(*a, *b, b->hi < 63 ? a->lo >> b->hi : 0, a->hi >= k_inf ? k_inf : a->hi >> b->lo);
      else
        a = join(*a, *b, -k_inf, k_inf);
    }
    return a;
  }
  std::optional<Interval> additive() {
    auto a = multiplicative();
    while (a && (at("+") || at("-")) && !at("=", 1) && !at(m_t[m_at].text, 1)) {
      bool plus = at("+");
      ++m_at;
      auto b = multiplicative();
      if (!b) return std::nullopt;
      auto bound = [](long long x) { return x <= -k_inf || x >= k_inf; };
      long long lo = plus ? (bound(a->lo) || bound(b->lo) ? -k_inf : sat(static_cast<long double>(a->lo) + b->lo))
                          : (bound(a->lo) || bound(b->hi) ? -k_inf : sat(static_cast<long double>(a->lo) - b->hi));
      long long hi = plus ? (bound(a->hi) || bound(b->hi) ? k_inf : sat(static_cast<long double>(a->hi) + b->hi))
                          : (bound(a->hi) || bound(b->lo) ? k_inf : sat(static_cast<long double>(a->hi) - b->lo));
      a = join(*a, *b, lo, hi);
    }
    return a;
  }
  std::optional<Interval> multiplicative() {
    auto a = unary();
    while (a && (at("*") || at("%") || at("/")) && !at("=", 1)) {
      std::string_view op = m_t[m_at++].text;
      auto b = unary();
      if (!b) return std::nullopt;
      if (op == "%") {
        // x % n: [0, n-1] for x >= 0, else (-(n-1), n-1); n a positive constant.
        if (b->lo > 0 && b->lo == b->hi)
          a = join(*a, *b, a->lo >= 0 ? 0 : -(b->lo - 1), a->lo >= 0 ? std::min(a->hi, b->lo - 1) : b->lo - 1);
        else
          a = join(*a, *b, -k_inf, k_inf);
      } else if (a->bounded() && b->bounded() && (op == "*" || (b->lo > 0))) {
        auto apply = [&](long long x, long long y) -> long double {
          return op == "*" ? static_cast<long double>(x) * y : static_cast<long double>(x / y);
        };
        long double c[4] = {apply(a->lo, b->lo), apply(a->lo, b->hi), apply(a->hi, b->lo), apply(a->hi, b->hi)};
        a = join(*a, *b, sat(*std::min_element(c, c + 4)), sat(*std::max_element(c, c + 4)));
      } else {
        a = join(*a, *b, -k_inf, k_inf);
      }
    }
    return a;
  }
  std::optional<Interval> unary() {
    if (at("-") && !at("-", 1)) {
      ++m_at;
      auto v = unary();
      if (!v) return std::nullopt;
      return Interval{v->hi >= k_inf ? -k_inf : -v->hi, v->lo <= -k_inf ? k_inf : -v->lo, v->data};
    }
    if (at("(")) {
      // A cast: (int), (unsigned), (unsigned int), (uint32_t).
      std::size_t close = matching_token(m_t, m_at);
      std::vector<std::string> words;
      bool cast = close < m_end && close > m_at + 1;
      for (std::size_t x = m_at + 1; cast && x < close; ++x) {
        cast = m_t[x].kind == cuda::TokenKind::identifier;
        words.push_back(std::string(m_t[x].text));
      }
      static const std::set<std::string> k_int_types = {"int",     "unsigned",  "unsigned int", "uint32_t",
                                                        "int32_t", "long long", "size_t"};
      if (cast && k_int_types.count(util::join(words, " "))) {
        m_at = close + 1;
        auto v = unary();
        if (!v) return std::nullopt;
        bool to_unsigned = words[0] == "unsigned" || words[0] == "uint32_t" || words[0] == "size_t";
        if (to_unsigned && v->lo < 0) return Interval{0, k_inf, v->data};
        return v;
      }
    }
    return postfix();
  }
  std::optional<Interval> postfix() {
    if (m_at >= m_end) return std::nullopt;
    const cuda::Token& tok = m_t[m_at];
    if (tok.text == "(") {
      std::size_t close = matching_token(m_t, m_at);
      if (close >= m_end) return std::nullopt;
      auto v = IntervalParser(m_f, m_at + 1, close, m_where, m_depth).parse();
      m_at = close + 1;
      return v;
    }
    ++m_at;
    if (tok.kind == cuda::TokenKind::number) {
      auto v = constant_value(tok.text, *m_f.macros);
      if (!v) return std::nullopt;
      return Interval{*v, *v, false};
    }
    if (tok.kind != cuda::TokenKind::identifier) return std::nullopt;
    std::string name(tok.text);
    if (at("(")) return call(name);
    if (at("[") || at(".") || at("->")) {
      // Data: an element or a member (threadIdx.x, p[i]); skip it whole.
      while (at("[") || at(".") || at("->")) {
        if (at("[")) {
          m_at = matching_token(m_t, m_at) + 1;
        } else {
          m_at += 2;
        }
      }
      return m_at <= m_end ? std::optional<Interval>(Interval{}) : std::nullopt;
    }
    if (auto c = constant_value(name, *m_f.macros)) return Interval{*c, *c, false};
    for (const auto& l : m_f.loops)
      if (l.var == name && l.for_tok < m_where && m_where <= l.body_end) return Interval{l.lo, l.hi, false};
    auto once = m_f.once.find(name);
    if (once != m_f.once.end() && m_depth < 8) {
      auto v = IntervalParser(m_f, once->second.first, once->second.second, once->second.first, m_depth + 1).parse();
      if (v) return Interval{v->lo, v->hi, true};
    }
    return Interval{};
  }
  std::optional<Interval> call(const std::string& name) {
    std::size_t close = matching_token(m_t, m_at);
    if (close >= m_end) return std::nullopt;
    std::vector<std::pair<std::size_t, std::size_t>> args;
    std::size_t start = m_at + 1;
    int depth = 0;
    for (std::size_t x = m_at + 1; x < close; ++x) {
      if (m_t[x].text == "(" || m_t[x].text == "[") ++depth;
      if (m_t[x].text == ")" || m_t[x].text == "]") --depth;
      if (depth == 0 && m_t[x].text == ",") {
        args.push_back({start, x});
        start = x + 1;
      }
    }
    args.push_back({start, close});
    m_at = close + 1;
    bool is_min = name == "min" || name == "umin", is_max = name == "max" || name == "umax";
    if ((!is_min && !is_max) || args.size() != 2) return Interval{};
    auto a = IntervalParser(m_f, args[0].first, args[0].second, m_where, m_depth).parse();
    auto b = IntervalParser(m_f, args[1].first, args[1].second, m_where, m_depth).parse();
    if (!a || !b) return std::nullopt;
    return is_min ? join(*a, *b, std::min(a->lo, b->lo), std::min(a->hi, b->hi))
                  : join(*a, *b, std::max(a->lo, b->lo), std::max(a->hi, b->hi));
  }

  const Facts& m_f;
  const std::vector<cuda::Token>& m_t;
  std::size_t m_at, m_end, m_where;
  int m_depth;
};

} // namespace

std::optional<Interval> index_interval(const Facts& f, std::size_t b, std::size_t e, std::size_t where) {
  return IntervalParser(f, b, e, where, 0).parse();
}

// Constant-trip loops: for (int v = A; v < B; ++v | v++ | v += 1), A and B constants, v not
// assigned in the body.
std::vector<ConstLoop> constant_loops(const Facts& f, int base_line) {
  const auto& t = *f.t;
  std::vector<ConstLoop> out;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].text != "for" || t[i + 1].text != "(") continue;
    auto ext = loop_extent(t, i);
    std::vector<std::size_t> semis;
    for (std::size_t x = i + 2; x < ext.close; ++x)
      if (t[x].text == ";") semis.push_back(x);
    if (semis.size() != 2) continue;
    std::size_t v = i + 3;
    if (!(t[i + 2].text == "int" || t[i + 2].text == "unsigned") || v + 1 >= semis[0] || t[v + 1].text != "=") continue;
    std::string var(t[v].text);
    auto lo = constant_value(tokens_text(f, v + 2, semis[0]), *f.macros);
    std::size_t c = semis[0] + 1;
    if (!lo || c + 2 > semis[1] || t[c].text != var || t[c + 1].text != "<") continue;
    bool inclusive = t[c + 2].text == "=";
    auto hi = constant_value(tokens_text(f, c + (inclusive ? 3 : 2), semis[1]), *f.macros);
    std::string step = util::join(
        [&] {
          std::vector<std::string> w;
          for (std::size_t x = semis[1] + 1; x < ext.close; ++x) w.push_back(std::string(t[x].text));
          return w;
        }(),
        "");
    if (!hi || (step != "++" + var && step != var + "++" && step != var + "+=1")) continue;
    if (assigned(t, ext.close + 1, ext.body_end + 1).count(var)) continue;
    out.push_back({var, *lo, inclusive ? *hi : *hi - 1, i, ext.body_end, base_line + t[i].line});
  }
  return out;
}

// Variables given a value once, at their declaration (`int b = key & 15;`), and never again.
std::map<std::string, std::pair<std::size_t, std::size_t>> assigned_once(const std::vector<cuda::Token>& t) {
  std::map<std::string, int> count;
  for (const auto& name : assigned(t, 0, t.size())) count[name] = 0;
  std::map<std::string, std::pair<std::size_t, std::size_t>> decl;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i].kind != cuda::TokenKind::identifier || !is_assignment_op(t, i + 1)) continue;
    std::string_view before = t[i - 1].text;
    if (t[i - 1].kind != cuda::TokenKind::identifier || before == "return" || before == "else" || before == "do" ||
        before == "case") {
      ++count[std::string(t[i].text)]; // a plain assignment
      continue;
    }
    std::size_t e = i + 2;
    for (int depth = 0; e < t.size(); ++e) {
      if (t[e].text == "(" || t[e].text == "[") ++depth;
      if (t[e].text == ")" || t[e].text == "]") --depth;
      if (depth < 0 || (depth == 0 && (t[e].text == ";" || t[e].text == ","))) break;
    }
    std::string name(t[i].text);
    ++count[name];
    decl[name] = {i + 2, e};
  }
  // Increments and compound assignments count too.
  std::map<std::string, std::pair<std::size_t, std::size_t>> out;
  for (const auto& [name, range] : decl) {
    int writes = 0;
    for (std::size_t i = 0; i + 2 < t.size(); ++i) {
      if (t[i].text != name) continue;
      bool incdec = (t[i + 1].text == "+" || t[i + 1].text == "-") && t[i + 2].text == t[i + 1].text;
      bool pre = i > 1 && (t[i - 1].text == "+" || t[i - 1].text == "-") && t[i - 2].text == t[i - 1].text;
      bool compound =
          (t[i + 2].text == "=" && std::string_view("+-*/%&|^").find(t[i + 1].text) != std::string_view::npos) ||
          (i + 3 < t.size() && (t[i + 1].text == "<" || t[i + 1].text == ">") && t[i + 2].text == t[i + 1].text &&
           t[i + 3].text == "=");
      if (incdec || pre || compound) ++writes;
    }
    if (count[name] == 1 && writes == 0) out[name] = range;
  }
  return out;
}

std::vector<LocalArray> local_arrays(const Facts& f) {
  const auto& t = *f.t;
  std::vector<LocalArray> out;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i].kind != cuda::TokenKind::identifier || t[i + 1].text != "[" ||
        t[i - 1].kind != cuda::TokenKind::identifier || t[i - 1].text == "return")
      continue;
    std::size_t s = i - 1;
    while (s > 0 && t[s - 1].kind == cuda::TokenKind::identifier) --s;
    if (s > 0 && t[s - 1].text != ";" && t[s - 1].text != "{" && t[s - 1].text != "}") continue;
    std::vector<std::string> words;
    for (std::size_t x = s; x < i; ++x) words.push_back(std::string(t[x].text));
    bool plain = std::none_of(words.begin(), words.end(), [](const std::string& w) {
      return w == "__shared__" || w == "static" || w == "extern" || w == "__constant__" || w == "typedef";
    });
    std::size_t close = matching_token(t, i + 1);
    if (!plain || close + 1 >= t.size() || t[close + 1].text == "[") continue;
    LocalArray a;
    a.type = bare_type(words);
    a.name = std::string(t[i].text);
    a.size_text = tokens_text(f, i + 2, close);
    a.n = constant_value(a.size_text, *f.macros);
    a.first = s;
    a.last = close;
    while (a.last < t.size() && t[a.last].text != ";") ++a.last;
    out.push_back(std::move(a));
  }
  return out;
}

namespace {

// The token that opens the bracket closed at `close`, scanning back; npos when none does.
std::size_t opening_token(const std::vector<cuda::Token>& t, std::size_t close) {
  std::string_view c = t[close].text, o = c == "]" ? "[" : c == ")" ? "(" : "{";
  int depth = 0;
  for (std::size_t x = close + 1; x-- > 0;) {
    if (t[x].text == c) ++depth;
    if (t[x].text == o && --depth == 0) return x;
  }
  return std::string::npos;
}

} // namespace

// The statement around token `u`: [begin, end) with t[end] its ';'; nullopt when `u` is inside
// a condition, a loop header, a call's arguments or a braced block we do not rewrite.
std::optional<std::pair<std::size_t, std::size_t>> statement_around(const std::vector<cuda::Token>& t, std::size_t u) {
  std::size_t b = u;
  while (b > 0) {
    std::string_view w = t[b - 1].text;
    if (w == ";" || w == "{" || w == "}" || w == "else" || w == "do") break;
    if (w == "(" || w == "[" || w == "," || w == "?" || w == ":") return std::nullopt;
    if (w == ")" || w == "]") {
      std::size_t open = opening_token(t, b - 1);
      if (open == std::string::npos) return std::nullopt;
      if (w == ")" && open > 0 &&
          (t[open - 1].text == "if" || t[open - 1].text == "for" || t[open - 1].text == "while"))
        break; // the statement is the body of a control statement
      b = open;
      continue;
    }
    --b;
  }
  std::size_t e = u;
  for (int depth = 0; e < t.size(); ++e) {
    std::string_view w = t[e].text;
    if (w == "(" || w == "[") ++depth;
    if (w == ")" || w == "]") --depth;
    if (w == "{" || w == "}" || depth < 0) return std::nullopt;
    if (depth == 0 && w == ";") break;
  }
  if (e >= t.size()) return std::nullopt;
  return std::pair{b, e};
}

// Side effects in [b, e) besides `allowed` assignment operators: assignments, ++/--, impure calls.
int side_effects(const std::vector<cuda::Token>& t, std::size_t b, std::size_t e) {
  int n = 0;
  for (std::size_t x = b; x < e; ++x) {
    if (is_assignment_op(t, x)) ++n;
    if (x + 1 < e && (t[x].text == "+" || t[x].text == "-") && t[x + 1].text == t[x].text) {
      ++n;
      ++x;
    }
    if (t[x].kind == cuda::TokenKind::identifier && x + 1 < e && t[x + 1].text == "(" &&
        !access::pure_call(t[x].text) && !(t[x].text == "if" || t[x].text == "for" || t[x].text == "while"))
      n += 2; // never allowed
  }
  return n;
}

std::string indent_of(const std::string& line) {
  return line.substr(0, line.find_first_not_of(" \t"));
}

} // namespace optimas::builtin::local
