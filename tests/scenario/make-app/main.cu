// A host program standing in for a Makefile-built CUDA application in CI, where there is no
// GPU: like loop-app it has examples/stream's kernel names and parameters, so the H200 profile
// recorded for stream drives the loop, but it is built as a project is: several files compiled
// to objects by make (g++ -x c++) and linked. It reports the triad's average time per call in
// microseconds, as many benchmarks do, rather than a total in milliseconds. Like loop-app it
// times by the process's CPU time, not the wall clock: beside another job on the 2-core machine
// a wall-clock triad spread an honest 1.4x over [0.98, 1.93] and the scenario failed.
//
// Usage: ./stream --n N --calls C --seed S --out PATH
#include "kernels.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <time.h>
#include <vector>

static std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static std::uint64_t fnv1a(const std::vector<double>& v) {
  std::uint64_t h = 1469598103934665603ull;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(v.data());
  for (std::size_t i = 0; i < v.size() * sizeof(double); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

int main(int argc, char** argv) {
  long n = 1 << 20;
  int calls = 10;
  std::uint64_t seed = 42;
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--n")) n = std::atol(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--calls")) calls = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--out")) out = argv[i + 1];
  }
  if (n < 16 || calls < 1 || out.empty()) {
    std::fprintf(stderr, "usage: %s --n N (>= 16) --calls C (>= 1) --seed S --out PATH\n", argv[0]);
    return 1;
  }
  std::vector<double> a(n), b(n), c(n), partial(DOT_PARTS);
  std::uint64_t state = seed;
  for (long i = 0; i < n; ++i) {
    a[i] = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
    b[i] = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
    c[i] = 0;
  }
  const double scalar = 0.4;
  std::vector<double> dots;
  // One repetition of the stream sequence per call; only the triad is timed, call by call.
  double triad_us = 0;
  auto cpu_us = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
  };
  for (int r = 0; r < calls; ++r) {
    copy_kernel(a.data(), c.data(), n);
    mul_kernel(b.data(), c.data(), scalar, n);
    add_kernel(a.data(), b.data(), c.data(), n);
    double t0 = cpu_us();
    triad_kernel(a.data(), b.data(), c.data(), scalar, n);
    triad_us += cpu_us() - t0;
    double sum = 0;
    dot_partial_kernel(a.data(), b.data(), partial.data(), n);
    dot_final_kernel(partial.data(), &sum);
    dots.push_back(sum);
  }
  std::printf("stream (make-app): n %ld, %d calls\n", n, calls);
  std::printf("Average triad time (us): %.3f over %d calls\n", triad_us / calls, calls);
  FILE* f = std::fopen(out.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", out.c_str());
    return 1;
  }
  std::fprintf(f, "n %ld calls %d\n", n, calls);
  for (double d : dots) std::fprintf(f, "dot %a\n", d);
  std::fprintf(f, "hash a %016llx b %016llx c %016llx\n", static_cast<unsigned long long>(fnv1a(a)),
               static_cast<unsigned long long>(fnv1a(b)), static_cast<unsigned long long>(fnv1a(c)));
  for (long i = 0; i < n; i += n / 8 + 1) std::fprintf(f, "a[%ld] %a\n", i, a[i]);
  std::fclose(f);
  std::printf("check: PASS\n");
  return 0;
}
