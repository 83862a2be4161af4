#include "profile/hot_kernels.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace optimas::profile {

std::vector<std::string> HotKernels::hot_names() const {
  std::vector<std::string> out;
  for (const auto& k : kernels)
    if (k.hot && std::find(out.begin(), out.end(), k.kernel) == out.end()) out.push_back(k.kernel);
  return out;
}

std::vector<std::string> HotKernels::hot_demangled() const {
  std::vector<std::string> out;
  for (const auto& k : kernels)
    if (k.hot) out.push_back(k.demangled);
  return out;
}

std::vector<KernelTime> HotKernels::not_hot_of(const std::vector<std::string>& wanted) const {
  std::vector<KernelTime> out;
  for (const auto& k : kernels)
    if (!k.hot && std::find(wanted.begin(), wanted.end(), k.kernel) != wanted.end()) out.push_back(k);
  return out;
}

HotKernels select_hot_kernels(const std::vector<Launch>& launches, double alpha) {
  if (!(alpha > 0 && alpha <= 1)) throw UsageError("alpha must be in (0, 1], got " + std::to_string(alpha));
  HotKernels out;
  out.alpha = alpha;
  std::unordered_map<std::string, std::size_t> index;
  for (const auto& l : launches) {
    if (!std::isfinite(l.duration_ns)) continue;
    auto [it, inserted] = index.emplace(l.demangled, out.kernels.size());
    if (inserted) out.kernels.push_back({l.kernel, l.demangled, 0, 0, 0, false});
    KernelTime& k = out.kernels[it->second];
    k.total_ns += l.duration_ns;
    k.launches += 1;
    out.total_ns += l.duration_ns;
  }
  std::stable_sort(out.kernels.begin(), out.kernels.end(),
                   [](const KernelTime& a, const KernelTime& b) { return a.total_ns > b.total_ns; });
  double covered = 0;
  for (auto& k : out.kernels) {
    k.share = out.total_ns > 0 ? k.total_ns / out.total_ns : 0;
    // Smallest prefix of the sorted list that reaches alpha of the total.
    if (covered < alpha * out.total_ns * (1 - 1e-12)) {
      k.hot = true;
      covered += k.total_ns;
    }
  }
  return out;
}

} // namespace optimas::profile
