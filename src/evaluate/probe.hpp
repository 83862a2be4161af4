// The validation probe: validation that cannot fail proves nothing. Before any variant is
// judged, the hot kernels are emptied in a copy (each returns at once) and the copy is run on the
// primary configuration. When its compared output is the baseline's, byte for byte, no check can
// tell a kernel that computes nothing from the original, and no speedup may be accepted.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace optimas::evaluate {

struct EmptiedKernels {
  std::map<std::string, std::string> sources; // the sources that hold an emptied kernel, edited
  std::vector<std::string> kernels;           // "Fan2 (gaussian.cu:54)", in file order
};

// `sources` (name -> text) with `return;` first in the body of every kernel named in `names`
// (base names: "Fan2", "ns::k" or "k<64>" match k), or of every kernel when `names` is empty.
EmptiedKernels empty_kernels(const std::map<std::string, std::string>& sources, const std::vector<std::string>& names);

// The error that stops a run whose probe left the compared output as the baseline's.
std::string blind_validation(const std::string& config, const std::vector<std::string>& kernels,
                             const std::string& probe_dir);

} // namespace optimas::evaluate
