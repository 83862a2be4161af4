// Kernels run on the host, for the builtin rules' bit-for-bit checks: a stand-in for the CUDA
// the kernels use (host_cuda.hpp, below), and a runner that builds a driver against the original
// and the edited kernel and runs it.
#pragma once

#include "util/process.hpp"
#include "util/strings.hpp"

#include "test_helpers.hpp"

#include <string>

namespace optimas::test {

// A host stand-in for what the kernels use: blocks run one after another, a block's threads
// are std::threads meeting at __syncthreads (a std::barrier) and each warp's at __syncwarp (a
// barrier of its 32), __shared__ is a static.
inline const char* const k_host_cuda = R"(#pragma once
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>
struct dim3 { unsigned x, y, z; };
inline thread_local dim3 threadIdx;
inline dim3 blockIdx, blockDim, gridDim;
inline std::barrier<>* block_barrier = nullptr;
inline std::vector<std::barrier<>*> warp_barriers; // the block's warps, 32 threads each (the last may have fewer)
inline void __syncthreads() { block_barrier->arrive_and_wait(); }
inline void __syncwarp() { warp_barriers[threadIdx.x / 32]->arrive_and_wait(); }
#define __global__
#define __device__
#define __shared__ static
[[noreturn]] inline void __trap() { std::fputs("trap\n", stdout); std::fflush(stdout); std::_Exit(86); }
struct alignas(16) float4 { float x, y, z, w; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
template <class F> void launch(unsigned grid, unsigned block, F f) {
  gridDim = {grid, 1, 1};
  blockDim = {block, 1, 1};
  for (unsigned b = 0; b < grid; ++b) {
    blockIdx = {b, 0, 0};
    std::barrier<> bar(block);
    block_barrier = &bar;
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    warp_barriers.clear();
    for (unsigned w = 0; w < block; w += 32) {
      warps.push_back(std::make_unique<std::barrier<>>(std::min(32u, block - w)));
      warp_barriers.push_back(warps.back().get());
    }
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < block; ++t) threads.emplace_back([&, t] { threadIdx = {t, 0, 0}; f(); });
    for (auto& th : threads) th.join();
  }
}
template <class T> bool same(const char* what, const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0) return true;
  std::printf("%s differs\n", what);
  return false;
}
inline float next_value(unsigned long long& s) {
  s = s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)(s >> 40) / 16777216.0f * 4.0f - 2.0f;
}
)";

// What every driver starts with: the stand-in, then the original kernel in namespace `original`
// and the edited one in `edited`, for the driver to run both.
inline const char* const k_driver_prologue = R"(#include "host_cuda.hpp"
namespace original {
#include "original.cu"
}
namespace edited {
#include "edited.cu"
}
)";

// Builds the driver (after k_driver_prologue) with the original and the edited kernel and runs it:
// "identical" or why not.
inline std::string run_on_host(const std::string& original, const std::string& edited, const char* driver) {
  optimas::test::TempDir dir;
  dir.file("host_cuda.hpp", k_host_cuda);
  dir.file("original.cu", original);
  dir.file("edited.cu", edited);
  auto main = dir.file("main.cpp", std::string(k_driver_prologue) + driver);
  auto exe = (dir.path() / "driver").string();
  util::ProcessSpec build;
  build.argv = {"c++", "-std=c++20", "-O2", "-fno-strict-aliasing", "-pthread", "-w", "-o", exe, main};
  build.timeout_s = 180;
  auto b = util::run_process(build);
  if (!b.ok()) return "build failed: " + b.err + "\n" + edited;
  util::ProcessSpec run;
  run.argv = {exe};
  run.timeout_s = 120; // a __syncthreads that not every thread reaches hangs: the timeout says so
  auto r = util::run_process(run);
  return r.ok() ? std::string(util::trim(r.out)) : r.describe() + ": " + r.out;
}

} // namespace optimas::test
