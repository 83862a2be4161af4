#include "analysis/counters.hpp"

#include "util/strings.hpp"

#include <Eigen/Dense>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <unordered_map>

namespace optimas::analysis {

bool is_noise_counter(const std::string& name) {
  // ncu's scratch values for derived metrics carry no meaning of their own.
  return name.starts_with("derived_tempMetric");
}

bool is_time_counter(const std::string& name) {
  // Durations and elapsed-cycle counts restate the runtime; clock rates (per_second) do not.
  if (util::contains(name, "time_duration")) return true;
  return util::contains(name, "__cycles_elapsed.") && !name.ends_with("per_second");
}

CounterMatrix counter_matrix(const profile::Profile& profile, const std::string& kernel) {
  CounterMatrix m;
  std::unordered_map<std::string, std::size_t> column;
  std::vector<const profile::Launch*> launches;
  for (const auto& run : profile.runs)
    for (const auto& l : run.launches)
      if (l.demangled == kernel && std::isfinite(l.duration_ns)) {
        launches.push_back(&l);
        m.row_labels.push_back(fmt::format("{}#{}", run.config, l.id));
        for (const auto& [name, metric] : l.metrics)
          if (column.emplace(name, m.counters.size()).second) m.counters.push_back(name);
      }
  for (const auto* l : launches) {
    std::vector<double> row(m.counters.size(), profile::k_nan);
    for (const auto& [name, metric] : l->metrics) row[column[name]] = metric.value;
    m.rows.push_back(std::move(row));
    m.runtime.push_back(l->duration_ns);
  }
  return m;
}

namespace {

// The counters measured in every run, not constant, and not a measure of time itself; what was
// dropped is counted in `sel`.
std::vector<std::size_t> usable_counters(const CounterMatrix& m, CounterSelection& sel) {
  std::vector<std::size_t> keep;
  for (std::size_t c = 0; c < m.counters.size(); ++c) {
    if (is_time_counter(m.counters[c])) {
      ++sel.dropped_time;
      continue;
    }
    if (is_noise_counter(m.counters[c])) {
      ++sel.dropped_constant;
      continue;
    }
    bool missing = false;
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& row : m.rows) {
      double v = row[c];
      if (!std::isfinite(v)) {
        missing = true;
        break;
      }
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (missing)
      ++sel.dropped_missing;
    else if (!(hi - lo > 1e-12 * std::max(1.0, std::fabs(hi))))
      ++sel.dropped_constant;
    else
      keep.push_back(c);
  }
  return keep;
}

// The counters' columns of `m`, z-scored (every column varies: usable_counters).
Eigen::MatrixXd zscored(const CounterMatrix& m, const std::vector<std::size_t>& keep) {
  const auto rows = static_cast<Eigen::Index>(m.rows.size()), cols = static_cast<Eigen::Index>(keep.size());
  Eigen::MatrixXd d(rows, cols);
  for (Eigen::Index j = 0; j < cols; ++j)
    for (Eigen::Index i = 0; i < rows; ++i)
      d(i, j) = m.rows[static_cast<std::size_t>(i)][keep[static_cast<std::size_t>(j)]];
  for (Eigen::Index j = 0; j < cols; ++j) {
    double mu = d.col(j).mean();
    double sd = std::sqrt((d.col(j).array() - mu).square().sum() / static_cast<double>(rows));
    d.col(j) = (d.col(j).array() - mu) / sd;
  }
  return d;
}

// Counters that are the same signal (another rollup or a copy of the same counter: identical up
// to sign after z-scoring) would split their weight; keeps the shortest name of each.
void drop_same_signal(const CounterMatrix& m, Eigen::MatrixXd& d, std::vector<std::size_t>& keep,
                      CounterSelection& sel) {
  const Eigen::Index rows = d.rows(), cols = d.cols();
  std::vector<Eigen::Index> order(static_cast<std::size_t>(cols));
  std::iota(order.begin(), order.end(), Eigen::Index{0});
  std::stable_sort(order.begin(), order.end(), [&](Eigen::Index x, Eigen::Index y) {
    return m.counters[keep[static_cast<std::size_t>(x)]].size() < m.counters[keep[static_cast<std::size_t>(y)]].size();
  });
  std::vector<Eigen::Index> unique;
  for (auto j : order) {
    bool dup = false;
    for (auto u : unique) {
      double diff = (d.col(j) - d.col(u)).cwiseAbs().maxCoeff();
      double neg = (d.col(j) + d.col(u)).cwiseAbs().maxCoeff();
      if (std::min(diff, neg) < 1e-9) {
        dup = true;
        break;
      }
    }
    if (dup)
      ++sel.dropped_duplicate;
    else
      unique.push_back(j);
  }
  std::sort(unique.begin(), unique.end());
  Eigen::MatrixXd kept(rows, static_cast<Eigen::Index>(unique.size()));
  std::vector<std::size_t> kept_index;
  for (std::size_t k = 0; k < unique.size(); ++k) {
    kept.col(static_cast<Eigen::Index>(k)) = d.col(unique[k]);
    kept_index.push_back(keep[static_cast<std::size_t>(unique[k])]);
  }
  d = std::move(kept);
  keep = std::move(kept_index);
}

// One member of the ensemble: kappa steps of randomized OMP, each drawing one of the `pool`
// counters best correlated with the residual, then refitting least squares on those chosen.
struct OmpFit {
  std::vector<Eigen::Index> chosen;
  Eigen::VectorXd weights;
  double r2 = 0;
};

OmpFit omp_member(const Eigen::MatrixXd& d, const Eigen::VectorXd& t, int kappa, int pool, std::mt19937_64& rng) {
  const Eigen::Index used = d.cols();
  std::vector<Eigen::Index> order(static_cast<std::size_t>(used));
  OmpFit fit;
  Eigen::VectorXd r = t;
  for (int step = 0; step < kappa; ++step) {
    // Score every counter not yet chosen by |D_i^T r|, draw from the best `pool`.
    Eigen::VectorXd score = (d.transpose() * r).cwiseAbs();
    for (auto c : fit.chosen) score(c) = -1;
    std::iota(order.begin(), order.end(), Eigen::Index{0});
    std::size_t available = static_cast<std::size_t>(used) - fit.chosen.size();
    std::size_t top = std::min<std::size_t>(static_cast<std::size_t>(pool), available);
    std::partial_sort(
        order.begin(), order.begin() + static_cast<long>(top), order.end(),
        [&](Eigen::Index x, Eigen::Index y) { return score(x) > score(y) || (score(x) == score(y) && x < y); });
    std::uniform_int_distribution<std::size_t> draw(0, top - 1);
    fit.chosen.push_back(order[draw(rng)]);
    // Refit least squares on the chosen counters and update the residual.
    Eigen::MatrixXd ds(d.rows(), static_cast<Eigen::Index>(fit.chosen.size()));
    for (std::size_t k = 0; k < fit.chosen.size(); ++k) ds.col(static_cast<Eigen::Index>(k)) = d.col(fit.chosen[k]);
    fit.weights = ds.colPivHouseholderQr().solve(t);
    r = t - ds * fit.weights;
  }
  fit.r2 = 1.0 - r.squaredNorm() / t.squaredNorm();
  return fit;
}

} // namespace

CounterSelection select_counters(const CounterMatrix& m, const EompOptions& o) {
  CounterSelection sel;
  const std::size_t n = m.rows.size();
  sel.runs = n;
  sel.counters_total = m.counters.size();
  std::vector<std::size_t> keep = usable_counters(m, sel);
  sel.counters_used = keep.size();
  if (n < 2 || keep.empty()) {
    sel.caveat = fmt::format("{} run(s) and {} varying counter(s): nothing to select from", n, keep.size());
    return sel;
  }
  // z-score every column and the runtime.
  const Eigen::Index rows = static_cast<Eigen::Index>(n);
  Eigen::MatrixXd d = zscored(m, keep);
  drop_same_signal(m, d, keep, sel);
  const Eigen::Index used = static_cast<Eigen::Index>(keep.size());
  sel.counters_used = keep.size();
  Eigen::VectorXd t = Eigen::Map<const Eigen::VectorXd>(m.runtime.data(), rows);
  double t_mean = t.mean();
  double t_sd = std::sqrt((t.array() - t_mean).square().sum() / static_cast<double>(n));
  if (!(t_sd > 0)) {
    sel.caveat = "the runtime does not vary across runs: no counter can explain it";
    return sel;
  }
  t = (t.array() - t_mean) / t_sd;

  const int kappa = std::max(1, std::min<int>(o.kappa, static_cast<int>(used)));
  const int pool = std::max(1, o.pool);
  std::vector<double> abs_weight(keep.size(), 0.0), signed_weight(keep.size(), 0.0);
  std::vector<int> picked(keep.size(), 0);
  std::mt19937_64 rng(o.seed);
  double r2_sum = 0;
  for (int member = 0; member < o.ensemble; ++member) {
    OmpFit fit = omp_member(d, t, kappa, pool, rng);
    r2_sum += fit.r2;
    for (std::size_t k = 0; k < fit.chosen.size(); ++k) {
      auto c = static_cast<std::size_t>(fit.chosen[k]);
      abs_weight[c] += std::fabs(fit.weights(static_cast<Eigen::Index>(k)));
      signed_weight[c] += fit.weights(static_cast<Eigen::Index>(k));
      picked[c] += 1;
    }
  }
  sel.mean_r2 = r2_sum / o.ensemble;
  std::vector<std::size_t> idx(keep.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t x, std::size_t y) { return abs_weight[x] > abs_weight[y]; });
  for (std::size_t i = 0; i < idx.size() && static_cast<int>(sel.top.size()) < o.report; ++i) {
    std::size_t c = idx[i];
    if (picked[c] == 0) break;
    CounterWeight w;
    w.counter = m.counters[keep[c]];
    w.importance = abs_weight[c] / o.ensemble;
    w.frequency = static_cast<double>(picked[c]) / o.ensemble;
    w.mean_weight = signed_weight[c] / picked[c];
    sel.top.push_back(std::move(w));
  }
  // With fewer runs than about twice the counters chosen, any kappa counters fit the runtime.
  sel.reliable = static_cast<int>(n) >= 2 * kappa + 2;
  if (!sel.reliable)
    sel.caveat = fmt::format("only {} runs for {} counters per fit: with so few runs almost any counters fit the "
                             "runtime, so treat this ranking as a weak hint (profile more input configurations "
                             "or repeats: --repeats)",
                             n, kappa);
  return sel;
}

} // namespace optimas::analysis
