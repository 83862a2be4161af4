// spmv.cu: the sparse matrix-vector product y = A x of a CSR matrix, and the
// extraction of its diagonal for the Jacobi solver.
#include "spmv.h"

// Scalar CSR: one thread per row, which walks its row from left to right. A
// grid-stride loop, so that any grid covers every row.
__global__ void spmv_csr_kernel(int rows, const int* row_ptr, const int* col, const double* val,
                                const double* x, double* y) {
  for (int row = blockIdx.x * blockDim.x + threadIdx.x; row < rows; row += blockDim.x * gridDim.x) {
    double sum = 0.0;
    for (int j = row_ptr[row]; j < row_ptr[row + 1]; j++)
      sum += val[j] * x[col[j]];
    y[row] = sum;
  }
}

// diag[row] = a_row,row (every row holds its diagonal entry).
__global__ void extract_diagonal_kernel(int rows, const int* row_ptr, const int* col,
                                        const double* val, double* diag) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  for (int j = row_ptr[row]; j < row_ptr[row + 1]; j++)
    if (col[j] == row) diag[row] = val[j];
}

void launch_spmv(const CsrMatrix& a, const double* x, double* y) {
  int blocks = (a.rows + TPB - 1) / TPB;
  spmv_csr_kernel<<<blocks, TPB>>>(a.rows, a.row_ptr, a.col, a.val, x, y);
  CHECK(cudaGetLastError());
}

void launch_extract_diagonal(const CsrMatrix& a, double* diag) {
  int blocks = (a.rows + TPB - 1) / TPB;
  extract_diagonal_kernel<<<blocks, TPB>>>(a.rows, a.row_ptr, a.col, a.val, diag);
  CHECK(cudaGetLastError());
}
