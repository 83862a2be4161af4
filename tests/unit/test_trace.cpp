#include "profile/trace.hpp"

#include "profile/hot_kernels.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

using namespace optimas;
using namespace optimas::profile;

namespace {

// Two kernels as liboptimas-trace writes them: a template instance and a plain kernel.
const char* k_trace = "# optimas-trace 1\n"
                      "P\t4242\t1000\n"
                      "K\t0\t_Z6reduceILi64EEvPKiPib\tvoid reduce<64>(int const*, int*, bool)\n"
                      "L\t0\t0\t1\t7\t132\t1\t1\t64\t1\t1\t0\t256\t32\t2000\t5000\n"
                      "K\t1\t_Z5triadPKdS0_Pddl\ttriad(double const*, double const*, double*, double, long)\n"
                      "L\t1\t0\t1\t7\t1024\t1\t1\t256\t1\t1\t0\t0\t16\t6000\t7000\n"
                      "L\t0\t0\t1\t7\t132\t1\t1\t64\t1\t1\t0\t256\t32\t8000\t12000\n"
                      "E\t3\t0\n";

std::string with(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

} // namespace

TEST(Trace, ReadsLaunchesWithTheirDurationsAndShapes) {
  test::TempDir dir;
  Trace t = read_trace(dir.file("trace-4242.tsv", k_trace));
  ASSERT_EQ(t.launches.size(), 3u);
  EXPECT_TRUE(t.incomplete.empty());
  const Launch& first = t.launches[0];
  EXPECT_EQ(first.kernel, "reduce<64>");
  EXPECT_EQ(first.mangled, "_Z6reduceILi64EEvPKiPib");
  EXPECT_EQ(first.duration_ns, 3000);
  EXPECT_EQ(first.grid, (std::array<std::int64_t, 3>{132, 1, 1}));
  EXPECT_EQ(first.block, (std::array<std::int64_t, 3>{64, 1, 1}));
  EXPECT_EQ(first.stream, 7);
  EXPECT_EQ(first.pid, 4242);
  EXPECT_EQ(first.value("launch__shared_mem_per_block_dynamic"), 256);
  EXPECT_EQ(first.value("launch__registers_per_thread"), 32);
  EXPECT_EQ(t.launches[1].kernel, "triad");
  EXPECT_DOUBLE_EQ(traced_time_ns(t), 3000 + 1000 + 4000);
  EXPECT_DOUBLE_EQ(traced_time_ns(t, {kernel_signature_key("void reduce<(int)64>(const int *, int *, bool)")}), 7000);
}

TEST(Trace, AFolderHoldsOneFilePerProcessInGpuOrder) {
  test::TempDir dir;
  dir.file("trace-1.tsv", with(k_trace, "P\t4242", "P\t1"));
  dir.file(
      "trace-2.tsv",
      "# optimas-trace 1\nP\t2\t0\nK\t0\t_Z1kv\tk()\nL\t0\t0\t1\t7\t1\t1\t1\t1\t1\t1\t0\t0\t8\t500\t600\nE\t1\t4\n");
  dir.file("unrelated.txt", "not a trace");
  Trace t = read_trace(dir.path().string());
  ASSERT_EQ(t.launches.size(), 4u);
  EXPECT_EQ(t.launches[0].kernel, "k"); // started first, though in the second file
  EXPECT_EQ(t.launches[0].pid, 2);
  EXPECT_EQ(t.launches[3].id, 3);
  EXPECT_EQ(t.dropped, 4u);
  EXPECT_EQ(t.files.size(), 2u);
}

TEST(Trace, AFileWithoutItsEndLineIsReadAndMarkedIncomplete) {
  test::TempDir dir;
  std::string text = k_trace;
  text = text.substr(0, text.find("E\t"));
  Trace t = read_trace(dir.file("trace-9.tsv", text));
  EXPECT_EQ(t.launches.size(), 3u);
  ASSERT_EQ(t.incomplete.size(), 1u);
}

TEST(Trace, BadInputIsAnErrorAtItsLine) {
  test::TempDir dir;
  auto line_of = [&](const std::string& text) -> std::size_t {
    try {
      read_trace(dir.file("trace-1.tsv", text));
    } catch (const ParseError& e) {
      return e.line();
    }
    return 0;
  };
  EXPECT_EQ(line_of("hello\n"), 1u);
  EXPECT_EQ(line_of("# optimas-trace 4\n"), 1u); // a version this reader does not know
  EXPECT_EQ(line_of("# optimas-trace 0\n"), 1u);
  EXPECT_EQ(line_of(""), 1u);
  EXPECT_EQ(line_of(with(k_trace, "\t2000\t5000", "\t5000\t2000")), 4u); // ends before it starts
  EXPECT_EQ(line_of(with(k_trace, "L\t1\t0", "L\t9\t0")), 6u);           // undefined name
  EXPECT_EQ(line_of(with(k_trace, "\t1024\t1\t1", "\t10x4\t1\t1")), 6u); // not a number
  EXPECT_EQ(line_of(with(k_trace, "E\t3\t0", "E\t4\t0")), 8u);           // count disagrees
  EXPECT_EQ(line_of(with(k_trace, "K\t1\t", "K\t0\t")), 5u);             // id defined twice
  EXPECT_EQ(line_of(std::string(k_trace) + "L\t0\n"), 9u);               // after the end
  EXPECT_THROW(read_trace(dir.path().string() + "/none"), Error);
  test::TempDir empty;
  EXPECT_THROW(read_trace(empty.path().string()), Error);
}

// Format 2: the end line's timestamp, and the X line of a process the tracer ended early
// (OPTIMAS_TRACE_END_AFTER). Format 1 files are read as before (no end time).
TEST(Trace, Format2HasTheEndTimeAndMarksAnEarlyEnd) {
  test::TempDir dir;
  std::string v2 = with(with(k_trace, "optimas-trace 1", "optimas-trace 2"), "E\t3\t0\n", "E\t3\t0\t15000\n");
  Trace whole = read_trace(dir.file("trace-1.tsv", v2));
  EXPECT_EQ(whole.end_ns, 15000u);
  EXPECT_TRUE(whole.ended_early.empty());
  EXPECT_TRUE(whole.incomplete.empty());

  test::TempDir early;
  Trace ended = read_trace(early.file("trace-2.tsv", with(v2, "E\t3", "X\t2\nE\t3")));
  ASSERT_EQ(ended.ended_early.size(), 1u);
  EXPECT_TRUE(ended.incomplete.empty());
  EXPECT_EQ(ended.launches.size(), 3u);

  test::TempDir old;
  EXPECT_EQ(read_trace(old.file("trace-3.tsv", k_trace)).end_ns, 0u);

  auto line_of = [&](const std::string& text) -> std::size_t {
    test::TempDir d;
    try {
      read_trace(d.file("trace-1.tsv", text));
    } catch (const ParseError& e) {
      return e.line();
    }
    return 0;
  };
  EXPECT_EQ(line_of(with(v2, "\t15000\n", "\tsoon\n")), 8u);     // not a time
  EXPECT_EQ(line_of(with(v2, "E\t3", "X\tmany\nE\t3")), 8u);     // not a count
  EXPECT_EQ(line_of(with(v2, "\t15000\n", "\t15000\t1\n")), 8u); // one field too many
}

// Format 3: copies, memsets, host waits and blocking calls beside the launches, and the end
// line's count of them.
namespace {
const char* k_v3 = "# optimas-trace 3\n"
                   "P\t77\t1000\n"
                   "M\tHtoD\tpageable\tdevice\t4096\t0\t1\t7\t1500\t1800\t0\t1\n"
                   "R\tcudaMemcpy\t5\t1400\t1850\t1\n"
                   "S\tdevice\t4096\t0\t1\t7\t1900\t1950\t1\t2\n"
                   "K\t0\t_Z1kv\tk()\n"
                   "L\t0\t0\t1\t7\t1\t1\t1\t32\t1\t1\t0\t0\t8\t2000\t3000\n"
                   "M\tDtoH\tdevice\tpinned\t4\t0\t1\t7\t3100\t3110\t1\t3\n"
                   "Y\tstream\t1\t7\t3000\t3120\t4\n"
                   "E\t1\t0\t4000\t5\n";
} // namespace

TEST(Trace, Format3HasCopiesMemsetsWaitsAndCalls) {
  test::TempDir dir;
  Trace t = read_trace(dir.file("trace-77.tsv", k_v3));
  EXPECT_EQ(t.version, 3);
  EXPECT_EQ(t.start_ns, 1000u);
  EXPECT_EQ(t.end_ns, 4000u);
  ASSERT_EQ(t.launches.size(), 1u);
  ASSERT_EQ(t.transfers.size(), 3u);
  const Transfer& up = t.transfers[0];
  EXPECT_EQ(up.direction, "HtoD");
  EXPECT_EQ(up.src_memory, "pageable");
  EXPECT_EQ(up.dst_memory, "device");
  EXPECT_EQ(up.bytes, 4096u);
  EXPECT_EQ(up.stream, 7);
  EXPECT_EQ(up.start_ns, 1500u);
  EXPECT_EQ(up.end_ns, 1800u);
  EXPECT_FALSE(up.async);
  EXPECT_EQ(up.pid, 77);
  EXPECT_TRUE(t.transfers[1].memset);
  EXPECT_EQ(t.transfers[1].direction, "set");
  EXPECT_TRUE(t.transfers[1].async);
  EXPECT_EQ(t.transfers[2].direction, "DtoH");
  EXPECT_EQ(t.transfers[2].correlation, 3u);
  ASSERT_EQ(t.waits.size(), 1u);
  EXPECT_EQ(t.waits[0].type, "stream");
  EXPECT_EQ(t.waits[0].end_ns, 3120u);
  ASSERT_EQ(t.calls.size(), 1u);
  EXPECT_EQ(t.calls[0].name, "cudaMemcpy");
  EXPECT_EQ(t.calls[0].thread, 5u);

  // A folder of an older and a newer file is as old as its oldest.
  test::TempDir mixed;
  mixed.file("trace-1.tsv", k_trace);
  mixed.file("trace-2.tsv", k_v3);
  EXPECT_EQ(read_trace(mixed.path().string()).version, 1);
}

TEST(Trace, Format3BadLinesAreErrorsAtTheirLine) {
  auto line_of = [](const std::string& text) -> std::size_t {
    test::TempDir d;
    try {
      read_trace(d.file("trace-1.tsv", text));
    } catch (const ParseError& e) {
      EXPECT_NE(e.file().find("trace-1.tsv"), std::string::npos);
      return e.line();
    }
    return 0;
  };
  EXPECT_EQ(line_of(k_v3), 0u);
  EXPECT_EQ(line_of(with(k_v3, "HtoD\tpageable", "Sideways\tpageable")), 3u);  // unknown direction
  EXPECT_EQ(line_of(with(k_v3, "\tpageable\tdevice", "\tpaged\tdevice")), 3u); // unknown memory
  EXPECT_EQ(line_of(with(k_v3, "\t1500\t1800", "\t1800\t1500")), 3u);          // ends before it starts
  EXPECT_EQ(line_of(with(k_v3, "\t1800\t0\t1\n", "\t1800\t2\t1\n")), 3u);      // async is 0 or 1
  EXPECT_EQ(line_of(with(k_v3, "\t1800\t0\t1\n", "\t1800\t0\n")), 3u);         // a field short
  EXPECT_EQ(line_of(with(k_v3, "R\tcudaMemcpy", "R\tmemcpy")), 4u);            // not a runtime call
  EXPECT_EQ(line_of(with(k_v3, "S\tdevice\t4096", "S\tdevice\t4k")), 5u);      // not a byte count
  EXPECT_EQ(line_of(with(k_v3, "Y\tstream", "Y\tlater")), 9u);                 // unknown wait
  EXPECT_EQ(line_of(with(k_v3, "E\t1\t0\t4000\t5", "E\t1\t0\t4000\t6")), 10u); // count disagrees
  EXPECT_EQ(line_of(with(k_v3, "E\t1\t0\t4000\t5", "E\t1\t0\t4000")), 10u);    // the count is missing
  // The timeline's lines are format 3's: a format-2 file holding one is wrong.
  EXPECT_EQ(line_of(with(with(k_v3, "trace 3", "trace 2"), "\t4000\t5\n", "\t4000\n")), 3u);
}

// The recorded data of formats 1 and 2 stays readable, with no timeline.
TEST(TraceRecorded, OlderFormatsStayReadable) {
  Trace t = read_trace(std::string(OPTIMAS_TEST_DATA) + "/h200/windows/default/trace");
  EXPECT_EQ(t.version, 1);
  EXPECT_EQ(t.launches.size(), 60u);
  EXPECT_TRUE(t.transfers.empty());
  EXPECT_GT(t.start_ns, 0u);
}

TEST(Trace, LaunchDurationsPerFunction) {
  test::TempDir dir;
  Trace t = read_trace(dir.file("trace-4242.tsv", k_trace));
  // reduce<64> counts as reduce; a function never launched has no durations.
  auto d = launch_durations_ms(t, {"reduce", "triad", "absent"});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0], (std::vector<double>{0.003, 0.004}));
  EXPECT_EQ(d[1], (std::vector<double>{0.001}));
  EXPECT_TRUE(d[2].empty());
  EXPECT_TRUE(launch_durations_ms(t, {}).empty());
}

