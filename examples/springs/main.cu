// springs: n independent damped springs, advanced by one kernel launch per time step.
// Per step (semi-implicit Euler):  v = v + dt * (-k x - c v)
//                                  x = x + dt * v
// The default configuration makes 1,200 timed launches (plus one warm-up) over three arrays of
// 64 Mi doubles (1.5 GiB): a program whose every launch Nsight Compute must replay over large
// buffers, the case a profile's time budget has to cut (docs/profiling-cost.md).
// Usage: ./springs --n N --steps S --seed SEED --out PATH
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

#ifndef TPB  // threads per block (tunable: -DTPB=...); one element per thread, so never the result
#define TPB 256
#endif

const double DT = 0.01;       // time step: dt * sqrt(k) < 2 keeps every spring stable
const double DAMPING = 0.05;  // c
const int SAMPLES = 4096;     // elements the CPU reference recomputes

// ---------------------------------------------------------------- kernel

__global__ void step_kernel(double* x, double* v, const double* k, double c, double dt, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    double vi = v[i] + dt * (-k[i] * x[i] - c * v[i]);
    v[i] = vi;
    x[i] = x[i] + dt * vi;
  }
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

static void step(double* d_x, double* d_v, const double* d_k, int n) {
  step_kernel<<<(n + TPB - 1) / TPB, TPB>>>(d_x, d_v, d_k, DAMPING, DT, n);
  CHECK(cudaGetLastError());
}

// The GPU may fuse a product into a multiply-add where the CPU rounds twice: after S steps the
// two differ by about S ulps of the spring's amplitude (about 1).
static bool close_enough(double got, double ref) {
  return fabs(got - ref) <= 1e-9 * (1.0 + fabs(ref));
}

int main(int argc, char** argv) {
  long long n = 67108864, steps = 1200, seed = 42;
  std::string out_path;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) { fprintf(stderr, "missing value for %s\n", key.c_str()); return 1; }
    if (key == "--n") n = parse_int(argv[i + 1], "n");
    else if (key == "--steps") steps = parse_int(argv[i + 1], "steps");
    else if (key == "--seed") seed = parse_int(argv[i + 1], "seed");
    else if (key == "--out") out_path = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", key.c_str()); return 1; }
  }
  if (out_path.empty()) {
    fprintf(stderr, "usage: %s --n N --steps S --seed SEED --out PATH\n", argv[0]);
    return 1;
  }
  if (n < 1 || n > 1000000000LL || steps < 1 || steps > 1000000LL) { fprintf(stderr, "bad --n or --steps\n"); return 1; }

  // ---- inputs: displacement in [-1, 1), velocity 0, stiffness in [1, 4)
  std::vector<double> x0(n), v0(n, 0.0), k(n);
  uint64_t rng = (uint64_t)seed;
  for (long long i = 0; i < n; i++) {
    x0[i] = 2.0 * rand_uniform(rng) - 1.0;
    k[i] = 1.0 + 3.0 * rand_uniform(rng);
  }
  size_t bytes = (size_t)n * sizeof(double);
  printf("springs: n=%lld (%.1f MiB in three arrays), steps=%lld\n", n, 3 * bytes / 1048576.0, steps);

  double *d_x, *d_v, *d_k;
  CHECK(cudaMalloc(&d_x, bytes));
  CHECK(cudaMalloc(&d_v, bytes));
  CHECK(cudaMalloc(&d_k, bytes));
  CHECK(cudaMemcpy(d_k, k.data(), bytes, cudaMemcpyHostToDevice));

  // ---- warm-up (one step), then reset the state
  CHECK(cudaMemcpy(d_x, x0.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_v, v0.data(), bytes, cudaMemcpyHostToDevice));
  step(d_x, d_v, d_k, (int)n);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(d_x, x0.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_v, v0.data(), bytes, cudaMemcpyHostToDevice));

  // ---- timed region: one launch per step
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  for (long long s = 0; s < steps; s++) step(d_x, d_v, d_k, (int)n);
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));

  std::vector<double> x(n), v(n);
  CHECK(cudaMemcpy(x.data(), d_x, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(v.data(), d_v, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d_x));
  CHECK(cudaFree(d_v));
  CHECK(cudaFree(d_k));
  printf("kernel_time_ms: %.4f\n", ms);

  // ---- check: the CPU advances evenly spaced springs by the same steps
  int samples = n < SAMPLES ? (int)n : SAMPLES;
  int bad = 0;
  long long first_bad = -1;
  double first_ref = 0.0;
  for (int s = 0; s < samples; s++) {
    long long i = samples == 1 ? 0 : (long long)s * (n - 1) / (samples - 1);
    double xi = x0[i], vi = v0[i];
    for (long long t = 0; t < steps; t++) {
      vi = vi + DT * (-k[i] * xi - DAMPING * vi);
      xi = xi + DT * vi;
    }
    if (!close_enough(x[i], xi) || !close_enough(v[i], vi)) {
      if (bad++ == 0) first_bad = i, first_ref = xi;
    }
  }
  if (bad == 0) {
    printf("check: PASS\n");
  } else {
    printf("check: FAIL (%d of %d sampled springs differ, first at %lld: x %.17g vs %.17g)\n", bad, samples,
           first_bad, x[first_bad], first_ref);
  }

  // ---- output: deterministic for the same arguments
  FILE* f = fopen(out_path.c_str(), "w");
  if (!f) { fprintf(stderr, "cannot write %s\n", out_path.c_str()); return 1; }
  fprintf(f, "n %lld steps %lld\n", n, steps);
  fprintf(f, "hash x %016llx\nhash v %016llx\n", (unsigned long long)hash_words(x), (unsigned long long)hash_words(v));
  for (int s = 0; s < 16; s++) {
    long long i = (long long)s * (n - 1) / 15;
    fprintf(f, "x[%lld] %a v[%lld] %a\n", i, x[i], i, v[i]);
  }
  fclose(f);
  return bad == 0 ? 0 : 1;
}
