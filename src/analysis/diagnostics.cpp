#include "analysis/diagnostics.hpp"

#include "analysis/application.hpp"
#include "analysis/dictionary.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace optimas::analysis {

namespace {

// The sources of a list; `known` names what the setting takes, for the error.
unsigned sources_of(std::string_view list, char separator, const char* known) {
  unsigned out = 0;
  for (auto part : util::split(list, separator)) {
    std::string p = util::to_lower(util::trim(part));
    if (p == "pc")
      out |= k_pc;
    else if (p == "ia")
      out |= k_ia;
    else if (p == "roofline" || p == "rf")
      out |= k_roofline;
    else if (p == "all")
      out |= k_all_sources;
    else
      throw UsageError(fmt::format("unknown diagnostic source \"{}\" (use {})", p, known));
  }
  if (!out) throw UsageError(fmt::format("no diagnostic source selected (use {})", known));
  return out;
}

} // namespace

unsigned parse_sources(std::string_view list) {
  return sources_of(list, ',', "pc, ia, roofline or all");
}

std::string sources_label(unsigned s) {
  std::vector<std::string> parts;
  if (s & k_pc) parts.push_back("PC");
  if (s & k_ia) parts.push_back("IA");
  if (s & k_roofline) parts.push_back("Roofline");
  return parts.empty() ? "none" : util::join(parts, "+");
}

std::string DiagnosticsChoice::label() const {
  return code_only ? k_code_only : sources_label(sources);
}

DiagnosticsChoice parse_diagnostics(std::string_view setting) {
  std::string s = util::to_lower(util::trim(setting));
  if (s == k_code_only) return {true, 0};
  // "pc+ia" is how the paper and a campaign file write a subset; "pc,ia" how the command line does.
  std::replace(s.begin(), s.end(), '+', ',');
  return {false, sources_of(s, ',', "pc, ia, roofline, all, or code-only for the kernels alone")};
}

namespace {

std::string si(double v, const char* unit) {
  if (!std::isfinite(v)) return "n/a";
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int p = 0;
  while (std::fabs(v) >= 1000 && p < 5) {
    v /= 1000;
    ++p;
  }
  return fmt::format("{:.3g} {}{}", v, prefixes[p], unit);
}

std::string pct(double rho) {
  return std::isfinite(rho) ? fmt::format("{:.0f}%", 100 * rho) : "n/a";
}

std::string roofline_text(const Roofline& r) {
  std::string s = fmt::format("{} ({}).", r.summary, r.bound);
  if (!r.sol.sentence.empty()) s += " " + r.sol.sentence + ".";
  for (const auto& t : r.memory)
    if (std::isfinite(t.achieved) || std::isfinite(t.rho))
      s += fmt::format(" {} {} ({} of peak);", t.name, si(t.achieved, "B/s"), pct(t.rho));
  for (const auto& t : r.compute)
    if (std::isfinite(t.achieved) && t.achieved > 0)
      s += fmt::format(" {} {} of {} ({});", t.name, si(t.achieved, "FLOP/s"), si(t.peak, "FLOP/s"), pct(t.rho));
  if (std::isfinite(r.intensity_dram) && r.intensity_dram > 0)
    s += fmt::format(" arithmetic intensity {:.3g} FLOP/byte (DRAM);", r.intensity_dram);
  if (std::isfinite(r.achieved_occupancy))
    s += fmt::format(" occupancy {:.0f}% achieved of {:.0f}% theoretical{};", r.achieved_occupancy,
                     r.theoretical_occupancy,
                     r.occupancy_limiter.empty() ? "" : " (limited by " + r.occupancy_limiter + ")");
  if (r.short_grid())
    s += fmt::format(" the grid is {:.2g} waves: the SMs could hold {:.1f}x its blocks at once;", r.waves, 1 / r.waves);
  if (std::isfinite(r.issue_per_cycle) && r.issue_per_cycle > 0)
    s += fmt::format(" one instruction issued every {:.1f} cycles, {:.2f} eligible warps per cycle.",
                     1 / r.issue_per_cycle, r.eligible_warps);
  if (!s.empty() && s.back() == ';') s.back() = '.';
  // The access sentence where the profile has any of its counters, so that prompts show it too.
  if (!r.access.summary.empty() && r.access.summary != k_no_access_counters) s += " " + r.access.summary;
  return s;
}

std::string counter_text(const CounterWeight& w) {
  return fmt::format("{} ({}): importance {:.2f}, chosen by {:.0f}% of ensemble members, runtime {} as it grows",
                     w.counter, w.description, w.importance, 100 * w.frequency, w.mean_weight >= 0 ? "rises" : "falls");
}

const profile::Run& pick_run(const profile::Profile& p, const std::string& wanted) {
  if (p.runs.empty()) throw Error("the profile has no runs");
  if (!wanted.empty()) {
    for (const auto& r : p.runs)
      if (r.config == wanted) return r;
    std::vector<std::string> names;
    for (const auto& r : p.runs) names.push_back(r.config);
    throw UsageError(
        fmt::format("no run for input configuration \"{}\" (the profile has: {})", wanted, util::join(names, ", ")));
  }
  for (const auto& r : p.runs)
    if (r.config == "default") return r;
  return p.runs.front();
}

} // namespace

