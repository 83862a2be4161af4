// The heavy pass in rounds (docs/profiling-cost.md): each round is one ncu process with its own
// report, so a round cut by the budget or a timeout loses only itself and every round before it
// is kept. Round 1 profiles one launch of each hot kernel; each later round takes as many of the
// remaining picks as the time left allows, estimated from the rounds before it.
#pragma once

#include "profile/trace.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace optimas::profile {

// One launch to profile: a picked invocation of a function (LaunchPick's numbering).
struct PlannedLaunch {
  std::string function;
  std::int64_t invocation = 0;
};

// The picks in the order the rounds take them: each kernel's middle pick first (its steady
// state, past any warm-up), then its others in launch order, the kernels taking turns, so that
// the first round holds one launch of each kernel and any prefix spreads over all of them.
// `limit` > 0 keeps only the first `limit` (--launch-count).
std::vector<PlannedLaunch> round_queue(const std::vector<LaunchPick>& picks, int limit = 0);

// A round's launches as heavy_command wants them: one LaunchPick per function, in the order the
// functions first appear, invocations sorted.
std::vector<LaunchPick> round_picks(const std::vector<PlannedLaunch>& launches);

// What a round costs: one run of the program under ncu, and the replay of each launch it profiles.
struct RoundCost {
  double base_s = 0;
  double per_launch_s = 0;
};

// A finished round: the launches it profiled and its wall time (ncu and the page exports).
struct RoundTime {
  int launches = 0;
  double wall_s = 0;
};

// The cost from the program's own run time (the timing pass) and the rounds so far: the base is
// the smallest of those times, the cost of a launch the largest any round implies above that
// base. Both err on the slow side, so that a planned round finishes.
RoundCost estimate_round_cost(double program_s, const std::vector<RoundTime>& rounds);

// The margin a round's estimate must leave: a round may be planned only when its estimate times
// this fits in the time left.
inline constexpr double k_round_margin = 1.25;

// How many of `remaining` launches the next round may take so that it finishes within `left_s`
// (an infinite `left_s`: all of them); 0 when not even one would.
int launches_that_fit(const RoundCost& cost, int remaining, double left_s);

} // namespace optimas::profile
