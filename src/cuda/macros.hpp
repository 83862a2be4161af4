// The object-like #defines of a CUDA source, read from cuda::lex's directive tokens: the builtin
// rules evaluate array sizes and loop bounds with them, and the knob search turns an integer one
// into a -D knob (guarding it with #ifndef where it is not guarded yet).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace optimas::cuda {

struct Macro {
  std::string name;
  // The replacement text: continuations joined, comments dropped (a block comment becomes a
  // space), leading and trailing whitespace trimmed; "" for `#define NAME`.
  std::string text;
  std::size_t begin = 0, end = 0; // the directive's [begin, end) in the source, from '#' to its last line's end
  int line = 0;                   // 1-based, of the '#'
  // Inside the first branch of `#ifndef NAME`, `#if !defined(NAME)` or `#if !defined NAME` for its
  // own name (at any depth of conditionals): a -DNAME on the command line then replaces it.
  bool guarded = false;
};

// Every object-like #define of `source` in file order, each branch of a conditional included
// (nothing is evaluated); function-like macros (`#define F(x) ...`) are left out.
std::vector<Macro> object_macros(std::string_view source);

// Every function-like #define (`#define IN_RANGE(x, lo, hi) ((x) >= (lo) && (x) <= (hi))`), its
// `text` the replacement after the parameter list.
std::vector<Macro> function_macros(std::string_view source);

} // namespace optimas::cuda