TEST(Trace, KernelKeysMatchTheTracersAndNcusSpelling) {
  EXPECT_EQ(kernel_signature_key("void reduce<64>(int const*, int*, bool)"),
            kernel_signature_key("void reduce<(int)64>(const int *, int *, bool)"));
  EXPECT_EQ(kernel_signature_key("triad(double const*, double const*, double*, double, long)"),
            kernel_signature_key("triad(const double *, const double *, double *, double, long)"));
  EXPECT_EQ(kernel_signature_key("void scan<256u, float>(float const*, float*)"),
            kernel_signature_key("void scan<(unsigned int)256, float>(const float *, float *)"));
  EXPECT_EQ(kernel_signature_key("void ns::k<-3l>(int)"), kernel_signature_key("void ns::k<(long)-3>(int)"));
  EXPECT_NE(kernel_signature_key("void reduce<64>(int const*, int*, bool)"),
            kernel_signature_key("void reduce<32>(int const*, int*, bool)"));
  EXPECT_NE(kernel_signature_key("k(int)"), kernel_signature_key("k(long)"));
}

// A file-static kernel: nvcc prefixes its symbol, which the host compiler's demangler (the
// tracer's) leaves as it is; seen on cuda-samples' quasirandomGenerator (H200, session 24).
TEST(Trace, AFileStaticKernelIsReadUnderItsOwnName) {
  const std::string symbol = "__nv_static_52__e03210f2_30_quasirandomGenerator_kernel_cu_71f57a80__"
                             "Z26quasirandomGeneratorKernelPfjj";
  EXPECT_EQ(demangle_static_kernel(symbol), "quasirandomGeneratorKernel(float*, unsigned int, unsigned int)");
  // Symbols nvcc 13.0 wrote for a static template kernel in a namespace, and a kernel in an
  // anonymous namespace (nvcc -cubin -rdc=true).
  EXPECT_EQ(demangle_static_kernel("__nv_static_25__158e04f3_4_k_cu_a6473341__ZN2ns2tkILi3EEEvPf"),
            "void ns::tk<3>(float*)");
  EXPECT_EQ(demangle_static_kernel("__nv_static_25__158e04f3_4_k_cu_a6473341__ZN36_GLOBAL__N__158e04f3_4_k_cu_"
                                   "a64733414anonEPi"),
            "(anonymous namespace)::anon(int*)");
  EXPECT_EQ(demangle_static_kernel("_Z26quasirandomGeneratorKernelPfjj"), "");      // not static
  EXPECT_EQ(demangle_static_kernel("__nv_static_99__e03210f2_30_x__Z1kv"), "");     // length past the end
  EXPECT_EQ(demangle_static_kernel("__nv_static_3__abc_notmangled"), "");           // no _Z after the prefix
  EXPECT_EQ(demangle_static_kernel("__nv_static___Z1kv"), "");                      // no length
  EXPECT_EQ(demangle_static_kernel("__nv_static_18446744073709551615___Z1kv"), ""); // a length past any name
  EXPECT_EQ(demangle_static_kernel("__nv_static_1"), "");                           // cut short
  test::TempDir dir;
  Trace t =
      read_trace(dir.file("trace-1.tsv", "# optimas-trace 1\nP\t1\t1000\nK\t0\t" + symbol + "\t" + symbol +
                                             "\nL\t0\t0\t1\t7\t64\t1\t1\t128\t1\t1\t0\t0\t32\t2000\t5000\nE\t1\t0\n"));
  ASSERT_EQ(t.launches.size(), 1u);
  EXPECT_EQ(t.launches[0].kernel, "quasirandomGeneratorKernel");
  EXPECT_EQ(t.launches[0].mangled, symbol);
  EXPECT_EQ(kernel_signature_key(t.launches[0].demangled),
            kernel_signature_key("quasirandomGeneratorKernel(float *, unsigned int, unsigned int)"));
}

