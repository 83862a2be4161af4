#include "builtin/optimizer.hpp"

#include "builtin/rules.hpp"
#include "cuda/source.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

namespace optimas::builtin {

using nlohmann::json;
namespace fs = std::filesystem;

double number_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string text_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<StallLine> stall_lines(const json& kernel) {
  std::vector<StallLine> out;
  if (!kernel.contains("stalls") || kernel["stalls"].is_null()) return out;
  for (const auto& l : kernel["stalls"]["lines"])
    out.push_back(
        {l["id"], fs::path(l["file"].get<std::string>()).filename().string(), l["stall"], l["line"], l["fraction"]});
  return out;
}

namespace {

// How drop_overlaps begins the reason of an edit it displaced.
const std::string k_displaced = "it overlaps the ";

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
                             k_displaced + over->rule + " edit of lines " + std::to_string(over->line_start) + ".." +
                                 std::to_string(over->line_end) + ", which rewrites that loop",
                             e.evidence});
      if (over->rule != e.rule) dropped.insert(e.rule);
      continue;
    }
    kept.push_back(std::move(e));
  }
  std::erase_if(kept, [&](const prompt::Edit& e) { return dropped.count(e.rule) > 0; });
  ke.others = std::move(kept);
}

// The kernel's declaration edit (restrict and bounds together) as one reply edit. A prototype
// spelled like the definition (public code has them) makes the declaration's text occur twice,
// and such an edit is not applied: then it reaches to the body's '{'.
prompt::Edit signature_edit(KernelEdits& ke, const cuda::SourceFile& file, const cuda::Function& fn) {
  if (util::count_occurrences(file.text, *ke.signature.find) > 1) {
    std::size_t from = fn.begin + ke.signature.find->size();
    std::string to_brace = file.text.substr(from, fn.body_begin + 1 - from);
    *ke.signature.find += to_brace;
    *ke.signature.replace += to_brace;
  }
  ke.signature.rationale = util::join(ke.why, " ");
  ke.signature.rule = util::join(ke.rules, "+");
  return std::move(ke.signature);
}

} // namespace

KernelInput kernel_input(const json& kernel, const cuda::SourceFile& file, const cuda::Function& fn,
                         const std::map<std::string, std::string>& sources, bool allow_fp_changes) {
  const std::string_view body = std::string_view(file.text).substr(fn.body_begin, fn.end - fn.body_begin);
  return {kernel,
          file,
          fn,
          sources,
          allow_fp_changes,
          fs::path(file.path).filename().string(),
          body,
          cuda::lex(body),
          fn.body_first_line - 1,
          object_macros(file),
          pure_macros(file)};
}

namespace {

// The plan by estimated gain: the hot kernels' PC items, the largest share of the hot kernels'
// samples first (the kernel's share of the time times the line's of the kernel's samples), each
// with the rule whose edit acts on it (its lines or its cause's, or the items it addresses), the
// suggestion withheld for it and why, or "no rule matches". The five largest; empty without PC items.
std::string plan_text(const json& diagnostics, const prompt::Reply& reply) {
  auto number = number_of;
  auto text = text_of;
  struct Item {
    std::string id, where, what;
    double gain = 0;
  };
  std::vector<Item> items;
  auto on = [](const prompt::Edit& e, const std::string& file, int line) {
    return e.is_range() && fs::path(e.file).filename() == fs::path(file).filename() && line >= e.line_start &&
           line <= e.line_end;
  };
  for (const auto& k : diagnostics["kernels"]) {
    const double share = number(k, "share");
    if (!k.contains("stalls") || !k["stalls"].is_object() || !k["stalls"].contains("lines") ||
        !k["stalls"]["lines"].is_array())
      continue;
    for (const auto& l : k["stalls"]["lines"]) {
      const int line = static_cast<int>(number(l, "line"));
      Item it{text(l, "id"), fmt::format("{}:{}", fs::path(text(l, "file")).filename().string(), line),
              "no rule matches", share * number(l, "kernel_share")};
      const json* cause = l.contains("cause") && l["cause"].is_object() ? &l["cause"] : nullptr;
      for (const auto& e : reply.edits) {
        bool acts = on(e, text(l, "file"), line) ||
                    std::find(e.addresses.begin(), e.addresses.end(), it.id) != e.addresses.end() ||
                    (cause && on(e, text(*cause, "file"), static_cast<int>(number(*cause, "line"))));
        if (acts) {
          it.what = e.rule;
          break;
        }
      }
      if (it.what == "no rule matches")
        for (const auto& w : reply.withheld)
          if (std::find(w.evidence.begin(), w.evidence.end(), it.id) != w.evidence.end()) {
            it.what = fmt::format("withheld: {} ({})", w.suggestion, w.reason);
            break;
          }
      items.push_back(std::move(it));
    }
  }
  if (items.empty()) return "";
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.gain > b.gain; });
  if (items.size() > 5) items.resize(5);
  std::vector<std::string> parts;
  for (const auto& i : items) parts.push_back(fmt::format("{} {} ({:.0f}%): {}", i.id, i.where, 100 * i.gain, i.what));
  return "Plan by estimated gain: " + util::join(parts, "; ") + ".";
}

