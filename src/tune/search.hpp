// How the tuning stage walks its space: every allowed point in order (exhaustive), or NLopt's
// Sbplx (Rowan's subplex, a derivative-free local method) over the grid's indices, each of its
// continuous points rounded to the nearest grid point, with restarts from the unvisited point
// farthest from those tried while budget is left. A point is never measured twice: what the
// optimizer asks again is answered from memory.
#pragma once

#include "tune/space.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace optimas::tune {

enum class Method { exhaustive, nlopt };

// Spaces of at most this many allowed points are searched exhaustively under search: auto.
inline constexpr std::size_t k_exhaustive_max = 64;

// search: auto, exhaustive or nlopt, for `allowed` points and `budget` measurements. auto is
// exhaustive when every allowed point fits in the budget and there are at most k_exhaustive_max.
Method choose(const std::string& search, std::size_t allowed, int budget);
std::string method_name(Method m);

// What one point gave: a score to maximise (its measured speedup), or nothing when it could not
// be measured (it did not build, or its output was not bit-identical).
using Objective = std::function<std::optional<double>(const Point&)>;

// The first `budget` allowed points in grid order: what an exhaustive search tries.
std::vector<Point> exhaustive_order(const Space& space, int budget);

// The allowed point nearest the middle of the grid: where NLopt starts.
Point start_point(const Space& space);

// The allowed points NLopt is likely to ask for after `p`: along each axis, those Sbplx's initial
// step (a quarter of the axis) away, forward first, then those one grid step away. The tuning stage builds
// them ahead while `p` is measured (loop/tune.cpp); a guess NLopt does not take costs a build.
std::vector<Point> likely_next(const Space& space, const Point& p);

// Whether a point is known to fail without being tried (what was measured says so): such a point
// scores as one that could not be measured, costs no budget, and `objective` is not called on it.
using Known = std::function<bool(const Point&)>;

// Calls `objective` on at most `budget` distinct allowed points, never twice on one, passing over
// the points `known_bad` names (asked at most once a point); returns the points tried, in order.
// `objective` may throw to stop the search (the exception passes on).
std::vector<Point> search(const Space& space, Method method, int budget, const Objective& objective,
                          const Known& known_bad = {});

} // namespace optimas::tune
