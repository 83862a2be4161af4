// windows: moving-window statistics of an integer signal, one kernel template instance per
// window size.
// Each iteration computes, for every window size W in {8, 16, 32, 64, 128}, the sum and the
// sum of squares of the W samples starting at every position (wrapping around), then mixes
// all of them back into the signal. After the last iteration the variance of every window is
// reduced per block (largest and mean variance), in float for the small windows and in double
// for the large ones.
// Usage: ./windows --n N --iters I --seed S --out PATH
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <string>
#include <vector>

#include "windows.cuh"

#define CHECK(call)                                                           \
  do {                                                                        \
    cudaError_t err_ = (call);                                                \
    if (err_ != cudaSuccess) {                                                \
      fprintf(stderr, "CUDA error at %s:%d: %s (%s)\n", __FILE__, __LINE__,   \
              cudaGetErrorString(err_), #call);                               \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

#define NWIN 5
#define MODULUS 1009
#ifndef SUM_THREADS  // threads per block of the moving sums and the update; tunable: -DSUM_THREADS=...
#define SUM_THREADS 256
#endif
static const int k_windows[NWIN] = {8, 16, 32, 64, 128};

struct WindowSums {
  const int* sum[NWIN];
  const int* sq[NWIN];
};

// Mixes every window's sums back into the signal.
__global__ void update_kernel(int* signal, WindowSums w, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long v = 7LL * signal[i];
  for (int k = 0; k < NWIN; k++) v += w.sum[k][i] + 3LL * w.sq[k][i];
  signal[i] = (int)(v % MODULUS);
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

template <int W>
static void launch_sums(const int* d_in, int* d_sum, int* d_sq, int n) {
  int blocks = (n + SUM_THREADS - 1) / SUM_THREADS;
  moving_sum_kernel<W><<<blocks, SUM_THREADS>>>(d_in, d_sum, n, false);
  CHECK(cudaGetLastError());
  moving_sum_kernel<W><<<blocks, SUM_THREADS>>>(d_in, d_sq, n, true);
  CHECK(cudaGetLastError());
}

// One iteration: every window's sums of the signal, then the signal updated from them.
static void gpu_iteration(int* d_signal, int* const* d_sum, int* const* d_sq, int n) {
  launch_sums<8>(d_signal, d_sum[0], d_sq[0], n);
  launch_sums<16>(d_signal, d_sum[1], d_sq[1], n);
  launch_sums<32>(d_signal, d_sum[2], d_sq[2], n);
  launch_sums<64>(d_signal, d_sum[3], d_sq[3], n);
  launch_sums<128>(d_signal, d_sum[4], d_sq[4], n);
  WindowSums w;
  for (int k = 0; k < NWIN; k++) {
    w.sum[k] = d_sum[k];
    w.sq[k] = d_sq[k];
  }
  update_kernel<<<(n + SUM_THREADS - 1) / SUM_THREADS, SUM_THREADS>>>(d_signal, w, n);
  CHECK(cudaGetLastError());
}

static int variance_block(int k) { return k < 3 ? 128 : 256; }

// CPU reference of the circular window sums, through prefix sums.
static void cpu_sums(const std::vector<int>& x, int window, bool squared, std::vector<int>& out) {
  size_t n = x.size();
  std::vector<long long> prefix(n + window + 1, 0);
  for (size_t j = 0; j < n + window; j++) {
    long long v = x[j % n];
    prefix[j + 1] = prefix[j] + (squared ? v * v : v);
  }
  for (size_t i = 0; i < n; i++) out[i] = (int)(prefix[i + window] - prefix[i]);
}

template <typename T>
static std::string check_variance(const std::vector<int>& sum, const std::vector<int>& sq, int window, int block,
                                  const std::vector<T>& gmax, const std::vector<T>& gmean) {
  size_t n = sum.size();
  char buf[200];
  for (size_t b = 0; b < gmax.size(); b++) {
    T vmax = (T)-1;
    double vsum = 0.0;
    size_t end = std::min(n, (b + 1) * (size_t)block);
    for (size_t i = b * block; i < end; i++) {
      T mean = (T)sum[i] / window;
      T var = (T)sq[i] / window - mean * mean;
      vmax = var > vmax ? var : vmax;
      vsum += var;
    }
    double cmean = vsum / (double)(end - b * block);
    if (!(fabs((double)gmax[b] - (double)vmax) <= 1e-4 * fabs((double)vmax) + 1e-2) ||
        !(fabs((double)gmean[b] - cmean) <= 1e-4 * fabs(cmean) + 1e-2)) {
      snprintf(buf, sizeof(buf), "window %d block %zu: gpu max %.7g mean %.7g, cpu max %.7g mean %.7g", window, b,
               (double)gmax[b], (double)gmean[b], (double)vmax, cmean);
      return buf;
    }
  }
  return "";
}

int main(int argc, char** argv) {
  long long n = 1 << 22, iters = 4, seed = 42;
  std::string out_path;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) { fprintf(stderr, "missing value for %s\n", key.c_str()); return 1; }
    if (key == "--n") n = parse_int(argv[i + 1], "n");
    else if (key == "--iters") iters = parse_int(argv[i + 1], "iters");
    else if (key == "--seed") seed = parse_int(argv[i + 1], "seed");
    else if (key == "--out") out_path = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", key.c_str()); return 1; }
  }
  if (out_path.empty()) {
    fprintf(stderr, "usage: %s --n N --iters I --seed S --out PATH\n", argv[0]);
    return 1;
  }
  if (n < 128 || n > (1LL << 26) || iters < 1) {
    fprintf(stderr, "bad sizes (need 128 <= n <= 2^26, iters >= 1)\n");
    return 1;
  }

  // ---- input: a random signal in [0, MODULUS)
  std::vector<int> signal(n);
  uint64_t rng = (uint64_t)seed;
  for (long long i = 0; i < n; i++) signal[i] = (int)(splitmix64(rng) % MODULUS);
  printf("windows: %lld samples, %lld iterations, windows 8 16 32 64 128\n", n, iters);

  int *d_signal, *d_sum[NWIN], *d_sq[NWIN];
  CHECK(cudaMalloc(&d_signal, n * sizeof(int)));
  for (int k = 0; k < NWIN; k++) {
    CHECK(cudaMalloc(&d_sum[k], n * sizeof(int)));
    CHECK(cudaMalloc(&d_sq[k], n * sizeof(int)));
  }
  void* d_max[NWIN];
  void* d_mean[NWIN];
  size_t nblocks[NWIN];
  for (int k = 0; k < NWIN; k++) {
    size_t bytes = k < 3 ? sizeof(float) : sizeof(double);
    nblocks[k] = (n + variance_block(k) - 1) / variance_block(k);
    CHECK(cudaMalloc(&d_max[k], nblocks[k] * bytes));
    CHECK(cudaMalloc(&d_mean[k], nblocks[k] * bytes));
  }

  // ---- warm-up: one iteration, then restore the input
  CHECK(cudaMemcpy(d_signal, signal.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  gpu_iteration(d_signal, d_sum, d_sq, (int)n);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(d_signal, signal.data(), n * sizeof(int), cudaMemcpyHostToDevice));

  // ---- timed region: the iterations, then the variances of the last iteration's sums
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  for (long long it = 0; it < iters; it++) gpu_iteration(d_signal, d_sum, d_sq, (int)n);
  for (int k = 0; k < 3; k++) {
    window_variance_kernel<float, 128><<<nblocks[k], 128>>>(d_sum[k], d_sq[k], (float*)d_max[k],
                                                            (float*)d_mean[k], (int)n, k_windows[k]);
    CHECK(cudaGetLastError());
  }
  for (int k = 3; k < NWIN; k++) {
    window_variance_kernel<double, 256><<<nblocks[k], 256>>>(d_sum[k], d_sq[k], (double*)d_max[k],
                                                             (double*)d_mean[k], (int)n, k_windows[k]);
    CHECK(cudaGetLastError());
  }
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));

  std::vector<int> result(n);
  CHECK(cudaMemcpy(result.data(), d_signal, n * sizeof(int), cudaMemcpyDeviceToHost));
  std::vector<float> fmax[3], fmean[3];
  std::vector<double> dmax[2], dmean[2];
  for (int k = 0; k < NWIN; k++) {
    if (k < 3) {
      fmax[k].resize(nblocks[k]);
      fmean[k].resize(nblocks[k]);
      CHECK(cudaMemcpy(fmax[k].data(), d_max[k], nblocks[k] * sizeof(float), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(fmean[k].data(), d_mean[k], nblocks[k] * sizeof(float), cudaMemcpyDeviceToHost));
    } else {
      dmax[k - 3].resize(nblocks[k]);
      dmean[k - 3].resize(nblocks[k]);
      CHECK(cudaMemcpy(dmax[k - 3].data(), d_max[k], nblocks[k] * sizeof(double), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(dmean[k - 3].data(), d_mean[k], nblocks[k] * sizeof(double), cudaMemcpyDeviceToHost));
    }
  }

  // ---- CPU reference: the same iterations with exact integer sums
  std::vector<int> cur = signal;
  std::vector<std::vector<int>> sums(NWIN, std::vector<int>(n)), sqs(NWIN, std::vector<int>(n));
  for (long long it = 0; it < iters; it++) {
    for (int k = 0; k < NWIN; k++) {
      cpu_sums(cur, k_windows[k], false, sums[k]);
      cpu_sums(cur, k_windows[k], true, sqs[k]);
    }
    for (long long i = 0; i < n; i++) {
      long long v = 7LL * cur[i];
      for (int k = 0; k < NWIN; k++) v += sums[k][i] + 3LL * sqs[k][i];
      cur[i] = (int)(v % MODULUS);
    }
  }
  std::string why;
  char buf[200];
  for (long long i = 0; i < n && why.empty(); i++)
    if (result[i] != cur[i]) {
      snprintf(buf, sizeof(buf), "sample %lld: gpu %d cpu %d", i, result[i], cur[i]);
      why = buf;
    }
  for (int k = 0; k < NWIN && why.empty(); k++)
    why = k < 3 ? check_variance(sums[k], sqs[k], k_windows[k], variance_block(k), fmax[k], fmean[k])
                : check_variance(sums[k], sqs[k], k_windows[k], variance_block(k), dmax[k - 3], dmean[k - 3]);

  // ---- output: int32 n, iters, window count, the windows; the final signal (int32); then per
  // window the per-block largest and mean variances (float for 8..32, double for 64, 128)
  FILE* f = fopen(out_path.c_str(), "wb");
  if (!f) { fprintf(stderr, "cannot open %s\n", out_path.c_str()); return 1; }
  int32_t header[3 + NWIN] = {(int32_t)n, (int32_t)iters, NWIN};
  for (int k = 0; k < NWIN; k++) header[3 + k] = k_windows[k];
  bool ok = fwrite(header, sizeof(header), 1, f) == 1;
  ok = ok && fwrite(result.data(), sizeof(int), n, f) == (size_t)n;
  for (int k = 0; k < NWIN; k++) {
    if (k < 3) {
      ok = ok && fwrite(fmax[k].data(), sizeof(float), nblocks[k], f) == nblocks[k];
      ok = ok && fwrite(fmean[k].data(), sizeof(float), nblocks[k], f) == nblocks[k];
    } else {
      ok = ok && fwrite(dmax[k - 3].data(), sizeof(double), nblocks[k], f) == nblocks[k];
      ok = ok && fwrite(dmean[k - 3].data(), sizeof(double), nblocks[k], f) == nblocks[k];
    }
  }
  if (fclose(f) != 0 || !ok) { fprintf(stderr, "error writing %s\n", out_path.c_str()); return 1; }

  printf("final signal[0] = %d, window 128 block 0: max variance %.3f\n", result[0], dmax[1][0]);
  printf("kernel_time_ms: %.4f\n", ms);

  CHECK(cudaFree(d_signal));
  for (int k = 0; k < NWIN; k++) {
    CHECK(cudaFree(d_sum[k]));
    CHECK(cudaFree(d_sq[k]));
    CHECK(cudaFree(d_max[k]));
    CHECK(cudaFree(d_mean[k]));
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));

  if (!why.empty()) {
    printf("check: FAIL (%s)\n", why.c_str());
    return 1;
  }
  printf("check: PASS\n");
  return 0;
}