// The __device__ functions of the sources that hold a stalled line of the kernel `k` (a helper it
// calls, where the time of a kernel written as a thin wrapper is), in the order of its lines.
std::vector<std::pair<const cuda::SourceFile*, const cuda::Function*>>
stalled_device_functions(const json& k, const std::map<std::string, cuda::SourceFile>& parsed) {
  std::vector<std::pair<const cuda::SourceFile*, const cuda::Function*>> out;
  if (!k.contains("stalls") || !k["stalls"].is_object() || !k["stalls"].contains("lines") ||
      !k["stalls"]["lines"].is_array())
    return out;
  for (const auto& l : k["stalls"]["lines"]) {
    const std::string file = fs::path(text_of(l, "file")).filename().string();
    const int line = static_cast<int>(number_of(l, "line"));
    for (const auto& [name, f] : parsed) {
      if (fs::path(f.path).filename().string() != file) continue;
      for (const auto& fn : f.functions) {
        if (fn.kernel || line < fn.body_first_line || line > fn.last_line) continue;
        std::pair<const cuda::SourceFile*, const cuda::Function*> p{&f, &fn};
        if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
      }
    }
  }
  return out;
}

// The rules of the table for which `only` is empty or names, on every hot kernel.
prompt::Reply run_rules(const json& diagnostics, const std::map<std::string, std::string>& sources,
                        const std::map<std::string, std::string>& host, bool allow_fp_changes, bool application,
                        const std::string& only) {
  std::map<std::string, cuda::SourceFile> parsed;
  for (const auto& [name, text] : sources) parsed.emplace(name, cuda::parse_source(name, text));
  // Where the rules look for launches and declarations: the sources and the host files.
  std::map<std::string, std::string> everything = sources;
  everything.insert(host.begin(), host.end());
  prompt::Reply reply;
  std::vector<std::string> summary;
  std::set<const cuda::Function*> edited;
  std::vector<std::string> hot;
  for (const auto& k : diagnostics["kernels"]) {
    std::string name = k["kernel"].get<std::string>();
    name = name.substr(0, name.find('<'));
    hot.push_back(name);
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
    const KernelInput in = kernel_input(k, *file, *fn, everything, allow_fp_changes);
    for (const Rule& rule : rule_table())
      if (only.empty() || only == rule.name) rule.apply(in, ke);
    drop_overlaps(ke);
    // A rule edits only where its evidence points: each edit acts on the PC items it cites (the
    // declaration edit excepted: restrict and bounds change no stalled line's code).
    for (auto& e : ke.others)
      for (const auto& id : e.evidence)
        if (id.rfind("PC", 0) == 0) e.addresses.push_back(id);
    if (ke.signature_changed) reply.edits.push_back(signature_edit(ke, *file, *fn));
    bool acted = !ke.why.empty() || !ke.others.empty();
    for (auto& e : ke.others) reply.edits.push_back(std::move(e));
    for (auto& w : ke.withheld) reply.withheld.push_back(std::move(w));
    // The __device__ functions holding the kernel's stalled lines, with the rules that may edit one.
    for (const auto& [dfile, dfn] : stalled_device_functions(k, parsed)) {
      if (!edited.insert(dfn).second) continue;
      KernelEdits de;
      const KernelInput din = kernel_input(k, *dfile, *dfn, everything, allow_fp_changes);
      for (const Rule& rule : rule_table())
        if (rule.device_functions && (only.empty() || only == rule.name)) rule.apply(din, de);
      drop_overlaps(de);
      for (auto& e : de.others) {
        for (const auto& id : e.evidence)
          if (id.rfind("PC", 0) == 0) e.addresses.push_back(id);
        e.kernel = name; // the kernel whose evidence it acts on; the rationale names the function
        e.rationale = fmt::format("{} (a __device__ function of {})", e.rationale, name);
        reply.edits.push_back(std::move(e));
        acted = true;
      }
      for (auto& w : de.withheld) reply.withheld.push_back(std::move(w));
    }
    if (acted) summary.push_back(name);
  }
  // optimize.scope application: the application rules, on the host code.
  if (application) {
    KernelEdits ae;
    for (const ApplicationRule& rule : application_rule_table())
      if (only.empty() || only == rule.name) rule.apply({diagnostics, sources, hot}, ae);
    if (!ae.others.empty()) summary.push_back("the host code");
    for (auto& e : ae.others) reply.edits.push_back(std::move(e));
    for (auto& w : ae.withheld) reply.withheld.push_back(std::move(w));
  }
  reply.summary = summary.empty() ? "No rule's evidence is present: no change proposed."
                                  : "Rule-based edits for " + util::join(summary, ", ") + ", each citing its evidence.";
  if (std::string plan = plan_text(diagnostics, reply); !plan.empty()) reply.summary += " " + plan;
  return reply;
}

} // namespace

