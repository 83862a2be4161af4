// spmv.h: what the host code of the spmv example shares: the error check, the
// launch sizes, the device CSR matrix and the launchers of the kernels in
// spmv.cu and vector_ops.cu (main.cu sees no kernel, only these functions).
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

#ifndef TPB               // threads per block of the row and element kernels; tunable: -DTPB=...
#define TPB 256
#endif
#define NORM_TPB 256      // the norms' block: its tree reduction's shape fixes the sum's rounding
#define NORM_BLOCKS 1024  // fixed number of partial sums -> deterministic norms

// A square sparse matrix in CSR form, in device memory. Column indices are
// sorted within each row and every row holds its diagonal entry.
struct CsrMatrix {
  int rows;
  int nnz;
  int* row_ptr;  // rows + 1 offsets into col/val
  int* col;
  double* val;
};

// spmv.cu
void launch_spmv(const CsrMatrix& a, const double* x, double* y);  // y = A x
void launch_extract_diagonal(const CsrMatrix& a, double* diag);

// vector_ops.cu
// x_next = x + (b - ax) / diag: one Jacobi step, given ax = A x.
void launch_jacobi_update(const double* x, const double* b, const double* ax, const double* diag,
                          double* x_next, int n);
// *result = sum((b - ax)^2), by a fixed two-pass reduction (same bits every run).
void launch_residual_norm2(const double* b, const double* ax, double* partial, double* result, int n);
