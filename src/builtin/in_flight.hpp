// loads_in_flight's analysis of a loop body (in_flight_ahead.cpp): what may be loaded ahead of
// the bodies of K iterations, and why not. The rule that writes the batch is in_flight.cpp.
#pragma once

#include "builtin/access.hpp"
#include "builtin/rules.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace optimas::builtin::in_flight {

// A declaration `TYPE name = EXPR;` at the top of the loop body whose EXPR loads.
struct Hoisted {
  std::string type, name, expr; // as written
  std::size_t first = 0, semi = 0;
  bool extracted = false; // a load taken out of a statement, under a name of ours
  // Where the load's statement runs under `if (GUARD)`: the guard as written and its tokens; the
  // early load is made under the same guard.
  std::string guard;
  std::size_t guard_begin = 0, guard_end = 0;
};

// What moves ahead of the bodies: the body's leading declarations `TYPE v = EXPR;` (EXPR free
// of side effects), up to the last one on a cause line; where the cause is the statement after
// them (`sum += w[k] * in[i];`, an expression statement evaluated unconditionally), also its
// loads from pointer parameters `p[...]`, each into a value of its own (`in_l1`), replaced in
// that statement (`rest` then holds the rewritten statement and what follows).
struct Ahead {
  std::vector<Hoisted> decls;
  std::size_t rest_begin = 0;
  std::vector<access::Replacement> in_rest;
};

// Why tokens [b, e) may not be evaluated early or twice (a side effect, a call that is not pure
// math), or empty.
std::string side_effect(const access::Tokens& t, std::size_t b, std::size_t e, const std::set<std::string>& pure);

// Why tokens [b, e) may not be evaluated ahead of the bodies: they read a name the loop body
// assigns (other than the loop's variable and the hoisted values `declared`); or empty.
std::string assigned_read(const access::Tokens& t, const access::ForLoop& loop, const std::set<std::string>& declared,
                          std::size_t b, std::size_t e);

// What of `loop`'s body moves ahead, given the lines the stalls wait on (`load_lines`); nullopt
// with `why` where nothing may.
std::optional<Ahead> ahead(const KernelInput& in, const access::ForLoop& loop, const std::set<int>& load_lines,
                           std::string& why);

} // namespace optimas::builtin::in_flight
