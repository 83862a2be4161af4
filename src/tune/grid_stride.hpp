// Whether a kernel's results can depend on the size of its grid: the guard of the grid knob
// (discover.hpp). A kernel whose every thread walks a grid-stride loop computes the same elements
// the same way with any number of blocks; only how many threads share them changes.
#pragma once

#include "cuda/source.hpp"

#include <string>
#include <vector>

namespace optimas::tune {

// "" when the kernel reads blockIdx and gridDim only to start and to stride grid-stride loops
// (`for (i = start; i < n; i += stride)`, the start from blockIdx, the stride from gridDim,
// directly or through variables set once: `int tid = blockIdx.x * blockDim.x + threadIdx.x;`),
// in x only, and has at least one such loop, and neither a function of `sources` that it calls
// nor a macro it names reads blockIdx or gridDim. Otherwise why not, with the line. The kernel is
// `kernel` of `file`; `sources` are every file of the application (for its callees and macros).
std::string grid_dependence(const cuda::SourceFile& file, const cuda::Function& kernel,
                            const std::vector<cuda::SourceFile>& sources);

} // namespace optimas::tune
