// tune/discover: the knobs found in an application's sources where its hot kernels' evidence
// points to them, the edits that make them tunable, and what is passed over.
#include "tune/config_echo.hpp"
#include "tune/discover.hpp"

#include "evaluate/sandbox.hpp"
#include "tune/space.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

using namespace optimas;

namespace {

const char* k_app = R"(#include <cuda_runtime.h>
#define TPB 256 // threads per block
#define N_ITER 4
__global__ void scale(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
__global__ void other(float* y) { y[threadIdx.x] = 0; }
int main() {
  float *x, *y;
  int n = 1 << 20;
  scale<<<(n + TPB - 1) / TPB, TPB>>>(x, y, n);
  other<<<1, 128>>>(y);
  return 0;
}
)";

analysis::KernelDiagnostics hot(const std::string& name, const std::string& limiter, const std::string& bound,
                                profile::Stall stall = profile::Stall::long_scoreboard) {
  analysis::KernelDiagnostics k;
  k.time.kernel = name;
  k.time.hot = true;
  analysis::Roofline r;
  r.id = "RF1";
  r.kernel = name;
  r.bound = bound;
  r.occupancy_limiter = limiter;
  r.occupancy_limits = {{"registers", 3}, {"warps", 8}};
  r.block_size = 256;
  r.achieved_occupancy = 35;
  k.roofline = r;
  analysis::StallSummary s;
  s.kernel = name;
  s.total_samples = 100;
  s.kernel_stalls = {{stall, 70}, {profile::Stall::selected, 30}};
  k.stalls = s;
  return k;
}

analysis::Diagnostics diagnostics(std::vector<analysis::KernelDiagnostics> kernels) {
  analysis::Diagnostics d;
  d.kernels = std::move(kernels);
  return d;
}

} // namespace

TEST(TuneDiscover, BlockMacroBoundsAndCacheWhereTheEvidencePoints) {
  auto found = tune::discover(
      {{"main.cu", k_app}},
      diagnostics({hot("scale", "registers", "latency-bound"), hot("other", "warps", "latency-bound")}), 32);
  ASSERT_EQ(found.settings.params.size(), 3u) << (found.passed.empty() ? "" : found.passed[0]);
  EXPECT_EQ(found.settings.params[0].name, "TPB");
  EXPECT_EQ(found.settings.params[0].values, (std::vector<std::string>{"64", "128", "256", "512", "1024"}));
  EXPECT_EQ(found.settings.params[1].name, "OPTIMAS_MIN_BLOCKS_scale");
  EXPECT_EQ(found.settings.params[1].values, (std::vector<std::string>{"0", "4", "6"}));
  EXPECT_EQ(found.settings.params[2].name, "dlcm");
  EXPECT_EQ(found.settings.params[2].kind, config::TuneParam::Kind::flag);
  EXPECT_EQ(found.settings.budget, tune::k_discovered_budget);
  EXPECT_EQ(found.defaults.at("TPB"), "256");
  EXPECT_EQ(found.defaults.at("OPTIMAS_MIN_BLOCKS_scale"), "0");
  // The edit: the macro guarded, the bounds macro on the kernel, both defaulting to the program as it was.
  const std::string& t = found.edited.at("main.cu");
  EXPECT_NE(t.find("#ifndef TPB\n#define TPB 256 // threads per block\n#endif\n"), std::string::npos) << t;
  EXPECT_NE(t.find("#ifndef OPTIMAS_MIN_BLOCKS_scale\n#define OPTIMAS_MIN_BLOCKS_scale 0\n#endif\n"
                   "#if OPTIMAS_MIN_BLOCKS_scale > 0\n#define OPTIMAS_BOUNDS_scale __launch_bounds__(TPB, "
                   "OPTIMAS_MIN_BLOCKS_scale)\n#else\n#define OPTIMAS_BOUNDS_scale\n#endif\n"
                   "__global__ void OPTIMAS_BOUNDS_scale scale(const float* x"),
            std::string::npos)
      << t;
  // `other` is launched with a literal block size: passed over, and said so.
  ASSERT_FALSE(found.passed.empty());
  EXPECT_NE(found.passed[0].find("other is launched with a literal block size (128)"), std::string::npos)
      << found.passed[0];
  EXPECT_NE(found.knobs[0].find("RF1: latency-bound, occupancy limited by registers, 35% achieved occupancy"),
            std::string::npos)
      << found.knobs[0];
  // The space these make: 5 x 3 x 3 points, the all-default one among them.
  tune::Space space(found.settings, "main.cu");
  EXPECT_EQ(space.allowed_points().size(), 45u);
}

