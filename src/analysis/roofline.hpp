// Roofline (paper 2.1.2): achieved FLOP/s per precision and bandwidth per memory level against
// the peaks ncu reports for the same run, utilisation ratios rho, and the occupancy picture.
#pragma once

#include "profile/profile.hpp"

#include <string>
#include <vector>

namespace optimas::analysis {

inline constexpr double k_default_tau_sat = 0.70;

struct Throughput {
  std::string name; // "FP64", "DRAM", ...
  double achieved;  // FLOP/s or byte/s; NaN when not measured
  double peak;      // same unit; NaN when ncu gave no peak
  double rho;       // achieved / peak in [0, 1]; NaN when unknown
};

// How the kernel's memory instructions use the memory system (Best Practices Guide, "Coalesced
// Access to Global Memory", "Shared Memory and Memory Banks", "Local Memory"), from the l1tex
// counters default_metrics() asks for; NaN where the profile lacks a metric.
struct MemoryAccess {
  double global_load_sectors_per_request = profile::k_nan; // 4 when a warp reads 32 consecutive 4-byte words
  double global_store_sectors_per_request = profile::k_nan;
  double shared_bank_conflicts = profile::k_nan; // l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
  double shared_wavefronts = profile::k_nan;     // l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
  double local_load_requests = profile::k_nan;
  double local_store_requests = profile::k_nan;
  double local_sectors = profile::k_nan; // loads and stores
  // SourceCounters' own figures, in every profile of ours (also those recorded before the
  // counters above were asked for): shared wavefronts beyond the ideal, and the ideal.
  double shared_excessive_wavefronts = profile::k_nan;
  double shared_ideal_wavefronts = profile::k_nan;
  std::string summary; // one sentence
};

// MemoryAccess::summary when the profile has none of the counters.
inline constexpr const char* k_no_access_counters = "The profile holds no memory-access counters.";

// The memory-access figures of a kernel's launches (metrics averaged over them).
MemoryAccess compute_access(const std::vector<const profile::Launch*>& launches);

// How close a kernel runs to its roofline (issue #30): its achieved FLOP/s against what the
// roofline allows at its arithmetic intensity, min(peak compute, intensity x peak bandwidth) over
// the memory levels, at the ceiling that binds. Since intensity x bandwidth is FLOP/s per byte/s,
// the fraction is the largest of the FLOP/s against the peak and each level's bandwidth
// fraction. A kernel without floating-point work has no intensity: its fraction is the largest
// of the SM's instruction throughput and each level's bandwidth fraction.
struct SpeedOfLight {
  double fraction = profile::k_nan;   // [0, 1]; NaN when nothing was measured
  std::string limit;                  // the ceiling that binds: "FP64 peak", "DRAM bandwidth", "SM throughput"
  double attainable = profile::k_nan; // FLOP/s the roofline allows at the kernel's intensity (NaN without FLOPs)
  std::string sentence;               // "At 61% of its roofline: DRAM bandwidth binds at 0.08 FLOP/byte"
};

struct Roofline {
  std::string id; // evidence ID, "RF1"
  std::string kernel;
  int launches = 0;
  double duration_ns = profile::k_nan; // mean over the kernel's launches

  std::vector<Throughput> compute;        // FP64, FP32, FP16 where measured
  std::vector<Throughput> memory;         // DRAM, L2, L1
  double flops = profile::k_nan;          // FLOP/s, all precisions
  double intensity_dram = profile::k_nan; // FLOP per byte at each level
  double intensity_l2 = profile::k_nan;
  double intensity_l1 = profile::k_nan;
  double sm_throughput = profile::k_nan; // ncu's SM speed-of-light, [0, 1]
  // The share of the kernel's time its L1 units were active: the L1 figure above is of active
  // cycles (ncu has no elapsed one), the speed of light counts all of them.
  double l1_active_share = profile::k_nan;
  // L2's bandwidth alone (its sectors against their peak): the L2 figure above is ncu's L2
  // throughput, the busiest of its units, which on a two-partition L2 counts the traffic between
  // the partitions too.
  double l2_sector_fraction = profile::k_nan;

  double rho_compute = profile::k_nan;
  double rho_memory = profile::k_nan;
  std::string compute_basis; // what set rho_compute ("FP64 pipe", "SM throughput")
  std::string memory_basis;  // what set rho_memory ("DRAM", "L2", "L1")
  bool compute_saturated = false;
  bool memory_saturated = false;
  std::string bound;   // "compute-bound", "memory-bound", "latency-bound"
  std::string summary; // "Compute underutilized (62%), memory bandwidth saturated (91%)"
  SpeedOfLight sol;

  double achieved_occupancy = profile::k_nan;    // % of the maximum warps
  double theoretical_occupancy = profile::k_nan; // %
  double eligible_warps = profile::k_nan;        // per cycle per scheduler
  double issue_per_cycle = profile::k_nan;       // instructions issued per active cycle per scheduler
  std::string occupancy_limiter;                 // "registers", "shared memory", "warps", "blocks", "barriers"
  std::vector<std::pair<std::string, double>> occupancy_limits; // blocks per SM each resource allows
  double registers_per_thread = profile::k_nan;
  int block_size = 0; // threads per block of the profiled launches (the largest, if they differ)
  // The grid's blocks over the blocks the SMs hold at once (launch__waves_per_multiprocessor):
  // below 1, part of the GPU has nothing to run.
  double waves = profile::k_nan;
  // The grid fills less than half a wave: the diagnostics say so, and the tuning stage's grid
  // knob (tune/discover.cpp) acts on it.
  bool short_grid() const { return waves > 0 && waves < 0.5; }
  MemoryAccess access;
};

// Computes the roofline of one kernel from its launches (metrics averaged over them).
// `launches` must all be of that kernel.
Roofline compute_roofline(const std::string& kernel, const std::vector<const profile::Launch*>& launches,
                          double tau_sat = k_default_tau_sat);

// The speed of light of a roofline's figures (compute, memory, flops, intensities, sm_throughput).
SpeedOfLight speed_of_light(const Roofline& r);

// "Compute underutilized (62%), memory bandwidth saturated (91%)"
std::string roofline_sentence(double rho_compute, double rho_memory, double tau_sat);

} // namespace optimas::analysis
