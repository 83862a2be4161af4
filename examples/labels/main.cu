// labels: per-class tallies of a clustering step's assignments.
//
// After a k-means assignment step every point carries the label of its nearest centre (0 .. K-1,
// K = 12 here). Each thread tallies the labels of the points it strides over in a small
// per-thread array indexed by the label (`tally[label[i]]++`) and adds the points' weights per
// class beside it; a second kernel sums each class over all threads. The labels come from the
// host, which keeps them in range: nothing in the kernel's source bounds them.
//
// Usage: ./labels --n N --rounds R --seed S --out PATH
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

#define CLASSES 12        // label values 0 .. CLASSES - 1
#define BLOCKS 96
#define THREADS 256
#define SUM_THREADS 256

// Thread tid tallies labels tid, tid + T, tid + 2T, ...: how many points of each class, and
// their weights (integer weights, so every sum is exact). Writes class-major: out[c * T + tid].
__global__ void tally_kernel(const int* label, const unsigned int* weight, unsigned int* count,
                             unsigned long long* mass, int n) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  int threads = gridDim.x * blockDim.x;
  unsigned int tally[CLASSES];
  unsigned long long heavy[CLASSES];
  for (int c = 0; c < CLASSES; c++) {
    tally[c] = 0;
    heavy[c] = 0;
  }
  for (int i = tid; i < n; i += threads) {
    int c = label[i];
    tally[c]++;
    heavy[c] += weight[i];
  }
  for (int c = 0; c < CLASSES; c++) {
    count[c * threads + tid] = tally[c];
    mass[c * threads + tid] = heavy[c];
  }
}

