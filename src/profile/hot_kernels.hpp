// Hot kernels (paper 2.1.1): the smallest set of kernels whose time is >= alpha of the total.
#pragma once

#include "config/options.hpp"
#include "profile/profile.hpp"

#include <string>
#include <vector>

namespace optimas::profile {

struct KernelTime {
  std::string kernel;    // base name with template arguments
  std::string demangled; // launches aggregate by this: same name and template instance
  double total_ns = 0;
  int launches = 0;
  double share = 0; // of the total time
  bool hot = false;
};

struct HotKernels {
  double alpha = config::default_of<double>("alpha");
  double total_ns = 0;
  std::vector<KernelTime> kernels; // every kernel, by decreasing time
  std::vector<std::string> hot_names() const;
  std::vector<std::string> hot_demangled() const;
  // The kernels named in `wanted` (KernelTime::kernel names) that ran but are not hot, each
  // template instance once: what a variant's re-profile profiles besides its hot kernels
  // (NcuOptions::also_profile), where an edit made its kernel fast enough to leave the hot set.
  std::vector<KernelTime> not_hot_of(const std::vector<std::string>& wanted) const;
};

// Launches without a duration are ignored. Ties in time keep the first launched kernel first.
HotKernels select_hot_kernels(const std::vector<Launch>& launches, double alpha = config::default_of<double>("alpha"));

} // namespace optimas::profile
