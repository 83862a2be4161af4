// Search with measured feedback (docs/loop.md, "Rounds and candidates"): what a later candidate's
// prompt is told of the earlier ones, and the search tree run.json records.
#include "loop/run_state.hpp"

#include "analysis/json.hpp"
#include "builtin/optimizer.hpp"
#include "evaluate/verdict.hpp"
#include "store/journal.hpp"
#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <optional>

#include <sstream>

namespace optimas::loop {

namespace fs = std::filesystem;
using nlohmann::json;
using store::read_json;

namespace {

constexpr std::size_t k_memories = 3; // worked examples shown at most

// "main.cu +4 -2" per file of a unified diff.
std::string diff_summary(const std::string& diff) {
  std::vector<std::string> parts;
  std::string file;
  int added = 0, removed = 0;
  auto flush = [&] {
    if (!file.empty()) parts.push_back(fmt::format("{} +{} -{}", file, added, removed));
    added = removed = 0;
  };
  std::istringstream in(diff);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("+++ ", 0) == 0) {
      flush();
      file = line.substr(4);
      if (file.rfind("b/", 0) == 0) file = file.substr(2);
    } else if (line.rfind("--- ", 0) == 0) {
      continue;
    } else if (!line.empty() && line[0] == '+') {
      ++added;
    } else if (!line.empty() && line[0] == '-') {
      ++removed;
    }
  }
  flush();
  return parts.empty() ? "no change" : util::join(parts, ", ");
}

std::string interval(const json& m) {
  if (!m.contains("speedup") || !m["speedup"].is_number()) return "not measured";
  std::string out = fmt::format("{:.3f}x", m["speedup"].get<double>());
  if (m.contains("ci") && m["ci"].is_array() && m["ci"].size() == 2 && m["ci"][0].is_number())
    out += fmt::format(" [{:.3f}, {:.3f}]", m["ci"][0].get<double>(), m["ci"][1].get<double>());
  return out;
}

} // namespace

std::string describe_attempt(const json& v, const std::string& run_dir) {
  std::string out =
      fmt::format("### {} (round {}, candidate {}, from {}): {}\n\n", v.value("key", "?"), v.value("iteration", 0),
                  v.value("candidate", 1), v.value("parent", "baseline"), v.value("status", "?"));
  std::vector<std::string> cited;
  for (const auto& e : util::member(v, "applied_edits")) {
    std::string what = fmt::format("{} citing {}", e.value("kernel", "?"),
                                   util::join(e.value("evidence", std::vector<std::string>{}), ", "));
    if (e.contains("rule") && e["rule"].is_string()) what += " (rule " + e["rule"].get<std::string>() + ")";
    cited.push_back(what);
  }
  const fs::path diff = fs::path(run_dir) / v.value("dir", "") / "diff.patch";
  if (!cited.empty())
    out += fmt::format("- Edits: {}; {}.\n", util::join(cited, "; "),
                       fs::exists(diff) ? diff_summary(util::read_file(diff.string())) : "no diff recorded");
  // Where the time is that the edits acted on (issue #50): the next candidate sees what was left.
  if (std::string c = util::member_string(util::member(v, "coverage"), "text"); !c.empty() && !cited.empty())
    out += fmt::format("- Its edits: {}.\n", c);
  if (const json& val = util::member(v, "validation"); util::member(val, "passed") == false)
    for (const auto& c : util::member(val, "checks"))
      if (!c.value("passed", true))
        out += fmt::format("- Validation failed on {}: {}\n", c.value("label", "?"), c.value("detail", ""));
  if (const json& m = util::member(v, "measurement"); m.is_object() && !m.empty()) {
    std::vector<std::string> per;
    for (const auto& [name, c] : util::member(m, "configs").items())
      per.push_back(fmt::format("{} {} ({})", name, interval(c), evaluate::config_verdict(m, name)));
    out += fmt::format("- Measured: {} overall; {}.\n", interval(m), util::join(per, "; "));
  }
  if (v.value("status", "") != "accepted" && !v.value("reason", "").empty())
    out += fmt::format("- Why it was not kept: {}\n", util::first_sentence(v.value("reason", "")));
  return out + "\n";
}

namespace {

// What the best variant's re-profile showed for the effects its edits expected.
std::string reprofile_deltas(const json& v) {
  std::string out;
  for (const auto& e : util::member(util::member(v, "ear"), "effects")) {
    if (!e["before"].is_number() || !e["after"].is_number()) continue;
    double before = e["before"], after = e["after"];
    std::string change = before != 0 ? fmt::format(" ({:+.0f}%)", (after / before - 1) * 100) : "";
    out +=
        fmt::format("- {} in {}: {:.4g} -> {:.4g}{}, expected to {} ({})\n", e.value("metric", "?"),
                    e.value("kernel", "?"), before, after, change, e.value("direction", "?"), e.value("outcome", "?"));
  }
  return out;
}

} // namespace

