#include "profile/heavy_rounds.hpp"

#include <algorithm>
#include <cmath>

namespace optimas::profile {

std::vector<PlannedLaunch> round_queue(const std::vector<LaunchPick>& picks, int limit) {
  // Each function's invocations in the order its rounds take them.
  std::vector<std::vector<std::int64_t>> order;
  std::size_t longest = 0;
  for (const auto& p : picks) {
    std::vector<std::int64_t> mine;
    if (!p.invocations.empty()) {
      std::size_t middle = (p.invocations.size() - 1) / 2;
      mine.push_back(p.invocations[middle]);
      for (std::size_t i = 0; i < p.invocations.size(); ++i)
        if (i != middle) mine.push_back(p.invocations[i]);
    }
    longest = std::max(longest, mine.size());
    order.push_back(std::move(mine));
  }
  std::vector<PlannedLaunch> out;
  for (std::size_t turn = 0; turn < longest; ++turn)
    for (std::size_t k = 0; k < picks.size(); ++k)
      if (turn < order[k].size()) out.push_back({picks[k].function, order[k][turn]});
  if (limit > 0 && out.size() > static_cast<std::size_t>(limit)) out.resize(static_cast<std::size_t>(limit));
  return out;
}

std::vector<LaunchPick> round_picks(const std::vector<PlannedLaunch>& launches) {
  std::vector<LaunchPick> out;
  for (const auto& l : launches) {
    auto same = std::find_if(out.begin(), out.end(), [&](const LaunchPick& p) { return p.function == l.function; });
    if (same == out.end()) {
      out.push_back({l.function, {}, 0});
      same = std::prev(out.end());
    }
    same->invocations.push_back(l.invocation);
  }
  for (auto& p : out) std::sort(p.invocations.begin(), p.invocations.end());
  return out;
}

RoundCost estimate_round_cost(double program_s, const std::vector<RoundTime>& rounds) {
  RoundCost c;
  c.base_s = std::max(0.0, program_s);
  for (const auto& r : rounds) c.base_s = std::min(c.base_s, r.wall_s);
  for (const auto& r : rounds)
    if (r.launches > 0) c.per_launch_s = std::max(c.per_launch_s, (r.wall_s - c.base_s) / r.launches);
  return c;
}

int launches_that_fit(const RoundCost& cost, int remaining, double left_s) {
  if (remaining <= 0) return 0;
  if (std::isinf(left_s) && left_s > 0) return remaining;
  double room = left_s / k_round_margin - cost.base_s;
  if (room <= 0) return 0;
  if (cost.per_launch_s <= 0) return remaining;
  double n = std::floor(room / cost.per_launch_s);
  return n >= remaining ? remaining : static_cast<int>(n);
}

} // namespace optimas::profile
