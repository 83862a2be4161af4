// The builtin optimizer's rules, shared by builtin.cpp (which runs them on every hot kernel)
// and the files that hold them: builtin_signature.cpp (edits to a kernel's declaration),
// builtin_loops.cpp (edits to lines inside its loops), builtin_coalesce.cpp and
// builtin_vector.cpp (loops rewritten for their memory access). Each rule reads one kernel's
// diagnostics and source, and adds edits or withheld suggestions that cite the evidence.
#pragma once

#include "cuda/source.hpp"
#include "prompt/reply.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace optimas::llm {

struct StallLine {
  std::string id, file, stall;
  int line = 0;
  double fraction = 0;
};

// The salient PC lines of a kernel, from the diagnostics JSON.
std::vector<StallLine> stall_lines(const nlohmann::json& kernel);

// The extent of a loop starting at token `at` (`for` or `while`): its header's closing ')' and
// the last token of its body (the matching '}' or the ';' of a single statement).
struct LoopExtent {
  std::size_t close = 0;
  std::size_t body_end = 0;
};
LoopExtent loop_extent(const std::vector<cuda::Token>& t, std::size_t at);

// Arguments of every launch of `kernel` in the sources: name<<<...>>>(a, b, ...), and of its
// template instances: name<8><<<...>>>(a, b, ...).
std::vector<std::vector<std::string>> launch_arguments(const std::map<std::string, std::string>& sources,
                                                       const std::string& kernel);

// What the rules propose for one kernel.
struct KernelEdits {
  prompt::Edit signature; // restrict and bounds together: they touch the same text
  bool signature_changed = false;
  std::vector<std::string> why;
  std::vector<std::string> rules; // the rules that changed the signature, in order
  std::vector<prompt::Edit> others;
  std::vector<prompt::Withheld> withheld;
};

// `kernel` is the kernel's entry of the diagnostics JSON, `f` its source file and `fn` the
// kernel in it; `sources` are all the application's files (where its launches are).
void rule_restrict(const nlohmann::json& kernel, const cuda::SourceFile& f, const cuda::Function& fn,
                   const std::map<std::string, std::string>& sources, KernelEdits& ke);
void rule_bounds(const nlohmann::json& kernel, const cuda::SourceFile& f, const cuda::Function& fn, KernelEdits& ke);
void rule_unroll(const nlohmann::json& kernel, const cuda::SourceFile& f, const cuda::Function& fn, KernelEdits& ke);
void rule_hoist(const nlohmann::json& kernel, const cuda::SourceFile& f, const cuda::Function& fn, KernelEdits& ke);
// Changes floating-point results: applied only with `allow_fp_changes`, else withheld.
void rule_reciprocal(const nlohmann::json& kernel, const cuda::SourceFile& f, const cuda::Function& fn,
                     bool allow_fp_changes, KernelEdits& ke);

// Memory rules (builtin_memory.cpp, builtin_read_only.cpp, builtin_local.cpp). Each reads the roofline's "access"
// figures (null-safe) and the PC lines, and edits only what it can argue stays bit-identical.
// pad_shared: a 2-D __shared__ array walked by column gets one element of padding per row.
void rule_pad_shared(const nlohmann::json& kernel, const cuda::SourceFile& f, const cuda::Function& fn,
                     KernelEdits& ke);
// read_only: loads of never-written pointer parameters in hot loops go through __ldg where
// __restrict__ could not be applied (a launch aliases two of its pointers).
void rule_read_only(const nlohmann::json& kernel, const cuda::SourceFile& f, const cuda::Function& fn,
                    const std::map<std::string, std::string>& sources, KernelEdits& ke);
// local_to_registers: a small local array indexed by data becomes register-resident (its
// constant-trip loops unrolled, each data-indexed access a compare-and-select over its indices).
void rule_local_to_registers(const nlohmann::json& kernel, const cuda::SourceFile& f, const cuda::Function& fn,
                             KernelEdits& ke);

// Helpers the memory rules share (builtin_memory.cpp).
// A figure of the kernel's roofline.access; NaN when absent or null.
double access_figure(const nlohmann::json& kernel, const char* name);
// Object-like #defines of the file: name -> replacement text.
std::map<std::string, std::string> object_macros(const cuda::SourceFile& f);
// The value of an integer constant expression (literals, macros, + - * / % << >> & | ~ and
// parentheses); nullopt when it is not one.
std::optional<long long> constant_value(std::string_view expr, const std::map<std::string, std::string>& macros);
// The text of line `line` (1-based) of `text`, without its newline.
std::string line_text(std::string_view text, int line);
// The token that closes the bracket, parenthesis or brace at `open`; t.size() when none does.
std::size_t matching_token(const std::vector<cuda::Token>& t, std::size_t open);
// A type's words without qualifiers: {"const", "volatile", "float"} -> "float".
std::string bare_type(const std::vector<std::string>& words);
// Whether an edit already made for this kernel touches line `line`; its rule when so.
const prompt::Edit* edit_on_line(const KernelEdits& ke, const std::string& file, int line);

// Memory-access rules (builtin_coalesce.cpp, builtin_vector.cpp): they read the roofline's
// "access" figures and stall lines, and rewrite one loop each.
void rule_coalesce_tiles(const nlohmann::json& kernel, const cuda::SourceFile& f, const cuda::Function& fn,
                         const std::map<std::string, std::string>& sources, KernelEdits& ke);
void rule_vector_loads(const nlohmann::json& kernel, const cuda::SourceFile& f, const cuda::Function& fn,
                       KernelEdits& ke);

} // namespace optimas::llm
