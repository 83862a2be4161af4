#include "prompt/builder.hpp"

#include "analysis/application.hpp"
#include "cuda/source.hpp"
#include "prompt/reply.hpp"

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

namespace optimas::embedded {
std::string_view prompt_template_md();
}

namespace optimas::prompt {

namespace fs = std::filesystem;

std::string default_template() {
  return std::string(embedded::prompt_template_md());
}

std::string prompt_kind(const PromptOptions& o) {
  return o.code_only ? "code only" : analysis::sources_label(o.sources);
}

namespace {

struct KernelCode {
  std::string name;
  std::string file; // as shown to the model: the file name
  std::string text; // numbered code of the kernel and the device functions it calls
};

unsigned kind_bit(const std::string& kind) {
  if (kind == "pc") return analysis::k_pc;
  if (kind == "ia") return analysis::k_ia;
  if (kind == "roofline") return analysis::k_roofline;
  return 0; // an application item: no kernel's unit
}

// Finds the kernel in the application's sources and gathers what the model needs to see:
// the kernel and the __device__ functions it calls (transitively), with line numbers.
KernelCode kernel_code(const std::vector<cuda::SourceFile>& files, const std::string& kernel) {
  std::string base = kernel.substr(0, kernel.find('<'));
  for (const auto& f : files) {
    const cuda::Function* k = f.kernel(base);
    if (!k) continue;
    KernelCode out;
    out.name = kernel;
    out.file = fs::path(f.path).filename().string();
    std::vector<std::pair<const cuda::SourceFile*, const cuda::Function*>> shown = {{&f, k}};
    std::set<std::string> seen = {k->name};
    for (std::size_t i = 0; i < shown.size(); ++i) {
      const auto* fn = shown[i].second;
      std::string_view body(shown[i].first->text.data() + fn->body_begin, fn->end - fn->body_begin);
      for (const auto& id : cuda::identifiers_in(body)) {
        if (seen.count(id)) continue;
        for (const auto& g : files)
          if (const auto* callee = g.function(id); callee && !callee->kernel) {
            shown.push_back({&g, callee});
            seen.insert(id);
            break;
          }
      }
    }
    for (const auto& [file, fn] : shown) {
      out.text +=
          fmt::format("{} lines {}-{}{}:\n```cuda\n{}```\n", fs::path(file->path).filename().string(), fn->first_line,
                      fn->last_line, fn->kernel ? "" : fmt::format(" (__device__ {}, called by {})", fn->name, base),
                      file->numbered(fn->first_line, fn->last_line));
    }
    return out;
  }
  throw Error(fmt::format("kernel \"{}\" was not found in the application's sources ({}); is `sources:` in "
                          "optimas.yml complete?",
                          kernel, files.empty() ? "none listed" : fs::path(files.front().path).filename().string()));
}

// The host functions of the application's sources that launch `kernels` (optimize.scope: file
// and application) or call one of `calls` (application: the AP items' copies and
// synchronisations), each once with what it launches and calls, numbered as the kernels are.
std::string host_code(const std::vector<cuda::SourceFile>& files, const std::vector<std::string>& kernels,
                      const std::vector<std::string>& calls) {
  std::string out;
  for (const auto& f : files) {
    struct Found {
      cuda::Function fn;
      std::vector<std::string> what;
    };
    std::vector<Found> found;
    auto add = [&](cuda::Function fn, const std::string& what) {
      auto it = std::find_if(found.begin(), found.end(), [&](const Found& x) { return x.fn.begin == fn.begin; });
      if (it == found.end())
        it = found.insert(std::upper_bound(found.begin(), found.end(), fn.begin,
                                           [](std::size_t b, const Found& x) { return b < x.fn.begin; }),
                          {std::move(fn), {}});
      if (std::find(it->what.begin(), it->what.end(), what) == it->what.end()) it->what.push_back(what);
    };
    for (const auto& kernel : kernels) {
      std::string base = kernel.substr(0, kernel.find('<'));
      for (auto& fn : cuda::launching_functions(f, base)) add(std::move(fn), "launches " + base);
    }
    for (const auto& call : calls)
      for (auto& fn : cuda::calling_functions(f, {call})) add(std::move(fn), "calls " + call);
    for (const auto& [fn, what] : found)
      out += fmt::format("{} lines {}-{} (host function {}, {}):\n```cuda\n{}```\n",
                         fs::path(f.path).filename().string(), fn.first_line, fn.last_line, fn.name,
                         util::join(what, ", "), f.numbered(fn.first_line, fn.last_line));
  }
  return out;
}

// Rule 2: where edits may go, as the guardrails check it (edit/guardrails.cpp).
std::string scope_rule(const config::AppConfig& app) {
  const std::string implicated = "Change only the code the evidence implicates: the lines a PC item cites and the "
                                 "lines it says they wait on or split at (and the lines right around them), or the "
                                 "kernel an RF or IA item is about";
  if (app.optimize.scope == "application")
    return implicated + ", and the host code shown: the functions that launch these kernels or make the copies, "
                        "memsets and synchronisations an AP item is about. There you may change transfers (fewer, "
                        "larger, asynchronous, from pinned memory, kept on the device), synchronisation (fewer, or "
                        "on an event or stream instead of the device) and the order of launches and copies "
                        "(overlapping them on streams), as long as every result the program prints or writes is "
                        "the same and every kernel still gets what its code assumes of it. Leave other host code "
                        "alone.";
  if (app.optimize.scope != "file") return implicated + ". Leave host code alone.";
  return implicated + ", and the host code shown that launches these kernels: its launch configuration (grid and "
                      "block sizes, dynamic shared memory, streams) may change, as long as every kernel still gets "
                      "what its code assumes of it (a block size that a shared array or a reduction is sized for). "
                      "Leave other host code alone.";
}

// What validation compares (evaluate/sandbox.cpp's execute_in), in words.
std::string compared_output(const config::AppConfig& app) {
  if (app.run_command.find("{output}") != std::string::npos) return "The output file the program writes";
  if (!app.outputs.empty())
    return fmt::format("The file{} the program writes ({})", app.outputs.size() > 1 ? "s" : "",
                       util::join(app.outputs, ", "));
  std::vector<std::string> dropped;
  if (!app.kernel_time.empty()) dropped.push_back("`" + app.kernel_time.pattern + "`");
  for (const auto& re : app.validate.ignore) dropped.push_back("`" + re + "`");
  if (dropped.empty()) return "The program's standard output";
  return "The program's standard output, less the lines matching " + util::join(dropped, " or ") + ",";
}

// On which inputs (evaluate/validate.cpp's validation_checks), in words.
std::string compared_inputs(const config::AppConfig& app) {
  bool unseen = !app.seed_param.empty() && app.validate.fresh_seeds > 0;
  for (const auto& c : app.configs)
    if (c.held_out &&
        (app.validate.configs.empty() ||
         std::find(app.validate.configs.begin(), app.validate.configs.end(), c.name) != app.validate.configs.end()))
      unseen = true;
  return unseen ? "on inputs that include some you have not seen" : "on the application's input configurations";
}

// validate.tolerance in words (evaluate/validate.cpp's within()).
std::string tolerance_words(const config::ValidateSettings& v) {
  if (v.tolerance == "abs") return fmt::format("by at most {:g} (an absolute difference)", v.tolerance_value);
  if (v.tolerance == "rel")
    return fmt::format("by at most {:g} times the larger of the two magnitudes (a relative difference)",
                       v.tolerance_value);
  return fmt::format("by at most {:g} units in the last place of a double", v.tolerance_value);
}

// Rule 3: the correctness contract validation enforces, from optimas.yml: exact bytes, a
// tolerance, and whether the user accepts reordered floating-point operations.
std::string correctness_rule(const config::AppConfig& app) {
  const bool exact = app.validate.tolerance == "exact";
  const bool reorder = app.optimize.fp_reassociation == "allowed";
  std::string compared =
      exact ? fmt::format("{} is compared byte for byte with the original's {}, and the program must exit normally.",
                          compared_output(app), compared_inputs(app))
            : fmt::format("{} is compared with the original's {}, read as whitespace-separated words: each number may "
                          "differ from the original's {}, every other word must be identical, and the program must "
                          "exit normally.",
                          compared_output(app), compared_inputs(app), tolerance_words(app.validate));
  if (reorder)
    return "Keep what the program computes; only the order of floating-point operations may change. You may "
           "reorder floating-point sums and products (a tree or warp-shuffle reduction, another accumulation order, "
           "atomics whose order varies): the user accepts results that differ in their low bits, because what is "
           "compared is the program's own check of its results. " +
           compared +
           " Do not change precision or use fast-math intrinsics; if such a change would help, withhold it and say "
           "so.";
  if (exact)
    return "Keep the results bit-for-bit identical. " + compared +
           " Do not reorder floating-point operations, change precision, use fast-math intrinsics or atomics whose "
           "order varies; if such a change would help, withhold it and say so.";
  return "Keep the results within the tolerance. " + compared +
         " A change that moves the low bits of floating-point results (another summation order, fused multiply-adds) "
         "is acceptable only where every number stays within that on every input; if you are not sure that it does "
         "(lower precision, fast-math intrinsics, a long sum whose terms cancel), withhold it and say so.";
}

std::string fill(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    std::string token = "{{" + key + "}}";
    for (std::size_t pos = 0; (pos = text.find(token, pos)) != std::string::npos; pos += value.size())
      text.replace(pos, token.size(), value);
  }
  return text;
}

} // namespace

