#include "analysis/roofline.hpp"
#include "profile/importer.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <set>

using namespace optimas::analysis;
using optimas::test::data_path;

namespace {

// How far our speed of light may lie from ncu's (a fraction of the peak), see the test below.
constexpr double k_sol_tolerance = 0.05;

std::vector<const optimas::profile::Launch*> launches_of(const optimas::profile::Run& run, const std::string& kernel) {
  std::vector<const optimas::profile::Launch*> out;
  for (const auto& l : run.launches)
    if (l.kernel == kernel) out.push_back(&l);
  return out;
}

const Throughput* find(const std::vector<Throughput>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return &t;
  return nullptr;
}

} // namespace

TEST(Roofline, SentenceAsInThePaper) {
  EXPECT_EQ(roofline_sentence(0.62, 0.91, 0.70), "Compute underutilized (62%), memory bandwidth saturated (91%)");
  EXPECT_EQ(roofline_sentence(0.70, 0.10, 0.70), "Compute saturated (70%), memory bandwidth underutilized (10%)");
}

// ncu-formats.md: "Checked on dloop: 24.33 TFLOP/s FP64 of 25.30 peak (96%); DRAM peak 4.81 TB/s."
TEST(Roofline, DloopMatchesNcuOwnRooflineChart) {
  auto prof = optimas::profile::import_profile(data_path("ncu-samples"));
  auto r = compute_roofline("dloop", launches_of(prof.runs[0], "dloop"));
  EXPECT_EQ(r.launches, 2);
  const Throughput* fp64 = find(r.compute, "FP64");
  ASSERT_NE(fp64, nullptr);
  EXPECT_NEAR(fp64->achieved / 1e12, 24.33, 0.01);
  EXPECT_NEAR(fp64->peak / 1e12, 25.30, 0.01);
  EXPECT_NEAR(fp64->rho, 0.96, 0.005);
  const Throughput* dram = find(r.memory, "DRAM");
  ASSERT_NE(dram, nullptr);
  EXPECT_NEAR(dram->peak / 1e12, 4.81, 0.01);
  EXPECT_EQ(r.bound, "compute-bound");
  EXPECT_TRUE(r.compute_saturated);
  EXPECT_FALSE(r.memory_saturated);
  EXPECT_EQ(r.occupancy_limiter, "warps");
  // The intensity follows from the two measured rates.
  EXPECT_NEAR(r.intensity_dram, r.flops / dram->achieved, 1e-9 * r.intensity_dram);
}

// Recorded on the H200: our DRAM utilisation (bytes / peak) agrees with ncu's own
// gpu__dram_throughput percentage, and triad is memory-bound.
TEST(Roofline, RecordedStreamTriadCrossChecksNcu) {
  auto prof = optimas::profile::import_profile(data_path("h200/stream"));
  const auto& run = prof.runs[1];
  auto ls = launches_of(run, "triad_kernel");
  ASSERT_FALSE(ls.empty());
  auto r = compute_roofline("triad_kernel", ls);
  const Throughput* dram = find(r.memory, "DRAM");
  ASSERT_NE(dram, nullptr);
  EXPECT_NEAR(dram->rho, ls[0]->value("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed") / 100, 0.005);
  EXPECT_NEAR(dram->achieved, ls[0]->value("dram__bytes.sum.per_second"), 1.0);
  EXPECT_EQ(r.bound, "memory-bound");
  EXPECT_TRUE(r.memory_saturated);
  EXPECT_EQ(r.summary.rfind("Compute underutilized", 0), 0u);
  EXPECT_NEAR(r.achieved_occupancy, ls[0]->value("sm__warps_active.avg.pct_of_peak_sustained_active"), 1e-9);
}

