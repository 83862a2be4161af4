// What a verdict costs and how often it is wrong, for the acceptance rule on whole runs
// (evaluate/acceptance.hpp: screening, then fresh runs to confirm) and for the sequential rule on
// per-launch samples with the run as the block (evaluate/sequential.hpp), on simulated runs of a
// program that launches its hot kernel many times. The noise is that of real GPU runs:
//   - run-to-run: every run has a level of its own (clocks, placement), log-normal (run_sigma),
//     and some runs are hit as a whole (another process, a clock drop): slower by U(5%, run_tail);
//   - drift over the session (warming, throttling), linear, which interleaving has to cancel;
//   - launches within a run scatter around the run's level with AR(1) correlation (launch_rho):
//     neighbouring launches share the GPU's state; a few are preempted (slower by U(10%, 100%)),
//     and the first is cold (20% slower);
//   - for A/A, a build bias: a second build can really differ by a few tenths of a percent.
// For each noise level and true speedup (1.00x: A/A) it prints how often each rule accepts and the
// mean number of program runs per verdict (both sides, warm-up included); a verdict's seconds are
// that times a run's seconds. Goals (issue #27): A/A false accepts <= 0.5%, 1.05x accepted >= 90%.
// Below the table, per noise level, the information limit: the fewest program runs any rule needs
// on average to meet both goals (information_limit).
//
//   bench_verdict [simulations per cell, default 2000] [seed] [obrien-fleming: spend the alpha that way]
#include "evaluate/acceptance.hpp"
#include "evaluate/sequential.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace optimas::evaluate;

namespace {

struct Noise {
  const char* name;
  double run_sigma;     // log-normal run-to-run noise of a run's level
  double run_tail_p;    // chance that a whole run is slowed
  double run_tail_max;  // such a run is slower by U(0.05, run_tail_max)
  double drift;         // relative change of every time over a session of 40 runs, linear
  double launch_sigma;  // log-normal noise of one launch around its run's level
  double launch_rho;    // AR(1) correlation of neighbouring launches
  double launch_tail_p; // chance that a launch is preempted
  int launches;         // hot-kernel launches per run
  double build_bias;    // A/A: standard deviation of the true ratio of two builds
};

constexpr Noise k_noise[] = {
    {"quiet (run 0.3%, launch 1%, 20 launches)", 0.003, 0.02, 0.30, 0.01, 0.01, 0.5, 0.01, 20, 0.002},
    {"typical (run 1%, launch 2%, 50 launches)", 0.01, 0.05, 0.50, 0.02, 0.02, 0.7, 0.02, 50, 0.003},
    {"noisy (run 2%, launch 5%, 20 launches)", 0.02, 0.05, 0.50, 0.03, 0.05, 0.8, 0.05, 20, 0.003},
};

constexpr double k_speedups[] = {1.00, 1.05, 1.2, 2.0};

class Simulator {
public:
  Simulator(const Noise& noise, std::uint64_t seed) : m_noise(noise), m_rng(seed) {}

  void start(double true_speedup) {
    m_t = 0;
    double bias = true_speedup == 1.0 ? std::exp(normal(m_noise.build_bias)) : 1.0;
    m_variant = bias / true_speedup;
    m_drift_sign = uniform(-1, 1);
  }

  // One round in ABBA order: the baseline's and the variant's run, each its launches' durations.
  std::pair<std::vector<double>, std::vector<double>> round(int r) {
    std::vector<double> base, variant;
    if (r % 2 == 0) {
      base = run(1.0);
      variant = run(m_variant);
    } else {
      variant = run(m_variant);
      base = run(1.0);
    }
    return {base, variant};
  }

private:
  std::vector<double> run(double truth) {
    double drift = 1 + m_drift_sign * m_noise.drift * (m_t++ / 40.0);
    double level = truth * drift * std::exp(normal(m_noise.run_sigma));
    if (uniform(0, 1) < m_noise.run_tail_p) level *= 1 + uniform(0.05, m_noise.run_tail_max);
    std::vector<double> out;
    double e = normal(m_noise.launch_sigma);
    const double rho = m_noise.launch_rho;
    for (int l = 0; l < m_noise.launches; ++l) {
      if (l > 0) e = rho * e + std::sqrt(1 - rho * rho) * normal(m_noise.launch_sigma);
      double d = level * std::exp(e);
      if (uniform(0, 1) < m_noise.launch_tail_p) d *= 1 + uniform(0.1, 1.0);
      if (l == 0) d *= 1.2;
      out.push_back(d);
    }
    return out;
  }
  double normal(double sigma) { return std::normal_distribution<double>(0, sigma)(m_rng); }
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(m_rng); }

