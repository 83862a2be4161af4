// steps: an explicit time-stepping code that takes its state back to the host after every step
// for in-situ analysis (an energy-like sum and a clamp the host applies), as simulations with
// host-side diagnostics or coupling do, and sends the forcing of the next step down.
//
// A first draft: the host buffers are plain malloc, pageable memory, so every copy is staged by
// the driver at a fraction of the bus's speed while the host waits. The kernel itself is cheap;
// the time goes to the copies (the timeline's AP items say so).
//
// Usage: ./steps --n N --steps S --seed SEED --out PATH
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define CHECK(call)                                                           \
  do {                                                                        \
    cudaError_t err_ = (call);                                                \
    if (err_ != cudaSuccess) {                                                \
      fprintf(stderr, "CUDA error at %s:%d: %s (%s)\n", __FILE__, __LINE__,   \
              cudaGetErrorString(err_), #call);                               \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

#define THREADS 256

// u <- u + 0.25 * (forcing - u) + 0.01 * (u[i-1] + u[i+1] - 2 u[i]) on a ring of n cells.
__global__ void advance(const float* u, const float* forcing, float* next, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float left = u[i == 0 ? n - 1 : i - 1], right = u[i == n - 1 ? 0 : i + 1], c = u[i];
  next[i] = c + 0.25f * (forcing[i] - c) + 0.01f * (left + right - 2.0f * c);
}

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

int main(int argc, char** argv) {
  long long n = 1LL << 23, steps = 100, seed = 1;
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
  if (out_path.empty() || n < 3 || n > 500000000LL || steps < 1) {
    fprintf(stderr, "usage: %s --n N (3..5e8) --steps S (>= 1) --seed SEED --out PATH\n", argv[0]);
    return 1;
  }
  const size_t bytes = n * sizeof(float);

  float* state = (float*)malloc(bytes);
  float* forcing = (float*)malloc(bytes);
  if (!state || !forcing) { fprintf(stderr, "out of host memory\n"); return 1; }
  uint64_t rng = (uint64_t)seed;
  for (long long i = 0; i < n; i++) {
    state[i] = (float)(splitmix64(rng) >> 40) * (1.0f / 16777216.0f);
    forcing[i] = 0.0f;
  }

  float *d_u, *d_next, *d_forcing;
  CHECK(cudaMalloc(&d_u, bytes));
  CHECK(cudaMalloc(&d_next, bytes));
  CHECK(cudaMalloc(&d_forcing, bytes));
  CHECK(cudaMemcpy(d_u, state, bytes, cudaMemcpyHostToDevice));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));

  FILE* out = fopen(out_path.c_str(), "wb");
  if (!out) { fprintf(stderr, "cannot write %s\n", out_path.c_str()); return 1; }
  float kernel_ms = 0.0f;
  for (long long s = 0; s < steps; s++) {
    CHECK(cudaMemcpy(d_forcing, forcing, bytes, cudaMemcpyHostToDevice));
    CHECK(cudaEventRecord(start));
    advance<<<(unsigned)((n + THREADS - 1) / THREADS), THREADS>>>(d_u, d_forcing, d_next, (int)n);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(stop));
    CHECK(cudaMemcpy(state, d_next, bytes, cudaMemcpyDeviceToHost));
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    kernel_ms += ms;
    // In-situ analysis on the host: the sum of squares (in a fixed order, in double) and the
    // next step's forcing, a clamp of the state that pulls cells above 0.75 back.
    double energy = 0.0;
    for (long long i = 0; i < n; i++) {
      energy += (double)state[i] * state[i];
      forcing[i] = state[i] > 0.75f ? 0.5f : state[i];
    }
    fwrite(&energy, sizeof energy, 1, out);
    float* t = d_u;
    d_u = d_next;
    d_next = t;
  }
  fwrite(state, sizeof(float), n < 4096 ? n : 4096, out);
  fclose(out);
  printf("steps: n=%lld (%.1f MiB), steps=%lld, last state[0]=%.6f\n", n, bytes / 1048576.0, steps, state[0]);
  printf("kernel_time_ms: %.4f\n", kernel_ms);

  CHECK(cudaFree(d_u));
  CHECK(cudaFree(d_next));
  CHECK(cudaFree(d_forcing));
  free(state);
  free(forcing);
  return 0;
}
