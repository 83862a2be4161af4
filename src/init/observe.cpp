#include "init/observe.hpp"

#include "util/regex.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>

namespace optimas::init {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  for (auto v : util::split(text, '\n')) {
    std::string l(v);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(l);
  }
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? std::nan("") : v[v.size() / 2];
}

// How many lines of `text` the pattern matches.
int matching_lines(const std::regex& re, const std::string& text) {
  int n = 0;
  for (const auto& l : lines_of(text)) n += std::regex_search(l, re) ? 1 : 0;
  return n;
}

bool iteration_word(const std::string& name) {
  static const std::regex words(
      R"((^|_)(n?iters?|iterations?|calls|reps|repeats?|repetitions|steps|loops|runs|times)$)", std::regex::icase);
  return std::regex_search(name, words);
}

// The {placeholder} whose value is `n`, or `n` itself.
std::string calls_value(std::uint64_t n, const std::vector<Parameter>& parameters, std::string& why) {
  for (const auto& p : parameters)
    if (!p.seed && p.value == std::to_string(n)) {
      why += fmt::format("; {} launches a run, the value of {{{}}}", n, p.name);
      return "{" + p.name + "}";
    }
  why += fmt::format("; {} launches a run (no parameter has that value: a config with other sizes may launch it "
                     "a different number of times)",
                     n);
  return std::to_string(n);
}

// The parameter whose value the printed line states after its figure ("... 41.2 us over 20
// iterations"): the calls the average is over, by the program's own words (a warm-up launch the
// trace counts is not one of them).
const Parameter* stated_calls(const std::string& pattern, const std::string& text,
                              const std::vector<Parameter>& parameters) {
  static const std::regex number(R"([0-9]+)");
  std::regex re = util::compile_regex(pattern);
  for (const auto& l : lines_of(text)) {
    std::smatch g;
    if (!std::regex_search(l, g, re)) continue;
    std::string after = g.suffix().str();
    for (std::sregex_iterator it(after.begin(), after.end(), number), end; it != end; ++it)
      for (const auto& p : parameters)
        if (!p.seed && p.value == it->str() && p.value != "0" && p.value != "1") return &p;
    return nullptr;
  }
  return nullptr;
}

struct Fit {
  double error = 1e300; // |log(printed / traced)|
  KernelTimeGuess guess;
};

// The printed time `t` against the runs' traces: per run, or per call of each kernel.
Fit fit_to_trace(const PrintedTime& t, const std::vector<ObservedRun>& runs, const std::vector<Parameter>& parameters) {
  Fit best;
  std::vector<double> printed;
  for (const auto& r : runs)
    if (auto v = figure(t.pattern, r.stdout_text)) printed.push_back(*v * unit_ms(t.unit));
  if (printed.size() != runs.size() || runs.empty() || !runs[0].traced_ms) return best;
  double p = median(printed);
  auto consider = [&](double traced, bool per_call, std::uint64_t calls, const std::string& kernel) {
    if (!(traced > 0) || !(p > 0)) return;
    double error = std::fabs(std::log(p / traced));
    if (error >= best.error) return;
    best.error = error;
    best.guess = KernelTimeGuess{t.pattern, t.unit, per_call, "", "", ""};
    best.guess.why = per_call ? fmt::format("prints {:.4g} {} a call; {} took {:.4g} ms a launch in the trace",
                                            p / unit_ms(t.unit), t.unit, kernel, traced)
                              : fmt::format("prints {:.4g} {}; the trace's kernels took {:.4g} ms a run",
                                            p / unit_ms(t.unit), t.unit, traced);
    if (!per_call) return;
    if (const Parameter* stated = stated_calls(t.pattern, runs[0].stdout_text, parameters)) {
      best.guess.calls = "{" + stated->name + "}";
      best.guess.why += fmt::format("; an average over {{{}}} calls, as the line itself says ({} launches traced)",
                                    stated->name, calls);
    } else {
      best.guess.calls = calls_value(calls, parameters, best.guess.why);
    }
  };
  std::vector<double> totals;
  for (const auto& r : runs) totals.push_back(r.traced_ms.value_or(0));
  consider(median(totals), false, 1, "");
  // Per call only of a kernel that holds most of the GPU time: the loop checks a printed time
  // against the whole trace, and a minor kernel's time says little about it.
  for (const auto& k : runs[0].kernels)
    if (k.launches > 1 && k.total_ms >= 0.5 * runs[0].traced_ms.value_or(0))
      consider(k.total_ms / static_cast<double>(k.launches), true, k.launches, k.name);
  return best;
}

} // namespace

std::optional<double> figure(const std::string& pattern, const std::string& text) {
  std::regex re = util::compile_regex(pattern);
  for (const auto& l : lines_of(text)) {
    std::smatch g;
    if (std::regex_search(l, g, re) && g.size() > 1) {
      char* end = nullptr;
      std::string s = g[1];
      double v = std::strtod(s.c_str(), &end);
      if (end != s.c_str()) return v;
    }
  }
  return std::nullopt;
}

