// sobol: Gray-code Sobol quasi-random sequence generator + QMC integration.
// Host: finds primitive polynomials over GF(2) by brute force, picks the
// initial direction numbers m_1..m_s (odd, m_k < 2^k) from the seeded RNG and
// expands them with the Sobol recurrence to 32 direction numbers per
// dimension.  A random digital shift per dimension is also drawn.
// GPU:  sobol_kernel writes points[d][i] (uint32) using the Gray-code update
//       x_{i+1} = x_i ^ v[ffs(~i) - 1];
//       gfunction kernels estimate the integral over [0,1]^dims of Sobol's
//       g-function (exact value 1) with a deterministic two-pass reduction.
// Usage: ./sobol --points N --dims D --seed S --out PATH
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
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
#define BITS 32
#ifndef POINTS_PER_THREAD  // consecutive points per generator thread; tunable: -DPOINTS_PER_THREAD=...
#define POINTS_PER_THREAD 32
#endif
#ifndef GEN_TPB  // the generator's threads per block; tunable: -DGEN_TPB=...
#define GEN_TPB 256
#endif
#define TPB 256  // the reductions' block: its tree's shape fixes the sum's rounding
#define REDUCE_BLOCKS 512
#define MAX_DIMS 1024
// Each thread owns a run of consecutive points and loops over all dimensions.
__global__ void sobol_kernel(const unsigned int* dirs, const unsigned int* shifts,
                             unsigned int* points, int n_points, int dims) {
  int chunk = blockIdx.x * blockDim.x + threadIdx.x;
  int first = chunk * POINTS_PER_THREAD;
  if (first >= n_points) return;
  int last = min(first + POINTS_PER_THREAD, n_points);
  for (int d = 0; d < dims; d++) {
    // start value from the Gray code of the first index
    unsigned int gray = first ^ (first >> 1);
    unsigned int x = shifts[d];
    for (int b = 0; b < BITS; b++)
      if ((gray >> b) & 1u) x ^= dirs[d * BITS + b];
    // then one XOR per point: the bit that changes is the lowest zero bit of i
    for (int i = first; i < last; i++) {
      points[(size_t)d * n_points + i] = x;
      x ^= dirs[d * BITS + __ffs(~i) - 1];
    }
  }
}

// g(x) = prod_d (|4 x_d - 2| + a_d) / (1 + a_d), a_d = d / 2; integral = 1.
__global__ void gfunction_partial_kernel(const unsigned int* points, int n_points, int dims,
                                         double* partial) {
  __shared__ double cache[TPB];
  double sum = 0.0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n_points; i += blockDim.x * gridDim.x) {
    double f = 1.0;
    for (int d = 0; d < dims; d++) {
      double u = ((double)points[(size_t)d * n_points + i] + 0.5) * (1.0 / 4294967296.0);
      double a = 0.5 * d;
      f *= (fabs(4.0 * u - 2.0) + a) / (1.0 + a);
    }
    sum += f;
  }
  cache[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = cache[0];
}

