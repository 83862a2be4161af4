// vector_ops.cu: the dense vector work of one Jacobi iteration: the update
// (a template kernel from kernels.cuh) and the residual norm.
#include "spmv.h"
#include "kernels.cuh"

// First pass: every block sums (b - ax)^2 over a grid-stride slice, then
// reduces in shared memory. The grid is fixed (NORM_BLOCKS), so is the order.
__global__ void residual_partial_kernel(const double* b, const double* ax, double* partial, int n) {
  __shared__ double cache[NORM_TPB];
  double sum = 0.0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    double r = b[i] - ax[i];
    sum += r * r;
  }
  cache[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = cache[0];
}

// Second pass: one block sums the partial results in a fixed order.
__global__ void sum_partials_kernel(const double* partial, int nparts, double* result) {
  __shared__ double cache[NORM_TPB];
  double sum = 0.0;
  for (int i = threadIdx.x; i < nparts; i += blockDim.x) sum += partial[i];
  cache[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *result = cache[0];
}

void launch_jacobi_update(const double* x, const double* b, const double* ax, const double* diag,
                          double* x_next, int n) {
  int blocks = (n + TPB - 1) / TPB;
  jacobi_update_kernel<double><<<blocks, TPB>>>(x, b, ax, diag, x_next, n);
  CHECK(cudaGetLastError());
}

void launch_residual_norm2(const double* b, const double* ax, double* partial, double* result, int n) {
  residual_partial_kernel<<<NORM_BLOCKS, NORM_TPB>>>(b, ax, partial, n);
  CHECK(cudaGetLastError());
  sum_partials_kernel<<<1, NORM_TPB>>>(partial, NORM_BLOCKS, result);
  CHECK(cudaGetLastError());
}