namespace {

// The rules that fired, in table order (a signature edit names each of its rules,
// "restrict+bounds"), and those whose edit another rule's rewrite of the same loop displaced
// (warp_rows and coalesce_tiles are two forms of one rewrite: the second is the first's
// alternative). Only when two or more fire is each alone an alternative.
std::vector<std::string> alternative_rules(const prompt::Reply& all) {
  std::set<std::string> fired;
  for (const auto& e : all.edits)
    for (auto part : util::split(e.rule, '+')) fired.insert(std::string(part));
  for (const auto& w : all.withheld)
    if (w.reason.rfind(k_displaced, 0) == 0) fired.insert(w.suggestion.substr(0, w.suggestion.find(':')));
  std::vector<std::string> order;
  for (const Rule& rule : rule_table())
    if (fired.count(rule.name)) order.push_back(rule.name);
  for (const ApplicationRule& rule : application_rule_table())
    if (fired.count(rule.name)) order.push_back(rule.name);
  return order;
}

} // namespace

int alternatives(const json& diagnostics, const std::map<std::string, std::string>& sources, bool allow_fp_changes,
                 const std::map<std::string, std::string>& host, bool application) {
  auto order = alternative_rules(run_rules(diagnostics, sources, host, allow_fp_changes, application, ""));
  return order.size() < 2 ? 0 : static_cast<int>(order.size());
}

prompt::Reply propose(const json& diagnostics, const std::map<std::string, std::string>& sources, bool allow_fp_changes,
                      int alternative, const std::map<std::string, std::string>& host, bool application) {
  prompt::Reply all = run_rules(diagnostics, sources, host, allow_fp_changes, application, "");
  if (alternative <= 0) return all;
  std::vector<std::string> order = alternative_rules(all);
  // One rule alone is the whole answer when only one fires: no alternative then.
  if (order.size() < 2 || static_cast<std::size_t>(alternative) > order.size()) {
    prompt::Reply none;
    none.summary = fmt::format("No alternative {}: {} rule(s) fire here ({}){}.", alternative, order.size(),
                               util::join(order, ", "), order.size() < 2 ? "" : ", each offered alone already");
    return none;
  }
  prompt::Reply alone = run_rules(diagnostics, sources, host, allow_fp_changes, application, order[alternative - 1]);
  alone.summary =
      fmt::format("Alternative {}: the {} rule alone. {}", alternative, order[alternative - 1], alone.summary);
  return alone;
}

} // namespace optimas::builtin
