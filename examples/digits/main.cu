// digits: the counting pass of a least-significant-digit radix sort.
//
// For every 4-bit digit position of 32-bit keys, each thread counts how often each of the 16
// digit values occurs among the keys it strides over, in a small per-thread array indexed by
// the digit (as radix sorts' upsweep does before its scan), and writes its 16 counts out,
// digit-major. A second kernel adds each digit's counts over all threads; the host turns the
// totals into the digit offsets a scatter pass would use.
//
// Usage: ./digits --n N --passes P --seed S --out PATH
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
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

#define RADIX_BITS 4
#define RADIX 16          // digit values per pass
#define BLOCKS 128        // counting blocks: every thread counts n / (BLOCKS * THREADS) keys
#define THREADS 256
#define TOTAL_THREADS 256

// Each thread counts the digits (bits shift .. shift + 3) of keys tid, tid + T, tid + 2T, ...
// and writes count[d] to counts[d * T + tid].
__global__ void digit_count_kernel(const unsigned int* keys, unsigned int* counts, int n, int shift) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  int threads = gridDim.x * blockDim.x;
  unsigned int cnt[RADIX];
  for (int d = 0; d < RADIX; d++) cnt[d] = 0;
  for (int i = tid; i < n; i += threads) {
    unsigned int digit = (keys[i] >> shift) & (RADIX - 1);
    cnt[digit]++;
  }
  for (int d = 0; d < RADIX; d++) counts[d * threads + tid] = cnt[d];
}

// One block per digit value: the sum of its counts over all counting threads.
__global__ void digit_total_kernel(const unsigned int* counts, unsigned int* totals, int threads) {
  __shared__ unsigned int partial[TOTAL_THREADS];
  int d = blockIdx.x;
  unsigned int s = 0;
  for (int t = threadIdx.x; t < threads; t += blockDim.x) s += counts[d * threads + t];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) totals[d] = partial[0];
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

static void gpu_pass(const unsigned int* d_keys, unsigned int* d_counts, unsigned int* d_totals, int n, int pass) {
  digit_count_kernel<<<BLOCKS, THREADS>>>(d_keys, d_counts, n, pass * RADIX_BITS);
  CHECK(cudaGetLastError());
  digit_total_kernel<<<RADIX, TOTAL_THREADS>>>(d_counts, d_totals, BLOCKS * THREADS);
  CHECK(cudaGetLastError());
}