__global__ void gfunction_final_kernel(const double* partial, int nparts, int n_points,
                                       double* estimate) {
  __shared__ double cache[TPB];
  double sum = 0.0;
  for (int i = threadIdx.x; i < nparts; i += blockDim.x) sum += partial[i];
  cache[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *estimate = cache[0] / n_points;
}

// ---------------------------------------------------------------- host helpers

static uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
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

// poly: bit i = coefficient of x^i, degree deg.  Primitive <=> the order of x
// modulo poly is exactly 2^deg - 1.
static bool is_primitive(uint32_t poly, int deg) {
  if (!(poly & 1u)) return false;
  uint32_t period = (1u << deg) - 1;
  uint32_t r = 1;
  for (uint32_t e = 1; e <= period; e++) {
    r <<= 1;
    if (r & (1u << deg)) r ^= poly;
    if (r == 1) return e == period;
  }
  return false;
}

// Builds BITS direction numbers for every dimension (dimension 0 = van der Corput).
static std::vector<uint32_t> make_direction_numbers(int dims, uint64_t& rng) {
  std::vector<uint32_t> polys;
  std::vector<int> degrees;
  for (int deg = 1; (int)polys.size() < dims - 1; deg++)
    for (uint32_t p = (1u << deg) | 1u; p < (2u << deg) && (int)polys.size() < dims - 1; p += 2)
      if (is_primitive(p, deg)) {
        polys.push_back(p);
        degrees.push_back(deg);
      }

  std::vector<uint32_t> v((size_t)dims * BITS);
  for (int b = 0; b < BITS; b++) v[b] = 1u << (BITS - 1 - b);
  for (int d = 1; d < dims; d++) {
    uint32_t p = polys[d - 1];
    int s = degrees[d - 1];
    uint64_t m[BITS + 1];
    for (int k = 1; k <= s && k <= BITS; k++)  // odd, below 2^k
      m[k] = 2 * (splitmix64(rng) % (1ull << (k - 1))) + 1;
    for (int k = s + 1; k <= BITS; k++) {
      m[k] = m[k - s] ^ (m[k - s] << s);
      for (int i = 1; i < s; i++)
        if ((p >> (s - i)) & 1u) m[k] ^= m[k - i] << i;
    }
    for (int k = 1; k <= BITS; k++) v[(size_t)d * BITS + k - 1] = (uint32_t)(m[k] << (BITS - k));
  }
  return v;
}

int main(int argc, char** argv) {
  long long n_points = 1048576, dims = 16, seed = 42;
  std::string out_path;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) { fprintf(stderr, "missing value for %s\n", key.c_str()); return 1; }
    if (key == "--points") n_points = parse_int(argv[i + 1], "points");
    else if (key == "--dims") dims = parse_int(argv[i + 1], "dims");
    else if (key == "--seed") seed = parse_int(argv[i + 1], "seed");
    else if (key == "--out") out_path = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", key.c_str()); return 1; }
  }
  if (out_path.empty()) {
    fprintf(stderr, "usage: %s --points N --dims D --seed S --out PATH\n", argv[0]);
    return 1;
  }
  if (n_points < 1 || n_points > (1LL << 30) || dims < 1 || dims > MAX_DIMS ||
      n_points * dims > (1LL << 29)) {
    fprintf(stderr, "bad sizes (need points <= 2^30, 1 <= dims <= %d, points*dims <= 2^29)\n", MAX_DIMS);
    return 1;
  }

  uint64_t rng = (uint64_t)seed;
  std::vector<uint32_t> dirs = make_direction_numbers((int)dims, rng);
  std::vector<uint32_t> shifts(dims);
  for (auto& s : shifts) s = (uint32_t)(splitmix64(rng) >> 32);
  size_t total = (size_t)n_points * dims;
  printf("sobol: %lld points x %lld dims (%.1f MiB)\n", n_points, dims, total * 4 / 1048576.0);

  unsigned int *d_dirs, *d_shifts, *d_points;
  double *d_partial, *d_estimate;
  CHECK(cudaMalloc(&d_dirs, dirs.size() * sizeof(unsigned int)));
  CHECK(cudaMalloc(&d_shifts, shifts.size() * sizeof(unsigned int)));
  CHECK(cudaMalloc(&d_points, total * sizeof(unsigned int)));
  CHECK(cudaMalloc(&d_partial, REDUCE_BLOCKS * sizeof(double)));
  CHECK(cudaMalloc(&d_estimate, sizeof(double)));
  CHECK(cudaMemcpy(d_dirs, dirs.data(), dirs.size() * sizeof(unsigned int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_shifts, shifts.data(), shifts.size() * sizeof(unsigned int), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_points, 0, total * sizeof(unsigned int)));

  long long chunks = (n_points + POINTS_PER_THREAD - 1) / POINTS_PER_THREAD;
  int gen_blocks = (int)((chunks + GEN_TPB - 1) / GEN_TPB);

  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  float ms = 0.0f;
  for (int pass = 0; pass < 2; pass++) {  // pass 0 = warm-up, pass 1 = timed
    CHECK(cudaEventRecord(start));
    sobol_kernel<<<gen_blocks, GEN_TPB>>>(d_dirs, d_shifts, d_points, (int)n_points, (int)dims);
    CHECK(cudaGetLastError());
    gfunction_partial_kernel<<<REDUCE_BLOCKS, TPB>>>(d_points, (int)n_points, (int)dims, d_partial);
    CHECK(cudaGetLastError());
    gfunction_final_kernel<<<1, TPB>>>(d_partial, REDUCE_BLOCKS, (int)n_points, d_estimate);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
  }
  CHECK(cudaEventElapsedTime(&ms, start, stop));

  std::vector<uint32_t> points(total);
  double estimate = 0.0;
  CHECK(cudaMemcpy(points.data(), d_points, total * sizeof(unsigned int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&estimate, d_estimate, sizeof(double), cudaMemcpyDeviceToHost));

  // ---- CPU reference: direct (non-recursive) definition x_i = shift ^ XOR_{b in gray(i)} v_b
  std::string why;
  char buf[200];
  double ref_sum = 0.0;
  std::vector<double> f(n_points, 1.0);
  for (long long d = 0; d < dims && why.empty(); d++) {
    const uint32_t* v = &dirs[(size_t)d * BITS];
    double a = 0.5 * d;
    for (long long i = 0; i < n_points; i++) {
      uint32_t g = (uint32_t)(i ^ (i >> 1));
      uint32_t x = shifts[d];
      for (int b = 0; g != 0; b++, g >>= 1)
        if (g & 1u) x ^= v[b];
      if (points[(size_t)d * n_points + i] != x && why.empty()) {
        snprintf(buf, sizeof(buf), "point %lld dim %lld: gpu %u cpu %u", i, d,
                 points[(size_t)d * n_points + i], x);
        why = buf;
      }
      double u = ((double)x + 0.5) * (1.0 / 4294967296.0);
      f[i] *= (fabs(4.0 * u - 2.0) + a) / (1.0 + a);
    }
  }
  for (long long i = 0; i < n_points; i++) ref_sum += f[i];
  double ref_estimate = ref_sum / n_points;
  if (why.empty() && !(fabs(estimate - ref_estimate) <= 1e-9 * fabs(ref_estimate))) {
    snprintf(buf, sizeof(buf), "integral: gpu %.17g cpu %.17g", estimate, ref_estimate);
    why = buf;
  }

  // ---- output: int32 points, dims; uint32 points[dims][points]; double estimate
  FILE* fo = fopen(out_path.c_str(), "wb");
  if (!fo) { fprintf(stderr, "cannot open %s\n", out_path.c_str()); return 1; }
  int32_t header[2] = {(int32_t)n_points, (int32_t)dims};
  bool ok = fwrite(header, sizeof(header), 1, fo) == 1;
  ok = ok && fwrite(points.data(), sizeof(uint32_t), total, fo) == total;
  ok = ok && fwrite(&estimate, sizeof(double), 1, fo) == 1;
  if (fclose(fo) != 0 || !ok) { fprintf(stderr, "error writing %s\n", out_path.c_str()); return 1; }

  printf("g-function integral estimate: %.12f (exact 1)\n", estimate);
  printf("kernel_time_ms: %.4f\n", ms);

  CHECK(cudaFree(d_dirs));
  CHECK(cudaFree(d_shifts));
  CHECK(cudaFree(d_points));
  CHECK(cudaFree(d_partial));
  CHECK(cudaFree(d_estimate));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));

  if (!why.empty()) {
    printf("check: FAIL (%s)\n", why.c_str());
    return 1;
  }
  printf("check: PASS\n");
  return 0;
}
