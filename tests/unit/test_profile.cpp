// profile/profile.cpp: the profile model's lookups and the kernel-name keys that match the
// tracer's, ncu's and the source page's spellings of one kernel.
#include "profile/profile.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace optimas::profile;

TEST(ProfileModel, MetricLookup) {
  Launch l;
  l.metrics["gpu__time_duration.sum"] = {353024, "ns", ""};
  l.metrics["device__attribute_display_name"] = {k_nan, "", "NVIDIA H200"};
  ASSERT_NE(l.metric("gpu__time_duration.sum"), nullptr);
  EXPECT_EQ(l.metric("gpu__time_duration.sum")->unit, "ns");
  EXPECT_DOUBLE_EQ(l.value("gpu__time_duration.sum"), 353024);
  EXPECT_EQ(l.metric("no_such_metric"), nullptr);
  EXPECT_TRUE(std::isnan(l.value("no_such_metric")));
  // A text value is there, but it is not a number.
  ASSERT_NE(l.metric("device__attribute_display_name"), nullptr);
  EXPECT_EQ(l.metric("device__attribute_display_name")->text, "NVIDIA H200");
  EXPECT_TRUE(std::isnan(l.value("device__attribute_display_name")));
}

// A block's SASS instructions hold its samples and its CUDA lines repeat them: the instructions
// are the total when there are any, and the two are never added.
TEST(ProfileModel, TotalSamplesPreferInstructions) {
  KernelSource s;
  EXPECT_EQ(s.total_samples(), 0u);
  s.lines.push_back({"k.cu", 4, "y[i] = a * x[i] + y[i];", {5075, 4700, {}, {}}});
  s.lines.push_back({"k.cu", 9, "for (...)", {653, 600, {}, {}}});
  EXPECT_EQ(s.total_samples(), 5728u);
  s.instructions.push_back({0x10, "LDG.E R2, [R2.64]", "k.cu", 4, {5000, 4700, {}, {}}});
  s.instructions.push_back({0x20, "FFMA R7, R2, UR6, R7", "", 0, {729, 650, {}, {}}});
  EXPECT_EQ(s.total_samples(), 5729u);
}

TEST(ProfileModel, TimedLaunchesAreTheTimingPassWhenThereIsOne) {
  optimas::profile::Run r;
  r.launches.resize(2);
  EXPECT_EQ(&r.timed_launches(), &r.launches);
  r.timing.resize(5);
  EXPECT_EQ(&r.timed_launches(), &r.timing);
}

TEST(KernelNames, FunctionName) {
  EXPECT_EQ(kernel_function_name("rhs4<0, 1>"), "rhs4");
  EXPECT_EQ(kernel_function_name("dloop"), "dloop");
  EXPECT_EQ(kernel_function_name("ns::k<float, (int)3>"), "ns::k");
  EXPECT_EQ(kernel_function_name(""), "");
}

TEST(KernelNames, BaseName) {
  EXPECT_EQ(kernel_base_name("dloop(int, double *)"), "dloop");
  EXPECT_EQ(kernel_base_name("void rhs4_X<0, 1>(double *, int)"), "rhs4_X<0, 1>");
  EXPECT_EQ(kernel_base_name("void ns::k<float, (int)3>(float const*)"), "ns::k<float, (int)3>");
  EXPECT_EQ(kernel_base_name("plain"), "plain");
  // Parentheses at the top level belong to the name, not to a return type.
  EXPECT_EQ(kernel_base_name("void (anonymous namespace)::k<(int)64>(const int *, int *, bool)"),
            "(anonymous namespace)::k<(int)64>");
  EXPECT_EQ(kernel_base_name("void at::native::elementwise_kernel<(int)128, (int)4, "
                             "at::native::f(at::TensorIteratorBase &)::[lambda(int) (instance 1)]>(int, T3)"),
            "at::native::elementwise_kernel<(int)128, (int)4, at::native::f(at::TensorIteratorBase &)::[lambda(int) "
            "(instance 1)]>");
  EXPECT_EQ(kernel_parameters("void K<(int)64>(const int *, int *, bool)"), "(const int *, int *, bool)");
  EXPECT_EQ(kernel_parameters("plain"), "");
}

// NVIDIA's and GNU's demanglers spell template arguments differently; the keys agree on one
// kernel and keep instances and overloads apart.
TEST(KernelNames, MatchKeys) {
  EXPECT_EQ(kernel_name_key("void K<(int)64>(const int *, int *, bool)"), "K<64>");
  EXPECT_EQ(kernel_name_key("void K<64>(int const*, int*, bool)"), "K<64>");
  EXPECT_NE(kernel_name_key("void K<(int)64>(int *)"), kernel_name_key("void K<(int)128>(int *)"));
  EXPECT_EQ(kernel_name_key("void k<(bool)1, (unsigned long)4096, (int)-2>(int)"),
            kernel_name_key("void k<true, 4096ul, -2>(int)"));
  EXPECT_EQ(kernel_name_key("void (anonymous namespace)::k<(int)3>(int)"), "(anonymousnamespace)::k<3>");
  EXPECT_EQ(kernel_name_key("void k<int64_t, (int)3>(int)"), "k<int64_t,3>"); // identifiers keep their digits
  EXPECT_EQ(kernel_signature_key("void K<(int)64>(const int *, int *, bool)"), "K<64>(int*,int*,bool)");
  EXPECT_EQ(kernel_signature_key("void K<64>(int const*, int*, bool)"), "K<64>(int*,int*,bool)");
  EXPECT_EQ(kernel_signature_key("void k<(unsigned long long)7>(const float *const *)"), "k<7>(float**)");
  EXPECT_NE(kernel_signature_key("void f<2>(int *)"), kernel_signature_key("void f<2>(float *)"));
  EXPECT_EQ(kernel_signature_key("dloop(int, double *)"), "dloop(int,double*)");
}