TEST(TuneDiscover, NothingWithoutEvidence) {
  // Occupancy limited by warps, compute-bound, waiting on nothing that the knobs address.
  auto found =
      tune::discover({{"main.cu", k_app}},
                     diagnostics({hot("scale", "warps", "compute-bound", profile::Stall::math_pipe_throttle)}), 32);
  EXPECT_TRUE(found.empty());
  EXPECT_TRUE(found.edited.empty());
}

TEST(TuneDiscover, AGuardedMacroIsLeftAsItIsAndBoundsAreNotAddedTwice) {
  std::string guarded = k_app;
  guarded.replace(guarded.find("#define TPB 256 // threads per block"), 35, "#ifndef TPB\n#define TPB 256\n#endif");
  guarded.replace(guarded.find("__global__ void scale"), 21, "__global__ void __launch_bounds__(256) scale");
  auto found = tune::discover({{"main.cu", guarded}}, diagnostics({hot("scale", "registers", "compute-bound")}), 4);
  ASSERT_EQ(found.settings.params.size(), 1u);
  EXPECT_EQ(found.settings.params[0].name, "TPB");
  EXPECT_TRUE(found.edited.empty()); // nothing to edit: -DTPB reaches the guarded macro
  EXPECT_EQ(found.settings.budget, 4);
  bool said = false;
  for (const auto& p : found.passed) said = said || p.find("has __launch_bounds__ already") != std::string::npos;
  EXPECT_TRUE(said);
}

// The instances of a template are hot kernels of one name: each reason is said once (alignedTypes'
// six testKernel<...> instances gave six lines "testKernel is a template").
TEST(TuneDiscover, EachReasonOnceForATemplatesInstances) {
  std::string tmpl = k_app;
  tmpl.replace(tmpl.find("__global__ void scale(const float* x"), 36,
               "template <int K> __global__ void scale(const float* x");
  auto found =
      tune::discover({{"main.cu", tmpl}},
                     diagnostics({hot("void scale<1>(const float *, float *, int)", "registers", "compute-bound"),
                                  hot("void scale<2>(const float *, float *, int)", "registers", "compute-bound")}),
                     4);
  int said = 0;
  for (const auto& p : found.passed) said += p.find("scale is a template") != std::string::npos;
  EXPECT_EQ(said, 1) << util::join(found.passed, "\n");
}

// The guard need not be the directive right before the define (cuda::object_macros follows the
// conditionals), nor written without spaces.
TEST(TuneDiscover, AMacroGuardedAboveOtherDirectivesIsLeftAsItIs) {
  std::string guarded = k_app;
  guarded.replace(guarded.find("#define TPB 256 // threads per block"), 35,
                  "#  ifndef TPB // overridable\n#define WARPS 8\n# define TPB 256\n#endif");
  guarded.replace(guarded.find("__global__ void scale"), 21, "__global__ void __launch_bounds__(256) scale");
  auto found = tune::discover({{"main.cu", guarded}}, diagnostics({hot("scale", "registers", "compute-bound")}), 4);
  ASSERT_EQ(found.settings.params.size(), 1u);
  EXPECT_EQ(found.settings.params[0].name, "TPB");
  EXPECT_EQ(found.defaults.at("TPB"), "256");
  EXPECT_TRUE(found.edited.empty()); // no second #ifndef around it
}

