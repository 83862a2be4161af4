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