// A resumed run shows the examples it showed before (a manual backend's reply answers the prompt
// it was given): the round's recorded choice is read back, only its memories re-read.
void Loop::recall_memories(int it) {
  m_recalled.clear();
  if (m_app.optimize.memory != "corpus" || m_settings.aa) return;
  const std::string round = std::to_string(it);
  auto memories = store::collect_memories(store::RunStore(m_options.runs_root), m_id, m_settings.campaign);
  // An exported corpus (another machine's store) adds its accepted edits; the store's come first.
  if (!m_settings.memory_file.empty()) store::add_memories(memories, store::corpus_memories(m_settings.memory_file));
  if (const json& recorded = util::member(util::member(m_run, "memory"), round); recorded.is_array()) {
    for (const auto& r : recorded)
      for (const auto& mem : memories)
        if (mem.run_id == util::member_string(r, "run") && mem.variant == util::member_string(r, "variant") &&
            mem.kernel == util::member_string(r, "kernel"))
          m_recalled.push_back({mem, util::member_string(r, "for_kernel"),
                                r.value("shared", std::vector<std::string>{}), r.value("score", 0.0)});
    return;
  }
  m_recalled = store::recall(memories, analysis::to_json(m_diagnostics), k_memories);
  json shown = json::array();
  for (const auto& r : m_recalled) {
    shown.push_back({{"run", r.memory.run_id},
                     {"variant", r.memory.variant},
                     {"kernel", r.memory.kernel},
                     {"for_kernel", r.for_kernel},
                     {"shared", r.shared},
                     {"score", r.score},
                     {"speedup", r.memory.speedup}});
    say(fmt::format("round {} memory", it),
        fmt::format("{} of run {} ({:.3f}x) for {}: {}", r.memory.kernel, r.memory.run_id.substr(0, 8),
                    r.memory.speedup, r.for_kernel, util::join(r.shared, ", ")));
  }
  m_run["memory"][round] = shown;
  write_run("running");
}

std::string Loop::search_notes(const Variant& v) const {
  std::vector<const json*> earlier, same_round;
  auto retried = [&](const json& x) { // a later attempt of the same candidate stands for it
    for (const auto& y : m_variants)
      if (y.value("iteration", 0) == x.value("iteration", 0) && y.value("candidate", 1) == x.value("candidate", 1) &&
          y.value("attempt", 0) > x.value("attempt", 0))
        return true;
    return false;
  };
  for (const auto& x : m_variants) {
    if (retried(x)) continue;
    earlier.push_back(&x);
    if (x.value("iteration", 0) == v.iteration) same_round.push_back(&x);
  }
  const std::string examples = store::render_recall(m_recalled);
  if (earlier.empty()) return examples;
  std::string out = examples +
                    "\n\n## What earlier attempts measured\n\n"
                    "Each earlier candidate of this run, its edits, and what validation and measurement found "
                    "(speedups over its parent, with 95% intervals). Learn from them: keep what was faster, do not "
                    "repeat what failed or was slower.\n\n";
  for (const auto* x : earlier) out += describe_attempt(*x, m_dir.string());
  if (const json* best = variant_record(m_best)) {
    std::string deltas = reprofile_deltas(*best);
    out += fmt::format("This round starts from {}, the best variant so far{}\n\n", m_best,
                       deltas.empty() ? "." : "; its re-profile against its parent's profile:\n" + deltas);
  }
  if (!same_round.empty()) {
    std::vector<std::string> keys;
    for (const auto* x : same_round) keys.push_back(x->value("key", "?"));
    out += fmt::format("You are candidate {} of this round. {} answered before you (above): give a different "
                       "approach than these, on other lines or from other evidence, still following every rule.\n",
                       v.candidate, util::join(keys, ", "));
  }
  return out;
}

namespace {

// What the model's answers for one variant cost, as its replies.json records it; nothing where
// the price is unknown or nothing was asked.
std::optional<double> answers_cost(const json& variant, const fs::path& run_dir) {
  const fs::path replies = run_dir / variant.value("dir", "") / "replies.json";
  if (!fs::exists(replies)) return std::nullopt;
  const json r = read_json(replies.string());
  if (!r.contains("cost_usd") || !r["cost_usd"].is_number()) return std::nullopt;
  return r["cost_usd"].get<double>();
}

// What the model's answers of the run cost so far, where the price is known.
double spent_usd(const std::vector<json>& variants, const fs::path& run_dir) {
  double usd = 0;
  for (const auto& x : variants) usd += answers_cost(x, run_dir).value_or(0);
  return usd;
}

int verdicts(const std::vector<json>& variants) {
  int n = 0;
  for (const auto& x : variants) n += x.contains("measurement") ? 1 : 0;
  return n;
}

} // namespace

