#include "util/regex.hpp"

#include <fmt/format.h>

#include <cctype>
#include <vector>

namespace optimas::util {

namespace {

std::size_t digits_at(const std::string& p, std::size_t i) {
  std::size_t j = i;
  while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) ++j;
  return j - i;
}

// The first repeat count {n}, {n,} or {n,m} over the limit, outside bracket expressions and
// escapes, or a back-reference \N of more than 4 digits (the compiler reads both into a long);
// 0 when there is none. Escapes are skipped as libstdc++'s scanner reads them: `\cX` is one
// control character, X included (the fuzzer found `\c\\9999...` read as `\c\` then a
// back-reference that this scan, one character short, had taken for an escaped backslash).
unsigned long too_large_repeat(const std::string& p) {
  bool in_brackets = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\') {
      if (digits_at(p, i + 1) > 4) return k_regex_max_repeat + 1;
      i += i + 1 < p.size() && p[i + 1] == 'c' ? 2 : 1;
    } else if (in_brackets) {
      in_brackets = c != ']';
    } else if (c == '[') {
      in_brackets = true;
      if (i + 1 < p.size() && p[i + 1] == ']') ++i; // "[]...]": the first ] is a member
    } else if (c == '{') {
      std::size_t j = i + 1;
      while (j < p.size() && (std::isdigit(static_cast<unsigned char>(p[j])) || p[j] == ',')) {
        std::size_t start = j;
        while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) ++j;
        // Counted without overflow: any run of more than 4 digits is over the limit anyway.
        if (j - start > 4) return k_regex_max_repeat + 1;
        if (j > start) {
          unsigned long n = std::stoul(p.substr(start, j - start));
          if (n > k_regex_max_repeat) return n;
        }
        if (j < p.size() && p[j] == ',') ++j;
      }
    }
  }
  return 0;
}

// Backtracking. libstdc++ matches by depth-first search without a step limit, so a pattern in which
// one stretch of text can be matched in exponentially many ways ((a+)+ against "aaaa...b") runs
// for ever on a line of the program's output. Such a pattern has a repeated group that itself
// holds a repeat, or holds alternatives that can begin with the same character; this scan finds
// both and refuses them (a few harmless patterns too, such as (ab+)+: write ab+(ab+)* or [ab]+).
// A repeat here is *, +, {n,} or {n,m} with m > 1; ? and {1} are not.
struct Group {
  std::size_t open = 0;                // where its '(' is
  bool inner_repeat = false;           // some atom inside it repeats
  std::vector<std::string> firsts{""}; // each alternative's first character ("" before one; "?" when unknown)
  bool first_pending = true;           // the current alternative has no atom yet
};

struct Quantifier {
  std::size_t end = 0;   // just past it (where it starts when there is none)
  bool repeats = false;  // *, +, {n,} or {n,m} with m > 1
  bool optional = false; // *, ? or {0,...}: the atom may match nothing
};

Quantifier quantifier(const std::string& p, std::size_t i) {
  Quantifier q{i, false, false};
  if (i >= p.size()) return q;
  if (p[i] == '*' || p[i] == '+') {
    q = {i + 1, true, p[i] == '*'};
  } else if (p[i] == '?') {
    q = {i + 1, false, true};
  } else if (p[i] == '{') {
    std::size_t close = p.find('}', i);
    std::string body = close == std::string::npos ? "" : p.substr(i + 1, close - i - 1);
    if (body.empty() || body.find_first_not_of("0123456789,") != std::string::npos || !std::isdigit(body[0]))
      return q; // not a repeat count: libstdc++ then refuses the brace or reads it as a character
    std::size_t comma = body.find(',');
    // Digits were bounded by too_large_repeat before this runs.
    unsigned long lo = std::stoul(body.substr(0, comma));
    q.repeats =
        comma == std::string::npos ? lo > 1 : comma + 1 == body.size() || std::stoul(body.substr(comma + 1)) > 1;
    q.optional = lo == 0;
    q.end = close + 1;
  }
  if (q.end > i && q.end < p.size() && p[q.end] == '?') ++q.end; // lazy: the same search, other order
  return q;
}

