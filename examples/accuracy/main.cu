// accuracy: top-k classification accuracy over a matrix of logits.
// For every row of a rows x classes matrix of float logits and its integer
// label, the row is a "hit" when the label's logit is among the k largest of
// the row (ties are broken by class index, lower index wins).  The kernels
// produce one hit flag per row and the total number of hits.
// Usage: ./accuracy --rows R --classes C --k K --reps N --seed S --out PATH
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

#ifndef BLOCK  // threads per block (a power of two: the tree reductions halve it); tunable: -DBLOCK=...
#define BLOCK 256
#endif

// One block per row: the threads count how many classes rank above the label,
// then reduce the counts in shared memory.
__global__ void topk_hits_kernel(const float* logits, const int* labels, unsigned char* hits,
                                 int rows, int classes, int k) {
  __shared__ int counts[BLOCK];
  int row = blockIdx.x;
  if (row >= rows) return;

  int label = labels[row];
  float target = logits[(size_t)row * classes + label];
  int above = 0;
  for (int c = threadIdx.x; c < classes; c += blockDim.x) {
    float v = logits[(size_t)row * classes + c];
    if (v > target || (v == target && c < label)) above++;
  }
  counts[threadIdx.x] = above;
  __syncthreads();

  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) counts[threadIdx.x] += counts[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) hits[row] = (counts[0] < k) ? 1 : 0;
}

// Sum the hit flags: block-level shared-memory reduction + one integer atomic per block.
__global__ void count_hits_kernel(const unsigned char* hits, int rows, int* count) {
  __shared__ int partial[BLOCK];
  int sum = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += blockDim.x * gridDim.x)
    sum += hits[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(count, partial[0]);
}

// ---------------------------------------------------------------- host helpers

static uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static float rand_uniform(uint64_t& state) {  // [0, 1)
  return (float)(splitmix64(state) >> 40) * (1.0f / 16777216.0f);
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
  long long rows = 65536, classes = 1024, k = 5, reps = 5, seed = 42;
  std::string out_path;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) { fprintf(stderr, "missing value for %s\n", key.c_str()); return 1; }
    if (key == "--rows") rows = parse_int(argv[i + 1], "rows");
    else if (key == "--classes") classes = parse_int(argv[i + 1], "classes");
    else if (key == "--k") k = parse_int(argv[i + 1], "k");
    else if (key == "--reps") reps = parse_int(argv[i + 1], "reps");
    else if (key == "--seed") seed = parse_int(argv[i + 1], "seed");
    else if (key == "--out") out_path = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", key.c_str()); return 1; }
  }
  if (out_path.empty()) {
    fprintf(stderr, "usage: %s --rows R --classes C --k K --reps N --seed S --out PATH\n", argv[0]);
    return 1;
  }
  if (rows < 1 || rows > 100000000LL || classes < 1 || classes > 1000000 || k < 1 ||
      k > classes || reps < 1 || rows * classes > 1000000000LL) {
    fprintf(stderr, "bad sizes (need 1 <= k <= classes, rows*classes <= 1e9)\n");
    return 1;
  }

  // ---- inputs: uniform logits in [-4, 4); most labels get a boost so that the
  //      hit rate is neither 0 nor 1.
  size_t n = (size_t)rows * classes;
  std::vector<float> logits(n);
  std::vector<int> labels(rows);
  uint64_t rng = (uint64_t)seed;
  for (size_t i = 0; i < n; i++) logits[i] = 8.0f * rand_uniform(rng) - 4.0f;
  for (long long r = 0; r < rows; r++) {
    labels[r] = (int)(splitmix64(rng) % (uint64_t)classes);
    if (rand_uniform(rng) < 0.7f) logits[(size_t)r * classes + labels[r]] += 6.0f * rand_uniform(rng);
  }
  printf("accuracy: rows=%lld classes=%lld k=%lld (%.1f MiB of logits), reps=%lld\n", rows,
         classes, k, n * sizeof(float) / 1048576.0, reps);

  float* d_logits;
  int *d_labels, *d_counts;
  unsigned char* d_hits;
  CHECK(cudaMalloc(&d_logits, n * sizeof(float)));
  CHECK(cudaMalloc(&d_labels, rows * sizeof(int)));
  CHECK(cudaMalloc(&d_hits, rows));
  CHECK(cudaMalloc(&d_counts, (reps + 1) * sizeof(int)));
  CHECK(cudaMemcpy(d_logits, logits.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_labels, labels.data(), rows * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_counts, 0, (reps + 1) * sizeof(int)));
  CHECK(cudaMemset(d_hits, 0xff, rows));

  int count_blocks = (int)((rows + BLOCK - 1) / BLOCK);
  if (count_blocks > 1024) count_blocks = 1024;

  // ---- warm-up (counts into the spare slot d_counts[reps])
  topk_hits_kernel<<<(int)rows, BLOCK>>>(d_logits, d_labels, d_hits, (int)rows, (int)classes, (int)k);
  CHECK(cudaGetLastError());
  count_hits_kernel<<<count_blocks, BLOCK>>>(d_hits, (int)rows, d_counts + reps);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  // ---- timed region
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  for (long long r = 0; r < reps; r++) {
    topk_hits_kernel<<<(int)rows, BLOCK>>>(d_logits, d_labels, d_hits, (int)rows, (int)classes, (int)k);
    CHECK(cudaGetLastError());
    count_hits_kernel<<<count_blocks, BLOCK>>>(d_hits, (int)rows, d_counts + r);
    CHECK(cudaGetLastError());
  }
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));

  std::vector<unsigned char> hits(rows);
  std::vector<int> counts(reps + 1);
  CHECK(cudaMemcpy(hits.data(), d_hits, rows, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(counts.data(), d_counts, (reps + 1) * sizeof(int), cudaMemcpyDeviceToHost));

  // ---- CPU reference
  std::vector<unsigned char> ref_hits(rows);
  int ref_count = 0;
  for (long long r = 0; r < rows; r++) {
    const float* row = &logits[(size_t)r * classes];
    int label = labels[r];
    float target = row[label];
    long long above = 0;
    for (long long c = 0; c < classes; c++)
      if (row[c] > target || (row[c] == target && c < label)) above++;
    ref_hits[r] = above < k ? 1 : 0;
    ref_count += ref_hits[r];
  }

  std::string why;
  char buf[200];
  for (long long r = 0; r <= reps && why.empty(); r++) {
    if (counts[r] != ref_count) {
      snprintf(buf, sizeof(buf), "count of launch %lld is %d, expected %d", r, counts[r], ref_count);
      why = buf;
    }
  }
  for (long long r = 0; r < rows && why.empty(); r++) {
    if (hits[r] != ref_hits[r]) {
      snprintf(buf, sizeof(buf), "row %lld: gpu flag %d, cpu flag %d", r, hits[r], ref_hits[r]);
      why = buf;
    }
  }

  // ---- output: int32 rows, classes, k, count; then one byte per row
  FILE* f = fopen(out_path.c_str(), "wb");
  if (!f) { fprintf(stderr, "cannot open %s\n", out_path.c_str()); return 1; }
  int32_t header[4] = {(int32_t)rows, (int32_t)classes, (int32_t)k, (int32_t)counts[reps - 1]};
  bool ok = fwrite(header, sizeof(header), 1, f) == 1;
  ok = ok && fwrite(hits.data(), 1, rows, f) == (size_t)rows;
  if (fclose(f) != 0 || !ok) { fprintf(stderr, "error writing %s\n", out_path.c_str()); return 1; }

  printf("top-%lld accuracy: %d / %lld = %.4f\n", k, counts[reps - 1], rows,
         (double)counts[reps - 1] / rows);
  printf("kernel_time_ms: %.4f\n", ms);

  CHECK(cudaFree(d_logits));
  CHECK(cudaFree(d_labels));
  CHECK(cudaFree(d_hits));
  CHECK(cudaFree(d_counts));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));

  if (!why.empty()) {
    printf("check: FAIL (%s)\n", why.c_str());
    return 1;
  }
  printf("check: PASS\n");
  return 0;
}
