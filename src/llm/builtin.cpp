// The builtin backend: a deterministic rule-based optimizer that needs no model. Each rule maps
// evidence to a source transformation, as an expert would, and answers with the same JSON reply
// a model gives, so it flows through the same parser, guardrails and metrics. A rule whose
// evidence is absent stays silent; a rule that fires says why and cites the evidence.
//
// Rules (bit-exact unless noted):
//   restrict  — __restrict__ on pointer parameters (and const on the ones only read) when
//               memory-dependency stalls dominate and no launch passes one buffer twice;
//   bounds    — __launch_bounds__(block, blocks) from the profiled block size when registers
//               limit occupancy;
//   unroll    — #pragma unroll on constant-trip innermost loops whose lines wait or branch;
//   hoist     — a loop condition's invariant, expensive bound (a load, a division, a call)
//               computed once before the loop, when the loop header line stalls and the loop
//               writes no memory the bound could read;
//   reciprocal — (changes results) division by a floating-point kernel parameter on a hot line
//               inside a loop becomes a multiplication by its reciprocal, computed once. It is
//               applied only with allow_fp_changes; otherwise it is listed as withheld, since
//               outputs are compared bit for bit;
//   coalesce_tiles — a thread's walk of its own row (many sectors per global load request,
//               long_scoreboard on the load) staged through shared-memory tiles loaded by
//               consecutive threads, each thread consuming its row in the original order;
//   vector_loads — a latency-bound grid-stride loop (low memory throughput, long_scoreboard on
//               its loads) gets a 16-byte-per-array path under an alignment check, the original
//               loop as the fallback;
//   pad_shared — a 2-D __shared__ array walked by column gets one element of padding per row,
//               when shared-memory bank conflicts are measured (or its lines stall on shared memory);
//   local_to_registers — a small local array indexed by data becomes register-resident: its
//               constant-trip loops unrolled, each data-indexed access a compare-and-select;
//   read_only  — never-written data loaded in hot loops goes through __ldg where a launch's
//               aliasing withheld __restrict__.
//
// The rules live in builtin_signature.cpp, builtin_loops.cpp, builtin_coalesce.cpp,
// builtin_vector.cpp, builtin_memory.cpp, builtin_read_only.cpp and builtin_local.cpp
// (builtin_rules.hpp); this file runs them on every hot kernel and answers with their edits.
#include "llm/backend.hpp"

#include "llm/builtin_rules.hpp"

#include "cuda/source.hpp"
#include "prompt/reply.hpp"

#include "util/strings.hpp"

#include <filesystem>
#include <map>
#include <set>

namespace optimas::llm {

using nlohmann::json;
namespace fs = std::filesystem;

// The salient PC lines of a kernel, from the diagnostics JSON.
std::vector<StallLine> stall_lines(const json& kernel) {
  std::vector<StallLine> out;
  if (!kernel.contains("stalls") || kernel["stalls"].is_null()) return out;
  for (const auto& l : kernel["stalls"]["lines"])
    out.push_back(
        {l["id"], fs::path(l["file"].get<std::string>()).filename().string(), l["stall"], l["line"], l["fraction"]});
  return out;
}

namespace {

// Edits may not overlap (edit::apply_edits refuses the later one). A loop rewritten whole by a
// memory-access rule (listed first) wins over a line edit inside it; another rule's edits of
// the kernel are withheld together, since they can depend on each other (reciprocal's pair);
// a rule's own later edit is withheld alone.
void drop_overlaps(KernelEdits& ke) {
  std::vector<prompt::Edit> kept;
  std::set<std::string> dropped;
  for (auto& e : ke.others) {
    const prompt::Edit* over = nullptr;
    for (const auto& k : kept)
      if (e.is_range() && k.is_range() && e.file == k.file && e.line_start <= k.line_end && k.line_start <= e.line_end)
        over = &k;
    if (over) {
      ke.withheld.push_back({e.rule + ": " + e.rationale,
                             "it overlaps the " + over->rule + " edit of lines " + std::to_string(over->line_start) +
                                 ".." + std::to_string(over->line_end) + ", which rewrites that loop",
                             e.evidence});
      if (over->rule != e.rule) dropped.insert(e.rule);
      continue;
    }
    kept.push_back(std::move(e));
  }
  std::erase_if(kept, [&](const prompt::Edit& e) { return dropped.count(e.rule) > 0; });
  ke.others = std::move(kept);
}

const OptionSpec k_allow_fp_changes = {"allow_fp_changes", "also apply rules that can change floating-point results",
                                       "false"};

class BuiltinBackend : public Backend {
public:
  explicit BuiltinBackend(const BackendConfig& c) {
    std::string allow = option_value(c, k_allow_fp_changes);
    m_allow_fp_changes = allow == "true" || allow == "1";
  }