TEST(Trace, TracedLaunchesTakeNcusNames) {
  test::TempDir dir;
  Trace t = read_trace(dir.file("trace-1.tsv", k_trace));
  Launch profiled;
  profiled.kernel = "reduce<(int)64>";
  profiled.demangled = "void reduce<(int)64>(const int *, int *, bool)";
  adopt_profiled_names(t.launches, {profiled});
  EXPECT_EQ(t.launches[0].demangled, profiled.demangled);
  EXPECT_EQ(t.launches[2].kernel, "reduce<(int)64>");
  EXPECT_EQ(t.launches[1].kernel, "triad"); // not profiled: keeps the tracer's name
}

// cuda-samples' reduction on the H100 (session 34): the tracer's demangler spells the hot kernel
// "reduce7<int, 256u, true>(int const*, int*, unsigned int)", ncu "void reduce7<int, 256, 1>(const
// T1 *, T1 *, unsigned int)"; unmatched, the kernel had no roofline and no PC samples.
TEST(Trace, TemplateParametersNamedByPlaceholdersMatchByNameAndArguments) {
  auto launch = [](const std::string& kernel, const std::string& demangled) {
    Launch l;
    l.kernel = kernel;
    l.demangled = demangled;
    return l;
  };
  std::vector<Launch> traced = {launch("reduce7", "reduce7<int, 256u, true>(int const*, int*, unsigned int)"),
                                launch("reduce7", "reduce7<int, 32u, true>(int const*, int*, unsigned int)"),
                                launch("pair", "pair<float>(float*)"), launch("pair", "pair<float>(float*, int)")};
  std::vector<Launch> profiled = {launch("reduce7", "void reduce7<int, 256, 1>(const T1 *, T1 *, unsigned int)"),
                                  launch("reduce7", "void reduce7<int, 256, 1>(const T1 *, T1 *, unsigned int)"),
                                  launch("pair", "void pair<float>(T1 *)"),
                                  launch("pair", "void pair<float>(T1 *, int)")};
  adopt_profiled_names(traced, profiled);
  EXPECT_EQ(traced[0].demangled, profiled[0].demangled);
  EXPECT_EQ(traced[1].demangled, "reduce7<int, 32u, true>(int const*, int*, unsigned int)"); // other arguments
  // Two signatures under one name and arguments (overloads): neither is guessed.
  EXPECT_EQ(traced[2].demangled, "pair<float>(float*)");
  EXPECT_EQ(traced[3].demangled, "pair<float>(float*, int)");
}

