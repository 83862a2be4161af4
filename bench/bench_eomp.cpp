// Counter selection by ensemble randomized OMP: 64 runs x 1,500 counters, 100 members, kappa 5.
//   bench_eomp [RUNS COUNTERS MEMBERS]
#include "analysis/counters.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

using namespace optimas::analysis;

int main(int argc, char** argv) {
  std::size_t runs = argc > 1 ? std::stoul(argv[1]) : 64;
  std::size_t counters = argc > 2 ? std::stoul(argv[2]) : 1500;
  int members = argc > 3 ? std::stoi(argv[3]) : 100;

  // Random counters; the runtime depends on five of them plus noise.
  std::mt19937_64 rng(1);
  std::normal_distribution<double> normal(0.0, 1.0);
  CounterMatrix m;
  for (std::size_t c = 0; c < counters; ++c) m.counters.push_back("counter_" + std::to_string(c));
  const std::size_t planted[] = {3, 141, 592, 653, 1289};
  for (std::size_t r = 0; r < runs; ++r) {
    std::vector<double> row(counters);
    for (auto& v : row) v = 1e6 + 1e5 * normal(rng);
    double t = 1e5;
    for (std::size_t k = 0; k < 5; ++k) t += (k % 2 ? -1.0 : 1.0) * (k + 1) * 0.01 * row[planted[k] % counters];
    m.rows.push_back(std::move(row));
    m.runtime.push_back(t + 10 * normal(rng));
  }
  EompOptions o;
  o.ensemble = members;
  std::vector<double> times;
  CounterSelection s;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    s = select_counters(m, o);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  std::printf(
      "eOMP: %zu runs x %zu counters, %d members, kappa %d: median %.3f s (min %.3f, max %.3f) over %zu repeats\n",
      runs, counters, members, o.kappa, times[times.size() / 2], times.front(), times.back(), times.size());
  std::printf("top counters:");
  for (const auto& w : s.top) std::printf(" %s(%.2f)", w.counter.c_str(), w.importance);
  std::printf("\ngoal: <= 1 s\n");
  return 0;
}
