#include "cuda/macros.hpp"

#include "cuda/source.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

namespace optimas::cuda {

namespace {

// A directive token as the preprocessor reads it, without its '#': continuations joined,
// comments dropped (a block comment is a space), string and character literals kept whole, so
// that a "//" inside one is no comment. A quote after a digit or letter is a digit separator
// (1'000), not a literal.
std::string logical_text(std::string_view d) {
  std::string out;
  for (std::size_t i = d.empty() || d[0] != '#' ? 0 : 1; i < d.size();) {
    char c = d[i];
    bool two = i + 1 < d.size();
    if (c == '\\' && two && d[i + 1] == '\n') {
      out += ' ';
      i += 2;
    } else if (c == '/' && two && d[i + 1] == '/') {
      break;
    } else if (c == '/' && two && d[i + 1] == '*') {
      std::size_t close = d.find("*/", i + 2);
      if (close == std::string_view::npos) break; // the comment runs past the directive
      out += ' ';
      i = close + 2;
    } else if (c == '"' || (c == '\'' && !(i > 0 && ident_char(d[i - 1])))) {
      std::size_t j = i + 1;
      while (j < d.size() && d[j] != c) j += d[j] == '\\' ? 2 : 1;
      j = std::min(d.size(), j + 1);
      out.append(d.substr(i, j - i));
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

// The name that `#ifndef NAME`, `#if !defined(NAME)` or `#if !defined NAME` guards; "" for any
// other conditional (its tokens are compared, so spacing does not matter).
std::string guard_name(std::string_view keyword, std::string_view condition) {
  auto t = lex(condition);
  auto is = [&](std::size_t i, std::string_view s) { return t[i].text == s; };
  auto name = [&](std::size_t i) { return t[i].kind == TokenKind::identifier ? std::string(t[i].text) : ""; };
  if (keyword == "ifndef") return t.size() == 1 ? name(0) : "";
  if (keyword != "if" || t.size() < 3 || !is(0, "!") || !is(1, "defined")) return "";
  if (t.size() == 3) return name(2);
  if (t.size() == 5 && is(2, "(") && is(4, ")")) return name(3);
  return "";
}

// The name and replacement of `#define` whose words after the keyword are `rest`, when it is
// of the kind asked for: function-like (a '(' right after the name; its replacement is what
// follows the parameter list) or object-like; nullopt for the other kind and for a define
// without a name.
std::optional<Macro> definition(std::string_view rest, bool function_like) {
  rest = util::trim(rest);
  if (rest.empty() || !ident_start(rest[0])) return std::nullopt;
  std::size_t e = 1;
  while (e < rest.size() && ident_char(rest[e])) ++e;
  if ((e < rest.size() && rest[e] == '(') != function_like) return std::nullopt;
  Macro m;
  m.name = std::string(rest.substr(0, e));
  if (function_like) {
    std::size_t close = rest.find(')', e);
    if (close == std::string_view::npos) return std::nullopt;
    e = close + 1;
  }
  m.text = std::string(util::trim(rest.substr(e)));
  return m;
}

std::vector<Macro> definitions(std::string_view source, bool function_like) {
  std::vector<Macro> out;
  // Per open conditional, the name its current branch guards ("" when none): the first branch
  // of `#ifndef NAME` guards NAME; #elif and #else branches guard nothing.
  std::vector<std::string> open;
  for (const auto& tok : lex(source)) {
    if (tok.kind != TokenKind::preprocessor) continue;
    std::string d = logical_text(tok.text);
    std::string_view rest = util::trim(d);
    std::size_t k = 0;
    while (k < rest.size() && ident_char(rest[k])) ++k;
    std::string_view keyword = rest.substr(0, k);
    rest.remove_prefix(k);
    if (keyword == "if" || keyword == "ifdef" || keyword == "ifndef") {
      open.push_back(guard_name(keyword, rest));
    } else if (keyword == "elif" || keyword == "else" || keyword == "elifdef" || keyword == "elifndef") {
      if (!open.empty()) open.back().clear();
    } else if (keyword == "endif") {
      if (!open.empty()) open.pop_back();
    } else if (keyword == "define") {
      auto m = definition(rest, function_like);
      if (!m) continue;
      m->begin = tok.offset;
      m->end = tok.offset + tok.text.size();
      m->line = tok.line;
      m->guarded = std::find(open.begin(), open.end(), m->name) != open.end();
      out.push_back(std::move(*m));
    }
  }
  return out;
}

} // namespace

std::vector<Macro> object_macros(std::string_view source) {
  return definitions(source, false);
}

std::vector<Macro> function_macros(std::string_view source) {
  return definitions(source, true);
}

} // namespace optimas::cuda