TEST(Trace, LaunchPicksAreSpreadAndCountedPerFunctionName) {
  // 10 launches of k<1> interleaved with 10 of k<2> (one function name), then 4 of other.
  std::vector<Launch> traced;
  auto add = [&](const std::string& kernel, const std::string& demangled) {
    Launch l;
    l.kernel = kernel;
    l.demangled = demangled;
    l.duration_ns = 1;
    traced.push_back(l);
  };
  for (int i = 0; i < 10; ++i) add("k<1>", "void k<1>()"), add("k<2>", "void k<2>()");
  for (int i = 0; i < 4; ++i) add("other", "other()");
  auto picks = pick_launches(traced, {"void k<2>()", "other()"}, 3);
  ASSERT_EQ(picks.size(), 2u);
  EXPECT_EQ(picks[0].function, "k");
  // k<2> is every second launch of "k": invocations 2, 4, ..., 20; first, middle, last.
  EXPECT_EQ(picks[0].invocations, (std::vector<std::int64_t>{2, 10, 20}));
  EXPECT_EQ(picks[0].traced, 20);
  EXPECT_EQ(picks[1].function, "other");
  EXPECT_EQ(picks[1].invocations, (std::vector<std::int64_t>{1, 2, 4}));
  // No cap, or fewer launches than the cap: every launch.
  EXPECT_EQ(pick_launches(traced, {"other()"}, 0)[0].invocations.size(), 4u);
  EXPECT_EQ(pick_launches(traced, {"other()"}, 9)[0].invocations.size(), 4u);
  EXPECT_EQ(pick_launches(traced, {"other()"}, 1)[0].invocations, (std::vector<std::int64_t>{1}));
  // Two instances of one function share one pick.
  auto both = pick_launches(traced, {"void k<1>()", "void k<2>()"}, 2);
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(both[0].invocations, (std::vector<std::int64_t>{1, 2, 19, 20}));
}

