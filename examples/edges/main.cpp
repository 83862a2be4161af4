// edges: an edge-detection pipeline over a sequence of grayscale frames, as a
// video filter would run it. Per frame:
//   blurred = Gaussian blur (radius r) of the frame   (blur.cu)
//   edges   = Sobel gradient magnitude of blurred     (edges.cu)
//   hist   += histogram of edges                      (edges.cu)
// Frames are float images in [0, 1]: noise plus random bright rectangles.
// This file is plain C++: the kernels and their launches live in the .cu files.
//
// Usage: ./edges --width W --height H --frames F --radius R --seed S --out PATH
#include "pipeline.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#define RECTS 12  // bright rectangles per frame

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

static uint64_t hash_floats(const float* v, size_t n) {  // FNV-1a over 32-bit words
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) {
    uint32_t w;
    memcpy(&w, &v[i], sizeof(w));
    h = (h ^ w) * 1099511628211ULL;
  }
  return h;
}

// CPU reference of the blur at one pixel, in the kernel's order.
static float blur_at(const float* img, const std::vector<float>& wt, int width, int height,
                     int radius, int x, int y) {
  int k = 2 * radius + 1;
  float sum = 0.0f;
  for (int dy = -radius; dy <= radius; dy++) {
    int yy = std::min(std::max(y + dy, 0), height - 1);
    for (int dx = -radius; dx <= radius; dx++) {
      int xx = std::min(std::max(x + dx, 0), width - 1);
      sum += wt[(dy + radius) * k + (dx + radius)] * img[(size_t)yy * width + xx];
    }
  }
  return sum;
}

// CPU reference of the edge magnitude at one pixel (blurring its 3x3 neighbourhood).
static float edge_at(const float* img, const std::vector<float>& wt, int width, int height,
                     int radius, int x, int y) {
  float p[3][3];
  for (int j = -1; j <= 1; j++)
    for (int i = -1; i <= 1; i++)
      p[j + 1][i + 1] = blur_at(img, wt, width, height, radius, std::min(std::max(x + i, 0), width - 1),
                                std::min(std::max(y + j, 0), height - 1));
  float gx = (p[0][2] + 2.0f * p[1][2] + p[2][2]) - (p[0][0] + 2.0f * p[1][0] + p[2][0]);
  float gy = (p[2][0] + 2.0f * p[2][1] + p[2][2]) - (p[0][0] + 2.0f * p[0][1] + p[0][2]);
  return std::sqrt(gx * gx + gy * gy);
}

