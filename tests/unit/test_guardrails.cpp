#include "edit/guardrails.hpp"

#include <gtest/gtest.h>

using namespace optimas;

namespace {

const std::string k_src = "__device__ float twice(float v) { return 2.0f * v; }\n"
                          "__global__ void hot(float* a, const float* b, int n) {\n"
                          "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                          "  if (i < n) a[i] = twice(b[i]);\n"
                          "}\n"
                          "__global__ void cold(float* a, int n) {\n"
                          "  if (threadIdx.x < n) a[threadIdx.x] = 0;\n"
                          "}\n";

std::vector<edit::Violation> check(const prompt::Edit& e, edit::Scope scope = edit::Scope::kernel) {
  prompt::Reply r;
  r.edits = {e};
  auto app = edit::apply_edits({{"k.cu", k_src}}, r, {"PC1", "RF1"});
  EXPECT_EQ(app.applied(), 1u) << app.outcomes[0].reason;
  return edit::check_guardrails(app, {scope, {"hot"}});
}

prompt::Edit replace(std::string find, std::string with) {
  prompt::Edit e;
  e.file = "k.cu";
  e.kernel = "hot";
  e.find = std::move(find);
  e.replace = std::move(with);
  e.evidence = {"PC1"};
  return e;
}

bool has(const std::vector<edit::Violation>& v, const std::string& rule) {
  for (const auto& x : v)
    if (x.rule == rule) return true;
  return false;
}

} // namespace

TEST(Guardrails, QualifiersCallersCannotSeeAreAllowed) {
  auto v = check(
      replace("__global__ void hot(float* a, const float* b, int n)",
              "__global__ void __launch_bounds__(256) hot(float* __restrict__ a, const float* __restrict__ b, int n)"));
  EXPECT_TRUE(v.empty()) << v[0].message;
  EXPECT_EQ(edit::comparable_signature("__global__ void __launch_bounds__(128, 4) k(const float* __restrict__ x)"),
            edit::comparable_signature("__global__ void k(float* x)"));
}

TEST(Guardrails, ChangedSignatureIsRejected) {
  auto v = check(replace("const float* b, int n)", "const float* b, long n)"));
  ASSERT_TRUE(has(v, "signature"));
  EXPECT_NE(v[0].message.find("kernel hot changed"), std::string::npos);
  EXPECT_TRUE(has(check(replace("hot(float* a,", "hot2(float* a,")), "kernel_removed"));
}

TEST(Guardrails, DuplicateOrNewKernelIsRejected) {
  std::string body = "  if (i < n) a[i] = twice(b[i]);\n}\n";
  auto dup = check(replace(body, body + "__global__ void hot(float* a, const float* b, int n) {\n  a[0] = b[0];\n}\n"));
  EXPECT_TRUE(has(dup, "duplicate_kernel"));
  auto added = check(replace(body, body + "__global__ void hot_v2(float* a) { a[0] = 1; }\n"));
  EXPECT_TRUE(has(added, "kernel_added"));
}

TEST(Guardrails, EditsOutsideTheImplicatedKernelsAreRejected) {
  auto cold = check(replace("a[threadIdx.x] = 0;", "a[threadIdx.x] = 1;"));
  EXPECT_TRUE(has(cold, "scope"));
  // The device function the hot kernel calls is allowed; so is anything with scope "file".
  EXPECT_TRUE(check(replace("return 2.0f * v;", "return v + v;")).empty());
  EXPECT_TRUE(check(replace("a[threadIdx.x] = 0;", "a[threadIdx.x] = 1;"), edit::Scope::file).empty());
}

// The host function that launches a hot kernel, which the prompt shows with scope file: its launch
// configuration may change there, and never with the default scope.
TEST(Guardrails, TheLaunchingHostFunctionOnlyWithScopeFile) {
  const std::string src = k_src + "void launch(float* a, const float* b, int n) {\n"
                                  "  hot<<<(n + 255) / 256, 256>>>(a, b, n);\n"
                                  "}\n";
  prompt::Reply r;
  r.edits = {replace("hot<<<(n + 255) / 256, 256>>>", "hot<<<(n + 127) / 128, 128>>>")};
  auto app = edit::apply_edits({{"k.cu", src}}, r, {"PC1", "RF1"});
  ASSERT_EQ(app.applied(), 1u) << app.outcomes[0].reason;
  EXPECT_TRUE(has(edit::check_guardrails(app, {edit::Scope::kernel, {"hot"}}), "scope"));
  EXPECT_TRUE(edit::check_guardrails(app, {edit::Scope::file, {"hot"}}).empty());
}

