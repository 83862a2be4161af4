#include "cuda/source.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

using namespace optimas::cuda;

namespace {

const char* k_code = R"(#include <cstdio>
#define N 4 /* a "comment" with __global__ inside */
// __global__ void commented_out(int* x) {}
template <typename T, int B>
__global__ void __launch_bounds__(256, 2) scale(const T* __restrict__ in, T* out, int n) {
  const char* s = "__global__ void fake() {";
  int i = blockIdx.x * B + threadIdx.x;
  if (i < n) out[i] = helper(in[i]);
}

__device__ inline float helper(float v) { return v * 2.0f; }

__global__ void plain(float* a,
                      const float* b, int n);

__global__ void plain(float* a,
                      const float* b, int n) {
  for (int k = 0; k < n; ++k) { a[k] += b[k]; }
}
)";

} // namespace

TEST(CudaSource, FindsKernelsAndDeviceFunctions) {
  auto f = parse_source("k.cu", k_code);
  ASSERT_EQ(f.functions.size(), 3u); // scale, helper, plain (the declaration is not a definition)
  const Function* scale = f.kernel("scale");
  ASSERT_NE(scale, nullptr);
  EXPECT_TRUE(scale->is_template);
  EXPECT_EQ(scale->launch_bounds, "256, 2");
  EXPECT_EQ(scale->first_line, 4);
  EXPECT_EQ(scale->body_first_line, 5);
  EXPECT_EQ(scale->last_line, 9);
  ASSERT_EQ(scale->parameters.size(), 3u);
  EXPECT_EQ(scale->parameters[0].name, "in");
  EXPECT_TRUE(scale->parameters[0].pointer);
  EXPECT_TRUE(scale->parameters[0].const_pointee);
  EXPECT_TRUE(scale->parameters[0].restrict_);
  EXPECT_EQ(scale->parameters[1].name, "out");
  EXPECT_FALSE(scale->parameters[1].const_pointee);
  EXPECT_FALSE(scale->parameters[2].pointer);
  const Function* helper = f.function("helper");
  ASSERT_NE(helper, nullptr);
  EXPECT_FALSE(helper->kernel);
  const Function* plain = f.kernel("plain");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->first_line, 16);
  EXPECT_EQ(plain->last_line, 19);
  EXPECT_EQ(plain->signature, "__global__ void plain(float*a,const float*b,int n)");
  EXPECT_EQ(f.kernel("commented_out"), nullptr);
  EXPECT_EQ(f.kernel("fake"), nullptr);
}

TEST(CudaSource, NormalisedSignaturesIgnoreLayout) {
  EXPECT_EQ(normalise("__global__ void k( float *a ,\n  int n )"), normalise("__global__ void k(float* a, int n)"));
  EXPECT_NE(normalise("void k(float* a)"), normalise("void k(double* a)"));
}

TEST(CudaSource, NumberedLines) {
  auto f = parse_source("k.cu", "a\nb\nc\n");
  EXPECT_EQ(f.numbered(2, 3), "    2 | b\n    3 | c\n");
  EXPECT_EQ(f.line_count(), 3);
}

TEST(CudaSource, EveryExampleKernelIsFound) {
  // The examples' hot kernels, as recorded on the H200.
  const std::pair<const char*, const char*> kernels[] = {
      {"stream/main.cu", "triad_kernel"}, {"accuracy/main.cu", "topk_hits_kernel"}, {"shmem/main.cu", "blur_kernel"},
      {"sobol/main.cu", "sobol_kernel"},  {"gather/main.cu", "xs_lookup_kernel"},   {"stencil/main.cu", "rhs_kernel"}};
  for (auto [file, kernel] : kernels) {
    auto f = load_source(std::string(OPTIMAS_TEST_DATA) + "/../../examples/" + file);
    EXPECT_NE(f.kernel(kernel), nullptr) << file << ": " << kernel;
  }
  auto lookup = load_source(std::string(OPTIMAS_TEST_DATA) + "/../../examples/gather/lookup.cuh");
  EXPECT_FALSE(lookup.functions.empty());
}

