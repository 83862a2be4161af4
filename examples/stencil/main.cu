// stencil: SW4Lite-like 3D acoustic wave propagation, 4th order in space,
// 2nd order (leapfrog) in time, on a grid with two ghost layers per side.
//
// Per time step:
//   apply_bc_kernel  fill the ghost layers of u by even reflection (free surface)
//   rhs_kernel       rhs = c^2 * Laplacian_4th(u)          (13-point stencil)
//   update_kernel    u_next = 2u - u_prev + dt^2 (rhs + Ricker point source)
// then the three time levels rotate.
//
// Usage: ./stencil --n N --steps T --seed S --out PATH      (grid N^3 interior points)
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <string>
#include <vector>
#include <algorithm>

#define CHECK(call)                                                           \
  do {                                                                        \
    cudaError_t err_ = (call);                                                \
    if (err_ != cudaSuccess) {                                                \
      fprintf(stderr, "CUDA error at %s:%d: %s (%s)\n", __FILE__, __LINE__,   \
              cudaGetErrorString(err_), #call);                               \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

// linear index into a padded (nx+4) x (ny+4) x (nz+4) array; i, j, k include the ghosts
#define IDX(i, j, k) ((((size_t)(k)) * (ny + 4) + (j)) * (nx + 4) + (i))

const double PI = 3.14159265358979323846;

// face = blockIdx.z: 0/1 = x low/high, 2/3 = y low/high, 4/5 = z low/high.
// Ghost points g-1, g-2 mirror the interior points g+1, g+2 around the boundary point g.
__global__ void apply_bc_kernel(double* u, int nx, int ny, int nz) {
  int a = blockIdx.x * blockDim.x + threadIdx.x + 2;
  int b = blockIdx.y * blockDim.y + threadIdx.y + 2;
  int face = blockIdx.z;
  if (face < 2) {
    if (a >= ny + 2 || b >= nz + 2) return;
    if (face == 0) {
      u[IDX(1, a, b)] = u[IDX(3, a, b)];
      u[IDX(0, a, b)] = u[IDX(4, a, b)];
    } else {
      u[IDX(nx + 2, a, b)] = u[IDX(nx, a, b)];
      u[IDX(nx + 3, a, b)] = u[IDX(nx - 1, a, b)];
    }
  } else if (face < 4) {
    if (a >= nx + 2 || b >= nz + 2) return;
    if (face == 2) {
      u[IDX(a, 1, b)] = u[IDX(a, 3, b)];
      u[IDX(a, 0, b)] = u[IDX(a, 4, b)];
    } else {
      u[IDX(a, ny + 2, b)] = u[IDX(a, ny, b)];
      u[IDX(a, ny + 3, b)] = u[IDX(a, ny - 1, b)];
    }
  } else {
    if (a >= nx + 2 || b >= ny + 2) return;
    if (face == 4) {
      u[IDX(a, b, 1)] = u[IDX(a, b, 3)];
      u[IDX(a, b, 0)] = u[IDX(a, b, 4)];
    } else {
      u[IDX(a, b, nz + 2)] = u[IDX(a, b, nz)];
      u[IDX(a, b, nz + 3)] = u[IDX(a, b, nz - 1)];
    }
  }
}

__global__ void rhs_kernel(const double* u, const double* c2, double* rhs, int nx, int ny, int nz,
                           double inv_12h2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x + 2;
  int j = blockIdx.y * blockDim.y + threadIdx.y + 2;
  int k = blockIdx.z * blockDim.z + threadIdx.z + 2;
  if (i >= nx + 2 || j >= ny + 2 || k >= nz + 2) return;
  double uxx = -u[IDX(i - 2, j, k)] + 16.0 * u[IDX(i - 1, j, k)] - 30.0 * u[IDX(i, j, k)] +
               16.0 * u[IDX(i + 1, j, k)] - u[IDX(i + 2, j, k)];
  double uyy = -u[IDX(i, j - 2, k)] + 16.0 * u[IDX(i, j - 1, k)] - 30.0 * u[IDX(i, j, k)] +
               16.0 * u[IDX(i, j + 1, k)] - u[IDX(i, j + 2, k)];
  double uzz = -u[IDX(i, j, k - 2)] + 16.0 * u[IDX(i, j, k - 1)] - 30.0 * u[IDX(i, j, k)] +
               16.0 * u[IDX(i, j, k + 1)] - u[IDX(i, j, k + 2)];
  rhs[IDX(i, j, k)] = c2[IDX(i, j, k)] * (uxx + uyy + uzz) * inv_12h2;
}

__global__ void update_kernel(const double* u_prev, const double* u, const double* rhs,
                              double* u_next, int nx, int ny, int nz, double dt2, int si, int sj,
                              int sk, double source) {
  int i = blockIdx.x * blockDim.x + threadIdx.x + 2;
  int j = blockIdx.y * blockDim.y + threadIdx.y + 2;
  int k = blockIdx.z * blockDim.z + threadIdx.z + 2;
  if (i >= nx + 2 || j >= ny + 2 || k >= nz + 2) return;
  double v = 2.0 * u[IDX(i, j, k)] - u_prev[IDX(i, j, k)] + dt2 * rhs[IDX(i, j, k)];
  if (i == si && j == sj && k == sk) v += dt2 * source;
  u_next[IDX(i, j, k)] = v;
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

static double ricker(double t, double f0, double t0) {
  double a = PI * PI * f0 * f0 * (t - t0) * (t - t0);
  return (1.0 - 2.0 * a) * exp(-a);
}

int main(int argc, char** argv) {
  long long n = 192, steps = 12, seed = 42;
  std::string out_path;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) { fprintf(stderr, "missing value for %s\n", key.c_str()); return 1; }
    if (key == "--n") n = parse_int(argv[i + 1], "n");
    else if (key == "--steps") steps = parse_int(argv[i + 1], "steps");
    else if (key == "--seed") seed = parse_int(argv[i + 1], "seed");
    else if (key == "--out") out_path = argv[i + 1];
    else { fprintf(stderr, "unknown option %s\n", key.c_str()); return 1; }
  }
  if (out_path.empty()) {
    fprintf(stderr, "usage: %s --n N --steps T --seed S --out PATH\n", argv[0]);
    return 1;
  }
  if (n < 8 || n > 600 || steps < 1) { fprintf(stderr, "bad sizes (need 8 <= n <= 600)\n"); return 1; }
  const int nx = (int)n, ny = (int)n, nz = (int)n;
  size_t total = (size_t)(nx + 4) * (ny + 4) * (nz + 4);
  size_t bytes = total * sizeof(double);
  uint64_t rng = (uint64_t)seed;

  // ---- layered velocity model with small random perturbations (grid spacing h = 1)
  std::vector<double> c2(total, 0.0), u0(total, 0.0);
  double layer_c[6];
  for (double& c : layer_c) c = 1.0 + rand_uniform(rng);
  double cmax = 0.0;
  for (int k = 2; k < nz + 2; k++)
    for (int j = 2; j < ny + 2; j++)
      for (int i = 2; i < nx + 2; i++) {
        double c = layer_c[(k - 2) * 6 / nz] * (1.0 + 0.02 * (rand_uniform(rng) - 0.5));
        c2[IDX(i, j, k)] = c * c;
        cmax = std::max(cmax, c);
      }
  // ---- initial field: three Gaussian pulses plus a little noise, zero initial velocity
  double px[3], py[3], pz[3], pw[3], pa[3];
  for (int p = 0; p < 3; p++) {
    px[p] = 2 + nx * rand_uniform(rng);
    py[p] = 2 + ny * rand_uniform(rng);
    pz[p] = 2 + nz * rand_uniform(rng);
    pw[p] = n * (1.0 / 12 + rand_uniform(rng) / 12);
    pa[p] = (rand_uniform(rng) < 0.5 ? -1.0 : 1.0) * (0.5 + rand_uniform(rng));
  }
  for (int k = 2; k < nz + 2; k++)
    for (int j = 2; j < ny + 2; j++)
      for (int i = 2; i < nx + 2; i++) {
        double v = 0.01 * (rand_uniform(rng) - 0.5);
        for (int p = 0; p < 3; p++) {
          double r2 = (i - px[p]) * (i - px[p]) + (j - py[p]) * (j - py[p]) + (k - pz[p]) * (k - pz[p]);
          v += pa[p] * exp(-r2 / (2.0 * pw[p] * pw[p]));
        }
        u0[IDX(i, j, k)] = v;
      }
  const double dt = 0.4 / cmax;  // CFL: c dt / h <= 0.5 for this scheme in 3D
  const double dt2 = dt * dt, inv_12h2 = 1.0 / 12.0;
  const double f0 = 2.0 / (steps * dt + dt), t0 = 0.5 * steps * dt;
  const int si = 2 + (int)(splitmix64(rng) % nx), sj = 2 + (int)(splitmix64(rng) % ny),
            sk = 2 + (int)(splitmix64(rng) % nz);
  printf("stencil: %d^3 grid (%.1f MiB per field), %lld steps, dt = %.5f\n", nx,
         bytes / 1048576.0, steps, dt);

  double *d_prev, *d_u, *d_next, *d_rhs, *d_c2;
  CHECK(cudaMalloc(&d_prev, bytes));
  CHECK(cudaMalloc(&d_u, bytes));
  CHECK(cudaMalloc(&d_next, bytes));
  CHECK(cudaMalloc(&d_rhs, bytes));
  CHECK(cudaMalloc(&d_c2, bytes));
  CHECK(cudaMemcpy(d_c2, c2.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_rhs, 0, bytes));

#ifndef SX  // the 3D kernels' block, one thread per point; tunable: -DSX=... -DSY=... -DSZ=...
#define SX 8
#endif
#ifndef SY
#define SY 8
#endif
#ifndef SZ
#define SZ 8
#endif
  dim3 block(SX, SY, SZ);
  dim3 grid((nx + SX - 1) / SX, (ny + SY - 1) / SY, (nz + SZ - 1) / SZ);
  int face_a = std::max(nx, ny), face_b = std::max(ny, nz);
  dim3 bc_block(16, 16), bc_grid((face_a + 15) / 16, (face_b + 15) / 16, 6);

  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  float ms = 0.0f;
  for (int pass = 0; pass < 2; pass++) {  // pass 0 = one warm-up step, pass 1 = timed run
    CHECK(cudaMemcpy(d_prev, u0.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_u, u0.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_next, 0, bytes));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventRecord(start));
    long long nsteps = (pass == 0) ? 1 : steps;
    for (long long s = 0; s < nsteps; s++) {
      apply_bc_kernel<<<bc_grid, bc_block>>>(d_u, nx, ny, nz);
      CHECK(cudaGetLastError());
      rhs_kernel<<<grid, block>>>(d_u, d_c2, d_rhs, nx, ny, nz, inv_12h2);
      CHECK(cudaGetLastError());
      update_kernel<<<grid, block>>>(d_prev, d_u, d_rhs, d_next, nx, ny, nz, dt2, si, sj, sk,
                                     100.0 * ricker(s * dt, f0, t0));
      CHECK(cudaGetLastError());
      double* tmp = d_prev;
      d_prev = d_u;
      d_u = d_next;
      d_next = tmp;
    }
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
  }
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  std::vector<double> result(total);
  CHECK(cudaMemcpy(result.data(), d_u, bytes, cudaMemcpyDeviceToHost));

  // ---- CPU reference: the same three phases per step
  std::vector<double> prev = u0, u = u0, next(total, 0.0), rhs(total, 0.0);
  for (long long s = 0; s < steps; s++) {
    for (int b = 2; b < nz + 2; b++)
      for (int a = 2; a < ny + 2; a++) {
        u[IDX(1, a, b)] = u[IDX(3, a, b)];           u[IDX(0, a, b)] = u[IDX(4, a, b)];
        u[IDX(nx + 2, a, b)] = u[IDX(nx, a, b)];     u[IDX(nx + 3, a, b)] = u[IDX(nx - 1, a, b)];
      }
    for (int b = 2; b < nz + 2; b++)
      for (int a = 2; a < nx + 2; a++) {
        u[IDX(a, 1, b)] = u[IDX(a, 3, b)];           u[IDX(a, 0, b)] = u[IDX(a, 4, b)];
        u[IDX(a, ny + 2, b)] = u[IDX(a, ny, b)];     u[IDX(a, ny + 3, b)] = u[IDX(a, ny - 1, b)];
      }
    for (int b = 2; b < ny + 2; b++)
      for (int a = 2; a < nx + 2; a++) {
        u[IDX(a, b, 1)] = u[IDX(a, b, 3)];           u[IDX(a, b, 0)] = u[IDX(a, b, 4)];
        u[IDX(a, b, nz + 2)] = u[IDX(a, b, nz)];     u[IDX(a, b, nz + 3)] = u[IDX(a, b, nz - 1)];
      }
    double src = 100.0 * ricker(s * dt, f0, t0);
    for (int k = 2; k < nz + 2; k++)
      for (int j = 2; j < ny + 2; j++)
        for (int i = 2; i < nx + 2; i++) {
          size_t c = IDX(i, j, k), sx = 1, sy = nx + 4, sz = (size_t)(nx + 4) * (ny + 4);
          double lap = (-u[c - 2 * sx] + 16.0 * u[c - sx] - 30.0 * u[c] + 16.0 * u[c + sx] - u[c + 2 * sx]) +
                       (-u[c - 2 * sy] + 16.0 * u[c - sy] - 30.0 * u[c] + 16.0 * u[c + sy] - u[c + 2 * sy]) +
                       (-u[c - 2 * sz] + 16.0 * u[c - sz] - 30.0 * u[c] + 16.0 * u[c + sz] - u[c + 2 * sz]);
          double v = 2.0 * u[c] - prev[c] + dt2 * (c2[c] * lap * inv_12h2);
          if (i == si && j == sj && k == sk) v += dt2 * src;
          next[c] = v;
        }
    prev.swap(u);
    u.swap(next);
  }

  double maxref = 0.0, maxdiff = 0.0;
  size_t worst = 0;
  for (int k = 2; k < nz + 2; k++)
    for (int j = 2; j < ny + 2; j++)
      for (int i = 2; i < nx + 2; i++) {
        size_t c = IDX(i, j, k);
        maxref = std::max(maxref, fabs(u[c]));
        double d = fabs(result[c] - u[c]);
        if (!(d <= maxdiff)) { maxdiff = d; worst = c; }  // also catches NaN
      }
  std::string why;
  if (!(maxdiff <= 1e-9 * maxref)) {
    char buf[200];
    snprintf(buf, sizeof(buf), "max |gpu - cpu| = %.3e at index %zu (gpu %.17g cpu %.17g), max |u| = %.3e",
             maxdiff, worst, result[worst], u[worst], maxref);
    why = buf;
  }

  // ---- output: int32 nx, ny, nz, steps; then the interior of u as doubles (x fastest)
  FILE* f = fopen(out_path.c_str(), "wb");
  if (!f) { fprintf(stderr, "cannot open %s\n", out_path.c_str()); return 1; }
  int32_t header[4] = {nx, ny, nz, (int32_t)steps};
  bool ok = fwrite(header, sizeof(header), 1, f) == 1;
  for (int k = 2; k < nz + 2 && ok; k++)
    for (int j = 2; j < ny + 2 && ok; j++)
      ok = fwrite(&result[IDX(2, j, k)], sizeof(double), nx, f) == (size_t)nx;
  if (fclose(f) != 0 || !ok) { fprintf(stderr, "error writing %s\n", out_path.c_str()); return 1; }

  printf("max |u| after %lld steps: %.6e, max |gpu - cpu| = %.3e\n", steps, maxref, maxdiff);
  printf("kernel_time_ms: %.4f\n", ms);

  CHECK(cudaFree(d_prev));
  CHECK(cudaFree(d_u));
  CHECK(cudaFree(d_next));
  CHECK(cudaFree(d_rhs));
  CHECK(cudaFree(d_c2));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));

  if (!why.empty()) {
    printf("check: FAIL (%s)\n", why.c_str());
    return 1;
  }
  printf("check: PASS\n");
  return 0;
}