// optimize.scope: application: the host functions that launch a hot kernel or make the calls the
// AP items are about (copies, synchronisations) may change; other host code may not, and the
// default scope allows none of it.
TEST(Guardrails, TheApplicationScopeReachesTheHostCodeOfTheApItems) {
  const std::string src = k_src + "void step(float* a, const float* b, int n, float* flag) {\n"
                                  "  hot<<<(n + 255) / 256, 256>>>(a, b, n);\n"
                                  "}\n"
                                  "float read_flag(const float* d_flag) {\n"
                                  "  float f;\n"
                                  "  cudaMemcpy(&f, d_flag, sizeof f, cudaMemcpyDeviceToHost);\n"
                                  "  return f;\n"
                                  "}\n"
                                  "int parse(int argc) {\n"
                                  "  return argc > 1 ? 1 : 0;\n"
                                  "}\n";
  auto check_edit = [&](const std::string& find, const std::string& with, edit::Scope scope) {
    prompt::Reply r;
    r.edits = {replace(find, with)};
    auto app = edit::apply_edits({{"k.cu", src}}, r, {"PC1", "AP1"});
    EXPECT_EQ(app.applied(), 1u) << app.outcomes[0].reason;
    edit::GuardrailOptions o{scope, {"hot"}};
    o.host_calls = {"cudaMemcpy", "cudaDeviceSynchronize"};
    return edit::check_guardrails(app, o);
  };
  const std::string copy = "cudaMemcpy(&f, d_flag, sizeof f, cudaMemcpyDeviceToHost);";
  const std::string async = "cudaMemcpyAsync(&f, d_flag, sizeof f, cudaMemcpyDeviceToHost, 0);";
  EXPECT_TRUE(check_edit(copy, async, edit::Scope::application).empty());
  EXPECT_TRUE(has(check_edit(copy, async, edit::Scope::kernel), "scope"));
  EXPECT_TRUE(
      check_edit("hot<<<(n + 255) / 256, 256>>>", "hot<<<(n + 127) / 128, 128>>>", edit::Scope::application).empty());
  auto other = check_edit("return argc > 1 ? 1 : 0;", "return argc > 2 ? 1 : 0;", edit::Scope::application);
  ASSERT_TRUE(has(other, "scope"));
  EXPECT_NE(other[0].message.find("host code the application items are about"), std::string::npos);
  EXPECT_TRUE(has(check_edit("a[threadIdx.x] = 0;", "a[threadIdx.x] = 1;", edit::Scope::application), "scope"))
      << "a cold kernel stays out of reach";
  EXPECT_EQ(edit::parse_scope("application"), edit::Scope::application);
  EXPECT_EQ(edit::parse_scope("file"), edit::Scope::file);
  EXPECT_EQ(edit::parse_scope("kernel"), edit::Scope::kernel);
}

TEST(Guardrails, UnbalancedResultIsRejected) {
  auto v = check(replace("if (i < n) a[i] = twice(b[i]);", "if (i < n) { a[i] = twice(b[i]);"));
  EXPECT_TRUE(has(v, "balance"));
}

