#include "evaluate/ear.hpp"

#include "profile/stalls.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

namespace optimas::evaluate {

namespace {

constexpr const char* k_consistent = "consistent";
constexpr const char* k_inconsistent = "inconsistent";
constexpr const char* k_unmeasured = "unmeasured";

// Models name kernels loosely ("rhs4", "rhs4<0, 1>", "void ns::rhs4(double*)"), so kernels are
// compared by their bare name: no return type, parameters, template arguments or namespaces.
std::string kernel_key(std::string_view name) {
  std::string base = profile::kernel_base_name(name);
  std::string out;
  int depth = 0;
  for (char c : base) {
    if (c == '<')
      ++depth;
    else if (c == '>')
      depth = depth > 0 ? depth - 1 : 0;
    else if (depth == 0)
      out += c;
  }
  if (auto colon = out.rfind("::"); colon != std::string::npos) out.erase(0, colon + 2);
  return std::string(util::trim(out));
}

std::string base_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// The runs of one input configuration: repeats of it are pooled, which for a single run is
// just that run.
std::vector<const profile::Run*> pick_runs(const profile::Profile* p, const std::string& config) {
  std::vector<const profile::Run*> out;
  if (!p || p->runs.empty()) return out;
  const std::string& wanted = config.empty() ? p->runs.front().config : config;
  for (const auto& r : p->runs)
    if (r.config == wanted) out.push_back(&r);
  return out;
}

// The stall's share of the kernel's PC samples: a share, so the number of launches and the
// sampling interval cancel out between the two profiles.
double stall_share(const std::vector<const profile::Run*>& runs, const std::string& key, profile::Stall stall) {
  const auto s = static_cast<std::size_t>(stall);
  std::uint64_t stalled = 0, total = 0;
  auto add = [&](const profile::Samples& samples) {
    total += samples.all;
    stalled += samples.stalls[s];
  };
  for (const auto* run : runs)
    for (const auto& block : run->sources) {
      if (kernel_key(block.demangled.empty() ? block.kernel : block.demangled) != key) continue;
      // Lines when the page correlated them, else instructions: the same samples either way.
      if (!block.lines.empty()) {
        for (const auto& l : block.lines) add(l.samples);
      } else {
        for (const auto& i : block.instructions) add(i.samples);
      }
    }
  return total ? static_cast<double>(stalled) / static_cast<double>(total) : profile::k_nan;
}

double metric_mean(const std::vector<const profile::Run*>& runs, const std::string& key, const std::string& metric) {
  double sum = 0;
  std::size_t n = 0;
  for (const auto* run : runs)
    for (const auto& l : run->launches) {
      if (kernel_key(l.kernel.empty() ? l.demangled : l.kernel) != key) continue;
      double v = l.value(metric);
      if (!std::isfinite(v)) continue;
      sum += v;
      ++n;
    }
  return n ? sum / static_cast<double>(n) : profile::k_nan;
}

double measure(const std::vector<const profile::Run*>& runs, const std::string& key, const std::string& metric) {
  if (runs.empty() || key.empty()) return profile::k_nan;
  if (auto stall = profile::stall_from_name(util::trim(metric))) return stall_share(runs, key, *stall);
  return metric_mean(runs, key, std::string(util::trim(metric)));
}

const char* judge(double before, double after, const std::string& direction, double dead_band) {
  if (!std::isfinite(before) || !std::isfinite(after)) return k_unmeasured;
  const std::string dir = util::to_lower(util::trim(direction));
  const bool increase = dir == "increase";
  if (!increase && dir != "decrease") return k_unmeasured;
  // No relative change exists from zero; a rise is still a rise, but nothing can fall below zero.
  if (before == 0) {
    if (!increase) return k_unmeasured;
    return after > 0 ? k_consistent : k_inconsistent;
  }
  const double change = (after - before) / std::fabs(before);
  return (increase ? change > dead_band : change < -dead_band) ? k_consistent : k_inconsistent;
}

struct SalientSpot {
  std::string file;
  int line = 0;
};

struct KernelTally {
  std::size_t consistent = 0, measured = 0;
};

void check_inputs(const EarInputs& in, const EarOptions& o) {
  if (!in.diagnostics || !in.reply || !in.application)
    throw Error(fmt::format("EAR needs the diagnostics the prompt was built from, the reply and the outcome of "
                            "applying it; missing: {}{}{}",
                            in.diagnostics ? "" : " diagnostics", in.reply ? "" : " reply",
                            in.application ? "" : " application"));
  if (o.k_lines < 0) throw UsageError(fmt::format("the localisation window must be >= 0 lines (got {})", o.k_lines));
  if (!(o.dead_band >= 0)) throw UsageError(fmt::format("the dead band must be >= 0 (got {})", o.dead_band));
}

// What every applied edit is measured against.
struct EarContext {
  const analysis::Diagnostics& diagnostics;
  const EarOptions& o;
  std::set<std::string> source_names; // the application's source files, by file name
  std::vector<const profile::Run*> before_runs, after_runs;

