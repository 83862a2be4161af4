// tune/search: the exhaustive walk and NLopt's over the grid: budgets, no point twice,
// constraints kept, and a maximum found where the objective has one.
#include "tune/search.hpp"
#include "util/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

using namespace optimas;
using config::TuneParam;

namespace {

// A grid of `n` x `m` values 0..n-1 and 0..m-1 (macros X and Y).
config::TuneSettings grid(int n, int m, std::vector<std::string> constraints = {}) {
  config::TuneSettings t;
  TuneParam x{"X", TuneParam::Kind::macro, {}, 1}, y{"Y", TuneParam::Kind::macro, {}, 2};
  for (int i = 0; i < n; ++i) x.values.push_back(std::to_string(i));
  for (int j = 0; j < m; ++j) y.values.push_back(std::to_string(j));
  t.params = {x, y};
  for (const auto& c : constraints) t.constraints.push_back({util::Expr::parse(c), 3});
  return t;
}

// Records every call; the score is a smooth hill with its top at (tx, ty).
struct Hill {
  double tx, ty;
  std::vector<tune::Point> calls;
  std::optional<double> operator()(const tune::Point& p) {
    calls.push_back(p);
    double dx = static_cast<double>(p[0]) - tx, dy = static_cast<double>(p[1]) - ty;
    return 2.0 - 0.01 * (dx * dx + dy * dy);
  }
};

std::set<tune::Point> distinct(const std::vector<tune::Point>& v) {
  return {v.begin(), v.end()};
}

} // namespace

TEST(TuneSearch, AutoIsExhaustiveForSmallSpacesOnly) {
  EXPECT_EQ(tune::choose("auto", 64, 64), tune::Method::exhaustive);
  EXPECT_EQ(tune::choose("auto", 65, 100), tune::Method::nlopt);
  EXPECT_EQ(tune::choose("auto", 40, 20), tune::Method::nlopt); // the budget does not cover it
  EXPECT_EQ(tune::choose("exhaustive", 1000, 20), tune::Method::exhaustive);
  EXPECT_EQ(tune::choose("nlopt", 4, 20), tune::Method::nlopt);
  EXPECT_THROW(tune::choose("bayes", 4, 20), UsageError);
}

TEST(TuneSearch, ExhaustiveTriesEveryAllowedPointOnce) {
  tune::Space s(grid(4, 4, {"X + Y <= 4"}), "optimas.yml");
  Hill hill{3, 1, {}};
  auto tried = tune::search(s, tune::Method::exhaustive, 100, std::ref(hill));
  EXPECT_EQ(tried, s.allowed_points());
  EXPECT_EQ(hill.calls, s.allowed_points());
  for (const auto& p : tried) EXPECT_LE(p[0] + p[1], 4u);
  // A budget below the space's size: its first points, in grid order.
  Hill small{3, 1, {}};
  tried = tune::search(s, tune::Method::exhaustive, 3, std::ref(small));
  EXPECT_EQ(tried, (std::vector<tune::Point>{{0, 0}, {0, 1}, {0, 2}}));
}

TEST(TuneSearch, NloptFindsTheTopWithinTheBudget) {
  tune::Space s(grid(16, 16), "optimas.yml"); // 256 points: more than an exhaustive search would take
  Hill hill{11, 4, {}};
  const int budget = 40;
  auto tried = tune::search(s, tune::Method::nlopt, budget, std::ref(hill));
  EXPECT_LE(static_cast<int>(tried.size()), budget);
  EXPECT_EQ(hill.calls, tried);
  EXPECT_EQ(distinct(hill.calls).size(), hill.calls.size()) << "a point was measured twice";
  EXPECT_TRUE(distinct(tried).count({11, 4}))
      << "the top (11, 4) was not among the " << tried.size() << " points tried";
  EXPECT_EQ(tried.front(), tune::start_point(s));
}

TEST(TuneSearch, NloptKeepsTheConstraintsAndSpendsTheBudget) {
  // The top lies outside the allowed region; the best allowed points are on its edge.
  tune::Space s(grid(12, 12, {"X + Y <= 10"}), "optimas.yml");
  Hill hill{11, 11, {}};
  auto tried = tune::search(s, tune::Method::nlopt, 30, std::ref(hill));
  for (const auto& p : hill.calls) EXPECT_LE(p[0] + p[1], 10u) << "measured a point the constraints exclude";
  EXPECT_EQ(distinct(hill.calls).size(), hill.calls.size());
  EXPECT_EQ(tried.size(), 30u) << "restarts use the budget that a converged local run leaves";
  bool edge = false;
  for (const auto& p : tried) edge = edge || p[0] + p[1] == 10;
  EXPECT_TRUE(edge) << "no point on the edge X + Y = 10 was tried";
}

