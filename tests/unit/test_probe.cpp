#include "evaluate/probe.hpp"

#include <gtest/gtest.h>

using namespace optimas::evaluate;

namespace {

const char* k_source = R"(// two kernels and a device function
template <int B>
__global__ void __launch_bounds__(256) fan2(float* m, const float* a, int n) {
  int i = blockIdx.x * B + threadIdx.x;
  if (i < n) m[i] = a[i] * 2.0f;
}

__device__ float twice(float x) { return 2 * x; }

__global__ void fan1(float* m, int n) {
  const char* brace = "{"; // a brace in a string is no body
  if (threadIdx.x < n) m[threadIdx.x] = twice(1.0f);
}

int main() { return 0; }
)";

} // namespace

TEST(Probe, TheNamedKernelsReturnFirstAndNothingElseChanges) {
  auto out = empty_kernels({{"gauss.cu", k_source}, {"other.cu", "__global__ void k() {}\n"}}, {"ns::fan2<64>"});
  ASSERT_EQ(out.kernels, std::vector<std::string>{"fan2 (gauss.cu:2)"});
  ASSERT_EQ(out.sources.size(), 1u); // other.cu holds no named kernel: not rewritten
  const std::string& text = out.sources.at("gauss.cu");
  EXPECT_NE(text.find("int n) { return; /* optimas: validation probe */\n  int i ="), std::string::npos) << text;
  EXPECT_EQ(text.find("return; /* optimas", text.find("fan1")), std::string::npos) << "fan1 was not named";
  EXPECT_NE(text.find("__device__ float twice(float x) { return 2 * x; }"), std::string::npos);
}

TEST(Probe, NoNamesEmptyEveryKernelOfEveryFile) {
  auto out = empty_kernels({{"gauss.cu", k_source}, {"other.cu", "__global__ void k() {}\n"}}, {});
  EXPECT_EQ(out.kernels, (std::vector<std::string>{"fan2 (gauss.cu:2)", "fan1 (gauss.cu:10)", "k (other.cu:1)"}));
  EXPECT_EQ(out.sources.at("other.cu"), "__global__ void k() { return; /* optimas: validation probe */}\n");
  const std::string& text = out.sources.at("gauss.cu");
  EXPECT_NE(text.find("int n) { return; /* optimas: validation probe */\n  const char* brace"), std::string::npos)
      << text;
  EXPECT_NE(text.find("{ return 2 * x; }"), std::string::npos) << "a __device__ function is no kernel";
}

TEST(Probe, NoKernelNamedInTheSourcesLeavesNothingToProbe) {
  auto out = empty_kernels({{"gauss.cu", k_source}}, {"elsewhere"});
  EXPECT_TRUE(out.kernels.empty());
  EXPECT_TRUE(out.sources.empty());
}

TEST(Probe, TheBlindMessageNamesTheKernelsTheConfigAndWhereToLook) {
  auto m = blind_validation("default", {"Fan1 (gaussian.cu:308)", "Fan2 (gaussian.cu:322)"}, "/runs/x/baseline/probe");
  EXPECT_NE(m.find("with Fan1 (gaussian.cu:308), Fan2 (gaussian.cu:322) emptied"), std::string::npos) << m;
  EXPECT_NE(m.find("config \"default\""), std::string::npos) << m;
  EXPECT_NE(m.find("/runs/x/baseline/probe"), std::string::npos) << m;
}
