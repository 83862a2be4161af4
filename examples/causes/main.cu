// causes: six kernels whose stalls have a cause known by construction, the test set of
// `optimas analyze`'s root causes (docs/analysis.md, "What a stall waits on"). Each kernel
// plants one cause; the line a stall should name carries a tag "@name" in a comment, and
// README.md's table says which stalled line waits on which. One kernel runs per invocation.
// Usage: ./causes --kernel chain|later|pred|conflict|divergent|barrier --n N --steps S
//                 --reps R --seed X --out PATH
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                                         \
  do {                                                                                      \
    cudaError_t err_ = (call);                                                              \
    if (err_ != cudaSuccess) {                                                              \
      fprintf(stderr, "CUDA error at %s:%d: %s (%s)\n", __FILE__, __LINE__,                 \
              cudaGetErrorString(err_), #call);                                             \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

#define BLOCK 256

// A dependent load chain: each load's address is the previous load's value. The address of
// perm[k] waits on the load of next[j], and (across iterations) that of next[j] on perm[k].
__global__ void chain_kernel(const int* __restrict__ next, const int* __restrict__ perm, int* out, int n,
                             int steps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int j = i;
  for (int s = 0; s < steps; ++s) {
    int k = next[j];  // @chain_next
    j = perm[k];      // @chain_perm
  }
  out[i] = j;
}

// A load consumed lines later: the gather of x is issued first, arithmetic on the index
// follows, and the product at the end waits on the gather.
__global__ void later_kernel(const float* __restrict__ x, const int* __restrict__ idx, float* out, int n,
                             int steps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  for (int s = 0; s < steps; ++s) {
    float a = x[idx[(i + s * 4099) % n]];  // @later_load
    float h = __fmul_rn((float)(i + s), 0.5f);
    h = __fmaf_rn(h, h, 1.0f);
    h = __fmaf_rn(h, 0.25f, -3.0f);
    acc = __fmaf_rn(a, h, acc);  // @later_use
  }
  out[i] = acc;
}

// A predicate from a load: the branch's condition is a gathered flag.
__global__ void pred_kernel(const int* __restrict__ flags, const int* __restrict__ idx, float* out, int n,
                            int steps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = __fmaf_rn((float)i, 0.25f, 1.0f);
  for (int s = 0; s < steps; ++s) {
    int f = flags[idx[(i + s * 8191) % n]];  // @pred_load
    float w = __fmaf_rn(v, 0.5f, (float)s);
    if (f > 0) v = w;  // @pred_use
  }
  out[i] = v;
}

// A shared-memory bank conflict: thread t reads word t * 32 + c, so all 32 lanes of a warp hit
// the same bank (32-way); the sum waits on those reads.
__global__ void conflict_kernel(const float* __restrict__ in, float* out, int n, int steps) {
  __shared__ float tile[BLOCK * 32];
  int base = blockIdx.x * BLOCK * 32;
  for (int c = 0; c < 32; ++c) tile[c * BLOCK + threadIdx.x] = in[(base + c * BLOCK + threadIdx.x) % n];
  __syncthreads();
  float acc = 0.0f;
  for (int s = 0; s < steps; ++s) {
    for (int c = 0; c < 32; ++c) {
      float t = tile[threadIdx.x * 32 + ((c + s) & 31)];  // @conflict_load
      acc = __fmaf_rn(acc, 0.999f, t);                    // @conflict_use
    }
  }
  out[blockIdx.x * BLOCK + threadIdx.x] = acc;
}

// A divergent branch: 4 of a warp's 32 lanes run the loop, the other 28 wait for them.
__global__ void divergent_kernel(const float* __restrict__ in, float* out, int n, int steps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = in[i];
  if ((threadIdx.x & 31) < 4) {  // @div_branch
    for (int s = 0; s < steps; ++s) v = __fmaf_rn(v, 0.9999f, 0.5f);  // @div_work
  }
  out[i] = v;
}

// A barrier after unequal work: warp 0 of each block runs the loop while the other warps
// wait at __syncthreads.
__global__ void barrier_kernel(const float* __restrict__ in, float* out, int n, int steps) {
  __shared__ float buf[BLOCK];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? in[i] : 0.0f;
  if (threadIdx.x < 32) {
    for (int s = 0; s < steps; ++s) v = __fmaf_rn(v, 0.9999f, 0.5f);  // @bar_work
  }
  buf[threadIdx.x] = v;
  __syncthreads();  // @bar_wait
  if (i < n) out[i] = buf[BLOCK - 1 - threadIdx.x];
}

// ---------------------------------------------------------------- host side

static uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static float uniform(uint64_t& s) { return (float)(splitmix64(s) >> 40) * (1.0f / 16777216.0f); }

// A random permutation of 0..n-1 (Fisher-Yates).
static std::vector<int> permutation(int n, uint64_t& s) {
  std::vector<int> p(n);
  for (int i = 0; i < n; ++i) p[i] = i;
  for (int i = n - 1; i > 0; --i) std::swap(p[i], p[(int)(splitmix64(s) % (uint64_t)(i + 1))]);
  return p;
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

// The CPU's result of each kernel, in the same float operations and order.
static std::vector<float> reference(const std::string& k, int n, int steps, const std::vector<int>& a,
                                    const std::vector<int>& b, const std::vector<float>& x) {
  std::vector<float> r(n);
  for (int i = 0; i < n; ++i) {
    if (k == "chain") {
      int j = i;
      for (int s = 0; s < steps; ++s) j = b[a[j]];
      r[i] = (float)j;
    } else if (k == "later") {
      float acc = 0.0f;
      for (int s = 0; s < steps; ++s) {
        float v = x[b[(int)(((long long)i + (long long)s * 4099) % n)]];
        float h = (float)(i + s) * 0.5f; // one rounding, as __fmul_rn
        h = __builtin_fmaf(h, h, 1.0f);
        h = __builtin_fmaf(h, 0.25f, -3.0f);
        acc = __builtin_fmaf(v, h, acc);
      }
      r[i] = acc;
    } else if (k == "pred") {
      float v = __builtin_fmaf((float)i, 0.25f, 1.0f);
      for (int s = 0; s < steps; ++s) {
        int f = a[b[(int)(((long long)i + (long long)s * 8191) % n)]];
        float w = __builtin_fmaf(v, 0.5f, (float)s);
        if (f > 0) v = w;
      }
      r[i] = v;
    } else if (k == "divergent" || k == "barrier") {
      int t = i % BLOCK;
      float v = x[i];
      bool works = k == "divergent" ? (t & 31) < 4 : t < 32;
      if (works)
        for (int s = 0; s < steps; ++s) v = __builtin_fmaf(v, 0.9999f, 0.5f);
      r[i] = v;
    }
  }
  if (k == "barrier") {
    std::vector<float> swapped(n);
    for (int i = 0; i < n; ++i) swapped[i] = r[(i / BLOCK) * BLOCK + BLOCK - 1 - i % BLOCK];
    r = swapped;
  }
  if (k == "conflict") {
    for (int blk = 0; blk < n / BLOCK; ++blk)
      for (int t = 0; t < BLOCK; ++t) {
        float acc = 0.0f;
        for (int s = 0; s < steps; ++s)
          for (int c = 0; c < 32; ++c) {
            int w = t * 32 + ((c + s) & 31); // the word read: tile[w] = in[base + w]
            float v = x[(blk * BLOCK * 32 + w) % n];
            acc = __builtin_fmaf(acc, 0.999f, v);
          }
        r[blk * BLOCK + t] = acc;
      }
  }
  return r;
}

int main(int argc, char** argv) {
  std::string kernel, out_path;
  long long n = 1 << 20, steps = 64, reps = 3, seed = 1;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) {
      fprintf(stderr, "missing value for %s\n", key.c_str());
      return 1;
    }
    if (key == "--kernel") kernel = argv[i + 1];
    else if (key == "--n") n = parse_int(argv[i + 1], "n");
    else if (key == "--steps") steps = parse_int(argv[i + 1], "steps");
    else if (key == "--reps") reps = parse_int(argv[i + 1], "reps");
    else if (key == "--seed") seed = parse_int(argv[i + 1], "seed");
    else if (key == "--out") out_path = argv[i + 1];
    else {
      fprintf(stderr, "unknown option %s\n", key.c_str());
      return 1;
    }
  }
  // A kernel by name or by its number in this list (optimas.yml passes numbers, which `optimas
  // init` reads as parameters as it would write them).
  const char* kernels[] = {"chain", "later", "pred", "conflict", "divergent", "barrier"};
  if (kernel.size() == 1 && kernel[0] >= '1' && kernel[0] <= '6') kernel = kernels[kernel[0] - '1'];
  bool known = false;
  for (const char* k : kernels) known = known || kernel == k;
  if (!known || out_path.empty()) {
    fprintf(stderr, "usage: %s --kernel chain|later|pred|conflict|divergent|barrier (or 1-6) --n N --steps S "
                    "--reps R --seed X --out PATH\n", argv[0]);
    return 1;
  }
  if (n < BLOCK || n > (1 << 26) || n % BLOCK != 0 || steps < 1 || steps > 100000 || reps < 1) {
    fprintf(stderr, "bad sizes (need n a multiple of %d in [%d, 2^26], 1 <= steps <= 100000, reps >= 1)\n", BLOCK,
            BLOCK);
    return 1;
  }

  // Inputs: two permutations (chain: next and perm; later and pred: the gather index), flags
  // that are positive for about half the entries, and values in [0, 1).
  uint64_t rng = (uint64_t)seed;
  std::vector<int> a = permutation((int)n, rng), b = permutation((int)n, rng);
  std::vector<float> x(n);
  for (auto& v : x) v = uniform(rng);
  if (kernel == "pred")
    for (auto& f : a) f = (int)(splitmix64(rng) % 3) - 1;
  printf("causes: kernel=%s n=%lld steps=%lld reps=%lld\n", kernel.c_str(), n, steps, reps);

  int *d_a, *d_b, *d_iout;
  float *d_x, *d_out;
  CHECK(cudaMalloc(&d_a, n * sizeof(int)));
  CHECK(cudaMalloc(&d_b, n * sizeof(int)));
  CHECK(cudaMalloc(&d_iout, n * sizeof(int)));
  CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  CHECK(cudaMemcpy(d_a, a.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, b.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_out, 0xff, n * sizeof(float)));
  CHECK(cudaMemset(d_iout, 0xff, n * sizeof(int)));

  int grid = (int)(n / BLOCK);
  auto launch = [&]() {
    if (kernel == "chain") chain_kernel<<<grid, BLOCK>>>(d_a, d_b, d_iout, (int)n, (int)steps);
    else if (kernel == "later") later_kernel<<<grid, BLOCK>>>(d_x, d_b, d_out, (int)n, (int)steps);
    else if (kernel == "pred") pred_kernel<<<grid, BLOCK>>>(d_a, d_b, d_out, (int)n, (int)steps);
    else if (kernel == "conflict") conflict_kernel<<<grid, BLOCK>>>(d_x, d_out, (int)n, (int)steps);
    else if (kernel == "divergent") divergent_kernel<<<grid, BLOCK>>>(d_x, d_out, (int)n, (int)steps);
    else barrier_kernel<<<grid, BLOCK>>>(d_x, d_out, (int)n, (int)steps);
    CHECK(cudaGetLastError());
  };
  launch(); // warm-up
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  for (long long r = 0; r < reps; ++r) launch();
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));

  std::vector<float> got(n);
  if (kernel == "chain") {
    std::vector<int> j(n);
    CHECK(cudaMemcpy(j.data(), d_iout, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (long long i = 0; i < n; ++i) got[i] = (float)j[i];
  } else {
    CHECK(cudaMemcpy(got.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
  }
  std::vector<float> want = reference(kernel, (int)n, (int)steps, a, b, x);
  long long bad = 0, first = -1;
  for (long long i = 0; i < n; ++i)
    if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      if (first < 0) first = i;
      ++bad;
    }
  printf("kernel_time_ms: %.4f\n", ms / reps);
  FILE* f = fopen(out_path.c_str(), "wb");
  if (!f) {
    fprintf(stderr, "cannot write %s\n", out_path.c_str());
    return 1;
  }
  fwrite(got.data(), sizeof(float), n, f);
  fclose(f);
  if (bad) {
    printf("check: FAIL (%lld of %lld differ, the first at %lld: gpu %.9g, cpu %.9g)\n", bad, n, first,
           got[first], want[first]);
    return 1;
  }
  printf("check: PASS\n");
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_iout));
  CHECK(cudaFree(d_x));
  CHECK(cudaFree(d_out));
  return 0;
}
