// Reading a CUDA source (cuda::parse_source, which the guardrails, the prompt and the builtin
// optimizer all run) must stay linear in the file's length whatever its brackets do: an edited
// file is model output. Prints seconds and MB/s per shape and size; for a linear reader MB/s
// stays within cache effects (a factor of about 2) as the size grows; a quadratic one falls with it.
//
//   bench_parse_source [SIZE_KB ...]     (default: 64 256 1024 4096)
#include "cuda/source.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace optimas;

namespace {

struct Shape {
  const char* name;
  const char* unit; // repeated to the size
};

// A real kernel file's look, and what a fuzzer found slow (each was quadratic before).
const Shape k_shapes[] = {
    {"kernels", "template <int B>\n__global__ void __launch_bounds__(256) k(const float* __restrict__ a, float* b, "
                "int n) {\n  int i = blockIdx.x * B + threadIdx.x;\n  if (i < n) b[i] = 2.0f * a[i];\n}\n"},
    {"unclosed-parens", "__device__ int f(int x,\n"},
    {"qualifier-runs", "static __device__ inline __global__ int "},
    {"bounds-chains", "__device__ __launch_bounds__(1) "},
};

} // namespace

int main(int argc, char** argv) {
  std::vector<long> sizes_kb;
  for (int i = 1; i < argc; ++i) sizes_kb.push_back(std::atol(argv[i]));
  if (sizes_kb.empty()) sizes_kb = {64, 256, 1024, 4096};
  std::printf("%-16s %9s %9s %9s %10s\n", "shape", "size_kb", "seconds", "MB/s", "functions");
  for (const auto& shape : k_shapes) {
    for (long kb : sizes_kb) {
      std::string text;
      while (text.size() < static_cast<std::size_t>(kb) * 1024) text += shape.unit;
      auto t0 = std::chrono::steady_clock::now();
      auto f = cuda::parse_source("bench.cu", text);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%-16s %9ld %9.4f %9.1f %10zu\n", shape.name, kb, s, static_cast<double>(text.size()) / 1e6 / s,
                  f.functions.size());
    }
  }
  return 0;
}
