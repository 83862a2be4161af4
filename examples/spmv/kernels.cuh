// kernels.cuh: element-wise solver kernels, templated on the floating-point
// type so that a single-precision solver could share them. Only vector_ops.cu
// includes this file (a template kernel is instantiated where it is launched).
#pragma once

// One Jacobi step for every row i, given ax = A x:
//   x_next[i] = x[i] + (b[i] - (A x)[i]) / a_ii
// which equals (b[i] - sum_{j != i} a_ij x[j]) / a_ii.
template <typename T>
__global__ void jacobi_update_kernel(const T* x, const T* b, const T* ax, const T* diag, T* x_next,
                                     int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x_next[i] = x[i] + (b[i] - ax[i]) / diag[i];
}
