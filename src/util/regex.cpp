#include "util/regex.hpp"

#include <fmt/format.h>

#include <cctype>

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

} // namespace

std::regex compile_regex(const std::string& pattern) {
  if (pattern.size() > k_regex_max_length)
    throw BadRegex(fmt::format("it is {} characters long; at most {} are accepted", pattern.size(), k_regex_max_length));
  // Whatever the scan above misreads, no number libstdc++ reads into a long can overflow it.
  for (std::size_t i = 0; i < pattern.size(); ++i)
    if (std::size_t n = digits_at(pattern, i); n > 18)
      throw BadRegex(fmt::format("it has a run of {} digits; at most 18 are accepted", n));
    else
      i += n;
  if (unsigned long n = too_large_repeat(pattern))
    throw BadRegex(n > 9999 ? fmt::format("a repeat count or back-reference has more than 4 digits; repeats of at most {} "
                                          "are accepted",
                                          k_regex_max_repeat)
                            : fmt::format("a repeat count of {} is over the limit of {}", n, k_regex_max_repeat));
  try {
    return std::regex(pattern);
  } catch (const std::regex_error& e) {
    throw BadRegex(e.what());
  }
}

} // namespace optimas::util
