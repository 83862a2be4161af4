// shmem: shared-memory heavy image pipeline (Shmembench-like).
// Each iteration blurs the image with a (2R+1)x(2R+1) weighted filter read
// from a shared-memory tile (with halo, clamp-to-edge), then transposes it
// through a shared-memory tile.  After the last iteration the row sums of the
// image are computed with a shared-memory tree reduction.
// Usage: ./shmem --width W --height H --radius R --iters N --seed S --out PATH
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <string>
#include <vector>
#include <utility>
#include <algorithm>
#define CHECK(call)                                                           \
  do {                                                                        \
    cudaError_t err_ = (call);                                                \
    if (err_ != cudaSuccess) {                                                \
      fprintf(stderr, "CUDA error at %s:%d: %s (%s)\n", __FILE__, __LINE__,   \
              cudaGetErrorString(err_), #call);                               \
      exit(1);                                                                \
    }                                                                         \
  } while (0)
#ifndef TILE  // transpose tile (one element per thread, TILE x TILE block); tunable: -DTILE=...
#define TILE 32
#endif
#ifndef BT    // blur output tile per block (BT x BT threads); tunable: -DBT=...
#define BT 16
#endif
#define MAX_RADIUS 8
#define SUM_THREADS 256

// Blur: load the tile plus halo into shared memory, then every thread
// computes its weighted sum from shared memory.
__global__ void blur_kernel(const float* in, float* out, const float* weights, int width,
                            int height, int radius) {
  __shared__ float tile[BT + 2 * MAX_RADIUS][BT + 2 * MAX_RADIUS];
  int tw = BT + 2 * radius;
  int x0 = blockIdx.x * BT - radius;
  int y0 = blockIdx.y * BT - radius;
  for (int ty = threadIdx.y; ty < tw; ty += BT) {
    for (int tx = threadIdx.x; tx < tw; tx += BT) {
      int gx = min(max(x0 + tx, 0), width - 1);
      int gy = min(max(y0 + ty, 0), height - 1);
      tile[ty][tx] = in[gy * width + gx];
    }
  }
  __syncthreads();

  int x = blockIdx.x * BT + threadIdx.x;
  int y = blockIdx.y * BT + threadIdx.y;
  if (x < width && y < height) {
    float sum = 0.0f;
    for (int dy = -radius; dy <= radius; dy++)
      for (int dx = -radius; dx <= radius; dx++)
        sum += weights[(dy + radius) * (2 * radius + 1) + (dx + radius)] *
               tile[threadIdx.y + radius + dy][threadIdx.x + radius + dx];
    out[y * width + x] = sum;
  }
}

// Transpose a width x height image into a height x width image via a shared tile.
__global__ void transpose_kernel(const float* in, float* out, int width, int height) {
  __shared__ float tile[TILE][TILE];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  if (x < width && y < height) tile[threadIdx.y][threadIdx.x] = in[y * width + x];
  __syncthreads();
  int ox = blockIdx.y * TILE + threadIdx.x;  // column in the output (= input row)
  int oy = blockIdx.x * TILE + threadIdx.y;  // row in the output (= input column)
  if (ox < height && oy < width) out[oy * height + ox] = tile[threadIdx.x][threadIdx.y];
}

// One block per row; interleaved-addressing tree reduction in shared memory.
__global__ void row_sum_kernel(const float* img, float* sums, int width) {
  __shared__ float partial[SUM_THREADS];
  int row = blockIdx.x;
  float v = 0.0f;
  for (int c = threadIdx.x; c < width; c += blockDim.x) v += img[row * width + c];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int stride = 1; stride < blockDim.x; stride *= 2) {
    int index = 2 * stride * threadIdx.x;
    if (index < blockDim.x) partial[index] += partial[index + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[row] = partial[0];
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

// Runs one iteration on the GPU: blur a -> b, transpose b -> a (dims swap).
static void gpu_iteration(float* d_a, float* d_b, const float* d_w, int& w, int& h, int radius) {
  dim3 bblock(BT, BT), bgrid((w + BT - 1) / BT, (h + BT - 1) / BT);
  blur_kernel<<<bgrid, bblock>>>(d_a, d_b, d_w, w, h, radius);
  CHECK(cudaGetLastError());
  dim3 tblock(TILE, TILE), tgrid((w + TILE - 1) / TILE, (h + TILE - 1) / TILE);
  transpose_kernel<<<tgrid, tblock>>>(d_b, d_a, w, h);
  CHECK(cudaGetLastError());
  std::swap(w, h);
}

int main(int argc, char** argv) {
  long long width = 3072, height = 2048, radius = 3, iters = 6, seed = 42;
  std::string out_path;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) { fprintf(stderr, "missing value for %s\n", key.c_str()); return 1; }
    if (key == "--width") width = parse_int(argv[i + 1], "width");
    else if (key == "--height") height = parse_int(argv[i + 1], "height");
    else if (key == "--radius") radius = parse_int(argv[i + 1], "radius");
    else if (key == "--iters") iters = parse_int(argv[i + 1], "iters");
    else if (key == "--seed") seed = parse_int(argv[i + 1], "seed");
    else if (key == "--out") out_path = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", key.c_str()); return 1; }
  }
  if (out_path.empty()) {
    fprintf(stderr, "usage: %s --width W --height H --radius R --iters N --seed S --out PATH\n", argv[0]);
    return 1;
  }
  if (width < 1 || height < 1 || width * height > 268435456LL || radius < 0 ||
      radius > MAX_RADIUS || iters < 1) {
    fprintf(stderr, "bad sizes (need width*height <= 2^28, 0 <= radius <= %d)\n", MAX_RADIUS);
    return 1;
  }

  // ---- inputs: random image in [0,1) and normalised Gaussian-like weights
  size_t npix = (size_t)width * height;
  std::vector<float> img(npix);
  uint64_t rng = (uint64_t)seed;
  for (size_t i = 0; i < npix; i++) img[i] = rand_uniform(rng);
  int ksize = 2 * (int)radius + 1;
  std::vector<float> weights(ksize * ksize);
  double wsum = 0.0;
  double sigma = 0.5 * radius + 0.5;
  for (int dy = -(int)radius; dy <= radius; dy++)
    for (int dx = -(int)radius; dx <= radius; dx++) {
      double w = exp(-(dx * dx + dy * dy) / (2.0 * sigma * sigma)) * (0.9 + 0.2 * rand_uniform(rng));
      weights[(dy + radius) * ksize + (dx + radius)] = (float)w;
      wsum += w;
    }
  for (float& w : weights) w = (float)(w / wsum);
  printf("shmem: %lld x %lld image, radius %lld, %lld iterations\n", width, height, radius, iters);

  float *d_a, *d_b, *d_w, *d_sums;
  CHECK(cudaMalloc(&d_a, npix * sizeof(float)));
  CHECK(cudaMalloc(&d_b, npix * sizeof(float)));
  CHECK(cudaMalloc(&d_w, weights.size() * sizeof(float)));
  CHECK(cudaMalloc(&d_sums, (width > height ? width : height) * sizeof(float)));
  CHECK(cudaMemcpy(d_w, weights.data(), weights.size() * sizeof(float), cudaMemcpyHostToDevice));

  // ---- warm-up: one iteration, then restore the input
  int w = (int)width, h = (int)height;
  CHECK(cudaMemcpy(d_a, img.data(), npix * sizeof(float), cudaMemcpyHostToDevice));
  gpu_iteration(d_a, d_b, d_w, w, h, (int)radius);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(d_a, img.data(), npix * sizeof(float), cudaMemcpyHostToDevice));
  w = (int)width;
  h = (int)height;

  // ---- timed region
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  for (long long it = 0; it < iters; it++) gpu_iteration(d_a, d_b, d_w, w, h, (int)radius);
  row_sum_kernel<<<h, SUM_THREADS>>>(d_a, d_sums, w);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));

  std::vector<float> result(npix), sums(h);
  CHECK(cudaMemcpy(result.data(), d_a, npix * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(sums.data(), d_sums, h * sizeof(float), cudaMemcpyDeviceToHost));

  // ---- CPU reference
  std::vector<float> cur = img, tmp(npix);
  int cw = (int)width, ch = (int)height, r = (int)radius;
  for (long long it = 0; it < iters; it++) {
    for (int y = 0; y < ch; y++)
      for (int x = 0; x < cw; x++) {
        float s = 0.0f;
        for (int dy = -r; dy <= r; dy++) {
          int yy = std::min(std::max(y + dy, 0), ch - 1);
          for (int dx = -r; dx <= r; dx++) {
            int xx = std::min(std::max(x + dx, 0), cw - 1);
            s += weights[(dy + r) * ksize + (dx + r)] * cur[(size_t)yy * cw + xx];
          }
        }
        tmp[(size_t)y * cw + x] = s;
      }
    for (int y = 0; y < ch; y++)
      for (int x = 0; x < cw; x++) cur[(size_t)x * ch + y] = tmp[(size_t)y * cw + x];
    std::swap(cw, ch);
  }

  std::string why;
  char buf[200];
  if (cw != w || ch != h) why = "dimension mismatch";
  for (size_t i = 0; i < npix && why.empty(); i++) {
    if (!(fabsf(result[i] - cur[i]) <= 1e-4f)) {
      snprintf(buf, sizeof(buf), "pixel %zu (row %zu): gpu %.7g cpu %.7g", i, i / cw, result[i], cur[i]);
      why = buf;
    }
  }
  for (int y = 0; y < ch && why.empty(); y++) {
    double ref = 0.0;
    for (int x = 0; x < cw; x++) ref += cur[(size_t)y * cw + x];
    if (!(fabs(sums[y] - ref) <= 1e-4 * fabs(ref) + 1e-3)) {
      snprintf(buf, sizeof(buf), "row sum %d: gpu %.7g cpu %.7g", y, sums[y], ref);
      why = buf;
    }
  }

  // ---- output: int32 width, height (final), float image, float row sums
  FILE* f = fopen(out_path.c_str(), "wb");
  if (!f) { fprintf(stderr, "cannot open %s\n", out_path.c_str()); return 1; }
  int32_t dims[2] = {w, h};
  bool ok = fwrite(dims, sizeof(dims), 1, f) == 1;
  ok = ok && fwrite(result.data(), sizeof(float), npix, f) == npix;
  ok = ok && fwrite(sums.data(), sizeof(float), h, f) == (size_t)h;
  if (fclose(f) != 0 || !ok) { fprintf(stderr, "error writing %s\n", out_path.c_str()); return 1; }

  printf("final image %d x %d, first row sum %.6f\n", w, h, sums[0]);
  printf("kernel_time_ms: %.4f\n", ms);

  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_w));
  CHECK(cudaFree(d_sums));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));

  if (!why.empty()) {
    printf("check: FAIL (%s)\n", why.c_str());
    return 1;
  }
  printf("check: PASS\n");
  return 0;
}
