// stream: BabelStream-like memory bandwidth kernels in double precision.
// Per repetition:  copy  c = a
//                  mul   b = s * c
//                  add   c = a + b
//                  triad a = b + s * c
//                  dot   sum(a * b)    (deterministic two-pass reduction)
// Usage: ./stream --n N --reps R --seed S --out PATH
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <string>
#include <vector>

#define CHECK(call)                                                           \
  do {                                                                        \
    cudaError_t err_ = (call);                                                \
    if (err_ != cudaSuccess) {                                                \
      fprintf(stderr, "CUDA error at %s:%d: %s (%s)\n", __FILE__, __LINE__,   \
              cudaGetErrorString(err_), #call);                               \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

#ifndef TPB             // threads per block of the element-wise kernels (tunable: -DTPB=...)
#define TPB 256
#endif
#define DOT_TPB 256      // the dot's block: its tree reduction's shape fixes the sum's rounding
#define DOT_BLOCKS 1024  // fixed number of partial sums -> deterministic dot

const double SCALAR = 0.4;
// ---------------------------------------------------------------- kernels

__global__ void copy_kernel(const double* a, double* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i];
}

__global__ void mul_kernel(double* b, const double* c, double scalar, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = scalar * c[i];
}

__global__ void add_kernel(const double* a, const double* b, double* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void triad_kernel(double* a, const double* b, const double* c, double scalar, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = b[i] + scalar * c[i];
}

// First pass: every block sums a grid-stride slice, then reduces in shared memory.
__global__ void dot_partial_kernel(const double* a, const double* b, double* partial, int n) {
  __shared__ double cache[DOT_TPB];
  double sum = 0.0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    sum += a[i] * b[i];
  cache[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = cache[0];
}

// Second pass: one block sums the partial results in a fixed order.
__global__ void dot_final_kernel(const double* partial, int nparts, double* result) {
  __shared__ double cache[DOT_TPB];
  double sum = 0.0;
  for (int i = threadIdx.x; i < nparts; i += blockDim.x) sum += partial[i];
  cache[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *result = cache[0];
}

// ---------------------------------------------------------------- host helpers

static uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static double rand_uniform(uint64_t& state) {  // [0, 1)
  return (double)(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
}

static long long parse_int(const char* text, const char* name) {
  char* end = nullptr;
  long long v = strtoll(text, &end, 10);
  if (end == text || *end != '\0') {
    fprintf(stderr, "invalid value '%s' for --%s\n", text, name);
    exit(1);
  }
  return v;
}

static uint64_t hash_words(const std::vector<double>& v) {  // FNV-1a over 64-bit words
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < v.size(); i++) {
    uint64_t w;
    memcpy(&w, &v[i], sizeof(w));
    h = (h ^ w) * 1099511628211ULL;
  }
  return h;
}

static void run_rep(double* d_a, double* d_b, double* d_c, double* d_partial, double* d_result, int n) {
  int blocks = (n + TPB - 1) / TPB;
  copy_kernel<<<blocks, TPB>>>(d_a, d_c, n);
  CHECK(cudaGetLastError());
  mul_kernel<<<blocks, TPB>>>(d_b, d_c, SCALAR, n);
  CHECK(cudaGetLastError());
  add_kernel<<<blocks, TPB>>>(d_a, d_b, d_c, n);
  CHECK(cudaGetLastError());
  triad_kernel<<<blocks, TPB>>>(d_a, d_b, d_c, SCALAR, n);
  CHECK(cudaGetLastError());
  dot_partial_kernel<<<DOT_BLOCKS, DOT_TPB>>>(d_a, d_b, d_partial, n);
  CHECK(cudaGetLastError());
  dot_final_kernel<<<1, DOT_TPB>>>(d_partial, DOT_BLOCKS, d_result);
  CHECK(cudaGetLastError());
}

static bool close_enough(double got, double ref, double rtol) {
  return fabs(got - ref) <= rtol * fabs(ref) + 1e-300;
}

int main(int argc, char** argv) {
  long long n = 33554432, reps = 10, seed = 42;
  std::string out_path;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) { fprintf(stderr, "missing value for %s\n", key.c_str()); return 1; }
    if (key == "--n") n = parse_int(argv[i + 1], "n");
    else if (key == "--reps") reps = parse_int(argv[i + 1], "reps");
    else if (key == "--seed") seed = parse_int(argv[i + 1], "seed");
    else if (key == "--out") out_path = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", key.c_str()); return 1; }
  }
  if (out_path.empty()) {
    fprintf(stderr, "usage: %s --n N --reps R --seed S --out PATH\n", argv[0]);
    return 1;
  }
  if (n < 1 || n > 1000000000LL || reps < 1) { fprintf(stderr, "bad --n or --reps\n"); return 1; }

  // ---- inputs
  std::vector<double> a0(n), b0(n), c0(n);
  uint64_t rng = (uint64_t)seed;
  for (long long i = 0; i < n; i++) {
    a0[i] = 0.5 + rand_uniform(rng);
    b0[i] = 0.5 + rand_uniform(rng);
    c0[i] = 0.5 + rand_uniform(rng);
  }
  size_t bytes = (size_t)n * sizeof(double);
  printf("stream: n=%lld (%.1f MiB per array), reps=%lld\n", n, bytes / 1048576.0, reps);

  double *d_a, *d_b, *d_c, *d_partial, *d_dots;
  CHECK(cudaMalloc(&d_a, bytes));
  CHECK(cudaMalloc(&d_b, bytes));
  CHECK(cudaMalloc(&d_c, bytes));
  CHECK(cudaMalloc(&d_partial, DOT_BLOCKS * sizeof(double)));
  CHECK(cudaMalloc(&d_dots, (reps + 1) * sizeof(double)));

  // ---- warm-up (one repetition), then reset the arrays
  CHECK(cudaMemcpy(d_a, a0.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, b0.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_c, c0.data(), bytes, cudaMemcpyHostToDevice));
  run_rep(d_a, d_b, d_c, d_partial, d_dots + reps, (int)n);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(d_a, a0.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, b0.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_c, c0.data(), bytes, cudaMemcpyHostToDevice));

  // ---- timed region
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  for (long long r = 0; r < reps; r++) run_rep(d_a, d_b, d_c, d_partial, d_dots + r, (int)n);
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));

  std::vector<double> a(n), b(n), c(n), dots(reps);
  CHECK(cudaMemcpy(a.data(), d_a, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(b.data(), d_b, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(c.data(), d_c, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(dots.data(), d_dots, reps * sizeof(double), cudaMemcpyDeviceToHost));

  // ---- CPU reference: same sequence of operations
  std::vector<double>& ra = a0;
  std::vector<double>& rb = b0;
  std::vector<double>& rc = c0;
  std::vector<double> rdots(reps);
  for (long long r = 0; r < reps; r++) {
    for (long long i = 0; i < n; i++) rc[i] = ra[i];
    for (long long i = 0; i < n; i++) rb[i] = SCALAR * rc[i];
    for (long long i = 0; i < n; i++) rc[i] = ra[i] + rb[i];
    for (long long i = 0; i < n; i++) ra[i] = rb[i] + SCALAR * rc[i];
    long double sum = 0.0L;
    for (long long i = 0; i < n; i++) sum += (long double)ra[i] * rb[i];
    rdots[r] = (double)sum;
  }

  std::string why;
  for (long long i = 0; i < n && why.empty(); i++) {
    char buf[200];
    if (!close_enough(a[i], ra[i], 1e-12) || !close_enough(b[i], rb[i], 1e-12) ||
        !close_enough(c[i], rc[i], 1e-12)) {
      snprintf(buf, sizeof(buf), "element %lld: gpu (%.17g, %.17g, %.17g) cpu (%.17g, %.17g, %.17g)",
               i, a[i], b[i], c[i], ra[i], rb[i], rc[i]);
      why = buf;
    }
  }
  for (long long r = 0; r < reps && why.empty(); r++) {
    if (!close_enough(dots[r], rdots[r], 1e-10)) {
      char buf[160];
      snprintf(buf, sizeof(buf), "dot of rep %lld: gpu %.17g cpu %.17g", r, dots[r], rdots[r]);
      why = buf;
    }
  }

  // ---- output: deterministic text digest (the arrays are too large to dump)
  FILE* f = fopen(out_path.c_str(), "w");
  if (!f) { fprintf(stderr, "cannot open %s\n", out_path.c_str()); return 1; }
  fprintf(f, "n %lld reps %lld\n", n, reps);
  for (long long r = 0; r < reps; r++) fprintf(f, "dot %lld %a\n", r, dots[r]);
  fprintf(f, "hash_a %016llx\n", (unsigned long long)hash_words(a));
  fprintf(f, "hash_b %016llx\n", (unsigned long long)hash_words(b));
  fprintf(f, "hash_c %016llx\n", (unsigned long long)hash_words(c));
  for (long long i = 0; i < n; i += (n + 15) / 16)
    fprintf(f, "sample %lld %a %a %a\n", i, a[i], b[i], c[i]);
  if (fclose(f) != 0) { fprintf(stderr, "error writing %s\n", out_path.c_str()); return 1; }

  double moved = (double)bytes * (2 + 2 + 3 + 3 + 2) * reps;  // bytes read+written per rep
  printf("effective bandwidth: %.1f GB/s, last dot = %.6e\n", moved / (ms * 1e6), dots[reps - 1]);
  printf("kernel_time_ms: %.4f\n", ms);

  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_c));
  CHECK(cudaFree(d_partial));
  CHECK(cudaFree(d_dots));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));

  if (!why.empty()) {
    printf("check: FAIL (%s)\n", why.c_str());
    return 1;
  }
  printf("check: PASS\n");
  return 0;
}