  Noise m_noise;
  std::mt19937_64 m_rng;
  int m_t = 0;
  double m_variant = 1, m_drift_sign = 0;
};

struct Tally {
  int accepted = 0, total = 0;
  long program_runs = 0;
  void add(bool accept, int runs) {
    accepted += accept;
    ++total;
    program_runs += runs;
  }
  std::string rate() const { return fmt::format("{:.2f}%", 100.0 * accepted / total); }
  std::string runs() const { return fmt::format("{:.1f}", static_cast<double>(program_runs) / total); }
};

using Runs = std::vector<std::vector<double>>;

// What no rule can beat, by Wald's bound on the mean sample size of a sequential test: a rule that
// accepts a true 1.00x at most `false_accepts` of the time and misses a true `target` at most
// `misses` of the time takes on average at least ((1 - b) ln((1 - b) / a) + b ln(b / (1 - a))) / K
// rounds at the target and ((1 - a) ln((1 - a) / b) + a ln(a / (1 - b))) / K at 1.00x, where K is
// the Kullback-Leibler divergence of one round's evidence between the two. The evidence is taken
// at its best: a rule told every whole-run slowdown, preemption and the drift (which can only
// help it) still sees each run's own level (log-normal, run_sigma) and the launches' AR(1) noise,
// which at best averages to the generalised least squares mean of their logs, variance
// s^2 (1 - r^2) / ((1 - r^2) + (L - 1)(1 - r)^2) for L launches. A round's baseline and variant
// runs then differ in log by N(ln speedup, 2 v): K = ln(target)^2 / (4 v). Program runs: 2 per
// round and the warm-up round.
struct Limit {
  double per_run_sd = 0;           // of a run's log level, at best
  double at_target = 0, at_aa = 0; // program runs per verdict, at least
};

Limit information_limit(const Noise& n, double target, double false_accepts, double misses) {
  const double r = n.launch_rho, s2 = n.launch_sigma * n.launch_sigma, launches = n.launches;
  const double launch_var = s2 * (1 - r * r) / ((1 - r * r) + (launches - 1) * (1 - r) * (1 - r));
  const double v = n.run_sigma * n.run_sigma + launch_var;
  const double k = std::log(target) * std::log(target) / (4 * v);
  const double a = false_accepts, b = misses;
  const double at_target = ((1 - b) * std::log((1 - b) / a) + b * std::log(b / (1 - a))) / k;
  const double at_aa = ((1 - a) * std::log((1 - a) / b) + a * std::log(a / (1 - b))) / k;
  return {std::sqrt(v), 2 + 2 * at_target, 2 + 2 * at_aa};
}

// The rule on whole runs: a run's sample is its summed kernel time. Warm-up, `runs` rounds, and
// `runs` fresh rounds where the screening asks to confirm.
bool whole_run_rule(Simulator& sim, int runs, const AcceptanceRule& rule, int& program_runs) {
  auto take = [&](int n, int from, std::vector<Sample>& base, std::vector<Sample>& variant) {
    for (int r = from; r < from + n; ++r) {
      auto [b, v] = sim.round(r);
      base.push_back({std::accumulate(b.begin(), b.end(), 0.0), std::nullopt, std::nullopt});
      variant.push_back({std::accumulate(v.begin(), v.end(), 0.0), std::nullopt, std::nullopt});
    }
  };
  std::vector<Sample> warm_b, warm_v, base, variant, fresh_b, fresh_v;
  take(1, 0, warm_b, warm_v);
  take(runs, 1, base, variant);
  program_runs = 2 + 2 * runs;
  Decision d = screen({{"default", judge(base, variant, false, rule)}}, "default", rule);
  if (d.stage != Stage::confirm) return d.stage == Stage::accepted;
  take(runs, 1 + runs, fresh_b, fresh_v);
  program_runs += 2 * runs;
  auto all_b = base, all_v = variant;
  all_b.insert(all_b.end(), fresh_b.begin(), fresh_b.end());
  all_v.insert(all_v.end(), fresh_v.begin(), fresh_v.end());
  d = confirm(judge(fresh_b, fresh_v, false, rule), judge(all_b, all_v, false, rule), "default", rule);
  return d.stage == Stage::accepted;
}

