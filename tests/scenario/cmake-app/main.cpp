// cmake-app: a host stand-in for a CMake-built CUDA program as users write them, for optimas
// init's CI test. Positional arguments (N REPS OUTFILE), the output file named by position, a
// printed kernel time, and a wall-clock line that differs from run to run.
//   ./build/smooth 65536 20 smooth.out
#include "kernels.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s N REPS OUTFILE\n", argv[0]);
    return 1;
  }
  const long n = std::atol(argv[1]);
  const int reps = std::atoi(argv[2]);
  auto start = std::chrono::steady_clock::now();
  std::vector<float> a(n), b(n);
  for (long i = 0; i < n; ++i) a[i] = static_cast<float>((i * 2654435761u) % 1000) / 7.0f;
  double kernel_ms = 0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    smooth_kernel(a.data(), b.data(), n);
    kernel_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    a.swap(b);
  }
  std::FILE* f = std::fopen(argv[3], "w");
  if (!f) return 1;
  for (long i = 0; i < n; i += 97) std::fprintf(f, "%a\n", a[i]);
  std::fclose(f);
  std::printf("smooth: n = %ld, %d reps\n", n, reps);
  std::printf("Kernel time = %.4f ms\n", kernel_ms);
  std::printf("Elapsed: %.6f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  std::printf("Test passed\n");
  return 0;
}