  std::string name() const override { return "builtin"; }

  Result complete(const Request& request) override {
    const json& ctx = request.context;
    if (!ctx.is_object() || !ctx.contains("diagnostics") || !ctx.contains("sources"))
      return Failure{FailureKind::bad_request,
                     "the builtin optimizer works from the structured diagnostics and sources, which this request "
                     "lacks (use optimas optimize or optimas ask)"};
    std::map<std::string, std::string> sources = ctx["sources"].get<std::map<std::string, std::string>>();
    std::map<std::string, cuda::SourceFile> parsed;
    for (const auto& [name, text] : sources) parsed.emplace(name, cuda::parse_source(name, text));

    prompt::Reply reply;
    std::vector<std::string> summary;
    std::set<const cuda::Function*> edited;
    for (const auto& k : ctx["diagnostics"]["kernels"]) {
      std::string name = k["kernel"].get<std::string>();
      name = name.substr(0, name.find('<'));
      const cuda::SourceFile* file = nullptr;
      const cuda::Function* fn = nullptr;
      for (const auto& [fname, f] : parsed)
        if (const auto* x = f.kernel(name)) {
          file = &f;
          fn = x;
          break;
        }
      // Instances of one template share its source: the hottest one (listed first) decides its edits.
      if (!fn || !edited.insert(fn).second) continue;
      KernelEdits ke;
      rule_restrict(k, *file, *fn, sources, ke);
      rule_bounds(k, *file, *fn, ke);
      rule_coalesce_tiles(k, *file, *fn, sources, ke);
      rule_vector_loads(k, *file, *fn, ke);
      rule_unroll(k, *file, *fn, ke);
      rule_hoist(k, *file, *fn, ke);
      rule_reciprocal(k, *file, *fn, m_allow_fp_changes, ke);
      // The memory rules run last: they leave lines the rules above edited alone.
      rule_pad_shared(k, *file, *fn, ke);
      rule_local_to_registers(k, *file, *fn, ke);
      rule_read_only(k, *file, *fn, sources, ke);
      drop_overlaps(ke);
      if (ke.signature_changed) {
        // A prototype spelled like the definition (public code has them) makes the declaration's
        // text occur twice, and such an edit is not applied: then it reaches to the body's '{'.
        if (util::count_occurrences(file->text, *ke.signature.find) > 1) {
          std::size_t from = fn->begin + ke.signature.find->size();
          std::string to_brace = file->text.substr(from, fn->body_begin + 1 - from);
          *ke.signature.find += to_brace;
          *ke.signature.replace += to_brace;
        }
        ke.signature.rationale = util::join(ke.why, " ");
        ke.signature.rule = util::join(ke.rules, "+");
        reply.edits.push_back(std::move(ke.signature));
      }
      for (auto& e : ke.others) reply.edits.push_back(std::move(e));
      for (auto& w : ke.withheld) reply.withheld.push_back(std::move(w));
      if (!ke.why.empty() || !ke.others.empty()) summary.push_back(name);
    }
    reply.summary = summary.empty()
                        ? "No rule's evidence is present: no change proposed."
                        : "Rule-based edits for " + util::join(summary, ", ") + ", each citing its evidence.";
    Response out;
    out.text = prompt::to_json(reply).dump(2);
    out.model = "builtin";
    out.raw = out.text;
    out.usage.cost_known = true;
    return out;
  }

private:
  // Rules that change floating-point results run only when this is set.
  bool m_allow_fp_changes = false;
};

} // namespace

std::unique_ptr<Backend> make_builtin(const BackendConfig& config) {
  return std::make_unique<BuiltinBackend>(config);
}

BackendSpec builtin_backend() {
  return {.name = "builtin",
          .description = "Deterministic rule-based optimizer: no model, no network (the default)",
          .options = {k_allow_fp_changes},
          .make = make_builtin,
          .cache_answers = false}; // deterministic and instant: a cached answer saves nothing
}

} // namespace optimas::llm
