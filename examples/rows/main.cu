// rows: per-row features of a dense row-major matrix (mean, standard deviation, peak and the
// peak's column), as a feature-extraction step before clustering would compute them.
//
// A first draft: each thread owns one row and walks it from left to right, so the 32 threads
// of a warp read 32 different rows at every step.
//
// Usage: ./rows --rows R --cols C --reps N --seed S --out PATH
#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

#define BLOCK 256

// One thread per row: a single pass of sum, sum of squares and running maximum.
__global__ void row_features(const float* x, float* mean, float* stdev, float* peak, int* peak_col,
                             int rows, int cols) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;

  float sum = 0.0f, sq = 0.0f, top = -INFINITY;
  int top_col = 0;
  for (int j = 0; j < cols; j++) {
    float v = x[(size_t)row * cols + j];
    sum += v;
    sq += v * v;
    if (v > top) {
      top = v;
      top_col = j;
    }
  }
  float m = sum / cols;
  mean[row] = m;
  stdev[row] = sqrtf(fmaxf(sq / cols - m * m, 0.0f));
  peak[row] = top;
  peak_col[row] = top_col;
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
  long long rows = 131072, cols = 500, reps = 5, seed = 42;
  std::string out_path;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) { fprintf(stderr, "missing value for %s\n", key.c_str()); return 1; }
    if (key == "--rows") rows = parse_int(argv[i + 1], "rows");
    else if (key == "--cols") cols = parse_int(argv[i + 1], "cols");
    else if (key == "--reps") reps = parse_int(argv[i + 1], "reps");
    else if (key == "--seed") seed = parse_int(argv[i + 1], "seed");
    else if (key == "--out") out_path = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", key.c_str()); return 1; }
  }
  if (out_path.empty()) {
    fprintf(stderr, "usage: %s --rows R --cols C --reps N --seed S --out PATH\n", argv[0]);
    return 1;
  }
  if (rows < 1 || rows > 100000000LL || cols < 1 || cols > 1000000 || reps < 1 ||
      rows * cols > 1000000000LL) {
    fprintf(stderr, "bad sizes (need rows, cols, reps >= 1 and rows*cols <= 1e9)\n");
    return 1;
  }

  // ---- inputs: each row has its own offset and scale, so the features differ per row.
  size_t n = (size_t)rows * cols;
  std::vector<float> x(n);
  uint64_t rng = (uint64_t)seed;
  for (long long r = 0; r < rows; r++) {
    float offset = 4.0f * rand_uniform(rng) - 2.0f, scale = 0.5f + 2.0f * rand_uniform(rng);
    for (long long c = 0; c < cols; c++) x[(size_t)r * cols + c] = offset + scale * (2.0f * rand_uniform(rng) - 1.0f);
  }
  printf("rows: rows=%lld cols=%lld (%.1f MiB), reps=%lld\n", rows, cols, n * sizeof(float) / 1048576.0, reps);

  float *d_x, *d_mean, *d_stdev, *d_peak;
  int* d_col;
  CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  CHECK(cudaMalloc(&d_mean, rows * sizeof(float)));
  CHECK(cudaMalloc(&d_stdev, rows * sizeof(float)));
  CHECK(cudaMalloc(&d_peak, rows * sizeof(float)));
  CHECK(cudaMalloc(&d_col, rows * sizeof(int)));
  CHECK(cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  int blocks = (int)((rows + BLOCK - 1) / BLOCK);
  // ---- warm-up, then the timed repetitions (each recomputes every feature)
  row_features<<<blocks, BLOCK>>>(d_x, d_mean, d_stdev, d_peak, d_col, (int)rows, (int)cols);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  for (long long r = 0; r < reps; r++) {
    row_features<<<blocks, BLOCK>>>(d_x, d_mean, d_stdev, d_peak, d_col, (int)rows, (int)cols);
    CHECK(cudaGetLastError());
  }
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));

  std::vector<float> mean(rows), stdev(rows), peak(rows);
  std::vector<int> col(rows);
  CHECK(cudaMemcpy(mean.data(), d_mean, rows * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(stdev.data(), d_stdev, rows * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(peak.data(), d_peak, rows * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(col.data(), d_col, rows * sizeof(int), cudaMemcpyDeviceToHost));

  // ---- CPU reference: the same single pass per row. Sums of plain additions and the peak
  //      are exact matches; the standard deviation may differ in its last bits (the GPU
  //      fuses sq += v * v into one multiply-add), so it is compared with a tolerance.
  std::string why;
  char buf[240];
  for (long long r = 0; r < rows && why.empty(); r++) {
    const float* row = &x[(size_t)r * cols];
    float sum = 0.0f, sq = 0.0f, top = -INFINITY;
    int top_col = 0;
    for (long long c = 0; c < cols; c++) {
      sum += row[c];
      sq += row[c] * row[c];
      if (row[c] > top) { top = row[c]; top_col = (int)c; }
    }
    float m = sum / cols;
    float sd = sqrtf(fmaxf(sq / cols - m * m, 0.0f));
    if (mean[r] != m || peak[r] != top || col[r] != top_col) {
      snprintf(buf, sizeof(buf), "row %lld: gpu mean %.9g peak %.9g at %d, cpu %.9g, %.9g at %d", r, mean[r],
               peak[r], col[r], m, top, top_col);
      why = buf;
    } else if (fabsf(stdev[r] - sd) > 1e-3f * (sd + 1.0f)) {
      snprintf(buf, sizeof(buf), "row %lld: gpu stdev %.9g, cpu %.9g", r, stdev[r], sd);
      why = buf;
    }
  }

  // ---- output: int32 rows, cols; then mean, stdev, peak (float32) and peak column (int32) per row
  FILE* f = fopen(out_path.c_str(), "wb");
  if (!f) { fprintf(stderr, "cannot open %s\n", out_path.c_str()); return 1; }
  int32_t header[2] = {(int32_t)rows, (int32_t)cols};
  bool ok = fwrite(header, sizeof(header), 1, f) == 1;
  ok = ok && fwrite(mean.data(), sizeof(float), rows, f) == (size_t)rows;
  ok = ok && fwrite(stdev.data(), sizeof(float), rows, f) == (size_t)rows;
  ok = ok && fwrite(peak.data(), sizeof(float), rows, f) == (size_t)rows;
  ok = ok && fwrite(col.data(), sizeof(int), rows, f) == (size_t)rows;
  if (fclose(f) != 0 || !ok) { fprintf(stderr, "error writing %s\n", out_path.c_str()); return 1; }

  printf("row 0: mean %.6f stdev %.6f peak %.6f at column %d\n", mean[0], stdev[0], peak[0], col[0]);
  printf("kernel_time_ms: %.4f\n", ms);

  CHECK(cudaFree(d_x));
  CHECK(cudaFree(d_mean));
  CHECK(cudaFree(d_stdev));
  CHECK(cudaFree(d_peak));
  CHECK(cudaFree(d_col));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));

  if (!why.empty()) {
    printf("check: FAIL (%s)\n", why.c_str());
    return 1;
  }
  printf("check: PASS\n");
  return 0;
}
