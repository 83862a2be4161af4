#include "evaluate/stats.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

namespace optimas::evaluate {

namespace {

constexpr std::size_t k_exact_limit = 20; // C(20, 10) = 184756 rank assignments at most

// Mid-ranks (1-based) of the pooled values, ties sharing their average rank.
std::vector<double> pooled_ranks(const std::vector<double>& pooled) {
  std::vector<std::size_t> order(pooled.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return pooled[x] < pooled[y]; });
  std::vector<double> ranks(pooled.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && pooled[order[j + 1]] == pooled[order[i]]) ++j;
    double rank = (static_cast<double>(i + j) + 2.0) / 2.0;
    for (std::size_t k = i; k <= j; ++k) ranks[order[k]] = rank;
    i = j + 1;
  }
  return ranks;
}

// Every way of choosing which `k` of the ranks belong to the first sample: the rank sum's
// distance from its mean at least as large as observed, counted.
double exact_p(const std::vector<double>& ranks, std::size_t k, double observed) {
  const std::size_t n = ranks.size();
  const double mean = static_cast<double>(k) * static_cast<double>(n + 1) / 2.0;
  const double distance = std::abs(observed - mean) - 1e-9;
  std::vector<std::size_t> pick(k);
  std::iota(pick.begin(), pick.end(), 0);
  std::uint64_t total = 0, extreme = 0;
  while (true) {
    double sum = 0;
    for (std::size_t i : pick) sum += ranks[i];
    ++total;
    if (std::abs(sum - mean) >= distance) ++extreme;
    // Next combination in lexicographic order.
    std::size_t i = k;
    while (i > 0 && pick[i - 1] == n - k + i - 1) --i;
    if (i == 0) break;
    ++pick[i - 1];
    for (std::size_t j = i; j < k; ++j) pick[j] = pick[j - 1] + 1;
  }
  return static_cast<double>(extreme) / static_cast<double>(total);
}

double normal_p(const std::vector<double>& ranks, const std::vector<double>& pooled, std::size_t k, double observed) {
  const double n = static_cast<double>(ranks.size());
  const double n1 = static_cast<double>(k), n2 = n - n1;
  const double mean = n1 * (n + 1) / 2.0;
  // Tie correction: sum over tie groups of t^3 - t.
  std::vector<double> sorted = pooled;
  std::sort(sorted.begin(), sorted.end());
  double ties = 0;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    double t = static_cast<double>(j - i);
    ties += t * t * t - t;
    i = j;
  }
  double variance = n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1)));
  if (variance <= 0) return 1.0;
  double z = (std::abs(observed - mean) - 0.5) / std::sqrt(variance); // continuity correction
  if (z < 0) z = 0;
  return std::erfc(z / std::sqrt(2.0));
}

// Percentile bootstrap: resample each side with replacement and take statistic(median of the
// base resample, median of the variant resample); NaN statistics are left out.
Interval bootstrap_interval(const std::vector<double>& base, const std::vector<double>& variant,
                            const StatsOptions& options, const std::function<double(double, double)>& statistic) {
  std::mt19937_64 rng(options.seed);
  std::uniform_int_distribution<std::size_t> pick_base(0, base.size() - 1), pick_variant(0, variant.size() - 1);
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(std::max(options.resamples, 0)));
  std::vector<double> rb(base.size()), rv(variant.size());
  for (int r = 0; r < options.resamples; ++r) {
    for (auto& x : rb) x = base[pick_base(rng)];
    for (auto& x : rv) x = variant[pick_variant(rng)];
    double v = statistic(median(rb), median(rv));
    if (!std::isnan(v)) values.push_back(v);
  }
  if (values.empty()) return {1, 1};
  std::sort(values.begin(), values.end());
  double tail = (1.0 - options.confidence) / 2.0;
  auto at = [&](double q) {
    double pos = q * static_cast<double>(values.size() - 1);
    std::size_t lo = static_cast<std::size_t>(std::floor(pos));
    std::size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
  };
  return {at(tail), at(1.0 - tail)};
}