std::vector<IgnoreGuess> ignore_patterns(const std::vector<ObservedRun>& runs, const std::string& kernel_time_pattern,
                                         std::vector<std::string>& findings) {
  std::vector<IgnoreGuess> out;
  if (runs.empty()) return out;
  std::optional<std::regex> kt;
  if (!kernel_time_pattern.empty()) kt = util::compile_regex(kernel_time_pattern);
  std::vector<std::multiset<std::string>> seen;
  for (const auto& r : runs) {
    auto lines = lines_of(r.stdout_text);
    seen.emplace_back(lines.begin(), lines.end());
  }
  std::set<std::string> shapes;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (const auto& line : lines_of(runs[i].stdout_text)) {
      if (kt && std::regex_search(line, *kt)) continue;
      bool everywhere = true;
      for (const auto& s : seen) everywhere = everywhere && s.count(line) == seen[i].count(line);
      bool timing = looks_like_timing(line);
      if (everywhere && !timing) continue;
      std::string shape = line_shape(line);
      if (!shapes.insert(shape).second) continue;
      if (timing)
        out.push_back({shape, everywhere ? "prints a time or rate: a faster variant changes it"
                                         : "varied between the runs; it prints a time or rate"});
      else {
        out.push_back({shape,
                       "varied between the runs and does not read as a time: likely a result (an input seeded from "
                       "the clock?), which ignoring would leave unchecked; uncomment this only if it is no result",
                       false});
        findings.push_back(fmt::format("stdout is not the same every run: \"{}\" varies and does not read as a time "
                                       "(a non-deterministic result?); it is not ignored",
                                       line.size() > 80 ? line.substr(0, 80) + "..." : line));
      }
    }
  }
  return out;
}

std::optional<KernelTimeGuess> choose_kernel_time(const std::vector<ObservedRun>& runs,
                                                  const std::vector<PrintedTime>& from_sources,
                                                  const std::vector<Parameter>& parameters) {
  std::vector<PrintedTime> printed;
  if (!runs.empty()) {
    std::set<std::string> patterns;
    for (auto& t : printed_times_in_output(runs[0].stdout_text))
      // A pattern that matches several lines would add them up: only a line of its own kind.
      if (patterns.insert(t.pattern).second && matching_lines(util::compile_regex(t.pattern), runs[0].stdout_text) == 1)
        printed.push_back(t);
  }
  bool traced = !runs.empty() && runs[0].traced_ms;
  if (traced) {
    Fit best;
    for (const auto& t : printed)
      if (Fit f = fit_to_trace(t, runs, parameters); f.error < best.error) best = f;
    if (best.error <= std::log(1.5)) return best.guess;
    if (best.error <= std::log(3.0)) {
      best.guess.todo = "the printed figure is not within 1.5x of the traced time: check that it is the kernels' time";
      return best.guess;
    }
    return std::nullopt;
  }
  // No trace to compare with: the printed time whose label says kernel or GPU, else the only one.
  const std::vector<PrintedTime>& pool = printed.empty() ? from_sources : printed;
  const PrintedTime* pick = nullptr;
  for (const auto& t : pool)
    if (t.kernel_word) {
      pick = &t;
      break;
    }
  if (!pick && pool.size() == 1) pick = &pool[0];
  if (!pick) return std::nullopt;
  KernelTimeGuess g{pick->pattern, pick->unit.empty() ? "ms" : pick->unit, pick->average, "", "", ""};
  g.why = printed.empty() ? fmt::format("printed by {} (\"{}\")", pick->where, pick->label)
                          : fmt::format("the program prints \"{}\"", util::trim(pick->label));
  g.todo = "not compared with a kernel trace (needs a run on a GPU)";
  if (pick->unit.empty()) g.todo += "; the unit is a guess: ms";
  if (g.per_call) {
    for (const auto& p : parameters)
      if (iteration_word(p.name)) {
        g.calls = "{" + p.name + "}";
        g.why += fmt::format("; an average, over {{{}}} calls (a guess from its name)", p.name);
        break;
      }
    if (g.calls.empty()) {
      g.calls = "1";
      g.todo += "; it prints an average: set calls to the calls one run makes";
    }
  }
  return g;
}

std::vector<std::string> written_by_every_run(const std::vector<ObservedRun>& runs,
                                              std::vector<std::string>& findings) {
  std::vector<std::string> files;
  if (runs.empty()) return files;
  for (const auto& [path, hash] : runs[0].written) {
    std::set<std::string> versions;
    bool everywhere = true;
    for (const auto& r : runs) {
      auto it = r.written.find(path);
      everywhere = everywhere && it != r.written.end();
      if (it != r.written.end()) versions.insert(it->second);
    }
    if (!everywhere) continue;
    files.push_back(path);
    if (versions.size() > 1)
      findings.push_back(fmt::format("{} differs between runs ({} versions in {} runs): byte-for-byte validation "
                                     "will reject every variant unless the program is made deterministic or "
                                     "validate.tolerance allows it",
                                     path, versions.size(), runs.size()));
  }
  return files;
}

} // namespace optimas::init