int main(int argc, char** argv) {
  long long width = 1920, height = 1080, frames = 16, radius = 4, seed = 42;
  std::string out_path;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) { fprintf(stderr, "missing value for %s\n", key.c_str()); return 1; }
    if (key == "--width") width = parse_int(argv[i + 1], "width");
    else if (key == "--height") height = parse_int(argv[i + 1], "height");
    else if (key == "--frames") frames = parse_int(argv[i + 1], "frames");
    else if (key == "--radius") radius = parse_int(argv[i + 1], "radius");
    else if (key == "--seed") seed = parse_int(argv[i + 1], "seed");
    else if (key == "--out") out_path = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", key.c_str()); return 1; }
  }
  if (out_path.empty()) {
    fprintf(stderr, "usage: %s --width W --height H --frames F --radius R --seed S --out PATH\n", argv[0]);
    return 1;
  }
  if (width < 1 || height < 1 || width * height > (1LL << 28) || frames < 1 ||
      frames * width * height > (1LL << 31) || radius < 0 || radius > MAX_RADIUS) {
    fprintf(stderr, "bad sizes (need width*height <= 2^28, frames*width*height <= 2^31, radius 0..%d)\n",
            MAX_RADIUS);
    return 1;
  }
  const int w = (int)width, h = (int)height, f_count = (int)frames, r = (int)radius;
  const size_t pixels = (size_t)w * h;

  // ---- inputs: frames of noise in [0, 0.2) plus RECTS rectangles, clamped to 1
  uint64_t rng = (uint64_t)seed;
  std::vector<float> frames_in(pixels * f_count);
  for (int f = 0; f < f_count; f++) {
    float* img = &frames_in[pixels * f];
    for (size_t p = 0; p < pixels; p++) img[p] = (float)(0.2 * rand_uniform(rng));
    for (int k = 0; k < RECTS; k++) {
      int x0 = (int)(splitmix64(rng) % (uint64_t)w), y0 = (int)(splitmix64(rng) % (uint64_t)h);
      int x1 = std::min(w, x0 + 1 + (int)(splitmix64(rng) % (uint64_t)(w / 3 + 1)));
      int y1 = std::min(h, y0 + 1 + (int)(splitmix64(rng) % (uint64_t)(h / 3 + 1)));
      float v = (float)(0.2 + 0.4 * rand_uniform(rng));
      for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) img[(size_t)y * w + x] = std::min(1.0f, img[(size_t)y * w + x] + v);
    }
  }
  // Gaussian weights, sigma = radius / 2 (at least 0.5), normalised in double.
  int k = 2 * r + 1;
  std::vector<float> weights(k * k);
  {
    double sigma = std::max(0.5, r / 2.0), total = 0.0;
    std::vector<double> g(k * k);
    for (int dy = -r; dy <= r; dy++)
      for (int dx = -r; dx <= r; dx++) total += g[(dy + r) * k + dx + r] = std::exp(-(dx * dx + dy * dy) / (2 * sigma * sigma));
    for (int i = 0; i < k * k; i++) weights[i] = (float)(g[i] / total);
  }
  printf("edges: %d frames of %dx%d (%.1f MiB), blur radius %d\n", f_count, w, h,
         frames_in.size() * sizeof(float) / 1048576.0, r);

  float *d_frames, *d_blurred, *d_edges, *d_weights;
  unsigned int* d_hist;
  CHECK(cudaMalloc(&d_frames, frames_in.size() * sizeof(float)));
  CHECK(cudaMalloc(&d_edges, frames_in.size() * sizeof(float)));
  CHECK(cudaMalloc(&d_blurred, pixels * sizeof(float)));
  CHECK(cudaMalloc(&d_weights, weights.size() * sizeof(float)));
  CHECK(cudaMalloc(&d_hist, (size_t)f_count * HIST_BINS * sizeof(unsigned int)));
  CHECK(cudaMemcpy(d_frames, frames_in.data(), frames_in.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_weights, weights.data(), weights.size() * sizeof(float), cudaMemcpyHostToDevice));

  auto run_frame = [&](int f) {
    launch_blur(d_frames + pixels * f, d_blurred, d_weights, w, h, r);
    launch_sobel(d_blurred, d_edges + pixels * f, w, h);
    launch_histogram(d_edges + pixels * f, d_hist + (size_t)f * HIST_BINS, (int)pixels);
  };

  // ---- warm-up: frame 0 once, then the histograms are reset
  run_frame(0);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemset(d_hist, 0, (size_t)f_count * HIST_BINS * sizeof(unsigned int)));

  // ---- timed region: every frame
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  for (int f = 0; f < f_count; f++) run_frame(f);
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));

  std::vector<float> edges(frames_in.size());
  std::vector<unsigned int> hist((size_t)f_count * HIST_BINS);
  CHECK(cudaMemcpy(edges.data(), d_edges, edges.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hist.data(), d_hist, hist.size() * sizeof(unsigned int), cudaMemcpyDeviceToHost));

  // ---- CPU check: edge magnitudes at ~4096 pixels per frame (corners and
  //      edges included) to 1e-4, histograms recounted from the GPU's edges exactly.
  std::string why;
  size_t stride = std::max<size_t>(1, pixels / 4096);
  for (int f = 0; f < f_count && why.empty(); f++) {
    const float* img = &frames_in[pixels * f];
    const float* e = &edges[pixels * f];
    for (size_t p = 0; p < pixels && why.empty(); p = (p + stride < pixels || p == pixels - 1) ? p + stride : pixels - 1) {
      int x = (int)(p % w), y = (int)(p / w);
      float ref = edge_at(img, weights, w, h, r, x, y);
      if (!(std::fabs(e[p] - ref) <= 1e-4f)) {
        char buf[160];
        snprintf(buf, sizeof(buf), "frame %d pixel (%d, %d): gpu %.9g cpu %.9g", f, x, y, e[p], ref);
        why = buf;
      }
    }
    std::vector<unsigned int> count(HIST_BINS, 0);
    for (size_t p = 0; p < pixels; p++) count[hist_bin(e[p])]++;
    for (int b = 0; b < HIST_BINS && why.empty(); b++)
      if (count[b] != hist[(size_t)f * HIST_BINS + b]) {
        char buf[160];
        snprintf(buf, sizeof(buf), "frame %d histogram bin %d: gpu %u cpu %u", f, b, hist[(size_t)f * HIST_BINS + b], count[b]);
        why = buf;
      }
  }

  // ---- output: per frame the hash of its edge map, its histogram and 8 samples
  FILE* out = fopen(out_path.c_str(), "w");
  if (!out) { fprintf(stderr, "cannot open %s\n", out_path.c_str()); return 1; }
  fprintf(out, "width %d height %d frames %d radius %d\n", w, h, f_count, r);
  for (int f = 0; f < f_count; f++) {
    const float* e = &edges[pixels * f];
    fprintf(out, "frame %d hash %016llx\n", f, (unsigned long long)hash_floats(e, pixels));
    fprintf(out, "hist");
    for (int b = 0; b < HIST_BINS; b++) fprintf(out, " %u", hist[(size_t)f * HIST_BINS + b]);
    fprintf(out, "\n");
    for (size_t p = 0; p < pixels; p += (pixels + 7) / 8) fprintf(out, "sample %zu %a\n", p, e[p]);
  }
  if (fclose(out) != 0) { fprintf(stderr, "error writing %s\n", out_path.c_str()); return 1; }

  double mean = 0.0;
  for (float v : edges) mean += v;
  printf("mean edge magnitude: %.6f\n", mean / edges.size());
  printf("kernel_time_ms: %.4f\n", ms);

  CHECK(cudaFree(d_frames));
  CHECK(cudaFree(d_edges));
  CHECK(cudaFree(d_blurred));
  CHECK(cudaFree(d_weights));
  CHECK(cudaFree(d_hist));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));

  if (!why.empty()) {
    printf("check: FAIL (%s)\n", why.c_str());
    return 1;
  }
  printf("check: PASS\n");
  return 0;
}