void set_gain(Evidence& e, double saved, const std::string& if_what, const std::string& basis,
              const std::string& assumes) {
  if (!std::isfinite(saved) || saved < 0) return;
  saved = std::min(saved, 0.999);
  e.saved = saved;
  e.gain = 1 / (1 - saved);
  e.text += fmt::format(" [gain if {}: at most {:.3g}x of {}, {:.1f}% of it saved; assumes {}]", if_what, e.gain, basis,
                        100 * saved, assumes);
}

double combined_gain(const std::vector<const Evidence*>& items, const std::map<std::string, double>& headroom,
                     double gpu_of_wall) {
  std::map<std::string, double> saved;
  bool any = false;
  for (const auto* e : items)
    if (e && std::isfinite(e->saved)) {
      saved[e->kernel] += e->saved;
      any = true;
    }
  if (!any) return std::numeric_limits<double>::quiet_NaN();
  double kernels = 0, application = 0;
  for (const auto& [kernel, s] : saved) {
    auto cap = headroom.find(kernel);
    (kernel.empty() ? application : kernels) += cap == headroom.end() ? s : std::min(s, cap->second);
  }
  // Shares of the GPU time become shares of the wall time where application items join them.
  double all = !saved.count("") ? kernels : application + (std::isfinite(gpu_of_wall) ? kernels * gpu_of_wall : 0);
  return 1 / (1 - std::min(all, 0.999));
}

double combined_gain(const std::vector<const Evidence*>& items, const Diagnostics& d) {
  std::map<std::string, double> headroom;
  for (const auto& k : d.kernels) headroom[k.time.kernel] = k.headroom;
  headroom[""] = d.application_headroom;
  const double gpu_of_wall = d.timeline && d.timeline->wall_ns > 0 ? d.hot.total_ns / d.timeline->wall_ns
                                                                   : std::numeric_limits<double>::quiet_NaN();
  return combined_gain(items, headroom, gpu_of_wall);
}

std::map<std::string, SpeedOfLight> speeds_of_light(const profile::Profile& profile, const std::string& config,
                                                    const std::vector<std::string>& kernels, double tau_sat) {
  std::map<std::string, SpeedOfLight> out;
  const profile::Run& run = pick_run(profile, config);
  for (const auto& k : kernels) {
    std::vector<const profile::Launch*> launches;
    for (const auto& l : run.launches)
      if (l.kernel == k) launches.push_back(&l);
    if (!launches.empty()) out[k] = compute_roofline(k, launches, tau_sat).sol;
  }
  return out;
}

