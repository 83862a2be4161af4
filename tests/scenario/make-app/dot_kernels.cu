// dot_kernels.cu: the dot product of the make-app stand-in, in two passes with a fixed order
// (the same bits every run), as the GPU version's partial and final kernels.
#include "kernels.h"

__global__ void dot_partial_kernel(const double* a, const double* b, double* partial, long n) {
  for (int p = 0; p < DOT_PARTS; ++p) {
    double s = 0;
    for (long i = p; i < n; i += DOT_PARTS) s += a[i] * b[i];
    partial[p] = s;
  }
}

__global__ void dot_final_kernel(const double* partial, double* sum) {
  double s = 0;
  for (int p = 0; p < DOT_PARTS; ++p) s += partial[p];
  *sum = s;
}