// One block per class: its count and mass summed over all tallying threads.
__global__ void class_sum_kernel(const unsigned int* count, const unsigned long long* mass, unsigned int* total,
                                 unsigned long long* total_mass, int threads) {
  __shared__ unsigned int c_part[SUM_THREADS];
  __shared__ unsigned long long m_part[SUM_THREADS];
  int c = blockIdx.x;
  unsigned int s = 0;
  unsigned long long m = 0;
  for (int t = threadIdx.x; t < threads; t += blockDim.x) {
    s += count[c * threads + t];
    m += mass[c * threads + t];
  }
  c_part[threadIdx.x] = s;
  m_part[threadIdx.x] = m;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      c_part[threadIdx.x] += c_part[threadIdx.x + half];
      m_part[threadIdx.x] += m_part[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    total[c] = c_part[0];
    total_mass[c] = m_part[0];
  }
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

int main(int argc, char** argv) {
  long long n = 16777216, rounds = 8, seed = 42;
  std::string out_path;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) { fprintf(stderr, "missing value for %s\n", key.c_str()); return 1; }
    if (key == "--n") n = parse_int(argv[i + 1], "n");
    else if (key == "--rounds") rounds = parse_int(argv[i + 1], "rounds");
    else if (key == "--seed") seed = parse_int(argv[i + 1], "seed");
    else if (key == "--out") out_path = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", key.c_str()); return 1; }
  }
  if (out_path.empty()) {
    fprintf(stderr, "usage: %s --n N --rounds R --seed S --out PATH\n", argv[0]);
    return 1;
  }
  if (n < 1 || n > (1LL << 28) || rounds < 1 || rounds > 64) {
    fprintf(stderr, "bad sizes (need 1 <= n <= 2^28, 1 <= rounds <= 64)\n");
    return 1;
  }

  // ---- inputs: labels skewed towards low classes (the smaller of two draws), weights 1 .. 1000.
  std::vector<int> label(n);
  std::vector<unsigned int> weight(n);
  uint64_t rng = (uint64_t)seed;
  for (long long i = 0; i < n; i++) {
    uint64_t r = splitmix64(rng);
    unsigned a = (unsigned)(r % CLASSES), b = (unsigned)((r >> 20) % CLASSES);
    label[i] = (int)(a < b ? a : b);
    weight[i] = 1 + (unsigned)((r >> 40) % 1000);
  }
  const int threads = BLOCKS * THREADS;
  printf("labels: %lld points, %d classes, %lld rounds, %d tallying threads\n", n, CLASSES, rounds, threads);

  int* d_label;
  unsigned int *d_weight, *d_count, *d_total;
  unsigned long long *d_mass, *d_total_mass;
  size_t cells = (size_t)CLASSES * threads;
  CHECK(cudaMalloc(&d_label, n * sizeof(int)));
  CHECK(cudaMalloc(&d_weight, n * sizeof(unsigned int)));
  CHECK(cudaMalloc(&d_count, cells * sizeof(unsigned int)));
  CHECK(cudaMalloc(&d_mass, cells * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&d_total, CLASSES * sizeof(unsigned int)));
  CHECK(cudaMalloc(&d_total_mass, CLASSES * sizeof(unsigned long long)));
  CHECK(cudaMemcpy(d_label, label.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_weight, weight.data(), n * sizeof(unsigned int), cudaMemcpyHostToDevice));

  auto round = [&] {
    tally_kernel<<<BLOCKS, THREADS>>>(d_label, d_weight, d_count, d_mass, (int)n);
    CHECK(cudaGetLastError());
    class_sum_kernel<<<CLASSES, SUM_THREADS>>>(d_count, d_mass, d_total, d_total_mass, threads);
    CHECK(cudaGetLastError());
  };

  // ---- warm-up, then the timed rounds (each recomputes the same tallies, as an iterative
  // method's repeated assignment steps would on unchanged labels)
  round();
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  for (int r = 0; r < rounds; r++) round();
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));

  std::vector<unsigned int> count(cells), total(CLASSES);
  std::vector<unsigned long long> mass(cells), total_mass(CLASSES);
  CHECK(cudaMemcpy(count.data(), d_count, cells * sizeof(unsigned int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(mass.data(), d_mass, cells * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(total.data(), d_total, CLASSES * sizeof(unsigned int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(total_mass.data(), d_total_mass, CLASSES * sizeof(unsigned long long), cudaMemcpyDeviceToHost));

  // ---- CPU reference: the same threads' strides, exact integer sums
  std::string why;
  char buf[200];
  std::vector<unsigned int> ref_count(cells, 0);
  std::vector<unsigned long long> ref_mass(cells, 0);
  for (long long i = 0; i < n; i++) {
    size_t cell = (size_t)label[i] * threads + i % threads;
    ref_count[cell]++;
    ref_mass[cell] += weight[i];
  }
  for (size_t w = 0; w < cells && why.empty(); w++)
    if (count[w] != ref_count[w] || mass[w] != ref_mass[w]) {
      snprintf(buf, sizeof(buf), "class %zu, thread %zu: gpu %u/%llu cpu %u/%llu", w / threads, w % threads, count[w],
               mass[w], ref_count[w], ref_mass[w]);
      why = buf;
    }
  unsigned long long points = 0;
  for (int c = 0; c < CLASSES; c++) points += total[c];
  if (why.empty() && points != (unsigned long long)n) why = "class totals do not add up to n";

  // ---- output: int32 n, classes, threads; the class totals (uint32) and masses (uint64); then
  // every thread's counts (uint32) and masses (uint64), class-major.
  FILE* f = fopen(out_path.c_str(), "wb");
  if (!f) { fprintf(stderr, "cannot open %s\n", out_path.c_str()); return 1; }
  int32_t head[3] = {(int32_t)n, CLASSES, threads};
  bool ok = fwrite(head, sizeof(head), 1, f) == 1 &&
            fwrite(total.data(), sizeof(unsigned int), CLASSES, f) == CLASSES &&
            fwrite(total_mass.data(), sizeof(unsigned long long), CLASSES, f) == CLASSES &&
            fwrite(count.data(), sizeof(unsigned int), cells, f) == cells &&
            fwrite(mass.data(), sizeof(unsigned long long), cells, f) == cells;
  if (fclose(f) != 0 || !ok) { fprintf(stderr, "error writing %s\n", out_path.c_str()); return 1; }

  printf("class 0 holds %u of %lld points\n", total[0], n);
  printf("kernel_time_ms: %.4f\n", ms);

  CHECK(cudaFree(d_label));
  CHECK(cudaFree(d_weight));
  CHECK(cudaFree(d_count));
  CHECK(cudaFree(d_mass));
  CHECK(cudaFree(d_total));
  CHECK(cudaFree(d_total_mass));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));

  if (!why.empty()) {
    printf("check: FAIL (%s)\n", why.c_str());
    return 1;
  }
  printf("check: PASS\n");
  return 0;
}
