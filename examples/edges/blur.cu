// blur.cu: Gaussian blur of a float image with a (2r+1) x (2r+1) kernel.
#include "pipeline.h"

// One thread per output pixel: the weighted sum of its neighbourhood, rows
// top to bottom and each row left to right, with neighbours outside the image
// clamped to its edge.
__global__ void gaussian_blur_kernel(const float* in, float* out, const float* weights, int width,
                                     int height, int radius) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  int k = 2 * radius + 1;
  float sum = 0.0f;
  for (int dy = -radius; dy <= radius; dy++) {
    int yy = min(max(y + dy, 0), height - 1);
    for (int dx = -radius; dx <= radius; dx++) {
      int xx = min(max(x + dx, 0), width - 1);
      sum += weights[(dy + radius) * k + (dx + radius)] * in[yy * width + xx];
    }
  }
  out[y * width + x] = sum;
}

void launch_blur(const float* in, float* out, const float* weights, int width, int height, int radius) {
  dim3 block(BLOCK_X, BLOCK_Y);
  dim3 grid((width + BLOCK_X - 1) / BLOCK_X, (height + BLOCK_Y - 1) / BLOCK_Y);
  gaussian_blur_kernel<<<grid, block>>>(in, out, weights, width, height, radius);
  CHECK(cudaGetLastError());
}
