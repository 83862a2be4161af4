// Counter interaction analysis (paper 2.1.4, Algorithm 1): which hardware counters explain
// runtime variation across profiling runs, by ensemble randomized Orthogonal Matching Pursuit.
#pragma once

#include "profile/profile.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace optimas::analysis {

struct EompOptions {
  int kappa = 5;      // counters per member (sparsity)
  int pool = 5;       // the next counter is drawn from the top `pool` candidates
  int ensemble = 100; // members
  std::uint64_t seed = 42;
  int report = 5; // counters reported, by importance
};

// A runs x counters matrix and the runtime of each run.
struct CounterMatrix {
  std::vector<std::string> counters;
  std::vector<std::vector<double>> rows; // rows[run][counter]; NaN where missing
  std::vector<double> runtime;
  std::vector<std::string> row_labels; // "default#3" (config and result ID)
};

struct CounterWeight {
  std::string id; // evidence ID, "IA2" (given by the caller)
  std::string counter;
  double importance = 0;  // mean |weight| over the ensemble (0 for members that did not pick it)
  double frequency = 0;   // share of members that picked it
  double mean_weight = 0; // signed mean weight over members that picked it (z-scored units)
  std::string description;
};

struct CounterSelection {
  std::string kernel;
  std::size_t runs = 0;           // N
  std::size_t counters_total = 0; // columns before filtering
  std::size_t counters_used = 0;  // C after dropping constant and missing columns
  std::size_t dropped_constant = 0;
  std::size_t dropped_missing = 0;
  std::size_t dropped_time = 0;      // direct measures of time (duration, elapsed cycles)
  std::size_t dropped_duplicate = 0; // the same signal as a kept counter (another rollup, a copy)
  std::vector<CounterWeight> top;    // by importance
  double mean_r2 = 0;                // mean fit of the ensemble members
  bool reliable = false;
  std::string caveat; // plain words when N is too small to mean much
};

// Builds the matrix from every launch of `kernel` (demangled) in every run of the profile.
CounterMatrix counter_matrix(const profile::Profile& profile, const std::string& kernel);

// Algorithm 1. Deterministic for a given seed.
CounterSelection select_counters(const CounterMatrix& matrix, const EompOptions& options);

// Whether a counter is a direct measure of elapsed time, which would "explain" runtime trivially.
bool is_time_counter(const std::string& name);

} // namespace optimas::analysis