namespace {

// One kernel's evidence of one diagnostic source: the unit that chunking regroups.
struct Unit {
  std::size_t kernel;
  unsigned source;
  std::vector<const analysis::Evidence*> items;
};

// Renders the template for a set of kernels and units of evidence.
struct Renderer {
  const config::AppConfig& app;
  const analysis::Diagnostics& d;
  const PromptOptions& o;
  std::vector<cuda::SourceFile> files;
  std::vector<KernelCode> kernels;
  std::string system_tmpl, user_tmpl;
  std::vector<std::string> calls; // the AP items' runtime calls (analysis::application_calls)

  // The diagnostics section: each unit's evidence with its ID (recorded in `p`).
  std::string diagnostics(const std::vector<const Unit*>& us, Prompt& p) const {
    std::string diag;
    if (o.code_only) {
      diag = "None: this is the code-only baseline. Evidence arrays may be empty.\n";
    } else {
      for (const Unit* u : us) {
        const char* what = u->source == analysis::k_roofline ? "Roofline"
                           : u->source == analysis::k_pc
                               ? "PC sampling (hot source lines and their dominant stall)"
                               : "Hardware counters that explain runtime across runs (ensemble OMP)";
        diag += fmt::format("{} — {}:\n", d.kernels[u->kernel].time.kernel, what);
        for (const auto* e : u->items) {
          diag += fmt::format("[{}] {}\n", e->id, e->text);
          p.evidence_ids.push_back(e->id);
        }
        if (u->source == analysis::k_ia && d.kernels[u->kernel].counters &&
            !d.kernels[u->kernel].counters->caveat.empty())
          diag += "(Caveat: " + d.kernels[u->kernel].counters->caveat + ")\n";
        diag += "\n";
      }
      if (application()) diag += application_diagnostics(p);
      if (diag.empty()) diag = "No evidence of the selected kinds was found for these kernels.\n";
    }
    return diag;
  }

