#include "tune/search.hpp"

#include "util/error.hpp"

#include <fmt/format.h>
#include <nlopt.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <map>

namespace optimas::tune {

Method choose(const std::string& search, std::size_t allowed, int budget) {
  if (search == "exhaustive") return Method::exhaustive;
  if (search == "nlopt") return Method::nlopt;
  if (search != "auto") throw UsageError(fmt::format("tune.search is auto, exhaustive or nlopt, got \"{}\"", search));
  return allowed <= k_exhaustive_max && allowed <= static_cast<std::size_t>(budget) ? Method::exhaustive
                                                                                    : Method::nlopt;
}

std::string method_name(Method m) {
  return m == Method::exhaustive ? "exhaustive" : "nlopt";
}

std::vector<Point> exhaustive_order(const Space& space, int budget) {
  const auto& all = space.allowed_points();
  std::size_t n = std::min(all.size(), static_cast<std::size_t>(budget < 0 ? 0 : budget));
  return {all.begin(), all.begin() + static_cast<long>(n)};
}

namespace {

// Squared distance of two points, each dimension scaled to [0, 1].
double distance2(const Space& space, const Point& a, const Point& b) {
  double d2 = 0;
  for (std::size_t d = 0; d < space.dimensions(); ++d) {
    if (space.values(d) < 2) continue;
    double x = (static_cast<double>(a[d]) - static_cast<double>(b[d])) / static_cast<double>(space.values(d) - 1);
    d2 += x * x;
  }
  return d2;
}

// The state NLopt's callback works on: the memory of points tried and the budget.
struct Walk {
  const Space& space;
  const Objective& objective;
  const Known& known_bad;
  int budget;
  std::vector<std::size_t> free; // the dimensions with more than one value: NLopt's variables
  Point fixed;                   // the grid point the other dimensions keep
  std::map<Point, double> seen;  // point -> what NLopt was told (to minimise)
  std::vector<Point> tried;      // measured, in order
  std::exception_ptr error;      // an exception of the objective, passed on after NLopt returns

  Point point_of(const double* x) const {
    Point p = fixed;
    for (std::size_t k = 0; k < free.size(); ++k) {
      double top = static_cast<double>(space.values(free[k]) - 1);
      p[free[k]] = static_cast<std::size_t>(std::lround(std::clamp(x[k], 0.0, top)));
    }
    return p;
  }

  // NLopt minimises: a measured point gives minus its score, one that could not be measured
  // (or is known to fail: not measured, not counted) 1 (worse than any speedup), one the
  // constraints exclude 2 (never measured, not counted).
  double value(const Point& p) {
    if (auto it = seen.find(p); it != seen.end()) return it->second;
    if (!space.allowed(p)) return seen[p] = 2.0;
    if (known_bad && known_bad(p)) return seen[p] = 1.0;
    auto score = objective(p);
    tried.push_back(p);
    return seen[p] = score ? -*score : 1.0;
  }