Diagnostics analyze(const profile::Profile& profile, const AnalysisOptions& o) {
  if (!(o.tau_sat > 0 && o.tau_sat <= 1)) throw UsageError("tau_sat must be in (0, 1]");
  if (!(o.saliency.tau > 0 && o.saliency.tau <= 1)) throw UsageError("the stall threshold tau must be in (0, 1]");
  if (o.eomp.kappa < 1 || o.eomp.ensemble < 1 || o.eomp.pool < 1)
    throw UsageError("kappa, ensemble and pool must be >= 1");
  const auto& dict = Dictionary::builtin();
  Diagnostics d;
  d.options = o;
  const profile::Run& run = pick_run(profile, o.config);
  d.config = run.config;
  for (const auto& r : profile.runs) d.raw_bytes += r.input_bytes;
  d.hot = profile::select_hot_kernels(run.timed_launches(), o.alpha);

  StallAggregator stalls;
  if (o.sources & k_pc) {
    for (const auto& s : run.sources) stalls.add(s, s.page_bytes);
  }

  int rf = 1, pc = 1, ia = 1;
  for (const auto& k : d.hot.kernels) {
    if (!k.hot) continue;
    KernelDiagnostics kd;
    kd.time = k;
    std::vector<const profile::Launch*> launches;
    for (const auto& l : run.launches)
      if (l.demangled == k.demangled) launches.push_back(&l);
    // The roofline once: its speed of light caps every item's gain, shown or not.
    std::optional<Roofline> roofline;
    if (!launches.empty()) roofline = compute_roofline(k.kernel, launches, o.tau_sat);
    kd.headroom = roofline && std::isfinite(roofline->sol.fraction) ? k.share * (1 - roofline->sol.fraction) : k.share;
    if (o.sources & k_roofline) {
      if (!roofline) {
        kd.notes.push_back("no profiled launch of this kernel in the heavy pass: no roofline");
      } else {
        Roofline r = std::move(*roofline);
        r.id = fmt::format("RF{}", rf++);
        Evidence e{r.id, "roofline", k.kernel, roofline_text(r)};
        // At its roofline the kernel would take `fraction` of its time: the rest is the most to gain.
        if (std::isfinite(r.sol.fraction))
          set_gain(e, kd.headroom, "the kernel ran at its roofline", "the GPU time",
                   "it moves the bytes it moves now (an edit that moves fewer can gain more)");
        d.evidence.push_back(std::move(e));
        kd.roofline = std::move(r);
      }
    }
    if (o.sources & k_pc) {
      StallSummary s = stalls.summarize(k.demangled, o.saliency, "PC", pc);
      if (s.total_samples == 0) {
        kd.notes.push_back("no PC samples for this kernel (was SourceCounters/WarpStateStats collected?)");
      } else {
        pc += static_cast<int>(s.lines.size());
        for (const auto& l : s.lines) {
          Evidence e{l.id, "pc", k.kernel,
                     fmt::format("{}:{} ({:.1f}% of the kernel's samples) {}: {:.0f}% | {}",
                                 std::filesystem::path(l.file).filename().string(), l.line, 100 * l.kernel_share,
                                 profile::stall_label(l.dominant), 100 * l.dominant_fraction, l.code)};
          if (std::string why = l.causes_text(); !why.empty()) e.text += " | " + why;
          // The samples stalled for this reason on this line, as a share of the kernel's, of its time.
          const double stalled = l.samples ? static_cast<double>(l.stalled) / static_cast<double>(l.samples) : 0;
          set_gain(e, std::min(kd.headroom, k.share * l.kernel_share * stalled * l.dominant_fraction),
                   "this line's stall went away");
          d.evidence.push_back(std::move(e));
        }
        kd.stalls = std::move(s);
      }
    }
    if (o.sources & k_ia) {
      CounterSelection c = select_counters(counter_matrix(profile, k.demangled), o.eomp);
      c.kernel = k.kernel;
      for (auto& w : c.top) {
        w.id = fmt::format("IA{}", ia++);
        w.description = dict.describe(w.counter);
        d.evidence.push_back({w.id, "ia", k.kernel, counter_text(w)});
      }
      if (!c.caveat.empty()) kd.notes.push_back("counters: " + c.caveat);
      kd.counters = std::move(c);
    }
    d.kernels.push_back(std::move(kd));
  }
  // The application's items where the timing pass left a timeline (a format-3 trace); an
  // imported ncu report has none.
  if (run.timeline) {
    d.timeline = run.timeline;
    d.application_headroom = application_headroom(*run.timeline);
    for (auto& e : application_evidence(*run.timeline)) d.evidence.push_back(std::move(e));
  }
  for (const auto& e : d.evidence) d.summary_bytes += e.text.size();
  return d;
}