  // The AP items are shown where edits may act on them: optimize.scope: application.
  bool application() const { return app.optimize.scope == "application" && !o.code_only && d.timeline; }

  std::string application_diagnostics(Prompt& p) const {
    std::string out = "The application — its timeline (GPU idle time, host gaps, copies; gains are of the wall "
                      "time):\n";
    for (const auto& e : d.evidence)
      if (e.kind == "application") {
        out += fmt::format("[{}] {}\n", e.id, e.text);
        p.evidence_ids.push_back(e.id);
      }
    return out + "\n";
  }

  Prompt render(const std::string& label, const std::vector<std::size_t>& ks,
                const std::vector<const Unit*>& us) const {
    Prompt p;
    p.label = label;
    std::string kernel_text, summary;
    for (auto ki : ks) {
      const auto& kd = d.kernels[ki];
      kernel_text += fmt::format("### {} ({:.1f}% of GPU time) in {}\n{}\n", kd.time.kernel, 100 * kd.time.share,
                                 kernels[ki].file, kernels[ki].text);
      summary += (summary.empty() ? "" : ", ") + fmt::format("{} {:.1f}%", kd.time.kernel, 100 * kd.time.share);
      p.kernels.push_back(kd.time.kernel);
    }
    if (app.optimize.scope == "file")
      if (std::string host = host_code(files, p.kernels, {}); !host.empty())
        kernel_text += "### Host code that launches them (optimize.scope: file: its launch configuration may "
                       "change)\n" +
                       host + "\n";
    if (application())
      if (std::string host = host_code(files, p.kernels, calls); !host.empty())
        kernel_text += "### Host code that launches them or makes the copies and synchronisations of the AP items "
                       "(optimize.scope: application)\n" +
                       host + "\n";
    std::string diag = diagnostics(us, p);
    std::map<std::string, std::string> values = {
        {"gpu", o.gpu},
        {"app", app.name},
        {"description", app.description.empty() ? "(no description)" : app.description},
        {"kernel_summary", summary},
        {"kernels", kernel_text},
        {"sources_label", o.code_only ? "none: code-only baseline" : prompt_kind(o)},
        {"diagnostics", diag},
        {"schema", reply_schema().dump(2)},
        {"scope_rule", scope_rule(app)},
        {"correctness_rule", correctness_rule(app)}};
    p.system = fill(system_tmpl, values);
    p.user = fill(user_tmpl, values);
    return p;
  }
};

} // namespace