TEST(Roofline, LatencyBoundWhenNothingIsSaturated) {
  optimas::profile::Launch l;
  l.kernel = "k";
  l.metrics["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = {30, "%", ""};
  l.metrics["lts__throughput.avg.pct_of_peak_sustained_elapsed"] = {40, "%", ""};
  l.metrics["gpu__time_duration.sum"] = {1000, "ns", ""};
  auto r = compute_roofline("k", {&l});
  EXPECT_EQ(r.bound, "latency-bound");
  EXPECT_DOUBLE_EQ(r.rho_compute, 0.30);
  EXPECT_DOUBLE_EQ(r.rho_memory, 0.40);
  EXPECT_EQ(r.memory_basis, "L2");
  EXPECT_EQ(r.summary, "Compute underutilized (30%), memory bandwidth underutilized (40%)");
}

// The access figures from the --set full sample (ncu-samples/raw_base.csv, checked by hand):
// saxpy loads 4,194,304 sectors in 1,048,576 requests (4 per request: 4-byte words), dloop's
// doubles 4,194,304 in 524,288 (8); no shared-memory conflicts, no local traffic.
TEST(Roofline, AccessFiguresFromTheSetFullSample) {
  auto prof = optimas::profile::import_profile(data_path("ncu-samples"));
  auto saxpy = compute_roofline("saxpy", launches_of(prof.runs[0], "saxpy")).access;
  EXPECT_DOUBLE_EQ(saxpy.global_load_sectors_per_request, 4.0);
  EXPECT_NEAR(saxpy.global_store_sectors_per_request, (2097216.0 + 2096776.0) / 2 / 524288, 1e-12);
  EXPECT_DOUBLE_EQ(saxpy.shared_bank_conflicts, 0);
  EXPECT_DOUBLE_EQ(saxpy.shared_wavefronts, 524288);
  EXPECT_DOUBLE_EQ(saxpy.local_load_requests, 0);
  EXPECT_DOUBLE_EQ(saxpy.local_store_requests, 0);
  EXPECT_DOUBLE_EQ(saxpy.local_sectors, 0);
  EXPECT_EQ(saxpy.summary.rfind("Global loads use 4.0 sectors per request (ideal 4 for 4-byte words", 0), 0u)
      << saxpy.summary;
  EXPECT_NE(saxpy.summary.find("shared memory has 0 bank conflicts over 524 K wavefronts (0%)"), std::string::npos)
      << saxpy.summary;
  EXPECT_NE(saxpy.summary.find("no local-memory traffic."), std::string::npos) << saxpy.summary;
  auto dloop = compute_roofline("dloop", launches_of(prof.runs[0], "dloop")).access;
  EXPECT_DOUBLE_EQ(dloop.global_load_sectors_per_request, 8.0);
}

// Profiles recorded before the l1tex counters were asked for: those figures are NaN (null in
// JSON), SourceCounters' own shared-wavefront figures are there. shmem/default's transpose:
// 6,488,064 shared wavefronts of which 393,216 ideal (raw page, checked by hand).
TEST(Roofline, AccessFiguresOfARecordedProfileWithoutTheCounters) {
  auto prof = optimas::profile::import_profile(data_path("h200/shmem"));
  const optimas::profile::Run* run = nullptr;
  for (const auto& r : prof.runs)
    if (r.config == "default") run = &r;
  ASSERT_NE(run, nullptr);
  auto a = compute_roofline("transpose_kernel", launches_of(*run, "transpose_kernel")).access;
  EXPECT_TRUE(std::isnan(a.global_load_sectors_per_request));
  EXPECT_TRUE(std::isnan(a.shared_bank_conflicts));
  EXPECT_TRUE(std::isnan(a.local_sectors));
  EXPECT_DOUBLE_EQ(a.shared_excessive_wavefronts, 6488064.0 - 393216.0);
  EXPECT_DOUBLE_EQ(a.shared_ideal_wavefronts, 393216.0);
  EXPECT_EQ(a.summary, "Shared accesses take 6.1 M wavefronts beyond the ideal 393 K (94% of all: bank conflicts).");
  // No launch carries any of them: the sentence says so.
  EXPECT_EQ(compute_access({}).summary, k_no_access_counters);
}

// The speed of light (issue 30) of a kernel doing FP64 work: its FLOP/s against the roofline at
// its intensity, the ceiling that binds named. dloop runs at 96% of the FP64 peak by its FP64 pipe,
// 97% counting its few FLOPs of other precisions too against that peak.
TEST(Roofline, SpeedOfLightOfAComputeBoundKernelIsItsShareOfThePeak) {
  auto prof = optimas::profile::import_profile(data_path("ncu-samples"));
  auto r = compute_roofline("dloop", launches_of(prof.runs[0], "dloop"));
  ASSERT_TRUE(std::isfinite(r.sol.fraction));
  EXPECT_EQ(r.sol.limit, "FP64 peak");
  EXPECT_NEAR(r.sol.fraction, r.flops / find(r.compute, "FP64")->peak, 1e-9);
  EXPECT_NEAR(r.sol.attainable, find(r.compute, "FP64")->peak, 1e-6 * r.sol.attainable);
  EXPECT_EQ(r.sol.sentence.rfind("At 97% of its roofline: the FP64 peak binds", 0), 0u) << r.sol.sentence;
}

// A kernel without floating-point work is held to the SM's instruction throughput and each
// level's bandwidth; nothing measured, no fraction.
TEST(Roofline, SpeedOfLightWithoutFlopsAndWithoutFigures) {
  optimas::profile::Launch l;
  l.kernel = "k";
  l.metrics["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = {30, "%", ""};
  l.metrics["lts__throughput.avg.pct_of_peak_sustained_elapsed"] = {45, "%", ""};
  l.metrics["gpu__time_duration.sum"] = {1000, "ns", ""};
  auto r = compute_roofline("k", {&l});
  EXPECT_NEAR(r.sol.fraction, 0.45, 1e-12);
  EXPECT_EQ(r.sol.limit, "L2 bandwidth");
  EXPECT_TRUE(std::isnan(r.sol.attainable));
  EXPECT_EQ(r.sol.sentence, "At 45% of its speed of light (no floating-point work): L2 bandwidth binds");
  optimas::profile::Launch empty;
  empty.kernel = "e";
  auto none = compute_roofline("e", {&empty});
  EXPECT_TRUE(std::isnan(none.sol.fraction));
  EXPECT_EQ(none.sol.sentence, "");
}

// Checked against Nsight Compute's own speed of light on every kernel of the recorded H200
// profiles. ncu's SOL is the larger of its compute (SM) and memory throughput percentages, each
// the busiest unit of its side (a pipe, the L2's tags, ...); ours is the roofline's, FLOP/s
// against the peak and bytes against the bandwidth at each level. So ncu's bounds ours from
// above (by at most the tolerance: never more), and where DRAM binds ours is ncu's own DRAM
// throughput, computed from the bytes and the peak. docs/analysis.md has the table.
TEST(Roofline, SpeedOfLightAgreesWithNcuOnRecordedH200Profiles) {
  int compared = 0, close = 0, dram = 0;
  for (const char* app :
       {"accuracy", "edges", "gather", "heat", "shmem", "sobol", "spmv", "stencil", "stream", "windows"}) {
    auto prof = optimas::profile::import_profile(data_path(std::string("h200/") + app));
    for (const auto& run : prof.runs) {
      std::set<std::string> kernels;
      for (const auto& l : run.launches) kernels.insert(l.kernel);
      for (const auto& k : kernels) {
        auto ls = launches_of(run, k);
        double sm = 0, mem = 0, dram_pct = 0;
        for (const auto* l : ls) {
          sm += l->value("sm__throughput.avg.pct_of_peak_sustained_elapsed") / 100 / ls.size();
          mem += l->value("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed") / 100 / ls.size();
          dram_pct += l->value("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed") / 100 / ls.size();
        }
        if (!std::isfinite(sm) || !std::isfinite(mem)) continue;
        auto r = compute_roofline(k, ls);
        ASSERT_TRUE(std::isfinite(r.sol.fraction)) << app << " " << k;
        const double ncu = std::max(sm, mem);
        std::printf("%-9s %-28s ours %.3f (%s), ncu %.3f (SM %.3f, memory %.3f)\n", app, k.substr(0, 28).c_str(),
                    r.sol.fraction, r.sol.limit.c_str(), ncu, sm, mem);
        EXPECT_LE(r.sol.fraction, ncu + k_sol_tolerance) << app << " " << k;
        if (r.sol.limit == "DRAM bandwidth") {
          EXPECT_NEAR(r.sol.fraction, dram_pct, 0.01) << app << " " << k;
          ++dram;
        }
        close += std::fabs(r.sol.fraction - ncu) <= k_sol_tolerance;
        ++compared;
      }
    }
  }
  std::printf("%d of %d kernels within %.2f of ncu's SOL; %d bound by DRAM\n", close, compared, k_sol_tolerance, dram);
  EXPECT_EQ(compared, 38);
  EXPECT_GE(close, 30);
  EXPECT_GE(dram, 10);
}
