// gather: XSBench-like macroscopic cross-section lookups.
// Every nuclide has its own sorted energy grid with NUM_XS microscopic cross
// sections per grid point.  Every lookup has a random energy and a material;
// for each nuclide of the material the kernel binary-searches that nuclide's
// grid (lookup.cuh), interpolates its cross sections and accumulates them,
// weighted by the nuclide's concentration, into NUM_XS macroscopic values.
// Usage: ./gather --nuclides N --gridpoints G --lookups L --seed S --out PATH
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <string>
#include <vector>
#include <algorithm>
#include "lookup.cuh"

#define CHECK(call)                                                           \
  do {                                                                        \
    cudaError_t err_ = (call);                                                \
    if (err_ != cudaSuccess) {                                                \
      fprintf(stderr, "CUDA error at %s:%d: %s (%s)\n", __FILE__, __LINE__,   \
              cudaGetErrorString(err_), #call);                               \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

#define N_MATERIALS 12
#ifndef TPB  // threads per block, one lookup per thread; tunable: -DTPB=...
#define TPB 256
#endif

// One thread per lookup.
__global__ void xs_lookup_kernel(const GridPoint* grids, int n_grid, const int* mat_start,
                                 const int* mat_nuclide, const double* mat_conc,
                                 const double* lookup_energy, const int* lookup_mat,
                                 double* macro_out, int n_lookups) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n_lookups) return;
  double e = lookup_energy[i];
  int mat = lookup_mat[i];
  double macro[NUM_XS];
  for (int k = 0; k < NUM_XS; k++) macro[k] = 0.0;
  for (int j = mat_start[mat]; j < mat_start[mat + 1]; j++) {
    double micro[NUM_XS];
    micro_xs(&grids[(size_t)mat_nuclide[j] * n_grid], n_grid, e, micro);
    for (int k = 0; k < NUM_XS; k++) macro[k] += mat_conc[j] * micro[k];
  }
  for (int k = 0; k < NUM_XS; k++) macro_out[i * NUM_XS + k] = macro[k];
}

// ---------------------------------------------------------------- host helpers

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

int main(int argc, char** argv) {
  long long n_nuclides = 68, n_grid = 11303, n_lookups = 500000, seed = 42;
  std::string out_path;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) { fprintf(stderr, "missing value for %s\n", key.c_str()); return 1; }
    if (key == "--nuclides") n_nuclides = parse_int(argv[i + 1], "nuclides");
    else if (key == "--gridpoints") n_grid = parse_int(argv[i + 1], "gridpoints");
    else if (key == "--lookups") n_lookups = parse_int(argv[i + 1], "lookups");
    else if (key == "--seed") seed = parse_int(argv[i + 1], "seed");
    else if (key == "--out") out_path = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", key.c_str()); return 1; }
  }
  if (out_path.empty()) {
    fprintf(stderr, "usage: %s --nuclides N --gridpoints G --lookups L --seed S --out PATH\n", argv[0]);
    return 1;
  }
  if (n_nuclides < 1 || n_nuclides > 100000 || n_grid < 2 || n_grid > 10000000 ||
      n_nuclides * n_grid > 100000000LL || n_lookups < 1 || n_lookups > 100000000LL) {
    fprintf(stderr, "bad sizes (need nuclides*gridpoints <= 1e8, gridpoints >= 2, lookups <= 1e8)\n");
    return 1;
  }
  uint64_t rng = (uint64_t)seed;

  // ---- nuclide grids: strictly increasing energies from 0 to 1, random xs
  std::vector<GridPoint> grids((size_t)n_nuclides * n_grid);
  for (long long n = 0; n < n_nuclides; n++) {
    GridPoint* g = &grids[(size_t)n * n_grid];
    double cum = 0.0;
    for (long long p = 0; p < n_grid; p++) {
      g[p].energy = cum;
      cum += 0.5 + rand_uniform(rng);
      double elastic = 1.0 + 9.0 * rand_uniform(rng);
      double absorption = 0.1 + 1.9 * rand_uniform(rng);
      double fission = absorption * rand_uniform(rng);
      g[p].xs[0] = elastic + absorption;
      g[p].xs[1] = elastic;
      g[p].xs[2] = absorption;
      g[p].xs[3] = fission;
      g[p].xs[4] = fission * (2.3 + 0.3 * rand_uniform(rng));
    }
    double top = g[n_grid - 1].energy;
    for (long long p = 0; p < n_grid; p++) g[p].energy /= top;  // last point is exactly 1
  }

  // ---- materials: material 0 ("fuel") has many nuclides, the others few
  std::vector<int> mat_start(N_MATERIALS + 1, 0), mat_nuclide;
  std::vector<double> mat_conc;
  std::vector<int> perm(n_nuclides);
  for (int m = 0; m < N_MATERIALS; m++) {
    long long count = (m == 0) ? std::max(1LL, n_nuclides / 2)
                               : std::min(n_nuclides, 4 + (long long)(splitmix64(rng) % 17));
    for (long long n = 0; n < n_nuclides; n++) perm[n] = (int)n;
    for (long long j = 0; j < count; j++) {  // partial Fisher-Yates: distinct nuclides
      long long r = j + (long long)(splitmix64(rng) % (uint64_t)(n_nuclides - j));
      std::swap(perm[j], perm[r]);
      mat_nuclide.push_back(perm[j]);
      mat_conc.push_back(0.01 + rand_uniform(rng));
    }
    mat_start[m + 1] = (int)mat_nuclide.size();
  }

  // ---- lookups: 15% in the fuel, the rest spread over the other materials
  std::vector<double> lookup_energy(n_lookups);
  std::vector<int> lookup_mat(n_lookups);
  for (long long i = 0; i < n_lookups; i++) {
    lookup_energy[i] = rand_uniform(rng);
    lookup_mat[i] = rand_uniform(rng) < 0.15 ? 0 : 1 + (int)(splitmix64(rng) % (N_MATERIALS - 1));
  }
  printf("gather: %lld nuclides x %lld grid points (%.1f MiB), %lld lookups, fuel has %d nuclides\n",
         n_nuclides, n_grid, grids.size() * sizeof(GridPoint) / 1048576.0, n_lookups, mat_start[1]);

  GridPoint* d_grids;
  int *d_mat_start, *d_mat_nuclide, *d_lookup_mat;
  double *d_mat_conc, *d_lookup_energy, *d_macro;
  size_t out_count = (size_t)n_lookups * NUM_XS;
  CHECK(cudaMalloc(&d_grids, grids.size() * sizeof(GridPoint)));
  CHECK(cudaMalloc(&d_mat_start, mat_start.size() * sizeof(int)));
  CHECK(cudaMalloc(&d_mat_nuclide, mat_nuclide.size() * sizeof(int)));
  CHECK(cudaMalloc(&d_mat_conc, mat_conc.size() * sizeof(double)));
  CHECK(cudaMalloc(&d_lookup_energy, n_lookups * sizeof(double)));
  CHECK(cudaMalloc(&d_lookup_mat, n_lookups * sizeof(int)));
  CHECK(cudaMalloc(&d_macro, out_count * sizeof(double)));
  CHECK(cudaMemcpy(d_grids, grids.data(), grids.size() * sizeof(GridPoint), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_mat_start, mat_start.data(), mat_start.size() * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_mat_nuclide, mat_nuclide.data(), mat_nuclide.size() * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_mat_conc, mat_conc.data(), mat_conc.size() * sizeof(double), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_lookup_energy, lookup_energy.data(), n_lookups * sizeof(double), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_lookup_mat, lookup_mat.data(), n_lookups * sizeof(int), cudaMemcpyHostToDevice));

  int blocks = (int)((n_lookups + TPB - 1) / TPB);
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int pass = 0; pass < 2; pass++) {  // pass 0 = warm-up, pass 1 = timed
    CHECK(cudaMemset(d_macro, 0, out_count * sizeof(double)));
    CHECK(cudaEventRecord(start));
    xs_lookup_kernel<<<blocks, TPB>>>(d_grids, (int)n_grid, d_mat_start, d_mat_nuclide, d_mat_conc,
                                      d_lookup_energy, d_lookup_mat, d_macro, (int)n_lookups);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
  }
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));

  std::vector<double> macro(out_count);
  CHECK(cudaMemcpy(macro.data(), d_macro, out_count * sizeof(double), cudaMemcpyDeviceToHost));

  // ---- CPU reference with std::upper_bound; for big runs an evenly spaced
  //      subset of about 200k lookups is checked to keep the host time short.
  long long stride = std::max(1LL, n_lookups / 200000);
  std::string why;
  for (long long i = 0; i < n_lookups && why.empty(); i += stride) {
    double e = lookup_energy[i];
    int m = lookup_mat[i];
    double ref[NUM_XS] = {0.0, 0.0, 0.0, 0.0, 0.0};
    for (int j = mat_start[m]; j < mat_start[m + 1]; j++) {
      const GridPoint* g = &grids[(size_t)mat_nuclide[j] * n_grid];
      const GridPoint* up = std::upper_bound(g, g + n_grid, e, [](double v, const GridPoint& p) {
        return v < p.energy;
      });
      long long lo = std::min(std::max((long long)(up - g) - 1, 0LL), n_grid - 2);
      double f = (e - g[lo].energy) / (g[lo + 1].energy - g[lo].energy);
      for (int k = 0; k < NUM_XS; k++)
        ref[k] += mat_conc[j] * (g[lo].xs[k] + f * (g[lo + 1].xs[k] - g[lo].xs[k]));
    }
    for (int k = 0; k < NUM_XS && why.empty(); k++) {
      double got = macro[(size_t)i * NUM_XS + k];
      if (!(fabs(got - ref[k]) <= 1e-10 * fabs(ref[k]) + 1e-12)) {
        char buf[200];
        snprintf(buf, sizeof(buf), "lookup %lld xs %d: gpu %.17g cpu %.17g", i, k, got, ref[k]);
        why = buf;
      }
    }
  }

  // ---- output: int32 lookups, NUM_XS; double macro[lookups][NUM_XS]
  FILE* f = fopen(out_path.c_str(), "wb");
  if (!f) { fprintf(stderr, "cannot open %s\n", out_path.c_str()); return 1; }
  int32_t header[2] = {(int32_t)n_lookups, NUM_XS};
  bool ok = fwrite(header, sizeof(header), 1, f) == 1;
  ok = ok && fwrite(macro.data(), sizeof(double), out_count, f) == out_count;
  if (fclose(f) != 0 || !ok) { fprintf(stderr, "error writing %s\n", out_path.c_str()); return 1; }

  double total = 0.0;
  for (long long i = 0; i < n_lookups; i++) total += macro[(size_t)i * NUM_XS];
  printf("mean total macroscopic xs: %.6f (checked every %lld-th lookup)\n", total / n_lookups, stride);
  printf("kernel_time_ms: %.4f\n", ms);

  CHECK(cudaFree(d_grids));
  CHECK(cudaFree(d_mat_start));
  CHECK(cudaFree(d_mat_nuclide));
  CHECK(cudaFree(d_mat_conc));
  CHECK(cudaFree(d_lookup_energy));
  CHECK(cudaFree(d_lookup_mat));
  CHECK(cudaFree(d_macro));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));

  if (!why.empty()) {
    printf("check: FAIL (%s)\n", why.c_str());
    return 1;
  }
  printf("check: PASS\n");
  return 0;
}
