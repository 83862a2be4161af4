#include "profile/timeline.hpp"

#include "profile/trace.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace optimas;
using namespace optimas::profile;

namespace {

// The synthetic format-3 traces (tests/data/trace-v3/README.md: written to the format, not
// recorded); their figures are in make_fixtures.py's comments.
Timeline fixture(const std::string& name) {
  Trace t = read_trace(std::string(OPTIMAS_TEST_DATA) + "/trace-v3/" + name);
  auto timeline = summarize_timeline(t);
  if (!timeline) throw std::runtime_error(name + ": no timeline");
  return *timeline;
}

constexpr double k_us = 1000;

} // namespace

TEST(Timeline, SyncCopyAfterEachLaunchLeavesTheGpuIdle) {
  Timeline t = fixture("sync-copy");
  EXPECT_DOUBLE_EQ(t.wall_ns, 24250 * k_us);
  EXPECT_DOUBLE_EQ(t.busy_ns, 5950 * k_us);
  EXPECT_NEAR(t.busy_fraction(), 5950.0 / 24250, 1e-12);
  EXPECT_DOUBLE_EQ(t.kernel_ns, 5000 * k_us);
  EXPECT_DOUBLE_EQ(t.transfer_ns, 900 * k_us);
  EXPECT_DOUBLE_EQ(t.memset_ns, 50 * k_us);
  EXPECT_DOUBLE_EQ(t.before_first_ns, 2000 * k_us);
  EXPECT_DOUBLE_EQ(t.after_last_ns, 1000 * k_us);
  EXPECT_DOUBLE_EQ(t.gap_ns(), 15300 * k_us);
  EXPECT_EQ(t.launches, 50u);
  EXPECT_EQ(t.copies, 52u);
  EXPECT_EQ(t.memsets, 1u);
  EXPECT_EQ(t.gaps, 50u + 49 + 1 + 2);

  // Transfers by direction, the most time first.
  ASSERT_EQ(t.traffic.size(), 3u);
  EXPECT_EQ(t.traffic[0].direction, "DtoH");
  EXPECT_EQ(t.traffic[0].count, 51u);
  EXPECT_EQ(t.traffic[0].bytes, 50u * 4 + (4u << 20));
  EXPECT_EQ(t.traffic[0].synchronous, 51u);
  EXPECT_EQ(t.traffic[0].pageable, 51u);
  EXPECT_DOUBLE_EQ(t.traffic[0].ns, 500 * k_us);
  EXPECT_DOUBLE_EQ(t.traffic[0].exposed_ns, 500 * k_us); // no kernel runs under them
  EXPECT_EQ(t.traffic[1].direction, "HtoD");
  EXPECT_EQ(t.traffic[2].direction, "set");

  // The gap that recurs: after each flag copy, before the next launch.
  ASSERT_GE(t.groups.size(), 3u);
  const GapGroup& g = t.groups[0];
  EXPECT_EQ(g.before, "synchronous device-to-host copy of 4 B");
  EXPECT_EQ(g.after, "step_kernel");
  EXPECT_EQ(g.kernel_before, "step_kernel");
  EXPECT_EQ(g.count, 49u);
  EXPECT_DOUBLE_EQ(g.total_ns, 49 * 300 * k_us);
  EXPECT_DOUBLE_EQ(g.largest_ns, 300 * k_us);
  EXPECT_EQ(t.groups[1].after, "synchronous device-to-host copy of 4 MiB"); // the final copy, once
  EXPECT_EQ(t.groups[1].count, 1u);
  EXPECT_EQ(t.groups[2].before, "step_kernel"); // the 5 us between a kernel and its copy
  EXPECT_EQ(t.groups[2].count, 50u);

  ASSERT_TRUE(t.largest);
  EXPECT_DOUBLE_EQ(t.largest->largest_ns, 300 * k_us);
  EXPECT_DOUBLE_EQ(t.largest->at_ns, (2000 + 400 + 20 + 50 + 30 + 100 + 5 + 2) * k_us); // the first such gap

  const Follow* f = t.follow("synchronous device-to-host copy of 4 B", "step_kernel");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->count, 50u);
  EXPECT_EQ(f->kernel_launches, 50u);

  ASSERT_EQ(t.calls.size(), 2u);
  EXPECT_EQ(t.calls[0].name, "cudaMemcpy");
  EXPECT_EQ(t.calls[0].count, 52u);
  EXPECT_EQ(t.calls[1].name, "cudaDeviceSynchronize");
  ASSERT_EQ(t.waits.size(), 1u);
  EXPECT_EQ(t.waits[0].name, "context");
  EXPECT_FALSE(t.ended_early);
  EXPECT_EQ(t.processes, 1u);
}

TEST(Timeline, CopiesUnderKernelsAreNotIdleTime) {
  Timeline t = fixture("overlap");
  EXPECT_DOUBLE_EQ(t.wall_ns, 4757 * k_us);
  EXPECT_DOUBLE_EQ(t.busy_ns, 4000 * k_us);
  EXPECT_DOUBLE_EQ(t.kernel_ns, 4000 * k_us);
  EXPECT_DOUBLE_EQ(t.before_first_ns, 500 * k_us);
  EXPECT_DOUBLE_EQ(t.after_last_ns, 200 * k_us);
  ASSERT_EQ(t.traffic.size(), 1u);
  EXPECT_EQ(t.traffic[0].count, 20u);
  EXPECT_EQ(t.traffic[0].synchronous, 0u);
  EXPECT_DOUBLE_EQ(t.traffic[0].exposed_ns, 0);
  ASSERT_EQ(t.groups.size(), 1u);
  EXPECT_EQ(t.groups[0].before, "update");
  EXPECT_EQ(t.groups[0].after, "update");
  EXPECT_EQ(t.groups[0].count, 19u);
  EXPECT_DOUBLE_EQ(t.groups[0].total_ns, 19 * 3 * k_us);
  EXPECT_TRUE(t.follows.empty()); // each copy starts under a kernel, not after one
}