  bool done() const {
    return static_cast<int>(tried.size()) >= budget || tried.size() >= space.allowed_points().size();
  }
};

double nlopt_objective(unsigned, const double* x, double*, void* data) {
  auto* w = static_cast<Walk*>(data);
  double v = 0;
  try {
    v = w->value(w->point_of(x));
  } catch (...) {
    w->error = std::current_exception();
  }
  return v;
}

// Sbplx's initial step along an axis of `values` grid points: a quarter of the range, big enough
// to leave a plateau.
double initial_step(std::size_t values) {
  return std::max(1.0, static_cast<double>(values - 1) / 4);
}

// One local run of Sbplx from `start`, until it converges to a grid point or the budget is spent.
void local_run(Walk& w, const Point& start) {
  const unsigned n = static_cast<unsigned>(w.free.size());
  std::vector<double> x(n), lo(n, 0.0), hi(n), step(n), xtol(n, 0.25);
  for (unsigned k = 0; k < n; ++k) {
    hi[k] = static_cast<double>(w.space.values(w.free[k]) - 1);
    x[k] = static_cast<double>(start[w.free[k]]);
    step[k] = initial_step(w.space.values(w.free[k]));
  }
  nlopt_opt opt = nlopt_create(NLOPT_LN_SBPLX, n);
  if (!opt) throw Error("NLopt could not create its Sbplx optimizer");
  nlopt_set_lower_bounds(opt, lo.data());
  nlopt_set_upper_bounds(opt, hi.data());
  nlopt_set_initial_step(opt, step.data());
  nlopt_set_xtol_abs(opt, xtol.data());
  // Repeated points cost nothing but time; this bounds NLopt's own calls.
  nlopt_set_maxeval(opt, 200 * w.budget + 1000);
  struct Stop {
    Walk* w;
    nlopt_opt opt;
  } stop{&w, opt};
  nlopt_set_min_objective(
      opt,
      [](unsigned k, const double* x, double* g, void* data) {
        auto* s = static_cast<Stop*>(data);
        double v = nlopt_objective(k, x, g, s->w);
        if (s->w->error || s->w->done()) nlopt_force_stop(s->opt);
        return v;
      },
      &stop);
  double best = 0;
  nlopt_optimize(opt, x.data(), &best); // its result code only says why it stopped; the walk has the points
  nlopt_destroy(opt);
}

} // namespace

std::vector<Point> likely_next(const Space& space, const Point& p) {
  std::vector<Point> out;
  auto add = [&](std::size_t d, long offset) {
    const long v = static_cast<long>(p[d]) + offset;
    if (v < 0 || v >= static_cast<long>(space.values(d))) return;
    Point q = p;
    q[d] = static_cast<std::size_t>(v);
    if (space.allowed(q) && std::find(out.begin(), out.end(), q) == out.end()) out.push_back(q);
  };
  // Sbplx's first simplex takes the initial step forward along each axis, then back; the moves
  // that follow come closer, down to one grid step.
  for (long sign : {1L, -1L})
    for (std::size_t d = 0; d < space.dimensions(); ++d) add(d, sign * std::lround(initial_step(space.values(d))));
  for (std::size_t d = 0; d < space.dimensions(); ++d) {
    add(d, 1);
    add(d, -1);
  }
  return out;
}

Point start_point(const Space& space) {
  const auto& all = space.allowed_points();
  if (all.empty()) return {};
  Point middle(space.dimensions());
  for (std::size_t d = 0; d < space.dimensions(); ++d) middle[d] = (space.values(d) - 1) / 2;
  const Point* best = &all.front();
  for (const auto& p : all)
    if (distance2(space, p, middle) < distance2(space, *best, middle)) best = &p;
  return *best;
}

std::vector<Point> search(const Space& space, Method method, int budget, const Objective& objective,
                          const Known& known_bad) {
  if (method == Method::exhaustive) {
    // In grid order, as exhaustive_order lists them; a point known to fail leaves its place in
    // the budget to the next one.
    std::vector<Point> tried;
    for (const auto& p : space.allowed_points()) {
      if (static_cast<int>(tried.size()) >= budget) break;
      if (known_bad && known_bad(p)) continue;
      objective(p);
      tried.push_back(p);
    }
    return tried;
  }
  Walk w{space, objective, known_bad, budget, {}, start_point(space), {}, {}, nullptr};
  if (w.fixed.empty()) return {};
  for (std::size_t d = 0; d < space.dimensions(); ++d)
    if (space.values(d) > 1) w.free.push_back(d);
  nlopt_srand(1); // reproducible (Sbplx itself draws nothing; this pins NLopt's generator anyway)
  Point start = w.fixed;
  while (!w.done()) {
    std::size_t before = w.tried.size();
    if (w.free.empty())
      w.value(start);
    else
      local_run(w, start);
    if (w.error) std::rethrow_exception(w.error);
    if (w.done()) break;
    // A restart from the allowed point farthest from every point measured.
    const Point* far = nullptr;
    double far_d = -1;
    for (const auto& p : space.allowed_points()) {
      if (w.seen.count(p)) continue;
      double nearest = std::numeric_limits<double>::max();
      for (const auto& t : w.tried) nearest = std::min(nearest, distance2(space, p, t));
      if (nearest > far_d) far_d = nearest, far = &p;
    }
    if (!far) break;
    if (w.tried.size() == before && w.seen.count(start)) {
      w.value(*far); // a local run that measured nothing new: measure the restart point itself
      if (w.error) std::rethrow_exception(w.error);
    }
    start = *far;
  }
  return w.tried;
}

} // namespace optimas::tune