int main(int argc, char** argv) {
  long long n = 16777216, passes = 8, seed = 42;
  std::string out_path;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) { fprintf(stderr, "missing value for %s\n", key.c_str()); return 1; }
    if (key == "--n") n = parse_int(argv[i + 1], "n");
    else if (key == "--passes") passes = parse_int(argv[i + 1], "passes");
    else if (key == "--seed") seed = parse_int(argv[i + 1], "seed");
    else if (key == "--out") out_path = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", key.c_str()); return 1; }
  }
  if (out_path.empty()) {
    fprintf(stderr, "usage: %s --n N --passes P --seed S --out PATH\n", argv[0]);
    return 1;
  }
  if (n < 1 || n > (1LL << 28) || passes < 1 || passes > 32 / RADIX_BITS) {
    fprintf(stderr, "bad sizes (need 1 <= n <= 2^28, 1 <= passes <= %d)\n", 32 / RADIX_BITS);
    return 1;
  }

  // ---- inputs: keys whose bits are skewed towards 0 (the AND of two random words), so that
  // digit counts differ as they do for real keys.
  std::vector<unsigned int> keys(n);
  uint64_t rng = (uint64_t)seed;
  for (long long i = 0; i < n; i++) {
    uint64_t r = splitmix64(rng);
    keys[i] = (unsigned int)r & (unsigned int)(r >> 32);
  }
  const int threads = BLOCKS * THREADS;
  printf("digits: %lld keys, %lld passes of %d bits, %d counting threads\n", n, passes, RADIX_BITS, threads);

  unsigned int *d_keys, *d_counts, *d_totals;
  size_t count_words = (size_t)RADIX * threads;
  CHECK(cudaMalloc(&d_keys, n * sizeof(unsigned int)));
  CHECK(cudaMalloc(&d_counts, passes * count_words * sizeof(unsigned int)));
  CHECK(cudaMalloc(&d_totals, passes * RADIX * sizeof(unsigned int)));
  CHECK(cudaMemcpy(d_keys, keys.data(), n * sizeof(unsigned int), cudaMemcpyHostToDevice));

  // ---- warm-up: one pass, overwritten by the timed passes
  gpu_pass(d_keys, d_counts, d_totals, (int)n, 0);
  CHECK(cudaDeviceSynchronize());

  // ---- timed region
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  for (int p = 0; p < passes; p++)
    gpu_pass(d_keys, d_counts + p * count_words, d_totals + p * RADIX, (int)n, p);
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));

  std::vector<unsigned int> counts(passes * count_words), totals(passes * RADIX);
  CHECK(cudaMemcpy(counts.data(), d_counts, counts.size() * sizeof(unsigned int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(totals.data(), d_totals, totals.size() * sizeof(unsigned int), cudaMemcpyDeviceToHost));

  // ---- CPU reference: the same threads' strides, exact integer counts
  std::string why;
  char buf[200];
  std::vector<unsigned int> ref(count_words);
  for (int p = 0; p < passes && why.empty(); p++) {
    std::fill(ref.begin(), ref.end(), 0u);
    for (long long i = 0; i < n; i++) ref[((keys[i] >> (p * RADIX_BITS)) & (RADIX - 1)) * threads + i % threads]++;
    for (size_t w = 0; w < count_words && why.empty(); w++)
      if (counts[p * count_words + w] != ref[w]) {
        snprintf(buf, sizeof(buf), "pass %d, digit %zu, thread %zu: gpu %u cpu %u", p, w / threads, w % threads,
                 counts[p * count_words + w], ref[w]);
        why = buf;
      }
    unsigned long long all = 0;
    for (int d = 0; d < RADIX && why.empty(); d++) {
      unsigned long long s = 0;
      for (int t = 0; t < threads; t++) s += ref[(size_t)d * threads + t];
      all += s;
      if (totals[p * RADIX + d] != s) {
        snprintf(buf, sizeof(buf), "pass %d, digit %d total: gpu %u cpu %llu", p, d, totals[p * RADIX + d], s);
        why = buf;
      }
    }
    if (why.empty() && all != (unsigned long long)n) why = "digit totals do not add up to n";
  }

  // ---- output: int32 n, passes, radix, threads; per pass the 16 totals and the digit offsets
  // (exclusive prefix sums of the totals, as a scatter pass uses them), then all counts.
  FILE* f = fopen(out_path.c_str(), "wb");
  if (!f) { fprintf(stderr, "cannot open %s\n", out_path.c_str()); return 1; }
  int32_t head[4] = {(int32_t)n, (int32_t)passes, RADIX, threads};
  bool ok = fwrite(head, sizeof(head), 1, f) == 1;
  for (int p = 0; p < passes && ok; p++) {
    unsigned int offsets[RADIX];
    unsigned int run = 0;
    for (int d = 0; d < RADIX; d++) {
      offsets[d] = run;
      run += totals[p * RADIX + d];
    }
    ok = fwrite(&totals[p * RADIX], sizeof(unsigned int), RADIX, f) == RADIX &&
         fwrite(offsets, sizeof(unsigned int), RADIX, f) == RADIX;
  }
  ok = ok && fwrite(counts.data(), sizeof(unsigned int), counts.size(), f) == counts.size();
  if (fclose(f) != 0 || !ok) { fprintf(stderr, "error writing %s\n", out_path.c_str()); return 1; }

  printf("last pass: digit 0 occurs %u times in %lld keys\n", totals[(passes - 1) * RADIX], n);
  printf("kernel_time_ms: %.4f\n", ms);

  CHECK(cudaFree(d_keys));
  CHECK(cudaFree(d_counts));
  CHECK(cudaFree(d_totals));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));

  if (!why.empty()) {
    printf("check: FAIL (%s)\n", why.c_str());
    return 1;
  }
  printf("check: PASS\n");
  return 0;
}
