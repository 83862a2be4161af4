// kernels.h: the "kernels" of the cmake-app stand-in, plain C++ loops (see main.cpp).
#pragma once

#define __global__

__global__ void smooth_kernel(const float* in, float* out, long n);