TEST(Trace, HotKernelsComeFromTracedDurations) {
  test::TempDir dir;
  Trace t = read_trace(dir.file("trace-1.tsv", k_trace));
  HotKernels hk = select_hot_kernels(t.launches, 0.8);
  ASSERT_EQ(hk.kernels.size(), 2u);
  EXPECT_EQ(hk.kernels[0].kernel, "reduce<64>");
  EXPECT_EQ(hk.kernels[0].launches, 2);
  EXPECT_TRUE(hk.kernels[0].hot);
  EXPECT_FALSE(hk.kernels[1].hot); // 7000 of 8000 ns = 87.5% >= 80%
}

// Recorded on the H200 (tests/data/h200/heat/README.md): heat -i small, 500 steps of a stencil,
// a boundary copy and a residual reduction.
TEST(TraceRecorded, HeatSmallHasEveryLaunchAndTheCapsNcuUsed) {
  Trace t = read_trace(std::string(OPTIMAS_TEST_DATA) + "/h200/heat/small/trace");
  ASSERT_EQ(t.launches.size(), 1500u);
  EXPECT_TRUE(t.incomplete.empty());
  EXPECT_EQ(t.dropped, 0u);
  for (std::size_t i = 1; i < t.launches.size(); ++i) EXPECT_LE(t.launches[i - 1].start_ns, t.launches[i].start_ns);
  HotKernels hk = select_hot_kernels(t.launches, 0.8);
  ASSERT_EQ(hk.kernels.size(), 3u);
  for (const auto& k : hk.kernels) EXPECT_EQ(k.launches, 500) << k.kernel;
  EXPECT_EQ(t.launches[0].kernel, "stencil_step");
  EXPECT_EQ(t.launches[0].grid, (std::array<std::int64_t, 3>{8, 32, 1})); // 256 x 256 in 32 x 8 blocks
  EXPECT_EQ(t.launches[0].block, (std::array<std::int64_t, 3>{32, 8, 1}));
  // The picks ncu was given (manifest.json's launch_picks): first, middle, last of each.
  auto picks = pick_launches(t.launches, hk.hot_demangled(), 3);
  ASSERT_EQ(picks.size(), hk.hot_demangled().size());
  for (const auto& p : picks) EXPECT_EQ(p.invocations, (std::vector<std::int64_t>{1, 250, 500})) << p.function;
}