TEST(TuneSearch, NloptStopsWhenEveryPointIsMeasured) {
  tune::Space s(grid(3, 2), "optimas.yml");
  Hill hill{0, 0, {}};
  auto tried = tune::search(s, tune::Method::nlopt, 100, std::ref(hill));
  EXPECT_EQ(distinct(tried).size(), 6u);
  EXPECT_EQ(tried.size(), 6u);
}

TEST(TuneSearch, UnmeasurablePointsDoNotStopTheSearch) {
  tune::Space s(grid(10, 10), "optimas.yml");
  int calls = 0;
  auto failing = [&](const tune::Point& p) -> std::optional<double> {
    ++calls;
    if (p[0] < 5) return std::nullopt; // does not build
    return 1.0 + 0.01 * static_cast<double>(p[0]);
  };
  auto tried = tune::search(s, tune::Method::nlopt, 20, failing);
  EXPECT_EQ(tried.size(), 20u);
  EXPECT_EQ(calls, 20);
}

TEST(TuneSearch, AnObjectiveThatThrowsStopsTheSearch) {
  tune::Space s(grid(10, 10), "optimas.yml");
  int calls = 0;
  auto throwing = [&](const tune::Point&) -> std::optional<double> {
    if (++calls == 3) throw Error("the disk is full");
    return 1.0;
  };
  EXPECT_THROW(tune::search(s, tune::Method::nlopt, 20, throwing), Error);
  EXPECT_EQ(calls, 3);
}

// Points known to fail (a block size that crashed, with another flag) are never measured and
// leave their budget to others, in both walks; each is asked about at most once.
TEST(TuneSearch, PointsKnownToFailAreNotMeasuredAndCostNoBudget) {
  tune::Space s(grid(6, 6), "optimas.yml");
  std::map<tune::Point, int> asked;
  auto known_bad = [&](const tune::Point& p) {
    ++asked[p];
    return p[0] == 2;
  };
  Hill hill{2, 3, {}}; // the top is among the points known to fail
  auto tried = tune::search(s, tune::Method::nlopt, 20, std::ref(hill), known_bad);
  EXPECT_EQ(tried.size(), 20u) << "the budget goes to points not known to fail";
  EXPECT_EQ(hill.calls, tried);
  for (const auto& p : hill.calls) EXPECT_NE(p[0], 2u) << "measured a point known to fail";
  EXPECT_EQ(distinct(hill.calls).size(), hill.calls.size());
  for (const auto& [p, n] : asked) EXPECT_EQ(n, 1) << "asked twice about (" << p[0] << ", " << p[1] << ")";
  // Every point of the space, less the six known to fail, when the budget covers them.
  Hill all{2, 3, {}};
  tried = tune::search(s, tune::Method::nlopt, 100, std::ref(all), known_bad);
  EXPECT_EQ(distinct(tried).size(), 30u);

  // Exhaustive: grid order, the known failures passed over, the budget filled from the next ones.
  Hill ex{0, 0, {}};
  tried = tune::search(s, tune::Method::exhaustive, 15, std::ref(ex), known_bad);
  ASSERT_EQ(tried.size(), 15u);
  EXPECT_EQ(tried.back(), (tune::Point{3, 2})); // 12 points of X = 0, 1; X = 2 passed over; 3 of X = 3
  for (const auto& p : tried) EXPECT_NE(p[0], 2u);
}

// What the tuning stage builds ahead while NLopt's point is measured: along each axis Sbplx's
// initial step (a quarter of the axis) forward, then back, then one grid step; allowed points
// only, none twice.
TEST(TuneSearch, LikelyNextAreTheAxisStepsAllowed) {
  tune::Space s(grid(9, 3, {"X + Y <= 9"}), "optimas.yml");
  // X: 9 values (initial step 2), Y: 3 values (initial step 1, the same as one step).
  EXPECT_EQ(tune::likely_next(s, {4, 1}), (std::vector<tune::Point>{{6, 1}, {4, 2}, {2, 1}, {4, 0}, {5, 1}, {3, 1}}));
  // At an edge and against a constraint: X 10 is off the grid, (8, 2) breaks X + Y <= 9.
  EXPECT_EQ(tune::likely_next(s, {8, 1}), (std::vector<tune::Point>{{6, 1}, {8, 0}, {7, 1}}));
}

// The guess is worth its builds: on the hill, most of NLopt's points after its first are among
// the likely next points of one it measured before.
TEST(TuneSearch, NloptMostlyAsksForALikelyNextPoint) {
  tune::Space s(grid(16, 16), "optimas.yml");
  Hill hill{11, 4, {}};
  auto tried = tune::search(s, tune::Method::nlopt, 12, std::ref(hill));
  ASSERT_EQ(tried.size(), 12u);
  int guessed = 0;
  for (std::size_t i = 1; i < tried.size(); ++i) {
    bool hit = false;
    for (std::size_t j = 0; j < i && !hit; ++j)
      for (const auto& q : tune::likely_next(s, tried[j])) hit = hit || q == tried[i];
    guessed += hit;
  }
  EXPECT_GE(guessed, 6) << "of " << tried.size() - 1;
}