// The edited source without -D is the program it was (the same PTX), and every knob's value
// compiles (nvcc; skipped without it).
TEST(TuneDiscover, EditedSourcesCompileToTheSameProgramByDefault) {
  std::string nvcc = "/usr/local/cuda/bin/nvcc";
  if (auto found = util::find_executable("nvcc")) nvcc = *found;
  if (!util::find_executable(nvcc)) GTEST_SKIP() << "nvcc not found";
  auto found = tune::discover({{"main.cu", k_app}}, diagnostics({hot("scale", "registers", "latency-bound")}), 32);
  ASSERT_EQ(found.edited.size(), 1u);
  test::TempDir dir;
  auto ptx = [&](const std::string& name, const std::string& text, std::vector<std::string> flags) {
    auto path = dir.file(name, text);
    util::ProcessSpec spec;
    spec.argv = {nvcc, "-arch=sm_90", "-ptx", "-o", path + ".ptx", path};
    spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
    spec.timeout_s = 180;
    auto r = util::run_process(spec);
    EXPECT_TRUE(r.ok()) << name << ": " << r.err;
    return util::read_file(path + ".ptx");
  };
  std::string before = ptx("original.cu", k_app, {});
  std::string after = ptx("edited.cu", found.edited.at("main.cu"), {});
  ASSERT_FALSE(before.empty());
  EXPECT_EQ(before, after);
  std::string tuned = ptx("tuned.cu", found.edited.at("main.cu"), {"-DTPB=128", "-DOPTIMAS_MIN_BLOCKS_scale=4"});
  EXPECT_NE(tuned.find(".maxntid 128"), std::string::npos) << tuned;
  EXPECT_NE(tuned.find(".minnctapersm 4"), std::string::npos) << tuned;
}

// A declaration that begins before __global__ on its line (extern "C", as driver-API samples
// write it): the directives go on lines of their own, before it.
TEST(TuneDiscover, BoundsDirectivesStartTheirLines) {
  std::string externed = k_app;
  externed.replace(externed.find("__global__ void scale"), 21, "extern \"C\" __global__ void scale");
  auto found = tune::discover({{"main.cu", externed}}, diagnostics({hot("scale", "registers", "compute-bound")}), 8);
  const std::string& t = found.edited.at("main.cu");
  EXPECT_NE(t.find("#endif\nextern \"C\" __global__ void OPTIMAS_BOUNDS_scale scale("), std::string::npos) << t;
  for (std::size_t at = t.find('#'); at != std::string::npos; at = t.find('#', at + 1))
    EXPECT_TRUE(at == 0 || t[at - 1] == '\n') << "a directive inside a line at " << at << ":\n" << t;
}

