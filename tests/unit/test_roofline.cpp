#include "analysis/roofline.hpp"
#include "profile/importer.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace optimas::analysis;
using optimas::test::data_path;

namespace {

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
