// windows.cuh: the kernel templates of the windows example, one instance per window size
// (moving sums) and per precision (variances). Included by main.cu, where they are launched.
#pragma once

// Sum (or sum of squares) of the `WINDOW` samples starting at i, wrapping around the end of
// the signal. Values lie in [0, 1009), so a square summed over 128 samples fits an int.
template <int WINDOW>
__global__ void moving_sum_kernel(const int* in, int* out, int n, bool squared) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int s = 0;
  for (int k = 0; k < WINDOW; k++) {
    int v = in[(i + k) % n];
    s += squared ? v * v : v;
  }
  out[i] = s;
}

// Per block of BLOCK windows: the largest variance and the mean variance, the window's
// variance being E[x^2] - E[x]^2 computed in T. Launched with BLOCK threads (a power of two).
template <typename T, int BLOCK>
__global__ void window_variance_kernel(const int* sum, const int* sq, T* block_max, T* block_mean, int n,
                                       int window) {
  __shared__ T s_max[BLOCK];
  __shared__ T s_sum[BLOCK];
  int i = blockIdx.x * BLOCK + threadIdx.x;
  T var = 0;
  if (i < n) {
    T mean = (T)sum[i] / window;
    var = (T)sq[i] / window - mean * mean;
  }
  s_max[threadIdx.x] = i < n ? var : (T)-1;
  s_sum[threadIdx.x] = var;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      s_max[threadIdx.x] = s_max[threadIdx.x] > s_max[threadIdx.x + stride] ? s_max[threadIdx.x]
                                                                            : s_max[threadIdx.x + stride];
      s_sum[threadIdx.x] += s_sum[threadIdx.x + stride];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    int count = n - blockIdx.x * BLOCK < BLOCK ? n - blockIdx.x * BLOCK : BLOCK;
    block_max[blockIdx.x] = s_max[0];
    block_mean[blockIdx.x] = s_sum[0] / count;
  }
}
