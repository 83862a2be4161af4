// tune/grid_stride and the grid knob of tune/discover: which kernels compute the same with any
// grid, and the knob that scales the literal grid of those that fill less than half a wave.
#include "tune/discover.hpp"
#include "tune/grid_stride.hpp"

#include "util/process.hpp"
#include "util/strings.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace optimas;

namespace {

// The guard's verdict on the kernel `k` of `text`.
std::string dependence(const std::string& text, const std::string& k = "k") {
  auto f = cuda::parse_source("k.cu", text);
  const cuda::Function* fn = f.kernel(k);
  EXPECT_NE(fn, nullptr) << text;
  return fn ? tune::grid_dependence(f, *fn, {f}) : "no kernel";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A program in the shape of cuda-samples' quasirandomGenerator: grid-stride loops through
// variables, the stride behind a macro call, launched with a literal grid.
const char* k_app = R"(#include <cuda_runtime.h>
#define MUL(a, b) __umul24(a, b)
__global__ void gen(float* out, unsigned int n) {
  unsigned int tid = MUL(blockDim.x, blockIdx.x) + threadIdx.x;
  unsigned int threadN = MUL(blockDim.x, gridDim.x);
  for (unsigned int pos = tid; pos < n; pos += threadN) out[pos] = pos * 0.5f;
}
__global__ void sum(float* out, const float* in, int n) {
  float s = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) s += in[i];
  out[blockIdx.x] = s;
}
int main() {
  float *out, *in;
  gen<<<128, 128>>>(out, 1 << 20);
  sum<<<128, 256>>>(out, in, 1 << 20);
  return 0;
}
)";

analysis::KernelDiagnostics hot(const std::string& name, const std::string& id, double waves) {
  analysis::KernelDiagnostics k;
  k.time.kernel = name;
  k.time.hot = true;
  analysis::Roofline r;
  r.id = id;
  r.kernel = name;
  r.bound = "latency-bound";
  r.occupancy_limiter = "warps";
  r.waves = waves;
  r.achieved_occupancy = 6;
  r.theoretical_occupancy = 100;
  k.roofline = r;
  return k;
}

tune::Discovery discover(const std::string& text, std::vector<analysis::KernelDiagnostics> kernels) {
  analysis::Diagnostics d;
  d.kernels = std::move(kernels);
  return tune::discover({{"main.cu", text}}, d, 8);
}

} // namespace

TEST(GridStride, LoopsStartedFromBlockIdxAndStridedByGridDimAreIndependentOfTheGrid) {
  EXPECT_EQ(dependence(k_app, "gen"), "");
  // cuda-samples' scalarProd: one block a vector, straight from blockIdx and gridDim.
  EXPECT_EQ(dependence("__global__ void k(float* c, int v) {\n"
                       "  for (int vec = blockIdx.x; vec < v; vec += gridDim.x) { __syncthreads(); c[vec] = 1; }\n}\n"),
            "");
  // A start set once and named twice (two loops, as quasirandomGenerator's inverseCNDKernel).
  EXPECT_EQ(dependence("__global__ void k(float* o, int n, bool a) {\n"
                       "  const int tid = blockDim.x * blockIdx.x + threadIdx.x;\n"
                       "  const int stride = blockDim.x * gridDim.x;\n"
                       "  if (a) { for (int i = tid; i < n; i += stride) o[i] = 1; }\n"
                       "  else { for (int i = tid; i < n; i += stride) o[i] = 2; }\n}\n"),
            "");
}

TEST(GridStride, AnyOtherReadOfTheGridIsSaidWithItsLine) {
  // A block's partial result stored by its index: the grid decides how many there are.
  EXPECT_TRUE(has(dependence(k_app, "sum"), "line 11: it reads blockIdx other than to start or stride"))
      << dependence(k_app, "sum");
  // One element a thread: no loop, so more blocks would only add idle threads.
  std::string one = dependence("__global__ void k(float* o, int n) {\n"
                               "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) o[i] = 0;\n}\n");
  EXPECT_TRUE(has(one, "line 2: i, set from blockIdx, is used other than")) << one;
  std::string none = dependence("__global__ void k(float* o, int n) {\n"
                                "  for (int i = threadIdx.x; i < n; i += blockDim.x) o[i] = 0;\n}\n");
  EXPECT_TRUE(has(none, "no grid-stride loop")) << none;
  // The start used again after the loop; the stride used as a count.
  std::string again = dependence("__global__ void k(float* o, int n) {\n"
                                 "  int t = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                 "  for (int i = t; i < n; i += blockDim.x * gridDim.x) o[i] = 0;\n  o[t] = 1;\n}\n");
  EXPECT_TRUE(has(again, "t, set from blockIdx")) << again;
  std::string count = dependence("__global__ void k(float* o, int n) {\n"
                                 "  int s = blockDim.x * gridDim.x;\n"
                                 "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += s) o[i] = s;\n}\n");
  EXPECT_TRUE(has(count, "s, set from gridDim")) << count;
  // y and z, a stride that is not the grid's, a loop stepping otherwise.
  EXPECT_TRUE(has(dependence("__global__ void k(float* o, int n) {\n"
                             "  for (int i = blockIdx.y; i < n; i += gridDim.y) o[i] = 0;\n}\n"),
                  "line 2: it reads blockIdx in y or z"));
  EXPECT_FALSE(dependence("__global__ void k(float* o, int n) {\n"
                          "  for (int i = blockIdx.x; i < n; i += 4) o[i] = gridDim.x;\n}\n")
                   .empty());
  EXPECT_FALSE(dependence("__global__ void k(float* o, int n) {\n"
                          "  for (int i = blockIdx.x; i < n; i = i + gridDim.x) o[i] = 0;\n}\n")
                   .empty());
  // The step must advance the variable the init set.
  EXPECT_FALSE(dependence("__global__ void k(float* o, int n) {\n  int j = 0;\n"
                          "  for (int i = blockIdx.x; i < n; j += gridDim.x) o[i] = j;\n}\n")
                   .empty());
  // A comparison with the start is a use of it, not a member access.
  EXPECT_FALSE(dependence("__global__ void k(float* o, int n) {\n"
                          "  int t = blockIdx.x;\n  for (int i = t; i < n; i += gridDim.x) o[i] = i > t;\n}\n")
                   .empty());
}