// A launch whose block size is a variable set once from the macro (`dim3 threads(TPB)`,
// `int t = TPB`) is followed to it; one assigned again, or 2-D, is left alone.
TEST(TuneDiscover, ABlockVariableIsFollowedToItsMacro) {
  auto with_launch = [](const std::string& declaration, const std::string& block) {
    std::string s = k_app;
    s.replace(s.find("  scale<<<(n + TPB - 1) / TPB, TPB>>>(x, y, n);"), 47,
              declaration + "\n  scale<<<(n + TPB - 1) / TPB, " + block + ">>>(x, y, n);");
    return s;
  };
  auto knobs = [](const std::string& src) {
    auto found = tune::discover({{"main.cu", src}}, diagnostics({hot("scale", "registers", "compute-bound")}), 8);
    std::vector<std::string> names;
    for (const auto& p : found.settings.params) names.push_back(p.name);
    return names;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(knobs(with_launch("  dim3 threads(TPB);", "threads")), (V{"TPB", "OPTIMAS_MIN_BLOCKS_scale"}));
  EXPECT_EQ(knobs(with_launch("  dim3 threads(TPB, 1);", "threads")), (V{"TPB", "OPTIMAS_MIN_BLOCKS_scale"}));
  EXPECT_EQ(knobs(with_launch("  int t = TPB;", "t")), (V{"TPB", "OPTIMAS_MIN_BLOCKS_scale"}));
  EXPECT_EQ(knobs(with_launch("  int t = TPB;\n  if (n < 1000) t = 64;", "t")), (V{"OPTIMAS_MIN_BLOCKS_scale"}));
  EXPECT_EQ(knobs(with_launch("  dim3 threads(TPB, TPB);", "threads")), (V{"OPTIMAS_MIN_BLOCKS_scale"}));
  EXPECT_EQ(knobs(with_launch("  dim3 threads(TPB);\n  threads.x = 32;", "threads")), (V{"OPTIMAS_MIN_BLOCKS_scale"}));
}

// Rodinia's programs print their block sizes; a point that changes one must not fail for that.
TEST(TuneDiscover, LinesThatPrintABlockKnobAreFoundWithTheKnob) {
  std::string s = k_app;
  s.replace(s.find("  float *x, *y;"), 14,
            "  float *x, *y;\n  printf(\"WG size of kernel = %d \\n\", TPB);\n"
            "  // printf(\"commented %d\\n\", TPB);\n  printf(\"sum %f\\n\", 1.0);");
  auto found = tune::discover({{"main.cu", s}}, diagnostics({hot("scale", "registers", "latency-bound")}), 8);
  ASSERT_EQ(found.echoes.size(), 1u);
  EXPECT_EQ(found.echoes[0].file, "main.cu");
  EXPECT_EQ(found.echoes[0].line, 11);
  EXPECT_EQ(found.echoes[0].knobs, (std::vector<std::string>{"TPB"}));
  EXPECT_EQ(found.echoes[0].patterns, (std::vector<std::string>{"^WG size of kernel =  *[-+]?[0-9]+ * $"}));
  // No knob, no line: TPB is not made a knob where the evidence does not point at it.
  EXPECT_TRUE(
      tune::discover({{"main.cu", s}}, diagnostics({hot("scale", "warps", "compute-bound")}), 8).echoes.empty());
}

TEST(TuneDiscover, ConfigEchoesAreIntegersOfNamesMatchedAsWholeLines) {
  auto echoes = [](const std::string& call) {
    return tune::config_echoes({{"m.cu", "#define N 8\nvoid f() {\n  " + call + "\n}\n"}}, {"BLOCK_SIZE", "TPB"});
  };
  // pathfinder's: one call continued by a backslash, five lines. Dropped: the lines whose values
  // come from the knob, directly or through variables computed from it; kept: the input's.
  auto p = echoes("int small = BLOCK_SIZE - h * 2;\n  int grid = cols / small + 1;\n"
                  "  printf(\"pyramidHeight: %d\\ngridSize: [%d]\\nblockSize: %d\\nblockGrid:[%d]\\n"
                  "targetBlock:[%d]\\n\",\\\n  h, cols, BLOCK_SIZE, grid, small);");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].knobs, (std::vector<std::string>{"BLOCK_SIZE"}));
  EXPECT_EQ(p[0].patterns,
            (std::vector<std::string>{"^blockSize:  *[-+]?[0-9]+ *$", "^blockGrid:\\[ *[-+]?[0-9]+ *\\]$",
                                      "^targetBlock:\\[ *[-+]?[0-9]+ *\\]$"}));
  // gaussian's: the knob twice, named once, beside a macro and a number; fprintf to stdout
  // counts, to stderr is not compared.
  auto g = echoes(R"(fprintf(stdout, "WG %d X %d (%x, %d)\n", TPB, TPB, 16, N);)");
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].knobs, (std::vector<std::string>{"TPB"}));
  EXPECT_EQ(g[0].patterns,
            (std::vector<std::string>{
                "^WG  *[-+]?[0-9]+ * X  *[-+]?[0-9]+ * \\( *(0[xX])?[0-9a-fA-F]+ *,  *[-+]?[0-9]+ *\\)$"}));
  EXPECT_TRUE(echoes(R"(fprintf(stderr, "WG %d\n", TPB);)").empty());
  // What could print a result is compared as it is: a float, a string, a call, an element, a
  // member, a line without three letters of its own, a format that is not one literal, a value
  // beside the knob's that comes from neither a knob nor a macro (errors), a line of no knob.
  for (const char* call :
       {R"(printf("block %d sum %f\n", TPB, sum);)", R"(printf("block %d %s\n", TPB, name);)",
        R"(printf("block %d errors %d\n", TPB, count(x));)", R"(printf("block %d got %d\n", TPB, out[0]);)",
        R"(printf("block %d got %d\n", TPB, r.errors);)", R"(printf("%d\n", TPB);)",
        R"(printf("block %d\n", TPB, extra);)", R"(printf(fmt, TPB);)", R"(printf("block %.3d\n", TPB);)",
        R"(printf("block %d\n", N);)", R"(printf("block %d errors %d\n", TPB, errors);)"})
    EXPECT_TRUE(echoes(call).empty()) << call;
  auto two = echoes(R"(printf("block %d\nseen %d\n", TPB, seen);)");
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(two[0].patterns, (std::vector<std::string>{"^block  *[-+]?[0-9]+ *$"})) << "the line of `seen` stays";
}

