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
#include <string>
#include <vector>

namespace optimas::llm {

struct StallLine {
  std::string id, file, stall;
  int line = 0;
  double fraction = 0;
};

// The salient PC lines of a kernel, from the diagnostics JSON.
std::vector<StallLine> stall_lines(const nlohmann::json& kernel);

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

// Memory-access rules (builtin_coalesce.cpp, builtin_vector.cpp): they read the roofline's
// "access" figures and stall lines, and rewrite one loop each.
void rule_coalesce_tiles(const nlohmann::json& kernel, const cuda::SourceFile& f, const cuda::Function& fn,
                         const std::map<std::string, std::string>& sources, KernelEdits& ke);
void rule_vector_loads(const nlohmann::json& kernel, const cuda::SourceFile& f, const cuda::Function& fn,
                       KernelEdits& ke);

} // namespace optimas::llm
