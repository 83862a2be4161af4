// lookup.cuh: per-nuclide energy-grid search and cross-section interpolation
// used by the gather example's lookup kernel.
#pragma once

#define NUM_XS 5  // total, elastic, absorption, fission, nu-fission

// One point of a nuclide's energy grid with its microscopic cross sections.
struct GridPoint {
  double energy;
  double xs[NUM_XS];
};

// Binary search: index lo with grid[lo].energy <= e < grid[lo+1].energy.
// Assumes a strictly increasing grid with grid[0].energy <= e < grid[n-1].energy;
// the result is clamped to [0, n-2] otherwise.
__device__ int grid_search(const GridPoint* grid, int n, double e) {
  int lo = 0;
  int hi = n - 1;
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (grid[mid].energy > e)
      hi = mid;
    else
      lo = mid;
  }
  return lo;
}

// Microscopic cross sections of one nuclide at energy e, by linear
// interpolation between the two bracketing grid points.
__device__ void micro_xs(const GridPoint* grid, int n, double e, double* xs) {
  int lo = grid_search(grid, n, e);
  double e0 = grid[lo].energy;
  double e1 = grid[lo + 1].energy;
  double f = (e - e0) / (e1 - e0);
  for (int k = 0; k < NUM_XS; k++)
    xs[k] = grid[lo].xs[k] + f * (grid[lo + 1].xs[k] - grid[lo].xs[k]);
}
