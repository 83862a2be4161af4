#include "profile/ncu_agent.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace optimas::profile;

namespace {

bool has_pair(const std::vector<std::string>& v, const std::string& a, const std::string& b) {
  for (std::size_t i = 0; i + 1 < v.size(); ++i)
    if (v[i] == a && v[i + 1] == b) return true;
  return false;
}

} // namespace

TEST(NcuAgent, TimingPassIsCheap) {
  NcuOptions o;
  auto cmd = timing_command(o, "/p/timing", {"./app", "--n", "4"});
  EXPECT_TRUE(has_pair(cmd, "--metrics", "gpu__time_duration.sum"));
  EXPECT_TRUE(has_pair(cmd, "--clock-control", "none"));
  EXPECT_TRUE(has_pair(cmd, "-o", "/p/timing"));
  EXPECT_EQ(std::vector<std::string>(cmd.end() - 3, cmd.end()), (std::vector<std::string>{"./app", "--n", "4"}));
  EXPECT_EQ(std::count(cmd.begin(), cmd.end(), "--section"), 0);
}

TEST(NcuAgent, HeavyPassSelectsHotKernelsAndSections) {
  NcuOptions o;
  o.clock_control = "base";
  o.launch_count = 5;
  auto cmd = heavy_command(o, "/p/report", {"triad", "dot<double>", "triad"}, {}, {"./app"});
  EXPECT_TRUE(has_pair(cmd, "-k", "regex:^(triad|dot)$"));
  EXPECT_TRUE(has_pair(cmd, "--section", "SpeedOfLight_RooflineChart"));
  EXPECT_TRUE(has_pair(cmd, "--section", "SourceCounters"));
  EXPECT_TRUE(has_pair(cmd, "--section", "WarpStateStats"));
  EXPECT_TRUE(has_pair(cmd, "--import-source", "yes"));
  EXPECT_TRUE(has_pair(cmd, "--clock-control", "base"));
  EXPECT_TRUE(has_pair(cmd, "-c", "5"));
  EXPECT_EQ(cmd.back(), "./app");
}

TEST(NcuAgent, FullModeIsOneSetFullPass) {
  NcuOptions o;
  o.mode = ProfileMode::full;
  o.metrics = {"dram__bytes.sum"};
  auto cmd = heavy_command(o, "/p/report", {}, {}, {"./app"});
  EXPECT_TRUE(has_pair(cmd, "--set", "full"));
  EXPECT_TRUE(has_pair(cmd, "--metrics", "dram__bytes.sum"));
  EXPECT_EQ(std::count(cmd.begin(), cmd.end(), "--section"), 0);
  EXPECT_EQ(std::count(cmd.begin(), cmd.end(), "-k"), 0);
}

TEST(NcuAgent, KernelNamesAreEscapedForTheRegex) {
  NcuOptions o;
  auto cmd = heavy_command(o, "r", {"a.b"}, {}, {"./app"});
  EXPECT_TRUE(has_pair(cmd, "-k", "regex:^(a\\.b)$"));
}

TEST(NcuAgent, TracedTimingPassRunsTheProgramWithTheTracerInjected) {
  auto cmd = trace_command("/opt/lib/liboptimas-trace.so", "/p/trace", {"/bin/sh", "-c", "./app > out"});
  EXPECT_EQ(cmd, (std::vector<std::string>{"env", "CUDA_INJECTION64_PATH=/opt/lib/liboptimas-trace.so",
                                           "OPTIMAS_TRACE_DIR=/p/trace", "/bin/sh", "-c", "./app > out"}));
}

TEST(NcuAgent, HeavyPassCapsLaunchesPerKernelWithKernelId) {
  NcuOptions o;
  std::vector<LaunchPick> picks = {{"triad", {1, 50, 100}, 100}, {"ns::dot", {1, 50, 100}, 100}};
  auto cmd = heavy_command(o, "/p/report", {"triad", "ns::dot<double>"}, picks, {"./app"});
  EXPECT_TRUE(has_pair(cmd, "--kernel-id", "::regex:^(triad|ns..dot)$:^(1|50|100)$"));
  EXPECT_EQ(std::count(cmd.begin(), cmd.end(), "-k"), 0);
  // Without a cap the hot kernels are named, every launch of them profiled.
  o.launch_cap = 0;
  cmd = heavy_command(o, "/p/report", {"triad"}, picks, {"./app"});
  EXPECT_TRUE(has_pair(cmd, "-k", "regex:^(triad)$"));
  EXPECT_EQ(std::count(cmd.begin(), cmd.end(), "--kernel-id"), 0);
}

TEST(NcuAgent, TracerIsFoundOrTurnedOff) {
  optimas::test::TempDir dir;
  auto lib = dir.file("liboptimas-trace.so", "x");
  {
    optimas::test::ScopedEnv env("OPTIMAS_TRACER", lib.c_str());
    EXPECT_EQ(find_tracer(), lib);
    EXPECT_EQ(resolve_tracer("auto"), lib);
  }
  {
    optimas::test::ScopedEnv env("OPTIMAS_TRACER", "none");
    EXPECT_EQ(find_tracer(), "");
    EXPECT_EQ(resolve_tracer("auto"), "");
  }
  EXPECT_EQ(resolve_tracer("none"), "");
  EXPECT_EQ(resolve_tracer(lib), lib);
  EXPECT_THROW(resolve_tracer((dir.path() / "missing.so").string()), optimas::UsageError);
}

TEST(NcuAgent, PlainCommandsRunWithoutAShell) {
  EXPECT_EQ(program_argv("./heat --nx 256 --out '/p/x y.out'"),
            (std::vector<std::string>{"./heat", "--nx", "256", "--out", "/p/x y.out"}));
  EXPECT_EQ(program_argv("./app > log; echo done"),
            (std::vector<std::string>{"/bin/sh", "-c", "./app > log; echo done"}));
}

// The memory-access figures (analysis::MemoryAccess) need counters the default sections do not
// collect: the heavy pass asks for them with --metrics, and a user's own --metrics replace them.
TEST(NcuAgent, HeavyPassAsksForTheMemoryAccessCounters) {
  NcuOptions o;
  auto cmd = heavy_command(o, "/p/report", {"k"}, {}, {"./app"});
  auto at = std::find(cmd.begin(), cmd.end(), "--metrics");
  ASSERT_NE(at, cmd.end());
  ASSERT_NE(at + 1, cmd.end());
  for (const char* m : {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
                        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
                        "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
                        "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum",
                        "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"})
    EXPECT_NE(("," + at[1] + ",").find(std::string(",") + m + ","), std::string::npos) << m;
  o.metrics = {"dram__bytes.sum"};
  cmd = heavy_command(o, "/p/report", {"k"}, {}, {"./app"});
  EXPECT_TRUE(has_pair(cmd, "--metrics", "dram__bytes.sum"));
}

TEST(NcuAgent, AnOptionalPageHasALimitOfItsOwn) {
  EXPECT_DOUBLE_EQ(optional_export_limit(600, 0.5), k_optional_export_floor_s); // the floor
  EXPECT_DOUBLE_EQ(optional_export_limit(600, 12), 120);                        // ten times the required pages
  EXPECT_DOUBLE_EQ(optional_export_limit(60, 12), 60);                          // never past --timeout
  EXPECT_DOUBLE_EQ(optional_export_limit(0, 12), 120);                          // 0: no --timeout
}
