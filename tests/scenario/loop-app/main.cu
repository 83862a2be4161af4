// A host program standing in for examples/stream in CI, where there is no GPU: the same kernel
// names and parameters, so the H200 profile recorded for stream drives the loop, but the
// "kernels" are plain C++ loops compiled with g++ (-x c++). triad_kernel repeats its work on
// purpose: removing the repetition is the honest optimization the loop tests expect to pass.
// kernel_time_ms is the process's CPU time in the kernels, as a GPU's kernel time is the GPU's:
// another process taking the CPU (the suite's other tests, on two cores) does not count in it.
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define __global__

__global__ void copy_kernel(const double* a, double* c, long n) {
  for (long i = 0; i < n; ++i) c[i] = a[i];
}

__global__ void mul_kernel(double* b, const double* c, double scalar, long n) {
  for (long i = 0; i < n; ++i) b[i] = scalar * c[i];
}

__global__ void add_kernel(const double* a, const double* b, double* c, long n) {
  for (long i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

__global__ void triad_kernel(double* a, const double* b, const double* c, double scalar, long n) {
  for (long i = 0; i < n; ++i) {
    double t = 0;
    for (int r = 0; r < 8; ++r) {
      for (int k = 0; k < 5; ++k) {
        t = b[i] + scalar * c[i];
        asm volatile("" : "+x"(t)); // each step is opaque to the optimizer
      }
    }
    a[i] = t;
  }
}

__global__ void dot_partial_kernel(const double* a, const double* b, double* partial, long n) {
  for (int p = 0; p < 16; ++p) {
    double s = 0;
    for (long i = p; i < n; i += 16) s += a[i] * b[i];
    partial[p] = s;
  }
}

__global__ void dot_final_kernel(const double* partial, double* sum) {
  double s = 0;
  for (int p = 0; p < 16; ++p) s += partial[p];
  *sum = s;
}

static std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static std::uint64_t fnv1a(const std::vector<double>& v) {
  // Over 64-bit words, not bytes: every bit still counts, in an eighth of the time.
  std::uint64_t h = 1469598103934665603ull, w = 0;
  for (double d : v) std::memcpy(&w, &d, sizeof w), h = (h ^ w) * 1099511628211ull;
  return h;
}

int main(int argc, char** argv) {
  long n = 1 << 19;
  int reps = 10;
  std::uint64_t seed = 42;
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--n")) n = std::atol(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--out")) out = argv[i + 1];
  }
  std::vector<double> a(n), b(n), c(n), partial(16);
  std::uint64_t state = seed;
  for (long i = 0; i < n; ++i) {
    a[i] = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
    b[i] = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
    c[i] = 0;
  }
  const double scalar = 0.4;
  std::vector<double> dots;
  timespec t0{}, t1{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  for (int r = 0; r < reps; ++r) {
    copy_kernel(a.data(), c.data(), n);
    mul_kernel(b.data(), c.data(), scalar, n);
    add_kernel(a.data(), b.data(), c.data(), n);
    triad_kernel(a.data(), b.data(), c.data(), scalar, n);
    double sum = 0;
    dot_partial_kernel(a.data(), b.data(), partial.data(), n);
    dot_final_kernel(partial.data(), &sum);
    dots.push_back(sum);
  }
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
  double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
  std::printf("kernel_time_ms: %.4f\n", ms);
  FILE* f = std::fopen(out.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", out.c_str());
    return 1;
  }
  std::fprintf(f, "n %ld reps %d\n", n, reps);
  for (double d : dots) std::fprintf(f, "dot %a\n", d);
  std::fprintf(f, "hash a %016llx b %016llx c %016llx\n", static_cast<unsigned long long>(fnv1a(a)),
               static_cast<unsigned long long>(fnv1a(b)), static_cast<unsigned long long>(fnv1a(c)));
  for (long i = 0; i < n; i += n / 8 + 1) std::fprintf(f, "a[%ld] %a\n", i, a[i]);
  std::fclose(f);
  std::printf("check: PASS\n");
  return 0;
}