// The continued fraction of the regularised incomplete beta function I_x(a, b), by the modified
// Lentz method; converges fast for x < (a + 1) / (a + b + 2).
double beta_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300, eps = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::abs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 1000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    for (int step = 0; step < 2; ++step) {
      d = 1 + aa * d;
      if (std::abs(d) < tiny) d = tiny;
      c = 1 + aa / c;
      if (std::abs(c) < tiny) c = tiny;
      d = 1 / d;
      const double delta = d * c;
      h *= delta;
      if (step == 1 && std::abs(delta - 1) < eps) return h;
      aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    }
  }
  return h;
}

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

// The x in [lo, hi] where the increasing function f reaches p, by bisection: slow, but exact to
// the last bits and with nothing to diverge.
double increasing_inverse(const std::function<double(double)>& f, double p, double lo, double hi) {
  while (f(hi) < p) hi *= 2;
  while (f(lo) > p) lo *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * std::max(1.0, std::abs(lo)); ++i) {
    const double mid = (lo + hi) / 2;
    (f(mid) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// One side of Yuen's test: the mean of the runs' logs without the lowest and highest fifth (a run
// hit as a whole by another process or a clock drop), the variance of that mean from the
// winsorised variance, and its share of the degrees of freedom (runs kept - 1). Under five runs
// nothing is trimmed and it is Welch's: the mean, s^2 / n and n - 1.
struct Side {
  double centre = 0, variance = 0, df = 0;
};

Side trimmed_side(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const std::size_t n = x.size(), g = n / 5, h = n - 2 * g;
  Side s;
  s.centre = std::accumulate(x.begin() + g, x.end() - g, 0.0) / static_cast<double>(h);
  if (n < 2) return s;
  // Winsorised: the trimmed runs take the value of the nearest run kept.
  for (std::size_t i = 0; i < g; ++i) {
    x[i] = x[g];
    x[n - 1 - i] = x[n - 1 - g];
  }
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(n);
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  s.variance = ss / static_cast<double>(h) / static_cast<double>(h - 1);
  s.df = static_cast<double>(h - 1);
  return s;
}

} // namespace

std::string verdict_name(Verdict v) {
  switch (v) {
  case Verdict::faster:
    return "faster";
  case Verdict::slower:
    return "slower";
  case Verdict::no_change:
    return "no significant change";
  }
  return "no significant change";
}

double median(std::vector<double> values) {
  if (values.empty()) throw Error("median of no values");
  std::sort(values.begin(), values.end());
  std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) return 1.0;
  std::vector<double> pooled = a;
  pooled.insert(pooled.end(), b.begin(), b.end());
  std::vector<double> ranks = pooled_ranks(pooled);
  double observed = 0;
  for (std::size_t i = 0; i < a.size(); ++i) observed += ranks[i];
  if (pooled.size() <= k_exact_limit) return exact_p(ranks, a.size(), observed);
  return normal_p(ranks, pooled, a.size(), observed);
}

Comparison compare(const std::vector<double>& base, const std::vector<double>& variant, const StatsOptions& options) {
  if (base.empty() || variant.empty()) throw Error("cannot compare timings: a side has no samples");
  Comparison c;
  c.n_base = base.size();
  c.n_variant = variant.size();
  c.base_median = median(base);
  c.variant_median = median(variant);
  c.speedup = c.variant_median > 0 ? c.base_median / c.variant_median : 1.0;

  // Percentile bootstrap of the ratio of medians.
  auto ci = bootstrap_interval(base, variant, options, [](double mb, double mv) { return mv > 0 ? mb / mv : NAN; });
  c.ci_low = ci.low;
  c.ci_high = ci.high;
  c.p_value = mann_whitney_p(base, variant);
  bool significant = c.p_value < options.significance;
  if (significant && c.ci_low > 1.0)
    c.verdict = Verdict::faster;
  else if (significant && c.ci_high < 1.0)
    c.verdict = Verdict::slower;
  return c;
}

