// The builtin optimizer's rules, shared by optimizer.cpp (which runs the rule table on every hot
// kernel) and the files that hold them: signature.cpp (edits to a kernel's declaration),
// loops.cpp (edits to lines inside its loops), coalesce.cpp and vector.cpp (loops rewritten for
// their memory access), memory.cpp, read_only.cpp and local.cpp (memory rules). Each rule reads
// one kernel's diagnostics and source, and adds edits or withheld suggestions that cite the
// evidence. Every rule has one signature, Rule::apply; rule_table.cpp declares and orders them.
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

namespace optimas::builtin {

struct StallLine {
  std::string id, file, stall;
  int line = 0;
  double fraction = 0;
};

// A member of a diagnostics JSON object, null-safe (the diagnostics hold null where a figure is
// unknown, and older ones lack newer members): the number, or 0; the string, or "".
double number_of(const nlohmann::json& j, const char* key);
std::string text_of(const nlohmann::json& j, const char* key);

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

// What a rule reads about one kernel.
struct KernelInput {
  const nlohmann::json& kernel;                      // its entry of the diagnostics JSON
  const cuda::SourceFile& file;                      // the source file that defines it
  const cuda::Function& fn;                          // the kernel in that file
  const std::map<std::string, std::string>& sources; // every file of the application (its launches)
  bool allow_fp_changes = false;                     // rules that change floating-point results may apply
  // What most rules start from, made once per kernel (kernel_input): the file's name as edits
  // name it, the kernel's body (from its '{') and its tokens, whose line numbers count from
  // base_line + 1, and the file's object-like #defines (object_macros).
  std::string file_name;
  std::string_view body;
  std::vector<cuda::Token> tokens;
  int base_line = 0;
  std::map<std::string, std::string> macros;
  // The file's function-like macros that expand to an expression without side effects (no
  // assignment, no increment, no statement, calls of pure math only): a use is no call that
  // could write memory (Rodinia's IN_RANGE, MIN).
  std::set<std::string> pure_macros;
};
KernelInput kernel_input(const nlohmann::json& kernel, const cuda::SourceFile& file, const cuda::Function& fn,
                         const std::map<std::string, std::string>& sources, bool allow_fp_changes);

// What an application rule reads (optimize.scope: application): the diagnostics JSON (its
// timeline and AP items), the application's sources it may edit, and the hot kernels' names.
struct ApplicationInput {
  const nlohmann::json& diagnostics;
  const std::map<std::string, std::string>& sources;
  std::vector<std::string> hot_kernels;
};

// A row of the rule table (rule_table.cpp).
struct Rule {
  const char* name; // as edits and withheld suggestions name it ("restrict", "coalesce_tiles")
  void (*apply)(const KernelInput& in, KernelEdits& ke);
  const char* summary;
  // Whether the rule also runs on a __device__ function that holds a hot kernel's stalled lines
  // (its KernelInput's fn is that function, its kernel the hot kernel's diagnostics): rules whose
  // edit is local to the function's own loops and reads nothing of a launch.
  bool device_functions = false;
};

// The rules in the order they run on a kernel: signature rules first (restrict and bounds share
// one edit of the declaration), then the loop rewrites (a whole loop rewritten wins over a line
// edit inside it), then the line rules, and the memory rules last (they leave lines the rules
// above edited alone).
const std::vector<Rule>& rule_table();

// A row of the application rules' table, run once per reply under optimize.scope: application
// after the kernels' rules; their edits change host code and act on AP items.
struct ApplicationRule {
  const char* name;
  void (*apply)(const ApplicationInput& in, KernelEdits& edits);
  const char* summary;
};
const std::vector<ApplicationRule>& application_rule_table();

// Helpers the memory rules share (memory.cpp).
// A figure of the kernel's roofline.access; NaN when absent or null.
double access_figure(const nlohmann::json& kernel, const char* name);
// Object-like #defines of the file (cuda::object_macros): name -> replacement text, the last
// definition of a name winning.
std::map<std::string, std::string> object_macros(const cuda::SourceFile& f);
// KernelInput::pure_macros of the file.
std::set<std::string> pure_macros(const cuda::SourceFile& f);
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

} // namespace optimas::builtin