// The sequential rule on per-launch samples: warm-up, then rounds up to each look; a "faster" at
// a look is accepted as the loop accepts it (evaluate::sequential_decision), when the whole runs'
// summed kernel time agrees.
bool sequential_rule(Simulator& sim, const SequentialPlan& plan, const AcceptanceRule& rule, int& program_runs) {
  sim.round(0); // warm-up
  Runs base, variant;
  auto whole = [](const Runs& runs) {
    std::vector<Sample> out;
    for (const auto& r : runs) out.push_back({std::accumulate(r.begin(), r.end(), 0.0), std::nullopt, std::nullopt});
    return out;
  };
  for (std::size_t k = 0; k < plan.looks.size(); ++k) {
    while (static_cast<int>(base.size()) < plan.looks[k]) {
      auto [b, v] = sim.round(static_cast<int>(base.size()) + 1);
      base.push_back(b);
      variant.push_back(v);
    }
    LookResult look = judge_look(base, variant, plan, k, "default");
    if (look.call == Call::more) continue;
    program_runs = 2 + 2 * static_cast<int>(base.size());
    if (look.call != Call::faster) return false;
    Judgement j = judge(whole(base), whole(variant), false, rule);
    return sequential_decision(look, {{"default", j}}, "default", rule.min_speedup).stage == Stage::accepted;
  }
  program_runs = 2 + 2 * static_cast<int>(base.size());
  return false;
}

} // namespace

int main(int argc, char** argv) {
  int sims = argc > 1 ? std::atoi(argv[1]) : 2000;
  std::uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 20261202;
  const bool obf = argc > 3 && std::string(argv[3]) == "obrien-fleming";
  if (sims < 1 || (argc > 3 && !obf)) {
    fmt::print(stderr, "usage: bench_verdict [simulations per cell] [seed] [obrien-fleming]\n");
    return 2;
  }
  AcceptanceRule rule;
  rule.resamples = 2000; // as bench_acceptance: the interval's ends move by well under 0.1%
  SequentialPlan plan;
  plan.looks = default_looks(3, 20);
  plan.significance = rule.corrected_significance();
  plan.min_speedup = rule.min_speedup;
  if (obf) plan.spending = Spending::obrien_fleming;
  std::string looks;
  for (int n : plan.looks) looks += (looks.empty() ? "" : ", ") + std::to_string(n);
  auto start = std::chrono::steady_clock::now();
  fmt::print("Whole runs: the acceptance rule (screening, then confirming), with measure.runs 5 and 10.\n");
  fmt::print("Per launch: the sequential rule, the run as the block, looks at {} runs a side, significance {:.3g} "
             "({}), min_speedup {:.3g}, futility {:.3g} at {:.3g}x (Pocock).\n",
             looks, plan.significance, obf ? "O'Brien-Fleming" : "Pocock", plan.min_speedup, plan.futility,
             plan.target_speedup);
  fmt::print("{} simulated verdicts per cell (seed {}); runs: program runs per verdict, both sides and the warm-up\n\n",
             sims, seed);
  fmt::print("| noise | true speedup | whole runs, 5: accepted | runs | whole runs, 10: accepted | runs | per launch, "
             "sequential: accepted | runs |\n");
  fmt::print("|---|---|---|---|---|---|---|---|\n");
  std::uint64_t cell = 0;
  for (const auto& noise : k_noise) {
    for (double speedup : k_speedups) {
      Tally old5, old10, seq;
      Simulator s5(noise, seed + 1000 * ++cell), s10(noise, seed + 1000 * ++cell), ss(noise, seed + 1000 * ++cell);
      for (int i = 0; i < sims; ++i) {
        int runs = 0;
        s5.start(speedup);
        bool a = whole_run_rule(s5, 5, rule, runs);
        old5.add(a, runs);
        s10.start(speedup);
        a = whole_run_rule(s10, 10, rule, runs);
        old10.add(a, runs);
        ss.start(speedup);
        a = sequential_rule(ss, plan, rule, runs);
        seq.add(a, runs);
      }
      fmt::print("| {} | {:.2f}x | {} | {} | {} | {} | {} | {} |\n", noise.name, speedup, old5.rate(), old5.runs(),
                 old10.rate(), old10.runs(), seq.rate(), seq.runs());
      std::fflush(stdout);
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("\nGoals: at 1.00x (A/A) accepted <= 0.5%; at 1.05x accepted >= 90%. ({:.0f} s)\n", secs);
  fmt::print("Information limit (Wald; a rule told every slowdown, preemption and the drift): program runs per "
             "verdict that any rule meeting both goals needs on average\n");
  for (const auto& noise : k_noise) {
    Limit l = information_limit(noise, 1.05, 0.005, 0.1);
    fmt::print("  {}: a run's level known to {:.2f}% at best; at 1.05x >= {:.1f}, at 1.00x >= {:.1f}\n", noise.name,
               100 * l.per_run_sd, l.at_target, l.at_aa);
  }
  return 0;
}