std::string backtracking_problem(const std::string& p) {
  std::vector<Group> stack(1);
  auto atom = [&](const std::string& first, std::size_t next) {
    Group& g = stack.back();
    Quantifier q = quantifier(p, next);
    if (g.first_pending) {
      // After an atom that may match nothing, the next one may begin the alternative too.
      g.firsts.back() = q.optional ? "?" : first;
      g.first_pending = false;
    }
    if (q.repeats) g.inner_repeat = true;
    return q.end;
  };
  for (std::size_t i = 0; i < p.size();) {
    char c = p[i];
    if (c == '\\') {
      std::size_t len = i + 1 < p.size() && p[i + 1] == 'c' ? 3 : 2;
      std::string esc = p.substr(i, len);
      // An escaped punctuation mark is that character; a class (\d, \w, ...) is not one character.
      bool literal = esc.size() == 2 && std::ispunct(static_cast<unsigned char>(esc[1]));
      i = atom(literal ? esc.substr(1) : "?", std::min(i + len, p.size()));
    } else if (c == '[') {
      std::size_t j = i + 1;
      if (j < p.size() && p[j] == '^') ++j;
      if (j < p.size() && p[j] == ']') ++j;
      while (j < p.size() && p[j] != ']') j += p[j] == '\\' ? 2 : 1;
      i = atom("?", std::min(j + 1, p.size()));
    } else if (c == '(') {
      Group g;
      g.open = i;
      stack.push_back(g);
      // (?: (?= (?!: the mark is not an atom
      i += i + 2 < p.size() && p[i + 1] == '?' ? 3 : 1;
    } else if (c == ')' && stack.size() > 1) {
      Group g = stack.back();
      stack.pop_back();
      Quantifier q = quantifier(p, i + 1);
      if (q.repeats) {
        std::string group = p.substr(g.open, i + 1 - g.open);
        if (g.inner_repeat)
          return fmt::format("the repeated group {} holds a repeat itself, so a long line can be split between the "
                             "two in exponentially many ways (catastrophic backtracking); repeat one of them only",
                             group);
        for (std::size_t a = 0; a < g.firsts.size(); ++a)
          for (std::size_t b = a + 1; b < g.firsts.size(); ++b)
            if (g.firsts[a].empty() || g.firsts[a] == "?" || g.firsts[a] == g.firsts[b] || g.firsts[b].empty() ||
                g.firsts[b] == "?")
              return fmt::format("the repeated group {} has alternatives that may begin with the same character, "
                                 "so a long line can be matched in exponentially many ways (catastrophic "
                                 "backtracking); begin each alternative with a different plain character",
                                 group);
      }
      Group& parent = stack.back();
      parent.inner_repeat = parent.inner_repeat || g.inner_repeat || q.repeats;
      if (parent.first_pending) {
        parent.firsts.back() = g.firsts.size() == 1 && !g.firsts[0].empty() && !q.optional ? g.firsts[0] : "?";
        parent.first_pending = false;
      }
      i = q.end;
    } else if (c == '|') {
      stack.back().firsts.push_back("");
      stack.back().first_pending = true;
      ++i;
    } else if (c == '^' || c == '$') {
      ++i; // anchors match no character
    } else {
      i = atom(c == '.' ? "?" : std::string(1, c), i + 1);
    }
  }
  return {};
}

} // namespace

std::regex compile_regex(const std::string& pattern) {
  if (pattern.size() > k_regex_max_length)
    throw BadRegex(
        fmt::format("it is {} characters long; at most {} are accepted", pattern.size(), k_regex_max_length));
  // Whatever the scan above misreads, no number libstdc++ reads into a long can overflow it.
  for (std::size_t i = 0; i < pattern.size(); ++i)
    if (std::size_t n = digits_at(pattern, i); n > 18)
      throw BadRegex(fmt::format("it has a run of {} digits; at most 18 are accepted", n));
    else
      i += n;
  if (unsigned long n = too_large_repeat(pattern))
    throw BadRegex(n > 9999
                       ? fmt::format("a repeat count or back-reference has more than 4 digits; repeats of at most {} "
                                     "are accepted",
                                     k_regex_max_repeat)
                       : fmt::format("a repeat count of {} is over the limit of {}", n, k_regex_max_repeat));
  if (std::string why = backtracking_problem(pattern); !why.empty()) throw BadRegex(why);
  try {
    return std::regex(pattern);
  } catch (const std::regex_error& e) {
    throw BadRegex(e.what());
  }
}

std::string regex_literal(const std::string& text) {
  static const std::string special = R"(\^$.|?*+()[]{}/)";
  std::string out;
  for (char c : text) {
    if (special.find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

} // namespace optimas::util