TEST(TuneDiscover, DroppedEchoLinesLeaveTheRestOfAnOutput) {
  test::TempDir t;
  const std::string out = (t.path() / "out.txt").string();
  util::write_file(out, "WG size of kernel = 64 \nresult 3.5\nWG size of kernel = 64 and more\nlast");
  evaluate::drop_whole_lines(out, {"^WG size of kernel =  *[-+]?[0-9]+ * $"});
  EXPECT_EQ(util::read_file(out), "result 3.5\nWG size of kernel = 64 and more\nlast");
}

// Rodinia's gaussian: `int side, g; side = SIDE; dim3 b(side, side);`, 4 x 4 threads a block.
TEST(TuneDiscover, ASquareBlocksSideIsFollowedThroughAVariableSetOnce) {
  auto with_side = [](const std::string& lines) {
    std::string s = k_app;
    s.replace(s.find("#define N_ITER 4\n"), 17, "#define N_ITER 4\n#define SIDE 4\n");
    s.replace(s.find("  scale<<<(n + TPB - 1) / TPB, TPB>>>(x, y, n);"), 47,
              lines + "\n  dim3 threads(side, side);\n  scale<<<n / (side * side), threads>>>(x, y, n);");
    return s;
  };
  const std::string s = with_side("  int side, g;\n  side = SIDE;\n  g = n / side;");
  auto found = tune::discover({{"main.cu", s}}, diagnostics({hot("scale", "registers", "latency-bound")}), 8);
  ASSERT_FALSE(found.settings.params.empty());
  EXPECT_EQ(found.settings.params[0].name, "SIDE");
  EXPECT_EQ(found.settings.params[0].values, (std::vector<std::string>{"4", "8", "16", "32"}));
  EXPECT_NE(found.knobs[0].find("the block side (a square 2-D block) of scale"), std::string::npos) << found.knobs[0];
  // The bounds count the block's threads, not its side.
  EXPECT_NE(found.edited.at("main.cu").find("__launch_bounds__((SIDE * SIDE), OPTIMAS_MIN_BLOCKS_scale)"),
            std::string::npos)
      << found.edited.at("main.cu");
  // Set twice, or not square: left alone.
  auto names = [](const std::string& src) {
    std::vector<std::string> out;
    for (const auto& p :
         tune::discover({{"main.cu", src}}, diagnostics({hot("scale", "blocks", "latency-bound")}), 8).settings.params)
      out.push_back(p.name);
    return out;
  };
  EXPECT_EQ(names(s), (std::vector<std::string>{"SIDE", "dlcm"}));
  EXPECT_EQ(names(with_side("  int side;\n  side = SIDE;\n  if (n > 99) { side = 8; }")),
            (std::vector<std::string>{"dlcm"}));
  std::string oblong = s;
  oblong.replace(oblong.find("dim3 threads(side, side);"), 25, "dim3 threads(side, 2);");
  EXPECT_EQ(names(oblong), (std::vector<std::string>{"dlcm"}));
}
