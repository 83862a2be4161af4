// loads_in_flight's analysis (in_flight.hpp): which declarations and loads of a loop body may be
// made ahead of the bodies, and under which guards.
#include "builtin/in_flight.hpp"

#include <fmt/format.h>

namespace optimas::builtin::in_flight {

using access::Tokens;

namespace {

// Loads a body statement may read through: subscripts, `*` or `->` on any name.
bool loads(const Tokens& t, std::size_t b, std::size_t e) {
  for (std::size_t x = b; x < e; ++x)
    if (t[x].text == "[" || t[x].text == "->") return true;
  return false;
}

// The end of the statement starting at token x (its ';'), or `end` when none does.
std::size_t statement_end(const Tokens& t, std::size_t x, std::size_t end) {
  int depth = 0;
  for (; x < end; ++x) {
    std::string_view w = t[x].text;
    if (w == "(" || w == "[" || w == "{") ++depth;
    if (w == ")" || w == "]" || w == "}") --depth;
    if (depth == 0 && w == ";") return x;
  }
  return end;
}

bool on_lines(const Tokens& t, std::size_t b, std::size_t e, int base_line, const std::set<int>& lines) {
  for (int l = base_line + t[b].line; l <= base_line + t[e].line; ++l)
    if (lines.count(l)) return true;
  return false;
}

// The loads from pointer parameters `p[...]` in tokens [b, e), each into a value of its own
// (`in_l1`) that replaces it in the statement; under the guard [guard.first, guard.second) where
// that is not empty.
void extract_loads(const KernelInput& in, std::size_t b, std::size_t e, std::pair<std::size_t, std::size_t> guard,
                   Ahead& a, int& n) {
  const Tokens& t = in.tokens;
  for (std::size_t z = b; z + 1 < e; ++z) {
    if (t[z].kind != cuda::TokenKind::identifier || t[z + 1].text != "[" || (z > b && t[z - 1].text == ".")) continue;
    const cuda::Parameter* p = nullptr;
    for (const auto& q : in.fn.parameters)
      if (q.pointer && q.name == t[z].text) p = &q;
    std::string elem = p ? access::pointee(*p) : "";
    std::size_t close = access::matching(t, z + 1);
    if (elem.empty() || close >= e || (close + 1 < e && t[close + 1].text == "[")) continue;
    if (!side_effect(t, z + 2, close, in.pure_macros).empty()) continue;
    std::string name = fmt::format("{}_l{}", t[z].text, ++n);
    Hoisted h;
    h.type = elem, h.name = name, h.expr = access::rewrite(in.body, t, z, close + 1, {});
    h.first = z, h.semi = close, h.extracted = true;
    if (guard.second > guard.first) {
      h.guard = access::rewrite(in.body, t, guard.first, guard.second, {});
      h.guard_begin = guard.first, h.guard_end = guard.second;
    }
    a.decls.push_back(std::move(h));
    a.in_rest.push_back({z, close + 1, name});
    z = close;
  }
}

// A statement after the load's own that may give its loads too: an expression statement
// evaluated whole, or `if (GUARD) STATEMENT;` (braced or not, no else) with such a statement and a
// guard free of side effects. [begin, end) is the statement, `next` the token after it all.
struct Follower {
  std::size_t begin = 0, end = 0, next = 0;
  std::size_t guard_begin = 0, guard_end = 0; // empty where unguarded
};

bool evaluated_whole(const Tokens& t, std::size_t b, std::size_t e) {
  for (std::size_t y = b; y < e; ++y) {
    std::string_view w = t[y].text;
    bool twice = y + 1 < e && t[y + 1].text == w;
    if (w == "if" || w == "else" || w == "while" || w == "for" || w == "switch" || w == "do" || w == "?" || w == "{" ||
        w == "}" || ((w == "&" || w == "|") && twice))
      return false;
  }
  return true;
}

std::optional<Follower> follower(const Tokens& t, std::size_t x, std::size_t end, const std::set<std::string>& pure) {
  Follower f;
  if (x + 1 < end && t[x].text == "if" && t[x + 1].text == "(") {
    std::size_t close = access::matching(t, x + 1);
    if (close + 1 >= end || !side_effect(t, x + 2, close, pure).empty()) return std::nullopt;
    f.guard_begin = x + 2, f.guard_end = close;
    f.begin = close + 1;
    bool braced = t[f.begin].text == "{";
    if (braced) ++f.begin;
    f.end = statement_end(t, f.begin, end);
    if (f.end >= end) return std::nullopt;
    f.next = f.end + 1;
    if (braced) {
      if (f.next >= end || t[f.next].text != "}") return std::nullopt;
      ++f.next;
    }
    if (f.next < end && t[f.next].text == "else") return std::nullopt;
  } else {
    f.begin = x;
    f.end = statement_end(t, x, end);
    if (f.end >= end) return std::nullopt;
    f.next = f.end + 1;
  }
  if (!evaluated_whole(t, f.begin, f.end)) return std::nullopt;
  return f;
}

} // namespace

std::string side_effect(const Tokens& t, std::size_t b, std::size_t e, const std::set<std::string>& pure) {
  for (std::size_t x = b; x < e; ++x) {
    std::string_view w = t[x].text, next = x + 1 < e ? t[x + 1].text : "";
    std::string_view prev = x > b ? t[x - 1].text : "", prev2 = x > b + 1 ? t[x - 2].text : "";
    bool compare = prev == "=" || prev == "!" || ((prev == "<" || prev == ">") && prev2 != prev);
    if (((w == "+" || w == "-") && next == w) || (w == "=" && next != "=" && !compare))
      return fmt::format("`{}` assigns", access::text(t, b, e));
    if (t[x].kind == cuda::TokenKind::identifier && next == "(" && !access::pure_call(w) &&
        !access::arithmetic_type_word(w) && !pure.count(std::string(w)))
      return fmt::format("`{}` calls {}", access::text(t, b, e), w);
  }
  return "";
}

std::string assigned_read(const Tokens& t, const access::ForLoop& loop, const std::set<std::string>& declared,
                          std::size_t b, std::size_t e) {
  for (std::size_t x = b; x < e; ++x) {
    if (t[x].kind != cuda::TokenKind::identifier || x == loop.var || t[x].text == t[loop.var].text ||
        declared.count(std::string(t[x].text)))
      continue;
    if (x > 0 && (t[x - 1].text == "." || t[x - 1].text == "->")) continue;
    if (access::assigned(t, loop.body_begin, loop.body_end, t[x].text))
      return fmt::format("the body assigns {}, which an early load or the loop's condition reads", t[x].text);
  }
  return "";
}

std::optional<Ahead> ahead(const KernelInput& in, const access::ForLoop& loop, const std::set<int>& load_lines,
                           std::string& why) {
  const Tokens& t = in.tokens;
  Ahead a;
  std::size_t x = loop.body_begin, last_cause = 0;
  while (x < loop.body_end) {
    std::size_t semi = statement_end(t, x, loop.body_end);
    if (semi >= loop.body_end) break;
    std::size_t eq = x;
    while (eq < semi && t[eq].text != "=") ++eq;
    if (eq == semi || eq < x + 2 || t[eq - 1].kind != cuda::TokenKind::identifier || t[x].text == "auto" ||
        t[x].text == "return")
      break;
    bool type_words = true;
    for (std::size_t y = x; y + 1 < eq; ++y) type_words = type_words && t[y].kind == cuda::TokenKind::identifier;
    if (!type_words || !side_effect(t, eq + 1, semi, in.pure_macros).empty()) break;
    Hoisted& d = a.decls.emplace_back();
    d.type = access::text(t, x, eq - 1), d.name = std::string(t[eq - 1].text);
    d.expr = access::rewrite(in.body, t, eq + 1, semi, {}), d.first = x, d.semi = semi;
    if (on_lines(t, x, semi, in.base_line, load_lines) && loads(t, eq + 1, semi)) last_cause = a.decls.size();
    x = semi + 1;
  }
  if (last_cause > 0) {
    a.decls.resize(last_cause);
    a.rest_begin = a.decls.back().semi + 1;
    return a;
  }
  // The cause is the statement after the declarations: its loads move ahead, if it is evaluated
  // whole (no branch, no short-circuit, no conditional operator) and they come from parameters.
  std::size_t semi = statement_end(t, x, loop.body_end);
  if (x >= loop.body_end || semi >= loop.body_end || !on_lines(t, x, semi, in.base_line, load_lines)) {
    why = "the load it waits on is neither declared at the top of the loop body (`TYPE v = load;`) nor in the "
          "statement right after those declarations";
    return std::nullopt;
  }
  for (std::size_t y = x; y < semi; ++y) {
    std::string_view w = t[y].text;
    bool twice = y + 1 < semi && t[y + 1].text == w;
    if (w == "if" || w == "while" || w == "for" || w == "switch" || w == "do" || w == "?" ||
        ((w == "&" || w == "|") && twice))
      return why = fmt::format("the statement with the load (line {}) evaluates it under a condition",
                               in.base_line + t[x].line),
             std::nullopt;
  }
  int n = 0;
  extract_loads(in, x, semi, {}, a, n);
  if (a.in_rest.empty()) {
    why = fmt::format("the statement with the load (line {}) loads from no pointer parameter of a known element type",
                      in.base_line + t[x].line);
    return std::nullopt;
  }
  // The statements that follow, up to the first of another shape: their loads move ahead too, so
  // that all of an iteration's loads are in flight before the first use (a second load left in
  // the body would wait alone in every iteration).
  // A statement whose guard or loads read what the body assigns ends them.
  for (std::size_t y = semi + 1; y < loop.body_end;) {
    auto f = follower(t, y, loop.body_end, in.pure_macros);
    if (!f) break;
    Ahead more;
    int m = n;
    extract_loads(in, f->begin, f->end, {f->guard_begin, f->guard_end}, more, m);
    std::set<std::string> declared;
    for (const auto& d : a.decls) declared.insert(d.name);
    bool kept = assigned_read(t, loop, declared, f->guard_begin, f->guard_end).empty();
    for (const auto& d : more.decls) kept = kept && assigned_read(t, loop, declared, d.first, d.semi).empty();
    if (!kept) break;
    a.decls.insert(a.decls.end(), more.decls.begin(), more.decls.end());
    a.in_rest.insert(a.in_rest.end(), more.in_rest.begin(), more.in_rest.end());
    n = m;
    y = f->next;
  }
  a.rest_begin = x;
  return a;
}

} // namespace optimas::builtin::in_flight