std::string to_text(const Diagnostics& d) {
  const auto& dict = Dictionary::builtin();
  std::string out = fmt::format("Diagnostics for run \"{}\" ({}), {} of profile pages\n", d.config,
                                sources_label(d.options.sources), si(static_cast<double>(d.raw_bytes), "B"));
  out += fmt::format("Kernels by GPU time ({:.3f} ms in all); hot = smallest set with >= {:.0f}% of it:\n",
                     d.hot.total_ns / 1e6, 100 * d.hot.alpha);
  for (const auto& k : d.hot.kernels)
    out += fmt::format("  {:<36} {:>6.1f}%  {:>4} launches  {}\n", k.kernel, 100 * k.share, k.launches,
                       k.hot ? "hot" : "dropped");
  for (const auto& kd : d.kernels) {
    out += fmt::format("\n== {} ({:.1f}% of GPU time)\n", kd.time.kernel, 100 * kd.time.share);
    if (kd.roofline) out += fmt::format("[{}] Roofline: {}\n", kd.roofline->id, roofline_text(*kd.roofline));
    if (kd.stalls) {
      const auto& s = *kd.stalls;
      out += fmt::format(
          "PC sampling: {} samples over {} lines; {} salient (dominant stall >= {:.0f}%), {} below, {} over "
          "the {} B budget; summary {} B from {} of source page ({:.2f}% smaller)\n",
          s.total_samples, s.lines_seen, s.lines.size(), 100 * d.options.saliency.tau, s.lines_below_tau,
          s.lines_over_budget, d.options.saliency.max_bytes, s.text.size(), si(static_cast<double>(s.raw_bytes), "B"),
          100 * s.reduction());
      for (const auto& e : d.evidence)
        if (e.kind == "pc" && e.kernel == kd.time.kernel) out += fmt::format("[{}] {}\n", e.id, e.text);
      if (!s.lines.empty())
        if (const auto* x = dict.stall_explanation(s.lines.front().dominant))
          out += fmt::format("    {}: {} Usually helps: {}\n", profile::stall_label(s.lines.front().dominant), x->means,
                             x->helps);
    }
    if (kd.counters) {
      const auto& c = *kd.counters;
      out += fmt::format("Counters (ensemble OMP, kappa {}, {} members, seed {}): {} runs x {} counters (of {}; {} "
                         "constant, {} missing, {} time measures, {} duplicates dropped), mean fit R^2 {:.2f}\n",
                         d.options.eomp.kappa, d.options.eomp.ensemble, d.options.eomp.seed, c.runs, c.counters_used,
                         c.counters_total, c.dropped_constant, c.dropped_missing, c.dropped_time, c.dropped_duplicate,
                         c.mean_r2);
      for (const auto& w : c.top) out += fmt::format("[{}] {}\n", w.id, counter_text(w));
    }
    for (const auto& n : kd.notes) out += "note: " + n + "\n";
  }
  if (d.timeline) {
    out += fmt::format("\n== The application (timeline of the timing pass: GPU busy {:.1f}% of {})\n",
                       100 * d.timeline->busy_fraction(), time_text(d.timeline->wall_ns));
    for (const auto& e : d.evidence)
      if (e.kind == "application") out += fmt::format("[{}] {}\n", e.id, e.text);
  }
  return out;
}

} // namespace optimas::analysis
