// echo: adds a delayed, attenuated copy of a sample stream to a dry stream, as an audio delay
// effect does, over many frames. The kernel takes the dry and the delayed ("wet") stream as two
// pointers; most frames echo the signal onto itself, so the same buffer is passed for both, and
// the others send a second signal (a room's return) into the delay.
//
// A first draft: a grid-stride loop over a fixed grid of two blocks per SM, one scalar float
// load per stream and step; the loads wait on DRAM with few bytes in flight per thread, and
// since two pointers may be one buffer, __restrict__ cannot simply be added.
//
// Usage: ./echo --n N --delay D --reps R --seed S --out PATH
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

#ifndef THREADS
#define THREADS 128
#endif
#ifndef BLOCKS_PER_SM
#define BLOCKS_PER_SM 2
#endif

// out[i] = dry[i] + feedback * wet[i - delay] (just dry[i] before the delay has passed),
// soft-limited to [-1, 1]. dry and wet may be the same buffer; out is never either.
__global__ void echo(const float* dry, const float* wet, float* out, float feedback, int delay, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    float w = i >= delay ? wet[i - delay] : 0.0f;
    float s = dry[i] + feedback * w;
    out[i] = s / (1.0f + fabsf(s));
  }
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

// FNV-1a over bytes: the output file holds per-chunk hashes instead of every sample.
static uint64_t fnv1a(const unsigned char* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

int main(int argc, char** argv) {
  long long n = 1LL << 25, delay = 4801, reps = 10, seed = 42;
  std::string out_path;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) { fprintf(stderr, "missing value for %s\n", key.c_str()); return 1; }
    if (key == "--n") n = parse_int(argv[i + 1], "n");
    else if (key == "--delay") delay = parse_int(argv[i + 1], "delay");
    else if (key == "--reps") reps = parse_int(argv[i + 1], "reps");
    else if (key == "--seed") seed = parse_int(argv[i + 1], "seed");
    else if (key == "--out") out_path = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", key.c_str()); return 1; }
  }
  if (out_path.empty()) {
    fprintf(stderr, "usage: %s --n N --delay D --reps R --seed S --out PATH\n", argv[0]);
    return 1;
  }
  if (n < 1 || n > 1000000000LL || delay < 0 || delay > n || reps < 1) {
    fprintf(stderr, "bad sizes (need 1 <= n <= 1e9, 0 <= delay <= n, reps >= 1)\n");
    return 1;
  }

  // ---- inputs: the signal and the room's return in [-1, 1), one feedback gain per frame
  std::vector<float> sig(n), room(n), gains(reps);
  uint64_t rng = (uint64_t)seed;
  for (long long i = 0; i < n; i++) sig[i] = 2.0f * rand_uniform(rng) - 1.0f;
  for (long long i = 0; i < n; i++) room[i] = 2.0f * rand_uniform(rng) - 1.0f;
  for (long long r = 0; r < reps; r++) gains[r] = 0.2f + 0.6f * rand_uniform(rng);
  printf("echo: n=%lld (%.1f MiB per stream), delay=%lld, reps=%lld\n", n, n * sizeof(float) / 1048576.0, delay,
         reps);

  int device = 0, sms = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  int blocks = BLOCKS_PER_SM * sms;

  float *d_sig, *d_room, *d_out;
  CHECK(cudaMalloc(&d_sig, n * sizeof(float)));
  CHECK(cudaMalloc(&d_room, n * sizeof(float)));
  CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  CHECK(cudaMemcpy(d_sig, sig.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_room, room.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  // ---- warm-up, then one echo per frame: three of every four frames echo the signal onto
  //      itself (the same buffer twice), the fourth sends the room's return into the delay.
  //      The last frame's output is kept.
  echo<<<blocks, THREADS>>>(d_sig, d_sig, d_out, gains[0], (int)delay, (int)n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  for (long long r = 0; r < reps; r++) {
    if (r % 4 == 3)
      echo<<<blocks, THREADS>>>(d_sig, d_room, d_out, gains[r], (int)delay, (int)n);
    else
      echo<<<blocks, THREADS>>>(d_sig, d_sig, d_out, gains[r], (int)delay, (int)n);
    CHECK(cudaGetLastError());
  }
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));

  std::vector<float> out(n);
  CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));

  // ---- CPU reference of the last frame. The GPU may fuse the product into a multiply-add, and
  //      its division may differ in the last bit, so samples are compared with a tolerance; the
  //      output file holds the GPU's own bits.
  const std::vector<float>& wet = (reps - 1) % 4 == 3 ? room : sig;
  float g = gains[reps - 1];
  std::string why;
  char buf[200];
  for (long long i = 0; i < n && why.empty(); i++) {
    float s = sig[i] + g * (i >= delay ? wet[i - delay] : 0.0f);
    float ref = s / (1.0f + fabsf(s));
    if (!(fabsf(out[i] - ref) <= 1e-6f)) {
      snprintf(buf, sizeof(buf), "sample %lld: gpu %.9g, cpu %.9g", i, out[i], ref);
      why = buf;
    }
  }

  // ---- output: int64 n; uint64 FNV-1a hash of each of 1024 chunks of the samples; the first
  //      256 samples after the delay (float32)
  FILE* f = fopen(out_path.c_str(), "wb");
  if (!f) { fprintf(stderr, "cannot open %s\n", out_path.c_str()); return 1; }
  int64_t count = n;
  bool ok = fwrite(&count, sizeof(count), 1, f) == 1;
  const size_t chunks = 1024, per = ((size_t)n + chunks - 1) / chunks;
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(out.data());
  for (size_t c = 0; c < chunks && ok; c++) {
    size_t b0 = c * per < (size_t)n ? c * per : (size_t)n;
    size_t b1 = b0 + per < (size_t)n ? b0 + per : (size_t)n;
    uint64_t h = fnv1a(bytes + b0 * sizeof(float), (b1 - b0) * sizeof(float));
    ok = fwrite(&h, sizeof(h), 1, f) == 1;
  }
  size_t from = (size_t)delay, head = n - from < 256 ? (size_t)(n - from) : 256;
  ok = ok && fwrite(out.data() + from, sizeof(float), head, f) == head;
  if (fclose(f) != 0 || !ok) { fprintf(stderr, "error writing %s\n", out_path.c_str()); return 1; }

  printf("sample %lld: %.6f, sample %lld: %.6f\n", delay, out[delay < n ? delay : 0], n - 1, out[n - 1]);
  printf("kernel_time_ms: %.4f\n", ms);

  CHECK(cudaFree(d_sig));
  CHECK(cudaFree(d_room));
  CHECK(cudaFree(d_out));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));

  if (!why.empty()) {
    printf("check: FAIL (%s)\n", why.c_str());
    return 1;
  }
  printf("check: PASS\n");
  return 0;
}