// Rule 5 of the prompt: an edit citing no evidence ID the diagnostics have is refused, not only
// counted (issue 32: NOPE999 was applied with exit 0). A code-only prompt shows no evidence: the
// rule does not hold there, and EAR counts what an edit cites anyway.
TEST(Guardrails, EditsCitingNoKnownEvidenceAreRejected) {
  auto e = replace("return 2.0f * v;", "return v + v;");
  e.evidence = {"NOPE999"};
  auto v = check(e);
  ASSERT_TRUE(has(v, "evidence"));
  EXPECT_NE(v[0].message.find("edit 1 cites NOPE999"), std::string::npos) << v[0].message;
  e.evidence = {};
  ASSERT_TRUE(has(check(e), "evidence"));
  e.evidence = {"NOPE999", "PC1"}; // one known ID is enough; EAR counts the other
  EXPECT_TRUE(check(e).empty());

  prompt::Reply r;
  r.edits = {e};
  r.edits[0].evidence = {};
  auto code_only = [&] {
    return edit::check_guardrails(edit::apply_edits({{"k.cu", k_src}}, r, {"PC1"}),
                                  {edit::Scope::kernel, {"hot"}, true});
  };
  EXPECT_TRUE(code_only().empty());
  r.edits[0].evidence = {"PC1"};
  EXPECT_TRUE(code_only().empty());
  r.edits[0].evidence = {"NOPE999"};
  EXPECT_TRUE(code_only().empty());
}

// An edit naming a file that is not one of the prompt's sources is refused, with the reason,
// even when its last component is a source's name (issue 32: /tmp/x/main.cu edited main.cu).
TEST(Guardrails, EditsOfOtherFilesAreRejected) {
  for (const char* file : {"/tmp/x/k.cu", "../../x/k.cu", "other.cu"}) {
    prompt::Reply r;
    r.edits = {replace("return 2.0f * v;", "return v + v;")};
    r.edits[0].file = file;
    auto app = edit::apply_edits({{"k.cu", k_src}}, r, {"PC1"});
    EXPECT_EQ(app.applied(), 0u) << file;
    EXPECT_EQ(app.result.at("k.cu"), k_src) << file;
    auto v = edit::check_guardrails(app, {edit::Scope::kernel, {"hot"}});
    ASSERT_TRUE(has(v, "file")) << file;
    EXPECT_NE(v[0].message.find("is not one of the prompt's sources (k.cu)"), std::string::npos) << v[0].message;
  }
}

// A PC item names the line its stall waits on (issue #49): an edit there that cites the item acts
// where the evidence points, even where the scope would refuse it (here a kernel the hot set
// leaves out); citing another item, or editing another line, does not make it so.
TEST(Guardrails, AnEditOnACauseLineThatCitesItsItemIsAccepted) {
  auto run = [](const std::vector<std::string>& cites, const std::string& cause_file, int cause_line) {
    prompt::Reply r;
    prompt::Edit e = replace("a[threadIdx.x] = 0;", "a[threadIdx.x] = 1;");
    e.evidence = cites;
    r.edits = {e};
    auto app = edit::apply_edits({{"k.cu", k_src}}, r, {"PC1", "PC2", "RF1"});
    EXPECT_EQ(app.applied(), 1u);
    edit::GuardrailOptions o{edit::Scope::kernel, {"hot"}};
    o.cause_lines = {{"PC1", cause_file, cause_line}};
    return edit::check_guardrails(app, o);
  };
  EXPECT_TRUE(run({"PC1"}, "/work/app/k.cu", 7).empty()) << "the cause of PC1, edited citing PC1";
  EXPECT_TRUE(has(run({"PC2"}, "/work/app/k.cu", 7), "scope")) << "cites another item";
  EXPECT_TRUE(has(run({"PC1"}, "/work/app/k.cu", 4), "scope")) << "the cause is another line";
  EXPECT_TRUE(has(run({"PC1"}, "/work/app/other.cu", 7), "scope")) << "the cause is in another file";
}

// An edit names the kernel it acts on: one the sources define, as its name or its declaration
// (issue #52: a name no source has was taken without a word).
TEST(Guardrails, AnEditMustNameAKernelTheSourcesDefine) {
  auto e = replace("if (i < n) a[i]", "if (i < n) a[i]");
  EXPECT_FALSE(has(check(e), "kernel"));
  for (const char* named : {"void hot(float *, const float *, int)", "hot<256>", "ns::hot"}) {
    e.kernel = named;
    EXPECT_FALSE(has(check(e), "kernel")) << named;
  }
  e.kernel = "nosuch_kernel";
  auto v = check(e);
  ASSERT_TRUE(has(v, "kernel"));
  for (const auto& x : v)
    if (x.rule == "kernel")
      EXPECT_EQ(x.message, "edit 1 names kernel nosuch_kernel, which no source defines (its kernels: cold, hot)");
}
