#include "analysis/diagnostics.hpp"
#include "config/app_config.hpp"
#include "profile/importer.hpp"
#include "prompt/builder.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

using namespace optimas;
using optimas::test::data_path;

namespace {

struct Fixture {
  config::AppConfig app;
  analysis::Diagnostics diagnostics;
};

Fixture load(const std::string& example) {
  Fixture f;
  f.app = config::load_app_config(std::string(OPTIMAS_TEST_DATA) + "/../../examples/" + example + "/optimas.yml");
  f.diagnostics = analysis::analyze(profile::import_profile(data_path("h200/" + example)), {});
  return f;
}

bool contains(const std::string& s, const std::string& x) {
  return s.find(x) != std::string::npos;
}

} // namespace

TEST(PromptBuilder, AllSourcesWithEvidenceAndNumberedKernel) {
  auto f = load("sobol");
  auto prompts = prompt::build_prompts(f.app, f.diagnostics, {});
  ASSERT_EQ(prompts.size(), 1u);
  const auto& p = prompts[0];
  EXPECT_TRUE(contains(p.system, "Keep every kernel signature exactly as it is"));
  EXPECT_TRUE(contains(p.system, "bit-for-bit"));
  EXPECT_TRUE(contains(p.user, "   53 |       x ^= dirs[d * BITS + __ffs(~i) - 1];"));
  EXPECT_TRUE(contains(p.user, "[RF1] "));
  EXPECT_TRUE(contains(p.user, "[PC1] main.cu:53"));
  EXPECT_TRUE(contains(p.user, "[IA1] "));
  EXPECT_TRUE(contains(p.user, "\"withheld\""));
  EXPECT_FALSE(contains(p.user, "{{"));
  EXPECT_EQ(p.evidence_ids.front(), "RF1");
}

TEST(PromptBuilder, SevenSubsetsAndTheCodeOnlyBaseline) {
  auto f = load("stencil");
  for (const char* subset : {"pc", "ia", "roofline", "pc,ia", "pc,roofline", "ia,roofline", "all"}) {
    prompt::PromptOptions o;
    o.sources = analysis::parse_sources(subset);
    auto prompts = prompt::build_prompts(f.app, f.diagnostics, o);
    ASSERT_EQ(prompts.size(), 1u);
    const auto& u = prompts[0].user;
    EXPECT_EQ(contains(u, "[PC1]"), (o.sources & analysis::k_pc) != 0) << subset;
    EXPECT_EQ(contains(u, "[IA1]"), (o.sources & analysis::k_ia) != 0) << subset;
    EXPECT_EQ(contains(u, "[RF1]"), (o.sources & analysis::k_roofline) != 0) << subset;
  }
  prompt::PromptOptions base;
  base.code_only = true;
  auto p = prompt::build_prompts(f.app, f.diagnostics, base);
  EXPECT_TRUE(contains(p[0].user, "code-only baseline"));
  EXPECT_TRUE(p[0].evidence_ids.empty());
  EXPECT_TRUE(contains(p[0].user, "rhs_kernel"));
  EXPECT_TRUE(contains(p[0].user, "update_kernel"));
}

TEST(PromptBuilder, ChunksPerKernelThenPerDiagnostic) {
  auto f = load("stencil");
  prompt::PromptOptions o;
  o.token_budget = 2500; // smaller than both kernels together
  auto per_kernel = prompt::build_prompts(f.app, f.diagnostics, o);
  ASSERT_GE(per_kernel.size(), 2u);
  EXPECT_EQ(per_kernel[0].kernels, (std::vector<std::string>{"rhs_kernel"}));
  o.token_budget = 1;
  auto per_source = prompt::build_prompts(f.app, f.diagnostics, o);
  EXPECT_EQ(per_source.size(), 6u); // 2 kernels x 3 sources
  EXPECT_EQ(per_source[1].label, "rhs_kernel / PC");
}

TEST(PromptBuilder, TemplateOverrideAndErrors) {
  auto f = load("stream");
  prompt::PromptOptions o;
  o.template_text = "Role: tuner for {{gpu}}.\n=== USER ===\nKernels: {{kernel_summary}}\n{{diagnostics}}";
  auto p = prompt::build_prompts(f.app, f.diagnostics, o);
  EXPECT_EQ(p[0].system, "Role: tuner for NVIDIA H200.\n");
  EXPECT_TRUE(contains(p[0].user, "triad_kernel 24.0%"));
  o.template_text = "no split marker";
  EXPECT_THROW(prompt::build_prompts(f.app, f.diagnostics, o), UsageError);
  f.app.sources.clear();
  EXPECT_THROW(prompt::build_prompts(f.app, f.diagnostics, {}), Error);
}

TEST(PromptBuilder, DeviceFunctionsInAnotherFileAreIncluded) {
  auto f = load("gather");
  auto p = prompt::build_prompts(f.app, f.diagnostics, {});
  EXPECT_TRUE(contains(p[0].user, "lookup.cuh lines"));
  EXPECT_TRUE(contains(p[0].user, "called by xs_lookup_kernel"));
}
