// Token-level helpers shared by the memory-access rules: coalesce_tiles (coalesce.cpp)
// and vector_loads (vector.cpp).
//
// Why tokens and not libclang: Debian's clang 14 knows CUDA up to 11.5 and stops on CUDA 13's
// headers (texture_fetch_functions.h, `texture<...>`); with -nocudainc it lacks even
// __global__ and threadIdx, so every application's headers and runtime API would need stubs,
// and a file that does not parse would silence the rules. The two patterns are one loop and
// the statements around it, which brackets and statement boundaries describe exactly; the
// rules accept only the exact shapes below and withhold anything else, so a shape the tokens
// cannot prove costs a missed speedup, never a wrong result.
#pragma once

#include "cuda/source.hpp"
#include "prompt/reply.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace optimas::builtin::access {

using Tokens = std::vector<cuda::Token>;

// kernel.roofline.access.<key> when it is a number; nullopt when absent or null (the profile
// lacked the metric) or when the diagnostics predate the access object.
std::optional<double> figure(const nlohmann::json& kernel, const char* key);
// kernel.roofline.id, or "" without a roofline.
std::string roofline_id(const nlohmann::json& kernel);

// The token matching the bracket at `open` ('(', '[', '{'); t.size() when unbalanced.
std::size_t matching(const Tokens& t, std::size_t open);

// `for (TYPE v = INIT; v OP BOUND; STEP) BODY`, by token index (ranges are [begin, end)).
struct ForLoop {
  std::size_t at = 0;                  // `for`
  std::size_t type_begin = 0, var = 0; // TYPE is [type_begin, var)
  std::size_t init_begin = 0, init_end = 0;
  std::size_t cond_begin = 0, cond_end = 0;
  std::size_t step_begin = 0, step_end = 0; // the increment, up to the header's ')'
  std::size_t body_begin = 0, body_end = 0; // the statements: inside the braces, or the one statement
  std::size_t last = 0;                     // the loop's last token ('}' or the ';')
  bool braced = false;
  bool is_while = false; // `while (COND) { BODY STEP; }`: no TYPE or INIT; the step is the body's last statement
};
// Only loops that declare their variable in the header; nullopt for any other shape.
std::optional<ForLoop> for_loop(const Tokens& t, std::size_t at);
// A while loop whose braced body ends by stepping one variable the condition reads
// (`v += EXPR;`, `v++;`, `++v;`, `v = v + EXPR;`), in the ForLoop shape: the body is what comes
// before that statement, the step is the statement without its ';', and TYPE and INIT are empty.
// nullopt for any other shape.
std::optional<ForLoop> while_loop(const Tokens& t, std::size_t at);

// Whitespace-normalised text of tokens [b, e).
std::string text(const Tokens& t, std::size_t b, std::size_t e);
// The normalised text with integer casts removed, for recognising index expressions.
std::string without_casts(const Tokens& t, std::size_t b, std::size_t e);
// int, unsigned, long, size_t, float, ...: a word that may stand in a cast.
bool arithmetic_type_word(std::string_view w);
// blockIdx.x * blockDim.x + threadIdx.x (either order, with or without integer casts).
bool is_thread_index(const Tokens& t, std::size_t b, std::size_t e);
// blockDim.x * gridDim.x (either order).
bool is_grid_size(const Tokens& t, std::size_t b, std::size_t e);

// CUDA's math functions and bit intrinsics, which read only their arguments: the calls a
// rewritten statement may make.
bool pure_call(std::string_view name);

// Names whose value is the same for every thread and every iteration: the kernel's non-pointer
// parameters that the body never assigns, and the file's #define names.
std::set<std::string> uniform_names(const cuda::SourceFile& f, const cuda::Function& fn, const Tokens& body);
// Tokens [b, e) are literals, operators, parentheses, casts to arithmetic types and `uniform`
// names only (no call, no subscript, no assignment): one value for all threads.
bool is_uniform(const Tokens& t, std::size_t b, std::size_t e, const std::set<std::string>& uniform);

// Whether identifier `name` is assigned, incremented or has its address taken in [b, e).
bool assigned(const Tokens& t, std::size_t b, std::size_t e, std::string_view name);
// Whether the pointer `name` is written through in [b, e), has an element's address taken, or is
// used bare (passed on, copied or offset, which could write). Each use is read as the expression
// around it: `p[i] = v`, `*p += v`, `p[i].x = v`, `--(*p)`, `(*p).y++`, `p[i].store(v)` write;
// `p[i]`, `*p`, `p->x` alone read. (cuda-samples' kernels write through members and
// increments; reading only `p[i] =` made such pointers const, which did not build.)
bool written_or_escapes(const Tokens& t, std::size_t b, std::size_t e, std::string_view name);

// Declared `TYPE name = EXPR ;` in [b, e): the token range of EXPR, or nullopt.
std::optional<std::pair<std::size_t, std::size_t>> initialiser(const Tokens& t, std::size_t b, std::size_t e,
                                                               std::string_view name);

// Source text of [t[b], t[e - 1]] with some token ranges replaced: {first, end, replacement}.
struct Replacement {
  std::size_t begin, end;
  std::string with;
};
std::string rewrite(std::string_view body_text, const Tokens& t, std::size_t b, std::size_t e,
                    std::vector<Replacement> replacements);

// The element type of a pointer parameter ("const float *__restrict__" -> "float"), or "".
std::string pointee(const cuda::Parameter& p);
// Bytes of an element type we vectorise or tile (float, double, int, unsigned): 0 otherwise.
int element_size(const std::string& type);

// Whether loop tokens [first, last] occupy whole lines of the text (nothing else on their first
// and last line), so a line-range edit can replace exactly the loop.
bool whole_lines(std::string_view body_text, const Tokens& t, std::size_t first, std::size_t last);
// Leading whitespace of the line holding offset `at`.
std::string indent_at(std::string_view text, std::size_t at);
// Adds `more` to the start of every non-empty line.
std::string indented(const std::string& text, const std::string& more);

// The block size the kernel runs with: the profile's, else the one literal (or #define of a
// literal) that every launch in the sources gives; 0 when unknown.
int block_size(const nlohmann::json& kernel, const std::map<std::string, std::string>& sources,
               const std::string& kernel_name);

// The edit that replaces a whole loop of `fn` (its lines, from `for` to its last token) with
// `code`, in the rule's name; the caller adds evidence, rationale and expected effects.
prompt::Edit loop_edit(const char* rule, const cuda::SourceFile& f, const cuda::Function& fn, const Tokens& t,
                       const ForLoop& loop, std::string code);

// What a rule's planner decided for one loop: an edit, a reason to withhold, or neither (no
// evidence after all).
struct Outcome {
  std::optional<prompt::Edit> edit;
  std::string reason;
};

inline Outcome withhold(std::string reason) {
  return {std::nullopt, std::move(reason)};
}

} // namespace optimas::builtin::access
