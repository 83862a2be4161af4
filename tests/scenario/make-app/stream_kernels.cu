// stream_kernels.cu: copy, mul, add and triad of the make-app stand-in. triad_kernel repeats
// its work on purpose: removing the repetition is the honest optimization (about 10x on the
// timed region, same bits), the counterpart of loop-app's triad_kernel. 32 repetitions make the
// triad half of the process's time, so that work moved out of the timed region (loop_make's
// "moved" cheat) shows in the wall time even beside a CPU-bound job; with 4 it was a sixteenth
// and a loaded machine's noise hid it.
#include "kernels.h"

__global__ void copy_kernel(const double* a, double* c, long n) {
  for (long i = 0; i < n; ++i) c[i] = a[i];
}

__global__ void mul_kernel(double* b, const double* c, double scalar, long n) {
  for (long i = 0; i < n; ++i) b[i] = scalar * c[i];
}

__global__ void add_kernel(const double* a, const double* b, double* c, long n) {
  for (long i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

__global__ void triad_kernel(double* a, const double* b, const double* c, double scalar, long n) {
  for (long i = 0; i < n; ++i) {
    double t = 0;
    for (int r = 0; r < 32; ++r) {
      double s = scalar;
      asm volatile("" : "+x"(s) : "x"(t)); // opaque: each repetition waits for the last, then recomputes
      t = b[i] + s * c[i];
    }
    a[i] = t;
  }
}
