// pipeline.h: what the host code of the edges example shares with the two CUDA
// files: the error check, the block shape, the histogram layout and the
// launchers (main.cpp is plain C++ and launches nothing itself).
#pragma once

#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                           \
  do {                                                                        \
    cudaError_t err_ = (call);                                                \
    if (err_ != cudaSuccess) {                                                \
      fprintf(stderr, "CUDA error at %s:%d: %s (%s)\n", __FILE__, __LINE__,   \
              cudaGetErrorString(err_), #call);                               \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

#ifndef BLOCK_X         // 2D kernels run 32 x 8 thread blocks, one thread per pixel;
#define BLOCK_X 32      // tunable: -DBLOCK_X=... -DBLOCK_Y=...
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif
#define MAX_RADIUS 8    // the blur's radius is 0..MAX_RADIUS
#define HIST_BINS 256   // histogram of edge magnitudes over [0, HIST_MAX)
#define HIST_MAX 2.0f   // (larger magnitudes count in the last bin)

// blur.cu: out = in blurred by the (2r+1) x (2r+1) weights (row-major), clamp-to-edge.
void launch_blur(const float* in, float* out, const float* weights, int width, int height, int radius);

// edges.cu: edges = Sobel gradient magnitude of in (clamp-to-edge);
// hist[HIST_BINS] += histogram of edges.
void launch_sobel(const float* in, float* edges, int width, int height);
void launch_histogram(const float* edges, unsigned int* hist, int count);

// The histogram bin of an edge magnitude; the CPU check uses it too.
inline __host__ __device__ int hist_bin(float magnitude) {
  int bin = (int)(magnitude * (HIST_BINS / HIST_MAX));
  return bin < 0 ? 0 : (bin >= HIST_BINS ? HIST_BINS - 1 : bin);
}
