#include "analysis/application.hpp"
#include "analysis/diagnostics.hpp"
#include "config/app_config.hpp"
#include "profile/importer.hpp"
#include "profile/trace.hpp"
#include "prompt/builder.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

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

// Rule 3 states the contract validation enforces, from optimas.yml: bytes, a tolerance in words,
// or reordered floating-point sums allowed (the compared output being the program's own check).
TEST(PromptBuilder, TheCorrectnessRuleIsTheValidationContract) {
  auto f = load("stream"); // its output file ({output}), compared on a held-out config and fresh seeds
  auto system = [&](const config::AppConfig& app) { return prompt::build_prompts(app, f.diagnostics, {})[0].system; };
  const std::string exact = system(f.app);
  EXPECT_TRUE(contains(exact, "3. Keep the results bit-for-bit identical. The output file the program writes is "
                              "compared byte for byte with the original's on inputs that include some you have not "
                              "seen"));
  EXPECT_TRUE(contains(exact, "Do not reorder floating-point operations"));

  config::AppConfig tolerant = f.app;
  tolerant.validate.tolerance = "rel";
  tolerant.validate.tolerance_value = 1e-12;
  const std::string within = system(tolerant);
  EXPECT_TRUE(contains(within, "3. Keep the results within the tolerance."));
  EXPECT_TRUE(contains(within, "each number may differ from the original's by at most 1e-12 times the larger of the "
                               "two magnitudes (a relative difference)"));
  EXPECT_FALSE(contains(within, "byte for byte"));
  EXPECT_FALSE(contains(within, "Do not reorder"));
  tolerant.validate.tolerance = "ulp";
  tolerant.validate.tolerance_value = 4;
  EXPECT_TRUE(contains(system(tolerant), "by at most 4 units in the last place of a double"));
  tolerant.validate.tolerance = "abs";
  tolerant.validate.tolerance_value = 0.5;
  EXPECT_TRUE(contains(system(tolerant), "by at most 0.5 (an absolute difference)"));

  config::AppConfig reordered = f.app;
  reordered.optimize.fp_reassociation = "allowed";
  const std::string reorder = system(reordered);
  EXPECT_TRUE(contains(reorder, "3. Keep what the program computes; only the order of floating-point operations may "
                                "change. You may reorder floating-point sums"));
  EXPECT_TRUE(contains(reorder, "the program's own check"));
  EXPECT_TRUE(contains(reorder, "compared byte for byte")); // validation is unchanged
  EXPECT_FALSE(contains(reorder, "bit-for-bit"));
  EXPECT_FALSE(contains(reorder, "Do not reorder"));

  EXPECT_NE(exact, within);
  EXPECT_NE(exact, reorder);
  EXPECT_NE(within, reorder);

  // Compared on stdout: the lines validation drops are named; without held-out inputs or seeds, no
  // unseen inputs are claimed.
  config::AppConfig on_stdout = f.app;
  on_stdout.run_command = "./stream --n {n} --reps {reps}";
  on_stdout.outputs.clear();
  on_stdout.validate.ignore = {"GB/s"};
  on_stdout.seed_param.clear();
  std::erase_if(on_stdout.configs, [](const auto& c) { return c.held_out; });
  EXPECT_TRUE(contains(system(on_stdout), "The program's standard output, less the lines matching "
                                          "`kernel_time_ms: ([0-9.eE+-]+)` or `GB/s`, is compared byte for byte with "
                                          "the original's on the application's input configurations"));
}