std::string Loop::budget_spent() const {
  const auto& s = m_settings;
  if (s.budget_usd)
    if (const double usd = spent_usd(m_variants, m_dir); usd >= *s.budget_usd)
      return fmt::format("the budget of ${:.2f} is spent (${:.4f})", *s.budget_usd, usd);
  const double minutes = seconds_since(m_started) / 60;
  if (s.budget_minutes && minutes >= *s.budget_minutes)
    return fmt::format("the budget of {:.1f} min is spent ({:.1f} min)", *s.budget_minutes, minutes);
  if (s.budget_verdicts && verdicts(m_variants) >= *s.budget_verdicts)
    return fmt::format("the budget of {} verdict(s) is spent", *s.budget_verdicts);
  return "";
}

std::string Loop::budget_use() const {
  const auto& s = m_settings;
  std::vector<std::string> parts;
  if (s.budget_usd) parts.push_back(fmt::format("${:.4f} of ${:.2f}", spent_usd(m_variants, m_dir), *s.budget_usd));
  if (s.budget_minutes)
    parts.push_back(fmt::format("{:.1f} of {:.1f} min", seconds_since(m_started) / 60, *s.budget_minutes));
  if (s.budget_verdicts) parts.push_back(fmt::format("{} of {} verdict(s)", verdicts(m_variants), *s.budget_verdicts));
  return util::join(parts, ", ");
}

json Loop::search_tree() const {
  json nodes = json::array();
  for (const auto& x : m_variants) {
    json n = {{"key", x.value("key", "")},        {"parent", x.value("parent", "baseline")},
              {"round", x.value("iteration", 0)}, {"candidate", x.value("candidate", 1)},
              {"attempt", x.value("attempt", 1)}, {"status", x.value("status", "")}};
    if (const json& m = util::member(x, "measurement"); m.contains("speedup")) {
      n["verdict"] = m.value("verdict", "");
      n["speedup"] = m["speedup"];
      n["ci"] = m.value("ci", json(nullptr));
    }
    double seconds = 0;
    for (const auto& [k, t] : util::member(x, "times").items())
      if (t.is_number() && k != "confirm_s") seconds += t.get<double>(); // confirm_s is inside measure_s
    n["seconds"] = seconds;
    if (auto usd = answers_cost(x, m_dir)) n["cost_usd"] = *usd;
    nodes.push_back(n);
  }
  json budget = json::object();
  if (m_settings.budget_usd)
    budget["usd"] = {{"limit", *m_settings.budget_usd}, {"spent", spent_usd(m_variants, m_dir)}};
  if (m_settings.budget_minutes)
    budget["minutes"] = {{"limit", *m_settings.budget_minutes}, {"spent", seconds_since(m_started) / 60}};
  if (m_settings.budget_verdicts)
    budget["verdicts"] = {{"limit", *m_settings.budget_verdicts}, {"spent", verdicts(m_variants)}};
  json tree = {{"rounds", m_app.optimize.rounds},
               {"candidates", m_app.optimize.candidates},
               {"best", m_best.empty() ? json("baseline") : json(m_best)},
               {"nodes", nodes}};
  if (!budget.empty()) tree["budget"] = budget;
  if (!m_search_stopped.empty()) tree["stopped"] = m_search_stopped;
  return tree;
}

// The builtin's alternatives (each firing rule alone, the other form of a loop's rewrite) cost no
// model call: unless optimize.candidates is given, a round offers up to three of them as its
// later candidates, measured like any candidate. They count in the significance family like any
// candidate, so this is decided from the baseline's evidence before anything is measured; a
// resumed run decides the same from the same evidence.
void Loop::free_candidates() {
  constexpr int k_most = 3;
  // An A/A run measures the parent unchanged: it has no alternatives to offer.
  if (m_backend.provider != "builtin" || m_settings.aa || m_app.optimize.candidates_given ||
      m_app.optimize.candidates != 1)
    return;
  auto flag = m_backend.options.find("allow_fp_changes"); // the builtin's option (true or 1)
  const bool fp = flag != m_backend.options.end() && (flag->second == "true" || flag->second == "1");
  int n = builtin::alternatives(analysis::to_json(m_diagnostics), current_sources(), fp, host_sources(),
                                m_app.optimize.scope == "application");
  if (n == 0) return;
  m_app.optimize.candidates = 1 + std::min(n, k_most);
  say("search", fmt::format("the builtin offers {} alternative(s) at no model cost: candidates 2 to {} of each round "
                            "(optimize.candidates sets another number)",
                            n, m_app.optimize.candidates));
}

} // namespace optimas::loop
