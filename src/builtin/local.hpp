// The index analysis the local_to_registers rule (local.cpp) stands on, over cuda::lex
// tokens of one kernel body (index_range.cpp): which local arrays it declares, which
// loops have a constant trip count, which variables are assigned once, the interval an index
// expression lies in, and a statement's extent.
#pragma once

#include "builtin/rules.hpp"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace optimas::builtin::local {

inline constexpr long long k_inf = 1LL << 62;   // "unbounded"
inline constexpr long long k_max_elements = 32; // larger arrays would cost more registers than they save
inline constexpr long long k_max_trip = 64;     // the most iterations of a loop unrolled in full

struct Interval {
  long long lo = -k_inf, hi = k_inf;
  bool data = true; // depends on run-time data (not only on constants and constant-trip loop variables)
  bool bounded() const { return lo > -k_inf && hi < k_inf; }
};

// for (int v = A; v < B; ++v) with constant A and B, v not assigned in the body.
struct ConstLoop {
  std::string var;
  long long lo = 0, hi = -1; // the variable's values, inclusive
  std::size_t for_tok = 0, body_end = 0;
  int line = 0;
};

// What the analysis knows of one kernel body.
struct Facts {
  const std::vector<cuda::Token>* t = nullptr;
  std::string_view body;
  const std::map<std::string, std::string>* macros = nullptr;
  std::vector<ConstLoop> loops;
  std::map<std::string, std::pair<std::size_t, std::size_t>> once; // assigned once: its initialiser's tokens
};

// `T name[N];` in the body (not shared, static or extern); `n` when N is a constant.
struct LocalArray {
  std::string type, name, size_text;
  std::optional<long long> n;
  std::size_t first = 0, last = 0; // the declaration's tokens
};

// `=` as an assignment (not ==, <=, >=, !=), at token i.
bool is_assignment_op(const std::vector<cuda::Token>& t, std::size_t i);
// Identifiers assigned (=, op=, ++, --) anywhere in tokens [b, e).
std::set<std::string> assigned(const std::vector<cuda::Token>& t, std::size_t b, std::size_t e);
// The source text of tokens [b, e).
std::string tokens_text(const Facts& f, std::size_t b, std::size_t e);

std::vector<ConstLoop> constant_loops(const Facts& f, int base_line);
std::map<std::string, std::pair<std::size_t, std::size_t>> assigned_once(const std::vector<cuda::Token>& t);
std::vector<LocalArray> local_arrays(const Facts& f);

// The interval of the index expression in tokens [b, e) at token `where` (for the loops around
// it); nullopt when it does not parse.
std::optional<Interval> index_interval(const Facts& f, std::size_t b, std::size_t e, std::size_t where);

// The statement around token `u`: [begin, end) with t[end] its ';'; nullopt when `u` is inside
// a condition, a loop header, a call's arguments or a braced block.
std::optional<std::pair<std::size_t, std::size_t>> statement_around(const std::vector<cuda::Token>& t, std::size_t u);
// Assignments, ++/-- and calls of functions not known to be pure in [b, e); an impure call
// counts 2, so that a caller allowing one assignment still refuses it.
int side_effects(const std::vector<cuda::Token>& t, std::size_t b, std::size_t e);

std::string indent_of(const std::string& line);

} // namespace optimas::builtin::local
