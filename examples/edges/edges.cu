// edges.cu: Sobel edge magnitude of the blurred image and a histogram of it.
#include "pipeline.h"

// |grad| by the 3x3 Sobel operator, clamp-to-edge.
__global__ void sobel_kernel(const float* in, float* edges, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  int xm = max(x - 1, 0), xp = min(x + 1, width - 1);
  int ym = max(y - 1, 0), yp = min(y + 1, height - 1);
  float nw = in[ym * width + xm], n = in[ym * width + x], ne = in[ym * width + xp];
  float w = in[y * width + xm], e = in[y * width + xp];
  float sw = in[yp * width + xm], s = in[yp * width + x], se = in[yp * width + xp];
  float gx = (ne + 2.0f * e + se) - (nw + 2.0f * w + sw);
  float gy = (sw + 2.0f * s + se) - (nw + 2.0f * n + ne);
  edges[y * width + x] = sqrtf(gx * gx + gy * gy);
}

// Per-block histogram in shared memory, then one atomicAdd per bin and block.
// Integer counts: the same result in any order.
__global__ void histogram_kernel(const float* edges, unsigned int* hist, int count) {
  __shared__ unsigned int local[HIST_BINS];
  for (int b = threadIdx.x; b < HIST_BINS; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += blockDim.x * gridDim.x)
    atomicAdd(&local[hist_bin(edges[i])], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < HIST_BINS; b += blockDim.x)
    if (local[b]) atomicAdd(&hist[b], local[b]);
}

void launch_sobel(const float* in, float* edges, int width, int height) {
  dim3 block(BLOCK_X, BLOCK_Y);
  dim3 grid((width + BLOCK_X - 1) / BLOCK_X, (height + BLOCK_Y - 1) / BLOCK_Y);
  sobel_kernel<<<grid, block>>>(in, edges, width, height);
  CHECK(cudaGetLastError());
}

void launch_histogram(const float* edges, unsigned int* hist, int count) {
  histogram_kernel<<<264, 256>>>(edges, hist, count);  // two blocks per H100/H200 multiprocessor
  CHECK(cudaGetLastError());
}
