// spmv: Jacobi iterations on a sparse, diagonally dominant system A x = b in
// double precision, the matrix in CSR form. Every iteration computes
//   ax = A x                       (spmv.cu, the timed kernel)
//   ||b - ax||^2                   (vector_ops.cu, deterministic reduction)
//   x  = x + (b - ax) / diag(A)    (kernels.cuh, via vector_ops.cu)
// The matrix is banded with random rows of 8..56 entries, like an unstructured
// mesh numbered well. The program reports the SpMV kernel's average time per
// call, as SpMV benchmarks do, and checks the solver against a CPU reference.
//
// Usage: ./spmv --rows N --iters K --seed S --out PATH
#include "spmv.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#define MIN_ROW 8   // entries per row, diagonal included
#define MAX_ROW 56
#define MAX_GAP 32  // off-diagonal columns: a random walk with steps of 1..MAX_GAP

static uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static double rand_uniform(uint64_t& state) {  // [0, 1)
  return (double)(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
}

static long long parse_int(const char* text, const char* name) {
  char* end = nullptr;
  long long v = strtoll(text, &end, 10);
  if (end == text || *end != '\0') {
    fprintf(stderr, "invalid value '%s' for --%s\n", text, name);
    exit(1);
  }
  return v;
}

static uint64_t hash_words(const std::vector<double>& v) {  // FNV-1a over 64-bit words
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < v.size(); i++) {
    uint64_t w;
    memcpy(&w, &v[i], sizeof(w));
    h = (h ^ w) * 1099511628211ULL;
  }
  return h;
}

// The host copy of the matrix.
struct HostCsr {
  std::vector<int> row_ptr, col;
  std::vector<double> val;
};

// Row i: a random walk of columns around i (those outside [0, rows) dropped),
// off-diagonal values uniform in [-1, 0) and a diagonal of their absolute sum
// plus 1, like a discretised diffusion operator: strictly diagonally dominant,
// so Jacobi converges, slowly enough that every iteration changes x.
static HostCsr make_matrix(int rows, uint64_t& rng) {
  HostCsr m;
  m.row_ptr.reserve(rows + 1);
  m.col.reserve((size_t)rows * (MIN_ROW + MAX_ROW) / 2);
  m.val.reserve((size_t)rows * (MIN_ROW + MAX_ROW) / 2);
  m.row_ptr.push_back(0);
  for (int i = 0; i < rows; i++) {
    int off = MIN_ROW - 1 + (int)(splitmix64(rng) % (MAX_ROW - MIN_ROW + 1));
    long long c = (long long)i - (long long)off * (MAX_GAP / 4) - 1;
    size_t diag_at = 0;
    bool diag_placed = false;
    double abs_sum = 0.0;
    for (int k = 0; k < off; k++) {
      c += 1 + (long long)(splitmix64(rng) % MAX_GAP);
      if (c == i) c++;  // the diagonal is placed separately
      double v = rand_uniform(rng) - 1.0;  // in [-1, 0)
      if (c < 0 || c >= rows) continue;
      if (!diag_placed && c > i) {
        diag_at = m.col.size();
        m.col.push_back(i);
        m.val.push_back(0.0);
        diag_placed = true;
      }
      m.col.push_back((int)c);
      m.val.push_back(v);
      abs_sum += fabs(v);
    }
    if (!diag_placed) {
      diag_at = m.col.size();
      m.col.push_back(i);
      m.val.push_back(0.0);
    }
    m.val[diag_at] = abs_sum + 1.0;
    m.row_ptr.push_back((int)m.col.size());
  }
  return m;
}

