// kernels.h: the "kernels" of the make-app stand-in, plain C++ loops with the names and
// parameters of examples/stream's kernels (see main.cu for why).
#pragma once

#define __global__

__global__ void copy_kernel(const double* a, double* c, long n);
__global__ void mul_kernel(double* b, const double* c, double scalar, long n);
__global__ void add_kernel(const double* a, const double* b, double* c, long n);
__global__ void triad_kernel(double* a, const double* b, const double* c, double scalar, long n);
__global__ void dot_partial_kernel(const double* a, const double* b, double* partial, long n);
__global__ void dot_final_kernel(const double* partial, double* sum);

#define DOT_PARTS 16  // partial sums of the dot product, each over a strided slice