// What a fuzzer makes of a file: parentheses that never close after thousands of `__device__`,
// runs of qualifiers, chained __launch_bounds__, comparisons before a template. The kernels
// after such stretches are still found, whole. (Reading them is linear in the file's length:
// bench_parse_source prints the figures; the quadratic reading took minutes on 1 MB.)
TEST(CudaSource, MalformedStretchesDoNotHideLaterKernels) {
  std::string code = "__device__ bool lt(int a, int b) { return a < b; }\n"; // a '<' that is no bracket
  for (int i = 0; i < 3000; ++i) code += "__device__ int f(\n";              // never closed
  code += ")))\n";
  for (int i = 0; i < 3000; ++i) code += "static __global__ __device__ inline ";
  code += ";\n";
  code += "template <int N> __global__ void __launch_bounds__(N, 1) __launch_bounds__(2 * N) tk(int* p) {\n"
          "  if (p[0] > 0) p[0] = N;\n"
          "}\n"
          "__global__ void after(float* a) { a[0] = 1.0f; }\n";
  auto f = parse_source("m.cu", code);
  const Function* lt = f.function("lt");
  ASSERT_NE(lt, nullptr);
  EXPECT_FALSE(lt->kernel);
  const Function* tk = f.kernel("tk");
  ASSERT_NE(tk, nullptr);
  EXPECT_TRUE(tk->is_template);
  EXPECT_EQ(tk->launch_bounds, "2 * N");
  ASSERT_EQ(tk->parameters.size(), 1u);
  EXPECT_EQ(tk->parameters[0].name, "p");
  EXPECT_EQ(tk->first_line, 3004);
  EXPECT_EQ(tk->last_line, 3006);
  const Function* after = f.kernel("after");
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->first_line, 3007);
  EXPECT_EQ(f.text.substr(after->begin, after->end - after->begin), "__global__ void after(float* a) { a[0] = 1.0f; }");
  EXPECT_EQ(f.functions.size(), 3u);
}

// The host functions that launch a kernel: the outermost function body around each launch, not a
// namespace, class, lambda or block; a kernel that launches it (dynamic parallelism) is not host code.
TEST(CudaSource, LaunchingFunctions) {
  const char* code = R"(#include <cstdio>
namespace app {
template <int W> __global__ void k(float* a) { a[0] = W; }
__global__ void parent(float* a) { k<1><<<1, 1>>>(a); }
struct Runner {
 public:
  void run(float* a) const {
    auto go = [&](int n) { k<8><<<n, 256>>>(a); };
    if (a) { go(2); }
  }
};
}
static void other(float* a) {
  k<8><<<1, 32>>>(a);
  k<8><<<2, 32>>>(a);
}
int less(int a, int b) { return a < b; }
void Runner2::go(float* a) { k <<<1, 1>>>(a); }
)";
  auto f = parse_source("k.cu", code);
  auto found = launching_functions(f, "k");
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].name, "run");
  EXPECT_EQ(found[0].first_line, 7);
  EXPECT_EQ(found[0].last_line, 10);
  EXPECT_FALSE(found[0].kernel);
  EXPECT_EQ(found[1].name, "other");
  EXPECT_EQ(found[1].first_line, 13);
  EXPECT_EQ(found[1].last_line, 16);
  EXPECT_EQ(f.text.substr(found[1].begin, 11), "static void");
  EXPECT_EQ(found[2].name, "Runner2::go");
  EXPECT_TRUE(launching_functions(f, "less").empty());
  EXPECT_TRUE(launching_functions(f, "parent").empty());
}

// The host functions that make the runtime calls an AP item is about (optimize.scope:
// application), found by the name's beginning: cudaMemcpy finds cudaMemcpyAsync too.
TEST(CudaSource, CallingFunctionsByNamePrefix) {
  const char* code = R"(__global__ void k(float* a) { a[0] = 1; }
__device__ void d(float* a) { cudaDeviceSynchronize(); }
static float flag(const float* d_flag) {
  float f;
  cudaMemcpy(&f, d_flag, sizeof f, cudaMemcpyDeviceToHost);
  return f;
}
void upload(float* d_a, const float* a, cudaStream_t s) {
  cudaMemcpyAsync(d_a, a, 4, cudaMemcpyHostToDevice, s);
}
void wait() { cudaDeviceSynchronize(); }
int main() {
  auto kind = cudaMemcpyDeviceToHost; // a name, not a call
  return kind;
}
)";
  auto f = parse_source("h.cu", code);
  auto copies = calling_functions(f, {"cudaMemcpy"});
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0].name, "flag");
  EXPECT_EQ(copies[0].first_line, 3);
  EXPECT_EQ(copies[0].last_line, 7);
  EXPECT_EQ(copies[1].name, "upload");
  auto syncs = calling_functions(f, {"cudaDeviceSynchronize"});
  ASSERT_EQ(syncs.size(), 1u) << "the __device__ function is not host code";
  EXPECT_EQ(syncs[0].name, "wait");
  EXPECT_EQ(calling_functions(f, {"cudaMemcpy", "cudaDeviceSynchronize"}).size(), 3u);
  EXPECT_TRUE(calling_functions(f, {}).empty());
  EXPECT_TRUE(calling_functions(f, {""}).empty());
}