int main(int argc, char** argv) {
  long long rows = 1048576, iters = 20, seed = 42;
  std::string out_path;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) { fprintf(stderr, "missing value for %s\n", key.c_str()); return 1; }
    if (key == "--rows") rows = parse_int(argv[i + 1], "rows");
    else if (key == "--iters") iters = parse_int(argv[i + 1], "iters");
    else if (key == "--seed") seed = parse_int(argv[i + 1], "seed");
    else if (key == "--out") out_path = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", key.c_str()); return 1; }
  }
  if (out_path.empty()) {
    fprintf(stderr, "usage: %s --rows N --iters K --seed S --out PATH\n", argv[0]);
    return 1;
  }
  // 2^25 rows of at most MAX_ROW entries keep nnz below 2^31 (int offsets).
  if (rows < 1 || rows > (1LL << 25) || iters < 1 || iters > 10000) {
    fprintf(stderr, "bad sizes (need 1 <= rows <= 2^25, 1 <= iters <= 10000)\n");
    return 1;
  }
  const int n = (int)rows;

  // ---- inputs: the matrix, b uniform in [-1, 1), x0 = 0
  uint64_t rng = (uint64_t)seed;
  HostCsr h = make_matrix(n, rng);
  std::vector<double> b(n);
  for (int i = 0; i < n; i++) b[i] = 2.0 * rand_uniform(rng) - 1.0;
  const int nnz = h.row_ptr[n];
  printf("spmv: %d rows, %d nonzeros (%.1f per row, %.1f MiB in CSR), %lld Jacobi iterations\n", n,
         nnz, (double)nnz / n, (nnz * 12.0 + (n + 1) * 4.0) / 1048576.0, iters);

  CsrMatrix a;
  a.rows = n;
  a.nnz = nnz;
  double *d_b, *d_x, *d_x_next, *d_ax, *d_diag, *d_partial, *d_norm2;
  CHECK(cudaMalloc(&a.row_ptr, (n + 1) * sizeof(int)));
  CHECK(cudaMalloc(&a.col, (size_t)nnz * sizeof(int)));
  CHECK(cudaMalloc(&a.val, (size_t)nnz * sizeof(double)));
  CHECK(cudaMalloc(&d_b, n * sizeof(double)));
  CHECK(cudaMalloc(&d_x, n * sizeof(double)));
  CHECK(cudaMalloc(&d_x_next, n * sizeof(double)));
  CHECK(cudaMalloc(&d_ax, n * sizeof(double)));
  CHECK(cudaMalloc(&d_diag, n * sizeof(double)));
  CHECK(cudaMalloc(&d_partial, NORM_BLOCKS * sizeof(double)));
  CHECK(cudaMalloc(&d_norm2, iters * sizeof(double)));
  CHECK(cudaMemcpy(a.row_ptr, h.row_ptr.data(), (n + 1) * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(a.col, h.col.data(), (size_t)nnz * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(a.val, h.val.data(), (size_t)nnz * sizeof(double), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_b, b.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_x, 0, n * sizeof(double)));
  launch_extract_diagonal(a, d_diag);

  // ---- warm-up: one untimed product (with x0; ax is recomputed below)
  launch_spmv(a, d_x, d_ax);
  CHECK(cudaDeviceSynchronize());

  // ---- the solver; a pair of events around every product times the SpMV alone
  std::vector<cudaEvent_t> start(iters), stop(iters);
  for (long long k = 0; k < iters; k++) {
    CHECK(cudaEventCreate(&start[k]));
    CHECK(cudaEventCreate(&stop[k]));
  }
  for (long long k = 0; k < iters; k++) {
    CHECK(cudaEventRecord(start[k]));
    launch_spmv(a, d_x, d_ax);
    CHECK(cudaEventRecord(stop[k]));
    launch_residual_norm2(d_b, d_ax, d_partial, d_norm2 + k, n);
    launch_jacobi_update(d_x, d_b, d_ax, d_diag, d_x_next, n);
    std::swap(d_x, d_x_next);
  }
  CHECK(cudaDeviceSynchronize());
  double total_ms = 0.0;
  for (long long k = 0; k < iters; k++) {
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, start[k], stop[k]));
    total_ms += ms;
  }

  std::vector<double> x(n), norm2(iters);
  CHECK(cudaMemcpy(x.data(), d_x, n * sizeof(double), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(norm2.data(), d_norm2, iters * sizeof(double), cudaMemcpyDeviceToHost));

  // ---- CPU reference: the same iterations
  std::vector<double> rx(n, 0.0), rx_next(n), rax(n), rdiag(n), rnorm2(iters);
  for (int i = 0; i < n; i++)
    for (int j = h.row_ptr[i]; j < h.row_ptr[i + 1]; j++)
      if (h.col[j] == i) rdiag[i] = h.val[j];
  for (long long k = 0; k < iters; k++) {
    long double r2 = 0.0L;
    for (int i = 0; i < n; i++) {
      double sum = 0.0;
      for (int j = h.row_ptr[i]; j < h.row_ptr[i + 1]; j++) sum += h.val[j] * rx[h.col[j]];
      rax[i] = sum;
      long double r = (long double)b[i] - sum;
      r2 += r * r;
    }
    rnorm2[k] = (double)r2;
    for (int i = 0; i < n; i++) rx_next[i] = rx[i] + (b[i] - rax[i]) / rdiag[i];
    std::swap(rx, rx_next);
  }
  double x_scale = 0.0;
  for (int i = 0; i < n; i++) x_scale = fmax(x_scale, fabs(rx[i]));
  std::string why;
  for (int i = 0; i < n && why.empty(); i++) {
    if (!(fabs(x[i] - rx[i]) <= 1e-12 * x_scale)) {
      char buf[160];
      snprintf(buf, sizeof(buf), "x[%d]: gpu %.17g cpu %.17g", i, x[i], rx[i]);
      why = buf;
    }
  }
  for (long long k = 0; k < iters && why.empty(); k++) {
    if (!(fabs(norm2[k] - rnorm2[k]) <= 1e-9 * rnorm2[k] + 1e-300)) {
      char buf[160];
      snprintf(buf, sizeof(buf), "residual of iteration %lld: gpu %.17g cpu %.17g", k, norm2[k], rnorm2[k]);
      why = buf;
    }
  }

  // ---- output: deterministic text digest
  FILE* f = fopen(out_path.c_str(), "w");
  if (!f) { fprintf(stderr, "cannot open %s\n", out_path.c_str()); return 1; }
  fprintf(f, "rows %d nnz %d iters %lld\n", n, nnz, iters);
  for (long long k = 0; k < iters; k++) fprintf(f, "residual %lld %a\n", k, sqrt(norm2[k]));
  fprintf(f, "hash_x %016llx\n", (unsigned long long)hash_words(x));
  for (int i = 0; i < n; i += (n + 15) / 16) fprintf(f, "sample %d %a\n", i, x[i]);
  if (fclose(f) != 0) { fprintf(stderr, "error writing %s\n", out_path.c_str()); return 1; }

  // ---- report, the way SpMV benchmarks print it
  double avg_us = total_ms * 1000.0 / iters;
  double bytes = nnz * 12.0 + (n + 1) * 4.0 + n * 16.0;  // matrix, row offsets, x once, y
  printf("Jacobi: residual %.6e -> %.6e after %lld iterations\n", sqrt(norm2[0]),
         sqrt(norm2[iters - 1]), iters);
  printf("Average SpMV kernel time: %.3f us over %lld iterations\n", avg_us, iters);
  printf("Effective bandwidth: %.1f GB/s\n", bytes / (avg_us * 1e3));
  printf("Effective throughput: %.2f GFLOP/s\n", 2.0 * nnz / (avg_us * 1e3));

  for (long long k = 0; k < iters; k++) {
    CHECK(cudaEventDestroy(start[k]));
    CHECK(cudaEventDestroy(stop[k]));
  }
  CHECK(cudaFree(a.row_ptr));
  CHECK(cudaFree(a.col));
  CHECK(cudaFree(a.val));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_x));
  CHECK(cudaFree(d_x_next));
  CHECK(cudaFree(d_ax));
  CHECK(cudaFree(d_diag));
  CHECK(cudaFree(d_partial));
  CHECK(cudaFree(d_norm2));

  if (!why.empty()) {
    printf("FAIL (%s)\n", why.c_str());
    return 1;
  }
  printf("PASS\n");
  return 0;
}