std::vector<Prompt> build_prompts(const config::AppConfig& app, const analysis::Diagnostics& d,
                                  const PromptOptions& o) {
  std::string tmpl = o.template_text.empty() ? default_template() : o.template_text;
  const std::string k_split = "=== USER ===";
  auto split = tmpl.find(k_split);
  if (split == std::string::npos)
    throw UsageError("the prompt template needs a line \"=== USER ===\" between the system and user parts");
  std::string system_tmpl = std::string(util::trim(tmpl.substr(0, split))) + "\n";
  std::string user_tmpl = std::string(util::trim(tmpl.substr(split + k_split.size()))) + "\n";

  Renderer r{app, d, o, {}, {}, system_tmpl, user_tmpl, {}};
  if (d.timeline) r.calls = analysis::application_calls(*d.timeline);
  for (const auto& s : app.sources) r.files.push_back(cuda::load_source((fs::path(app.dir) / s).string()));
  for (const auto& k : d.kernels) r.kernels.push_back(kernel_code(r.files, k.time.kernel));

  // One unit per kernel and diagnostic source, so that chunking can regroup them.
  std::vector<Unit> units;
  for (std::size_t ki = 0; ki < d.kernels.size(); ++ki)
    for (unsigned s : {analysis::k_roofline, analysis::k_pc, analysis::k_ia}) {
      if (o.code_only || !(o.sources & s)) continue;
      Unit u{ki, s, {}};
      for (const auto& e : d.evidence)
        if (e.kernel == d.kernels[ki].time.kernel && kind_bit(e.kind) == s) u.items.push_back(&e);
      // By estimated gain, the largest first (items without one keep their order, last).
      std::stable_sort(u.items.begin(), u.items.end(), [](const analysis::Evidence* a, const analysis::Evidence* b) {
        return std::isfinite(a->gain) && (!std::isfinite(b->gain) || a->gain > b->gain);
      });
      if (!u.items.empty()) units.push_back(std::move(u));
    }

  std::vector<std::size_t> all_kernels;
  for (std::size_t i = 0; i < d.kernels.size(); ++i) all_kernels.push_back(i);
  std::vector<const Unit*> all_units;
  for (const auto& u : units) all_units.push_back(&u);
  Prompt whole = r.render("all hot kernels", all_kernels, all_units);
  if (whole.tokens() <= o.token_budget || (d.kernels.size() <= 1 && all_units.size() <= 1)) {
    if (whole.tokens() > o.token_budget)
      log::warn("the prompt needs about {} tokens, over the budget of {}", whole.tokens(), o.token_budget);
    return {whole};
  }
  // Too large: one prompt per kernel, and per diagnostic source for a kernel still too large.
  std::vector<Prompt> out;
  for (std::size_t ki = 0; ki < d.kernels.size(); ++ki) {
    std::vector<const Unit*> mine;
    for (const auto* u : all_units)
      if (u->kernel == ki) mine.push_back(u);
    Prompt p = r.render(d.kernels[ki].time.kernel, {ki}, mine);
    if (p.tokens() <= o.token_budget || mine.size() <= 1) {
      if (p.tokens() > o.token_budget)
        log::warn("the prompt for {} needs about {} tokens, over the budget of {}", d.kernels[ki].time.kernel,
                  p.tokens(), o.token_budget);
      out.push_back(std::move(p));
      continue;
    }
    for (const auto* u : mine) {
      std::string label = fmt::format("{} / {}", d.kernels[ki].time.kernel, analysis::sources_label(u->source));
      Prompt q = r.render(label, {ki}, {u});
      if (q.tokens() > o.token_budget)
        log::warn("the prompt \"{}\" needs about {} tokens, over the budget of {}", label, q.tokens(), o.token_budget);
      out.push_back(std::move(q));
    }
  }
  return out;
}

} // namespace optimas::prompt