Interval median_difference_interval(const std::vector<double>& base, const std::vector<double>& variant,
                                    const StatsOptions& options) {
  if (base.empty() || variant.empty()) throw Error("cannot compare timings: a side has no samples");
  return bootstrap_interval(base, variant, options, [](double mb, double mv) { return mb - mv; });
}

double geometric_mean(const std::vector<double>& values) {
  if (values.empty()) return 1.0;
  double s = 0;
  for (double v : values) s += std::log(v);
  return std::exp(s / static_cast<double>(values.size()));
}

double student_t_cdf(double t, double df) {
  if (!(df > 0)) throw Error("Student's t distribution needs positive degrees of freedom");
  if (std::isinf(t)) return t > 0 ? 1 : 0;
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
  return t > 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1)) throw Error("a quantile needs a probability strictly between 0 and 1");
  if (p < 0.5) return -student_t_quantile(1 - p, df);
  return increasing_inverse([df](double t) { return student_t_cdf(t, df); }, p, -1, 1);
}

double normal_quantile(double p) {
  if (!(p > 0 && p < 1)) throw Error("a quantile needs a probability strictly between 0 and 1");
  return increasing_inverse([](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }, p, -1, 1);
}

double run_summary(std::vector<double> launches) {
  if (launches.empty()) throw Error("a run with no launches has no time");
  std::sort(launches.begin(), launches.end());
  const std::size_t cut = launches.size() / 10;
  double sum = 0;
  for (std::size_t i = cut; i < launches.size() - cut; ++i) sum += launches[i];
  return sum / static_cast<double>(launches.size() - 2 * cut);
}

double hot_time(const std::vector<std::vector<double>>& kernels) {
  double total = 0;
  for (const auto& launches : kernels)
    if (!launches.empty()) total += run_summary(launches) * static_cast<double>(launches.size());
  return total;
}

Comparison compare_runs(const std::vector<std::vector<double>>& base, const std::vector<std::vector<double>>& variant,
                        const StatsOptions& options) {
  if (base.empty() || variant.empty()) throw Error("cannot compare timings: a side has no runs");
  auto logs = [](const std::vector<std::vector<double>>& runs) {
    std::vector<double> out;
    for (const auto& r : runs) {
      double s = run_summary(r);
      if (!(s > 0)) throw Error("cannot compare timings: a run's time per launch is not positive");
      out.push_back(std::log(s));
    }
    return out;
  };
  const Side sb = trimmed_side(logs(base)), sv = trimmed_side(logs(variant));
  Comparison c;
  c.n_base = base.size();
  c.n_variant = variant.size();
  c.base_median = std::exp(sb.centre);
  c.variant_median = std::exp(sv.centre);
  const double d = sb.centre - sv.centre;
  c.speedup = std::exp(d);
  if (base.size() < 2 || variant.size() < 2) {
    c.ci_low = 0;
    c.ci_high = INFINITY;
    return c;
  }
  const double se = std::sqrt(sb.variance + sv.variance);
  if (se == 0) {
    // Runs that agree to the last bit (a deterministic stand-in): the difference is exact.
    c.ci_low = c.ci_high = c.speedup;
    c.p_value = d == 0 ? 1 : 0;
  } else {
    // Satterthwaite's degrees of freedom.
    const double df = (sb.variance + sv.variance) * (sb.variance + sv.variance) /
                      (sb.variance * sb.variance / sb.df + sv.variance * sv.variance / sv.df);
    const double t = student_t_quantile(1 - (1 - options.confidence) / 2, df);
    c.ci_low = std::exp(d - t * se);
    c.ci_high = std::exp(d + t * se);
    c.p_value = 2 * student_t_cdf(-std::abs(d) / se, df);
  }
  const bool significant = c.p_value < options.significance;
  if (significant && c.ci_low > 1.0)
    c.verdict = Verdict::faster;
  else if (significant && c.ci_high < 1.0)
    c.verdict = Verdict::slower;
  return c;
}

} // namespace optimas::evaluate
