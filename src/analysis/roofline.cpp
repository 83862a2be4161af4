#include "analysis/roofline.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace optimas::analysis {

namespace {

using profile::k_nan;

// Mean of a metric over launches, ignoring launches where it is missing or not a number.
double mean(const std::vector<const profile::Launch*>& launches, const std::string& name) {
  double sum = 0;
  int n = 0;
  for (const auto* l : launches) {
    double v = l->value(name);
    if (std::isfinite(v)) {
      sum += v;
      ++n;
    }
  }
  return n ? sum / n : k_nan;
}

double ratio(double a, double b) {
  return std::isfinite(a) && std::isfinite(b) && b > 0 ? a / b : k_nan;
}
double clamp01(double v) {
  return std::isfinite(v) ? std::clamp(v, 0.0, 1.0) : v;
}
double nan_to_zero(double v) {
  return std::isfinite(v) ? v : 0;
}

// FLOP/s of one precision: (add + mul + 2 fma) per elapsed cycle x cycles per second, and the
// peak from the fma pipe (2 FLOP per fma), as ncu's roofline chart computes them.
Throughput precision(const std::vector<const profile::Launch*>& ls, const char* name, char p) {
  auto op = [&](const char* kind) {
    return mean(ls, fmt::format("smsp__sass_thread_inst_executed_op_{}{}_pred_on.sum.per_cycle_elapsed", p, kind));
  };
  double add = op("add"), mul = op("mul"), fma = op("fma");
  double per_second = mean(ls, "smsp__cycles_elapsed.avg.per_second");
  Throughput t{name, k_nan, k_nan, k_nan};
  if (std::isfinite(add) || std::isfinite(mul) || std::isfinite(fma))
    t.achieved = (nan_to_zero(add) + nan_to_zero(mul) + 2 * nan_to_zero(fma)) * per_second;
  double peak_fma = mean(ls, fmt::format("sm__sass_thread_inst_executed_op_{}fma_pred_on.sum.peak_sustained", p));
  t.peak = peak_fma * 2 * mean(ls, "sm__cycles_elapsed.avg.per_second");
  t.rho = clamp01(ratio(t.achieved, t.peak));
  return t;
}

const char* k_limiters[][2] = {{"launch__occupancy_limit_registers", "registers"},
                               {"launch__occupancy_limit_shared_mem", "shared memory"},
                               {"launch__occupancy_limit_warps", "warps"},
                               {"launch__occupancy_limit_blocks", "blocks"},
                               {"launch__occupancy_limit_barriers", "barriers"}};

// "1.23e+06", "1.2 M": counts of requests and conflicts read better rounded.
std::string count_text(double v) {
  if (v >= 1e9) return fmt::format("{:.1f} G", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.1f} M", v / 1e6);
  if (v >= 1e4) return fmt::format("{:.0f} K", v / 1e3);
  return fmt::format("{:.0f}", v);
}

std::string access_sentence(const MemoryAccess& a) {
  std::vector<std::string> parts;
  auto per_request = [&](const char* what, double v) {
    if (std::isfinite(v))
      parts.push_back(
          fmt::format("global {} use {:.1f} sectors per request (ideal 4 for 4-byte words, 8 for 8-byte)", what, v));
  };
  per_request("loads", a.global_load_sectors_per_request);
  per_request("stores", a.global_store_sectors_per_request);
  if (std::isfinite(a.shared_bank_conflicts) && std::isfinite(a.shared_wavefronts) && a.shared_wavefronts > 0)
    parts.push_back(fmt::format("shared memory has {} bank conflicts over {} wavefronts ({:.0f}%)",
                                count_text(a.shared_bank_conflicts), count_text(a.shared_wavefronts),
                                100 * a.shared_bank_conflicts / a.shared_wavefronts));
  else if (std::isfinite(a.shared_excessive_wavefronts) && std::isfinite(a.shared_ideal_wavefronts) &&
           a.shared_excessive_wavefronts + a.shared_ideal_wavefronts > 0)
    parts.push_back(
        fmt::format("shared accesses take {} wavefronts beyond the ideal {} ({:.0f}% of all: bank "
                    "conflicts)",
                    count_text(a.shared_excessive_wavefronts), count_text(a.shared_ideal_wavefronts),
                    100 * a.shared_excessive_wavefronts / (a.shared_excessive_wavefronts + a.shared_ideal_wavefronts)));
  if (std::isfinite(a.local_load_requests) && std::isfinite(a.local_store_requests)) {
    if (a.local_load_requests + a.local_store_requests > 0)
      parts.push_back(fmt::format("local memory takes {} load and {} store requests ({} sectors)",
                                  count_text(a.local_load_requests), count_text(a.local_store_requests),
                                  std::isfinite(a.local_sectors) ? count_text(a.local_sectors) : "n/a"));
    else
      parts.push_back("no local-memory traffic");
  }
  if (parts.empty()) return k_no_access_counters;
  std::string s = util::join(parts, "; ") + ".";
  s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

} // namespace

MemoryAccess compute_access(const std::vector<const profile::Launch*>& ls) {
  MemoryAccess a;
  a.global_load_sectors_per_request = ratio(mean(ls, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
                                            mean(ls, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"));
  a.global_store_sectors_per_request = ratio(mean(ls, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
                                             mean(ls, "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"));
  a.shared_bank_conflicts = mean(ls, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum");
  a.shared_wavefronts = mean(ls, "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum");
  a.local_load_requests = mean(ls, "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum");
  a.local_store_requests = mean(ls, "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum");
  a.local_sectors = mean(ls, "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum") +
                    mean(ls, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"); // NaN unless both are there
  double all = mean(ls, "memory_l1_wavefronts_shared");
  a.shared_ideal_wavefronts = mean(ls, "memory_l1_wavefronts_shared_ideal");
  a.shared_excessive_wavefronts = all - a.shared_ideal_wavefronts;
  if (!std::isfinite(a.shared_excessive_wavefronts))
    a.shared_excessive_wavefronts = mean(ls, "derived__memory_l1_wavefronts_shared_excessive");
  else
    a.shared_excessive_wavefronts = std::max(0.0, a.shared_excessive_wavefronts);
  a.summary = access_sentence(a);
  return a;
}

SpeedOfLight speed_of_light(const Roofline& r) {
  SpeedOfLight s;
  // The peak of the precision doing most of the work: an FP64 kernel is held to the FP64 peak.
  const Throughput* main = nullptr;
  for (const auto& t : r.compute)
    if (std::isfinite(t.achieved) && t.achieved > 0 && (!main || t.achieved > main->achieved)) main = &t;
  const bool flops = main && std::isfinite(main->peak) && main->peak > 0 && r.flops > 0;
  auto consider = [&](double fraction, std::string limit) {
    if (std::isfinite(fraction) && !(fraction <= s.fraction)) {
      s.fraction = fraction;
      s.limit = std::move(limit);
    }
  };
  if (flops)
    consider(clamp01(r.flops / main->peak), main->name + " peak");
  else
    consider(r.sm_throughput, "SM throughput");
  // flops / (intensity x bandwidth) = bytes per second / bandwidth: each level's own fraction,
  // over the kernel's whole time (L1's is of its active cycles: scaled by their share, and left
  // out where the profile lacks it, as it would overstate a kernel that keeps few SMs busy).
  for (const auto& m : r.memory) {
    double fraction = m.name == "L1"                                          ? m.rho * r.l1_active_share
                      : m.name == "L2" && std::isfinite(r.l2_sector_fraction) ? r.l2_sector_fraction
                                                                              : m.rho;
    consider(fraction, m.name + " bandwidth");
  }
  if (!std::isfinite(s.fraction)) return s;
  if (flops) {
    s.attainable = r.flops / std::max(s.fraction, 1e-12);
    double intensity = s.limit == "DRAM bandwidth" ? r.intensity_dram
                       : s.limit == "L2 bandwidth" ? r.intensity_l2
                       : s.limit == "L1 bandwidth" ? r.intensity_l1
                                                   : k_nan;
    s.sentence = std::isfinite(intensity)
                     ? fmt::format("At {:.0f}% of its roofline: {} binds at {:.3g} FLOP/byte", 100 * s.fraction,
                                   s.limit, intensity)
                     : fmt::format("At {:.0f}% of its roofline: the {} binds", 100 * s.fraction, s.limit);
  } else {
    s.sentence =
        fmt::format("At {:.0f}% of its speed of light (no floating-point work): {} binds", 100 * s.fraction, s.limit);
  }
  return s;
}

std::string roofline_sentence(double rho_compute, double rho_memory, double tau_sat) {
  auto part = [&](const char* what, double rho) {
    if (!std::isfinite(rho)) return fmt::format("{} not measured", what);
    return fmt::format("{} {} ({:.0f}%)", what, rho >= tau_sat ? "saturated" : "underutilized", 100 * rho);
  };
  return part("Compute", rho_compute) + ", " + part("memory bandwidth", rho_memory);
}

Roofline compute_roofline(const std::string& kernel, const std::vector<const profile::Launch*>& ls, double tau_sat) {
  Roofline r;
  r.kernel = kernel;
  r.launches = static_cast<int>(ls.size());
  r.duration_ns = mean(ls, "gpu__time_duration.sum");

  for (auto [name, p] : {std::pair{"FP64", 'd'}, {"FP32", 'f'}, {"FP16", 'h'}}) {
    Throughput t = precision(ls, name, p);
    if (std::isfinite(t.achieved) || std::isfinite(t.peak)) r.compute.push_back(t);
  }
  double flops = 0;
  bool any_flops = false;
  for (const auto& t : r.compute)
    if (std::isfinite(t.achieved)) {
      flops += t.achieved;
      any_flops = true;
    }
  r.flops = any_flops ? flops : k_nan;

  double seconds = r.duration_ns * 1e-9;
  Throughput dram{"DRAM", mean(ls, "dram__bytes.sum.per_second"), k_nan, k_nan};
  dram.peak = mean(ls, "dram__bytes.sum.peak_sustained") * mean(ls, "dram__cycles_elapsed.avg.per_second");
  dram.rho = clamp01(ratio(dram.achieved, dram.peak));
  if (!std::isfinite(dram.rho))
    dram.rho = clamp01(mean(ls, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed") / 100);
  Throughput l2{"L2", ratio(mean(ls, "lts__t_bytes.sum"), seconds), k_nan,
                clamp01(mean(ls, "lts__throughput.avg.pct_of_peak_sustained_elapsed") / 100)};
  Throughput l1{"L1", ratio(mean(ls, "l1tex__t_bytes.sum"), seconds), k_nan,
                clamp01(mean(ls, "l1tex__throughput.avg.pct_of_peak_sustained_active") / 100)};
  // Peaks for L2 and L1 follow from ncu's own percentage of peak.
  l2.peak = ratio(l2.achieved, l2.rho);
  l1.peak = ratio(l1.achieved, l1.rho);
  r.memory = {dram, l2, l1};
  r.intensity_dram = ratio(r.flops, dram.achieved);
  r.intensity_l2 = ratio(r.flops, l2.achieved);
  r.intensity_l1 = ratio(r.flops, l1.achieved);

  // rho_compute: the busiest FLOP pipe, or ncu's SM throughput when that is higher (integer
  // and control-heavy kernels use the SM without floating-point work).
  r.sm_throughput = clamp01(mean(ls, "sm__throughput.avg.pct_of_peak_sustained_elapsed") / 100);
  r.l2_sector_fraction = clamp01(mean(ls, "lts__t_sectors.avg.pct_of_peak_sustained_elapsed") / 100);
  r.l1_active_share = clamp01(ratio(mean(ls, "l1tex__cycles_active.avg"), mean(ls, "l1tex__cycles_elapsed.avg")));
  for (const auto& t : r.compute)
    if (std::isfinite(t.rho) && !(t.rho <= r.rho_compute)) {
      r.rho_compute = t.rho;
      r.compute_basis = t.name + " pipe";
    }
  if (std::isfinite(r.sm_throughput) && !(r.sm_throughput <= r.rho_compute)) {
    r.rho_compute = r.sm_throughput;
    r.compute_basis = "SM throughput";
  }
  for (const auto& t : r.memory)
    if (std::isfinite(t.rho) && !(t.rho <= r.rho_memory)) {
      r.rho_memory = t.rho;
      r.memory_basis = t.name;
    }
  r.compute_saturated = std::isfinite(r.rho_compute) && r.rho_compute >= tau_sat;
  r.memory_saturated = std::isfinite(r.rho_memory) && r.rho_memory >= tau_sat;
  if (r.compute_saturated || r.memory_saturated) {
    bool compute_higher = nan_to_zero(r.rho_compute) >= nan_to_zero(r.rho_memory);
    r.bound = (r.compute_saturated && (compute_higher || !r.memory_saturated)) ? "compute-bound" : "memory-bound";
  } else {
    r.bound = "latency-bound";
  }
  r.summary = roofline_sentence(r.rho_compute, r.rho_memory, tau_sat);
  r.sol = speed_of_light(r);

  r.achieved_occupancy = mean(ls, "sm__warps_active.avg.pct_of_peak_sustained_active");
  r.theoretical_occupancy = mean(ls, "sm__maximum_warps_per_active_cycle_pct");
  r.eligible_warps = mean(ls, "smsp__warps_eligible.avg.per_cycle_active");
  r.issue_per_cycle = mean(ls, "smsp__issue_active.avg.per_cycle_active");
  r.registers_per_thread = mean(ls, "launch__registers_per_thread");
  r.waves = mean(ls, "launch__waves_per_multiprocessor");
  for (const auto* l : ls)
    r.block_size = std::max<int>(r.block_size, static_cast<int>(l->block[0] * l->block[1] * l->block[2]));
  double lowest = k_nan;
  for (const auto& [metric, label] : k_limiters) {
    double blocks = mean(ls, metric);
    if (!std::isfinite(blocks)) continue;
    r.occupancy_limits.emplace_back(label, blocks);
    if (!(blocks >= lowest)) {
      lowest = blocks;
      r.occupancy_limiter = label;
    } else if (blocks == lowest) {
      r.occupancy_limiter += std::string(", ") + label;
    }
  }
  r.access = compute_access(ls);
  return r;
}

} // namespace optimas::analysis