TEST(Timeline, OlderFormatsHaveNone) {
  EXPECT_FALSE(summarize_timeline(read_trace(std::string(OPTIMAS_TEST_DATA) + "/h200/heat/small/trace")));
  Trace t;
  t.version = 3; // no start or end time
  EXPECT_FALSE(summarize_timeline(t));
}

TEST(Timeline, BytesAreWrittenInBinaryUnits) {
  EXPECT_EQ(bytes_text(4), "4 B");
  EXPECT_EQ(bytes_text(4 << 20), "4 MiB");
  EXPECT_EQ(bytes_text(1536), "1.5 KiB");
}

TEST(Timeline, JsonHasTheSummary) {
  auto j = to_json(fixture("sync-copy"));
  EXPECT_DOUBLE_EQ(j["wall_ns"].get<double>(), 24250 * k_us);
  EXPECT_EQ(j["gap_groups"][0]["count"], 49);
  EXPECT_EQ(j["traffic"][0]["direction"], "DtoH");
  EXPECT_EQ(j["blocking_calls"][0]["name"], "cudaMemcpy");
  EXPECT_FALSE(j["largest_gap"].is_null());
}

// GPU work outside the run's [start, end] (timestamps that do not agree) is clipped to it: the GPU
// is never busier than the run was long.
TEST(Timeline, WorkOutsideTheRunIsClippedToIt) {
  test::TempDir dir;
  dir.file("trace-300.tsv", "# optimas-trace 3\n"
                            "P\t300\t1000000\n"
                            "K\t0\t_Z1kv\tk()\n"
                            "L\t0\t0\t1\t7\t1\t1\t1\t32\t1\t1\t0\t0\t16\t1500000\t2500000\n"
                            "M\tDtoH\tdevice\tpageable\t4\t0\t1\t7\t2600000\t9000000\t0\t1\n"
                            "E\t1\t0\t3000000\t1\n");
  Trace trace = read_trace(dir.path().string());
  auto t = summarize_timeline(trace);
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->wall_ns, 2000000);
  EXPECT_DOUBLE_EQ(t->busy_ns, 1000000 + 400000); // the kernel, and the copy up to the end
  EXPECT_LE(t->busy_fraction(), 1.0);
}

namespace {

// A trace recorded on the H200 (tests/data/trace-v3/h200/README.md) and the figures
// tests/data/trace-v3/h200/figures.py computes from its lines, apart from this reader.
struct Recorded {
  const char* folder;
  std::uint64_t launches, copies, htod_count, htod_bytes, dtoh_count, dtoh_bytes;
  double kernel_ns, copy_ns, busy_ns, wall_ns;
  const char* follow; // copies right after each launch of a kernel (the most frequent kind)
  const char* kernel;
  std::uint64_t follow_count;
};

const Recorded k_recorded[] = {
    {"bfs-path2000", 2002, 2009, 1007, 62977, 1002, 9001, 2789249, 2184503, 4973752, 387480616,
     "synchronous device-to-host copy of 1 B", "Kernel2", 1001},
    {"heat-small-check1", 1500, 503, 2, 524288, 501, 390144, 2716656, 739446, 3456102, 397355283,
     "synchronous device-to-host copy of 256 B", "residual_partial", 500},
    {"heat-small-check100", 1005, 8, 2, 524288, 6, 263424, 1677686, 29440, 1707126, 266249653,
     "synchronous device-to-host copy of 256 B", "residual_partial", 5},
    {"stream-small", 36, 10, 6, 201326592, 4, 100663336, 669632, 50512590, 51182222, 727873308,
     "synchronous device-to-host copy of 32 MiB", "dot_final_kernel", 1},
};

} // namespace

// Exact to the nanosecond: CUPTI's timestamps (about 1.8e18) once went through a double, whose
// 256 ns step there merged back-to-back kernels of bfs (kernel time 2.75 ms for 2.79).
TEST(Timeline, RecordedH200TracesAgreeWithTheirLines) {
  for (const auto& r : k_recorded) {
    SCOPED_TRACE(r.folder);
    Timeline t = fixture(std::string("h200/") + r.folder);
    EXPECT_EQ(t.launches, r.launches);
    EXPECT_EQ(t.copies, r.copies);
    EXPECT_DOUBLE_EQ(t.kernel_ns, r.kernel_ns);
    EXPECT_DOUBLE_EQ(t.transfer_ns, r.copy_ns);
    EXPECT_DOUBLE_EQ(t.busy_ns, r.busy_ns);
    EXPECT_DOUBLE_EQ(t.wall_ns, r.wall_ns);
    std::map<std::string, const Traffic*> by;
    for (const auto& x : t.traffic) by[x.direction] = &x;
    ASSERT_TRUE(by.count("HtoD") && by.count("DtoH"));
    EXPECT_EQ(by["HtoD"]->count, r.htod_count);
    EXPECT_EQ(by["HtoD"]->bytes, r.htod_bytes);
    EXPECT_EQ(by["DtoH"]->count, r.dtoh_count);
    EXPECT_EQ(by["DtoH"]->bytes, r.dtoh_bytes);
    EXPECT_EQ(by["DtoH"]->synchronous, r.dtoh_count); // cudaMemcpy everywhere
    const Follow* f = t.follow(r.follow, r.kernel);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->count, r.follow_count);
  }
}