  // An ncu path whose file name is not the edit's still means the edit's file when the
  // application has only that one (the binary was built from a copy under another name).
  bool same_file(const std::string& ncu_path, const std::string& edit_file) const {
    return base_name(ncu_path) == base_name(edit_file) || source_names.size() == 1;
  }
};

std::set<std::string> source_names(const prompt::Reply& reply, const edit::Application& application) {
  std::set<std::string> names;
  for (const auto& [file, text] : application.original) names.insert(base_name(file));
  if (names.empty())
    for (const auto& e : reply.edits) names.insert(base_name(e.file));
  return names;
}

// The first outcome recorded for each edit; an edit with none was never applied.
std::vector<const edit::EditOutcome*> first_outcomes(const prompt::Reply& reply, const edit::Application& application) {
  std::vector<const edit::EditOutcome*> outcome(reply.edits.size(), nullptr);
  for (const auto& oc : application.outcomes)
    if (oc.index < outcome.size() && !outcome[oc.index]) outcome[oc.index] = &oc;
  return outcome;
}

// Counts the edit as covered when it cites evidence the prompt had, and each id it cites that
// the prompt never had.
void count_citations(const prompt::Edit& e, const std::set<std::string>& known, EarMetrics& m) {
  std::set<std::string> unknown;
  bool covered = false;
  for (const auto& id : e.evidence) {
    if (known.count(id))
      covered = true;
    else
      unknown.insert(id);
  }
  if (covered) ++m.covered;
  m.unknown_citations += unknown.size();
}

// Counts the applied edit as localizable when its kernel has salient PC lines, and as localized
// when it lies within k lines of one.
void localize(const EarContext& cx, const prompt::Edit& e, const edit::EditOutcome& oc, const std::string& key,
              EarMetrics& m) {
  std::vector<SalientSpot> spots;
  if (!key.empty())
    for (const auto& kd : cx.diagnostics.kernels) {
      if (!kd.stalls || kernel_key(kd.time.kernel) != key) continue;
      for (const auto& l : kd.stalls->lines) {
        if (l.line > 0) spots.push_back({l.file, l.line});
        // What the line waits on is where its stall is fixed (issue #49).
        for (const auto& [file, line] : l.cause_lines()) spots.push_back({file, line});
      }
    }
  if (spots.empty()) return;
  ++m.localizable;
  const std::string& file = oc.file.empty() ? e.file : oc.file;
  const int k = cx.o.k_lines;
  for (const auto& s : spots)
    if (cx.same_file(s.file, file) && s.line >= oc.first_line - k && s.line <= oc.last_line + k) {
      ++m.localized;
      break;
    }
}

// Judges each effect edit `i` promised against the two profiles, tallied per kernel.
void check_effects(const EarContext& cx, const prompt::Edit& e, std::size_t i, const std::string& key,
                   std::map<std::string, KernelTally>& tallies, EarMetrics& m) {
  for (const auto& effect : e.expected_effect) {
    EffectCheck c;
    c.kernel = key;
    c.metric = effect.metric;
    c.direction = effect.direction;
    c.edit = i;
    c.before = measure(cx.before_runs, key, effect.metric);
    c.after = measure(cx.after_runs, key, effect.metric);
    c.outcome = judge(c.before, c.after, effect.direction, cx.o.dead_band);
    if (c.outcome != k_unmeasured) {
      auto& t = tallies[key];
      ++t.measured;
      if (c.outcome == k_consistent) ++t.consistent;
    }
    m.effects.push_back(std::move(c));
  }
}

// The ratios, from the counts.
void summarise(const std::map<std::string, KernelTally>& tallies, EarMetrics& m) {
  for (const auto& [kernel, t] : tallies) {
    ++m.kernels_checked;
    if (2 * t.consistent > t.measured) ++m.kernels_consistent;
  }
  if (m.edits) m.evidence_coverage = static_cast<double>(m.covered) / static_cast<double>(m.edits);
  if (m.localizable) m.localization_agreement = static_cast<double>(m.localized) / static_cast<double>(m.localizable);
  if (m.kernels_checked)
    m.directional_consistency = static_cast<double>(m.kernels_consistent) / static_cast<double>(m.kernels_checked);
}

} // namespace

EarMetrics compute_ear(const EarInputs& in, const EarOptions& o) {
  check_inputs(in, o);
  const auto& reply = *in.reply;
  const auto& application = *in.application;

  EarMetrics m;
  m.edits = reply.edits.size();
  m.withheld = reply.withheld.size();
  m.correct = in.correct;

  std::set<std::string> known;
  for (const auto& e : in.diagnostics->evidence) known.insert(e.id);
  const auto outcome = first_outcomes(reply, application);
  const EarContext cx{*in.diagnostics, o, source_names(reply, application), pick_runs(in.before, in.config),
                      pick_runs(in.after, in.config)};
  std::map<std::string, KernelTally> tallies;

  for (std::size_t i = 0; i < reply.edits.size(); ++i) {
    const auto& e = reply.edits[i];
    count_citations(e, known, m);
    const edit::EditOutcome* oc = outcome[i];
    if (!oc || !oc->applied) {
      ++m.hallucinated_edits;
      continue;
    }
    ++m.implemented;
    const std::string key = kernel_key(e.kernel);
    localize(cx, e, *oc, key, m);
    check_effects(cx, e, i, key, tallies, m);
  }
  summarise(tallies, m);
  return m;
}

namespace {

nlohmann::json num(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

template <typename T> nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

} // namespace

nlohmann::json to_json(const EarMetrics& m) {
  nlohmann::json effects = nlohmann::json::array();
  for (const auto& c : m.effects)
    effects.push_back({{"edit", c.edit},
                       {"kernel", c.kernel},
                       {"metric", c.metric},
                       {"direction", c.direction},
                       {"before", num(c.before)},
                       {"after", num(c.after)},
                       {"outcome", c.outcome}});
  return {{"evidence_coverage", opt(m.evidence_coverage)},
          {"localization_agreement", opt(m.localization_agreement)},
          {"directional_consistency", opt(m.directional_consistency)},
          {"hallucinations", m.hallucinations()},
          {"hallucinated_edits", m.hallucinated_edits},
          {"unknown_citations", m.unknown_citations},
          {"implemented", m.implemented},
          {"withheld", m.withheld},
          {"edits", m.edits},
          {"covered", m.covered},
          {"localizable", m.localizable},
          {"localized", m.localized},
          {"kernels_checked", m.kernels_checked},
          {"kernels_consistent", m.kernels_consistent},
          {"correct", opt(m.correct)},
          {"effects", effects}};
}

} // namespace optimas::evaluate