TEST(GridStride, ReadsHiddenInACalleeOrAMacroAreFound) {
  std::string callee = dependence("__device__ int first() { return blockIdx.x * blockDim.x; }\n"
                                  "__global__ void k(float* o, int n) {\n"
                                  "  for (int i = first(); i < n; i += gridDim.x * blockDim.x) o[i] = 0;\n}\n");
  EXPECT_TRUE(has(callee, "it calls first (k.cu:1), which reads blockIdx or gridDim")) << callee;
  std::string macro = dependence("#define BLOCK blockIdx.x\n__global__ void k(float* o, int n) {\n"
                                 "  for (int i = threadIdx.x; i < n; i += gridDim.x * blockDim.x) o[BLOCK] = 0;\n}\n");
  EXPECT_TRUE(has(macro, "it names the macro BLOCK (k.cu:1)")) << macro;
}

TEST(GridKnob, ScalesTheLiteralGridsOfGridStrideKernelsShortOfAWave) {
  auto found = discover(k_app, {hot("gen", "RF1", 0.06), hot("sum", "RF2", 0.06)});
  ASSERT_EQ(found.settings.params.size(), 1u);
  EXPECT_EQ(found.settings.params[0].name, "OPTIMAS_GRID_SCALE");
  // Up to the first scale that gives two waves: 0.06 x 32 = 1.9, the cap.
  EXPECT_EQ(found.settings.params[0].values, (std::vector<std::string>{"1", "2", "4", "8", "16", "32"}));
  EXPECT_EQ(found.defaults.at("OPTIMAS_GRID_SCALE"), "1");
  const std::string& t = found.edited.at("main.cu");
  EXPECT_EQ(t.rfind("#ifndef OPTIMAS_GRID_SCALE\n#define OPTIMAS_GRID_SCALE 1\n#endif\n#include", 0), 0u) << t;
  EXPECT_TRUE(has(t, "  gen<<<(128 * OPTIMAS_GRID_SCALE), 128>>>(out, 1 << 20);")) << t;
  EXPECT_TRUE(has(t, "  sum<<<128, 256>>>(out, in, 1 << 20);")) << t; // its result depends on the grid
  ASSERT_EQ(found.knobs.size(), 1u);
  EXPECT_TRUE(has(found.knobs[0], "gen (main.cu:15, 128 blocks; RF1: 0.06 waves)")) << found.knobs[0];
  // Beside the literal block sizes' lines, the grid not scaled and why.
  auto sum = std::find_if(found.passed.begin(), found.passed.end(), [](auto& p) { return has(p, "not scaled"); });
  ASSERT_NE(sum, found.passed.end());
  EXPECT_TRUE(has(*sum, "main.cu:16: sum's grid (128 blocks, 0.06 waves) not scaled: line 11")) << *sum;
  // Spaces around the grid are the launch's own.
  std::string spaced = k_app;
  spaced.replace(spaced.find("gen<<<128, 128>>>"), 17, "gen<<< 128 , 128>>>");
  EXPECT_TRUE(has(discover(spaced, {hot("gen", "RF1", 0.06)}).edited.at("main.cu"),
                  "gen<<< (128 * OPTIMAS_GRID_SCALE) , 128>>>"))
      << discover(spaced, {hot("gen", "RF1", 0.06)}).edited.at("main.cu");
  // A grid of 0.19 waves stops at 16 (3.0 waves); half a wave or more gets no knob.
  EXPECT_EQ(discover(k_app, {hot("gen", "RF1", 0.19)}).settings.params.at(0).values.back(), "16");
  EXPECT_TRUE(discover(k_app, {hot("gen", "RF1", 0.5)}).empty());
}

TEST(GridKnob, TheEditedSourceCompilesToTheSameKernelsAndTakesTheScale) {
  std::string nvcc = "/usr/local/cuda/bin/nvcc";
  if (auto found = util::find_executable("nvcc")) nvcc = *found;
  if (!util::find_executable(nvcc)) GTEST_SKIP() << "nvcc not found";
  auto found = discover(k_app, {hot("gen", "RF1", 0.1)});
  test::TempDir dir;
  auto compile = [&](const std::string& name, const std::string& text, std::vector<std::string> flags) {
    auto path = dir.file(name, text);
    util::ProcessSpec spec;
    spec.argv = {nvcc, "-arch=sm_90", "-o", path + ".out", path};
    spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
    spec.timeout_s = 180;
    auto r = util::run_process(spec);
    EXPECT_TRUE(r.ok()) << name << ": " << r.err;
    return r.ok();
  };
  ASSERT_TRUE(compile("scaled.cu", found.edited.at("main.cu"), {"-DOPTIMAS_GRID_SCALE=8"}));
  auto ptx = [&](const std::string& name, const std::string& text) {
    auto path = dir.file(name, text);
    util::ProcessSpec spec;
    spec.argv = {nvcc, "-arch=sm_90", "-ptx", "-o", path + ".ptx", path};
    spec.timeout_s = 180;
    EXPECT_TRUE(util::run_process(spec).ok());
    return util::read_file(path + ".ptx");
  };
  EXPECT_EQ(ptx("original.cu", k_app), ptx("edited.cu", found.edited.at("main.cu")));
}