// With optimize.scope: file the prompt shows the host functions that launch the hot kernels and
// says their launch configuration may change; with the default scope, host code is left alone.
TEST(PromptBuilder, ScopeFileShowsTheLaunchingHostFunction) {
  auto f = load("stream");
  auto kernel_scope = prompt::build_prompts(f.app, f.diagnostics, {})[0];
  EXPECT_TRUE(contains(kernel_scope.system, "Leave host code alone."));
  EXPECT_FALSE(contains(kernel_scope.system, "launch configuration"));
  EXPECT_FALSE(contains(kernel_scope.user, "run_rep"));

  f.app.optimize.scope = "file";
  auto file_scope = prompt::build_prompts(f.app, f.diagnostics, {})[0];
  EXPECT_TRUE(contains(file_scope.system, "and the host code shown that launches these kernels: its launch "
                                          "configuration (grid and block sizes, dynamic shared memory, streams) may "
                                          "change"));
  EXPECT_FALSE(contains(file_scope.system, "Leave host code alone."));
  EXPECT_TRUE(contains(file_scope.user, "Host code that launches them"));
  EXPECT_TRUE(contains(file_scope.user, "main.cu lines 118-132 (host function run_rep, launches "));
  EXPECT_TRUE(contains(file_scope.user, "  120 |   copy_kernel<<<blocks, TPB>>>(d_a, d_c, n);"));
  EXPECT_TRUE(contains(file_scope.user, "  126 |   triad_kernel<<<blocks, TPB>>>(d_a, d_b, d_c, SCALAR, n);"));
  EXPECT_FALSE(contains(file_scope.user, "int main(")); // main launches none of them itself
}

// With optimize.scope: application the prompt shows the AP items (issue #30) and the host code
// they are about: the functions that launch the hot kernels or make the copies and
// synchronisations. With the default scope neither is shown. The timeline is the synthetic
// sync-copy trace's (tests/data/trace-v3), put beside stream's recorded profile.
TEST(PromptBuilder, ScopeApplicationShowsTheApItemsAndTheirHostCode) {
  auto f = load("stream");
  auto trace = profile::read_trace(data_path("trace-v3/sync-copy"));
  f.diagnostics.timeline = profile::summarize_timeline(trace);
  ASSERT_TRUE(f.diagnostics.timeline);
  for (auto& e : analysis::application_evidence(*f.diagnostics.timeline)) f.diagnostics.evidence.push_back(e);

  auto kernel_scope = prompt::build_prompts(f.app, f.diagnostics, {})[0];
  EXPECT_FALSE(contains(kernel_scope.user, "[AP1]"));
  EXPECT_FALSE(contains(kernel_scope.user, "calls cudaMemcpy"));

  f.app.optimize.scope = "application";
  auto p = prompt::build_prompts(f.app, f.diagnostics, {})[0];
  EXPECT_TRUE(contains(p.system, "the functions that launch these kernels or make the copies, memsets and "
                                 "synchronisations an AP item is about"));
  EXPECT_TRUE(contains(p.user, "The application — its timeline"));
  EXPECT_TRUE(contains(p.user, "[AP2] GPU idle 61% of the run in 49 host gaps"));
  EXPECT_NE(std::find(p.evidence_ids.begin(), p.evidence_ids.end(), "AP2"), p.evidence_ids.end());
  EXPECT_TRUE(contains(p.user, "(host function run_rep, launches "));
  EXPECT_TRUE(contains(p.user, "(host function main, calls cudaMemcpy, calls cudaDeviceSynchronize)"));
  EXPECT_TRUE(contains(p.user, "  175 |   CHECK(cudaMemcpy(d_a, a0.data(), bytes, cudaMemcpyHostToDevice));"));

  // The code-only baseline shows no evidence, AP items neither.
  prompt::PromptOptions code_only;
  code_only.code_only = true;
  EXPECT_FALSE(contains(prompt::build_prompts(f.app, f.diagnostics, code_only)[0].user, "[AP1]"));
}

// Each kernel's evidence of one source is listed by estimated gain, the largest first (issue 30).
TEST(PromptBuilder, EvidenceIsListedByEstimatedGain) {
  auto f = load("stencil");
  auto prompts = prompt::build_prompts(f.app, f.diagnostics, {});
  ASSERT_FALSE(prompts.empty());
  std::map<std::string, const analysis::Evidence*> by_id;
  for (const auto& e : f.diagnostics.evidence) by_id[e.id] = &e;
  int ordered_pairs = 0;
  for (const auto& p : prompts)
    for (std::size_t i = 1; i < p.evidence_ids.size(); ++i) {
      const auto *a = by_id.at(p.evidence_ids[i - 1]), *b = by_id.at(p.evidence_ids[i]);
      if (a->kernel != b->kernel || a->kind != b->kind || a->kind != "pc") continue;
      EXPECT_GE(a->gain, b->gain) << a->id << " before " << b->id;
      ++ordered_pairs;
    }
  EXPECT_GE(ordered_pairs, 2);
}
