// The builtin optimizer's rules: each fires when its evidence is present, stays silent when it
// is not, and cites what triggered it.
#include "builtin/rules.hpp"
#include "cuda/source.hpp"
#include "edit/apply.hpp"
#include "edit/guardrails.hpp"
#include "llm/backend.hpp"
#include "prompt/reply.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

using namespace optimas;
using nlohmann::json;

namespace {

const char* k_src = R"(#define TAPS 8
__global__ void fir(float* out, float* in, const float* w, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  for (int t = 0; t < TAPS; t++)
    acc += w[t] * in[i + t];
  out[i] = acc;
}
int main() {
  float *a, *b, *c;
  fir<<<64, 256>>>(a, b, c, 1000);
  return 0;
}
)";

json kernel(json lines, std::string limiter = "warps", json limits = json::object(), std::string name = "fir") {
  return {
      {"kernel", name},
      {"demangled", "fir(float *, float *, const float *, int)"},
      {"roofline",
       {{"id", "RF1"}, {"occupancy", {{"limiter", limiter}, {"block_size", 256}, {"blocks_per_sm_limits", limits}}}}},
      {"stalls", {{"lines", lines}}}};
}

json line(const char* id, int no, const char* stall, double fraction) {
  return {{"id", id}, {"file", "/x/fir.cu"}, {"line", no}, {"stall", stall}, {"fraction", fraction}};
}

prompt::Reply ask(const json& kernels, const char* src = k_src, int candidate = 1) {
  auto backend = llm::make_backend(llm::parse_model("builtin"));
  llm::Request r;
  r.context = {{"diagnostics", {{"kernels", kernels}}}, {"sources", {{"fir.cu", src}}}, {"candidate", candidate}};
  auto result = backend->complete(r);
  EXPECT_TRUE(llm::ok(result));
  auto parsed = prompt::parse_reply(std::get<llm::Response>(result).text);
  EXPECT_TRUE(parsed.ok()) << (parsed.errors.empty() ? "" : parsed.errors[0]);
  return *parsed.reply;
}

} // namespace

TEST(Builtin, RestrictAndConstUnderMemoryStalls) {
  auto r = ask(json::array({kernel(json::array({line("PC1", 7, "stall_long_scoreboard", 0.9)}))}));
  ASSERT_EQ(r.edits.size(), 1u);
  const auto& e = r.edits[0];
  EXPECT_EQ(e.evidence, (std::vector<std::string>{"PC1"}));
  ASSERT_TRUE(e.replace);
  // `in` is only read: const and restrict; `out` is written: restrict only; `w` was const already.
  EXPECT_NE(e.replace->find("float* __restrict__ out"), std::string::npos) << *e.replace;
  EXPECT_NE(e.replace->find("const float* __restrict__ in"), std::string::npos);
  EXPECT_NE(e.replace->find("const float* __restrict__ w"), std::string::npos);
  EXPECT_EQ(e.expected_effect[0].metric, "stall_long_scoreboard");
  EXPECT_NE(e.rationale.find("No launch passes one buffer twice"), std::string::npos);
  EXPECT_EQ(e.rule, "restrict");
}

// A pointer whose element's address is taken (atomicAdd(&hist[b], ...)) is written: no const.
// On the H200 the edges example's histogram kernel got `const unsigned int* hist` and its
// variant did not build.
TEST(Builtin, AddressTakenThroughASubscriptIsAWrite) {
  std::string atomic = k_src;
  atomic.replace(atomic.find("  out[i] = acc;"), 14, "  atomicAdd(&out[i % 4], acc);\n  (void)in[0];");
  auto r = ask(json::array({kernel(json::array({line("PC1", 7, "stall_long_scoreboard", 0.9)}))}), atomic.c_str());
  ASSERT_EQ(r.edits.size(), 1u);
  EXPECT_NE(r.edits[0].replace->find("float* __restrict__ out"), std::string::npos) << *r.edits[0].replace;
  EXPECT_EQ(r.edits[0].replace->find("const float* __restrict__ out"), std::string::npos) << *r.edits[0].replace;
}

// The star beside the name, as in cuda-samples (`float *C`) or with no space at all: the
// qualifier must not run into the name. On the H200, matrixMul's kernel got
// `float * __restrict__C`, a parameter named `__restrict__C`, and every attempt was rejected.
TEST(Builtin, RestrictKeepsANameApartFromItsStar) {
  std::string starred = k_src;
  starred.replace(starred.find("float* out, float* in, const float* w"), 37, "float *out, float*in, const float *w");
  auto r = ask(json::array({kernel(json::array({line("PC1", 7, "stall_long_scoreboard", 0.9)}))}), starred.c_str());
  ASSERT_EQ(r.edits.size(), 1u);
  const auto& e = r.edits[0];
  ASSERT_TRUE(e.find && e.replace);
  std::string edited = starred;
  ASSERT_NE(edited.find(*e.find), std::string::npos);
  edited.replace(edited.find(*e.find), e.find->size(), *e.replace);
  auto fn = cuda::parse_source("fir.cu", edited).kernel("fir");
  ASSERT_NE(fn, nullptr) << edited;
  ASSERT_EQ(fn->parameters.size(), 4u);
  const char* names[] = {"out", "in", "w", "n"};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(fn->parameters[i].name, names[i]) << *e.replace;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(fn->parameters[i].restrict_) << *e.replace;
  EXPECT_EQ(edit::comparable_signature(fn->signature),
            edit::comparable_signature(cuda::parse_source("fir.cu", starred).kernel("fir")->signature));
}

// Writes that are not `p[i] = x`, each from a cuda-samples kernel whose variant did not build
// once `p` was made const: a member of an element, a prefix decrement through `*`, and others
// of the same kind. `in` is only read, through a member too, and still becomes const.
TEST(Builtin, ConstIsNotAddedWhereAWriteIsAMemberOrAnIncrement) {
  const char* writes[] = {"out[i].x = acc;", "--(*out);",       "++out[i];",     "(*out).y++;",
                          "out->x += acc;",  "out[i].x <<= 1;", "*(out) = acc;", "out[i].set(acc);"};
  for (const char* w : writes) {
    std::string src = k_src;
    src.replace(src.find("  out[i] = acc;"), 14, std::string("  float r = in[i].x; ") + w);
    auto r = ask(json::array({kernel(json::array({line("PC1", 7, "stall_long_scoreboard", 0.9)}))}), src.c_str());
    ASSERT_EQ(r.edits.size(), 1u) << w;
    ASSERT_TRUE(r.edits[0].replace) << w;
    EXPECT_NE(r.edits[0].replace->find("float* __restrict__ out"), std::string::npos) << w;
    EXPECT_EQ(r.edits[0].replace->find("const float* __restrict__ out"), std::string::npos)
        << w << ": " << *r.edits[0].replace;
    EXPECT_NE(r.edits[0].replace->find("const float* __restrict__ in"), std::string::npos) << w;
  }
}

TEST(Builtin, RestrictIsWithheldWhenALaunchAliases) {
  std::string aliased = k_src;
  aliased.replace(aliased.find("(a, b, c, 1000)"), 15, "(a, a, c, 1000)");
  auto r = ask(json::array({kernel(json::array({line("PC1", 7, "stall_long_scoreboard", 0.9)}))}), aliased.c_str());
  EXPECT_TRUE(r.edits.empty());
  ASSERT_EQ(r.withheld.size(), 1u);
  EXPECT_NE(r.withheld[0].reason.find("same buffer"), std::string::npos);
}

TEST(Builtin, UnrollOnAConstantTripLoopThatWaits) {
  auto r = ask(json::array({kernel(json::array({line("PC2", 7, "stall_wait", 0.6)}))}));
  ASSERT_EQ(r.edits.size(), 1u);
  const auto& e = r.edits[0];
  EXPECT_TRUE(e.is_range());
  EXPECT_EQ(e.line_start, 6);
  EXPECT_EQ(*e.new_text, "  #pragma unroll\n  for (int t = 0; t < TAPS; t++)");
  EXPECT_EQ(e.rule, "unroll");
  EXPECT_EQ(e.evidence, (std::vector<std::string>{"PC2"}));
}

// A search's later candidates (optimize.candidates): the rules that fire with all of them, each
// alone, in table order; past the last, no edit and a summary that says why.
TEST(Builtin, LaterCandidatesGetEachFiringRuleAlone) {
  auto kernels = json::array(
      {kernel(json::array({line("PC1", 8, "stall_long_scoreboard", 0.9), line("PC2", 7, "stall_wait", 0.6)}))});
  std::vector<std::string> all;
  for (const auto& e : ask(kernels).edits) all.push_back(e.rule);
  ASSERT_EQ(all, (std::vector<std::string>{"restrict", "unroll"}));
  for (int c = 2; c <= 3; ++c) {
    auto r = ask(kernels, k_src, c);
    ASSERT_EQ(r.edits.size(), 1u) << c;
    EXPECT_EQ(r.edits[0].rule, all[c - 2]);
    EXPECT_NE(r.summary.find("Alternative " + std::to_string(c - 1) + ": the " + all[c - 2] + " rule alone"),
              std::string::npos)
        << r.summary;
  }
  auto past = ask(kernels, k_src, 4);
  EXPECT_TRUE(past.edits.empty());
  EXPECT_NE(past.summary.find("2 rule(s) fire here (restrict, unroll), each offered alone already"), std::string::npos)
      << past.summary;
  // One firing rule: alone it is the whole answer, so there is no alternative.
  auto one = json::array({kernel(json::array({line("PC2", 7, "stall_wait", 0.6)}))});
  EXPECT_EQ(ask(one).edits.size(), 1u);
  EXPECT_TRUE(ask(one, k_src, 2).edits.empty());
}

TEST(Builtin, LaunchBoundsWhenRegistersLimitOccupancy) {
  auto limited = kernel(json::array(), "registers", {{"registers", 2}, {"warps", 8}});
  auto r = ask(json::array({limited}));
  ASSERT_EQ(r.edits.size(), 1u);
  EXPECT_NE(r.edits[0].replace->find("__launch_bounds__(256, 4) fir("), std::string::npos) << *r.edits[0].replace;
  EXPECT_EQ(r.edits[0].rule, "launch_bounds");
  EXPECT_EQ(r.edits[0].evidence, (std::vector<std::string>{"RF1"}));
}

// A kernel that already reaches local memory would spill more under a register budget (and
// local_to_registers may need more registers than were profiled): withheld, saying why.
TEST(Builtin, LaunchBoundsWithheldWhereTheKernelUsesLocalMemory) {
  auto limited = kernel(json::array(), "registers", {{"registers", 2}, {"warps", 8}});
  limited["roofline"]["access"] = {{"local_load_requests", 4.0e6}, {"local_store_requests", 0}};
  auto r = ask(json::array({limited}));
  EXPECT_TRUE(r.edits.empty());
  ASSERT_EQ(r.withheld.size(), 1u);
  EXPECT_EQ(r.withheld[0].suggestion, "__launch_bounds__(256, 4) on fir");
  EXPECT_NE(r.withheld[0].reason.find("already uses local memory (4e+06 local load and store requests)"),
            std::string::npos)
      << r.withheld[0].reason;
  EXPECT_EQ(r.withheld[0].evidence, (std::vector<std::string>{"RF1"}));
  // No local traffic measured: the bound applies as before.
  limited["roofline"]["access"]["local_load_requests"] = 0;
  EXPECT_EQ(ask(json::array({limited})).edits.size(), 1u);
}

TEST(Builtin, SilentWithoutEvidence) {
  // Compute stalls on a line with no constant-trip loop, occupancy limited by warps.
  auto r = ask(json::array({kernel(json::array({line("PC1", 8, "stall_math_pipe_throttle", 0.9)}))}));
  EXPECT_TRUE(r.edits.empty());
  EXPECT_TRUE(r.withheld.empty());
  EXPECT_NE(r.summary.find("no change"), std::string::npos);
}

namespace {

const char* k_template = R"(template <int TAPS>
__global__ void fir(float* out, float* in, const float* w, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  for (int t = 0; t < TAPS; t++)
    acc += w[t] * in[i + t];
  out[i] = acc;
}
int main() {
  float *a, *b, *c;
  fir<8><<<64, 256>>>(a, b, c, 1000);
  fir<(16)><<<64, 256>>>(a, b, c, 1000);
  return 0;
}
)";

} // namespace

// Hot instances of one template share its source: one set of edits, from the hottest (listed
// first); their launches, name<N><<<...>>>, are what the aliasing check reads.
TEST(Builtin, TemplateInstancesShareOneSetOfEdits) {
  json hot =
      json::array({kernel(json::array({line("PC1", 7, "stall_long_scoreboard", 0.9)}), "warps", {}, "fir<(int)8>"),
                   kernel(json::array({line("PC2", 7, "stall_long_scoreboard", 0.8)}), "warps", {}, "fir<(int)16>")});
  auto r = ask(hot, k_template);
  ASSERT_EQ(r.edits.size(), 1u);
  EXPECT_EQ(r.edits[0].evidence, (std::vector<std::string>{"PC1"}));
  EXPECT_NE(r.edits[0].replace->find("float* __restrict__ out"), std::string::npos) << *r.edits[0].replace;
  std::string aliased = k_template;
  aliased.replace(aliased.find("(a, b, c, 1000);\n  return"), 15, "(a, a, c, 1000)");
  r = ask(hot, aliased.c_str());
  EXPECT_TRUE(r.edits.empty());
  ASSERT_EQ(r.withheld.size(), 1u);
  EXPECT_NE(r.withheld[0].reason.find("same buffer"), std::string::npos) << r.withheld[0].reason;
}

// A prototype of the kernel elsewhere: a const pointee would make the definition another
// function, and the prototype's calls undefined (cuda-samples' simpleCUFFT_MGPU). __restrict__
// alone changes no type, so it still applies; the rationale says why const does not.
TEST(Builtin, ConstIsNotAddedWhenTheKernelIsDeclaredAgain) {
  std::string src = std::string("static __global__ void fir(float* out, float* in, const float* w, int n);\n") + k_src;
  auto r = ask(json::array({kernel(json::array({line("PC1", 8, "stall_long_scoreboard", 0.9)}))}), src.c_str());
  ASSERT_EQ(r.edits.size(), 1u);
  ASSERT_TRUE(r.edits[0].replace);
  EXPECT_NE(r.edits[0].replace->find("float* __restrict__ in"), std::string::npos) << *r.edits[0].replace;
  EXPECT_EQ(r.edits[0].replace->find("const float* __restrict__ in"), std::string::npos) << *r.edits[0].replace;
  EXPECT_NE(r.edits[0].rationale.find("also declared at fir.cu:1"), std::string::npos) << r.edits[0].rationale;
  // An explicit instantiation is such a declaration too.
  std::string instantiated =
      std::string(k_template) + "template __global__ void fir<4>(float*, float*, const float*, int);\n";
  json hot =
      json::array({kernel(json::array({line("PC1", 7, "stall_long_scoreboard", 0.9)}), "warps", {}, "fir<(int)8>")});
  r = ask(hot, instantiated.c_str());
  ASSERT_EQ(r.edits.size(), 1u);
  EXPECT_EQ(r.edits[0].replace->find("const float* __restrict__ in"), std::string::npos) << *r.edits[0].replace;
  EXPECT_NE(r.edits[0].rationale.find("also declared at fir.cu:16"), std::string::npos) << r.edits[0].rationale;
}

// Kernels in one file, launched from another (Rodinia's nw: needle_kernel.cu holds them,
// needle.cu launches them): the host file comes as `host_sources`, read for launches and
// declarations, never edited.
TEST(Builtin, LaunchesAndDeclarationsInHostFilesCount) {
  const std::string kernel_only = std::string(k_src).substr(0, std::string(k_src).find("int main()"));
  auto hot = json::array({kernel(json::array({line("PC1", 8, "stall_long_scoreboard", 0.9)}))});
  auto backend = llm::make_backend(llm::parse_model("builtin"));
  auto reply = [&](const json& host) {
    llm::Request r;
    r.context = {{"diagnostics", {{"kernels", hot}}}, {"sources", {{"fir.cu", kernel_only}}}};
    if (!host.is_null()) r.context["host_sources"] = host;
    auto result = backend->complete(r);
    EXPECT_TRUE(llm::ok(result));
    return *prompt::parse_reply(std::get<llm::Response>(result).text).reply;
  };
  // Without the host file no launch is seen: restrict is withheld.
  auto alone = reply(nullptr);
  EXPECT_TRUE(alone.edits.empty());
  ASSERT_FALSE(alone.withheld.empty());
  EXPECT_NE(alone.withheld[0].reason.find("no launch of the kernel was found"), std::string::npos);

  auto launched = reply({{"main.cu", "int main() { float *a, *b, *c; fir<<<64, 256>>>(a, b, c, 1000); }\n"}});
  ASSERT_EQ(launched.edits.size(), 1u);
  EXPECT_EQ(launched.edits[0].file, "fir.cu");
  EXPECT_NE(launched.edits[0].replace->find("const float* __restrict__ in"), std::string::npos);

  // A launch in the host file that passes one buffer twice still withholds it.
  auto aliased = reply({{"main.cu", "int main() { float *a, *c; fir<<<64, 256>>>(a, a, c, 1000); }\n"}});
  EXPECT_TRUE(aliased.edits.empty());

  // A prototype in a host header keeps const off, as one in the sources does.
  auto declared = reply({{"main.cu", "int main() { float *a, *b, *c; fir<<<64, 256>>>(a, b, c, 1000); }\n"},
                         {"include/fir.h", "__global__ void fir(float* out, float* in, const float* w, int n);\n"}});
  ASSERT_EQ(declared.edits.size(), 1u);
  EXPECT_EQ(declared.edits[0].replace->find("const float* __restrict__ in"), std::string::npos);
  EXPECT_NE(declared.edits[0].rationale.find("also declared at include/fir.h:1"), std::string::npos)
      << declared.edits[0].rationale;
}

// Parameters under #if (Rodinia's mummergpu): rewriting the list as one text would break the
// directives apart (the guardrails refused the result), so restrict is withheld, saying why.
TEST(Builtin, RestrictWithheldWhereTheParameterListHoldsDirectives) {
  std::string src = k_src;
  const std::string plain = "__global__ void fir(float* out, float* in, const float* w, int n) {";
  ASSERT_NE(src.find(plain), std::string::npos);
  src.replace(src.find(plain), plain.size(),
              "__global__ void fir(float* out,\n#if WIDE\n                    float* in,\n#else\n"
              "                    float* in,\n#endif\n                    const float* w, int n) {");
  auto r = ask(json::array({kernel(json::array({line("PC1", 12, "stall_long_scoreboard", 0.9)}))}), src.c_str());
  EXPECT_TRUE(r.edits.empty());
  ASSERT_EQ(r.withheld.size(), 1u);
  EXPECT_EQ(r.withheld[0].reason,
            "the parameter list holds preprocessor directives (`#if WIDE`), which a rewrite of the list could break");
}

TEST(Builtin, NeedsStructuredContext) {
  auto backend = llm::make_backend(llm::parse_model("builtin"));
  auto result = backend->complete(llm::Request{});
  ASSERT_FALSE(llm::ok(result));
  EXPECT_EQ(std::get<llm::Failure>(result).kind, llm::FailureKind::bad_request);
}

namespace {

const char* k_loop = R"(__global__ void walk(const int* start, const float* v, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc[2];
  acc[0] = 0.0f;
  for (int j = start[i]; j < start[i + 1]; j++) {
    acc[0] += v[j];
  }
  out[i] = acc[0];
}
int main() { return 0; }
)";

} // namespace

TEST(Builtin, HoistsAnInvariantLoadFromALoopCondition) {
  auto r = ask(json::array({kernel(json::array({line("PC4", 5, "stall_long_scoreboard", 0.7)}), "warps", {}, "walk")}),
               k_loop);
  // The restrict rule sees no launch to rule out aliasing and withholds; the hoist applies.
  ASSERT_EQ(r.edits.size(), 1u);
  const auto& e = r.edits[0];
  EXPECT_EQ(e.line_start, 5);
  EXPECT_EQ(*e.new_text, "  const auto j_bound = start[i + 1];\n  for (int j = start[i]; j < j_bound; j++) {");
  EXPECT_EQ(e.evidence, (std::vector<std::string>{"PC4"}));
}

TEST(Builtin, NoHoistWhenTheLoopWritesMemory) {
  std::string writes = k_loop;
  writes.replace(writes.find("acc[0] += v[j];"), 15, "out[j] += v[j];");
  auto r = ask(json::array({kernel(json::array({line("PC4", 5, "stall_long_scoreboard", 0.7)}), "warps", {}, "walk")}),
               writes.c_str());
  EXPECT_TRUE(r.edits.empty());
  // Without evidence on the loop line, nothing either.
  auto quiet =
      ask(json::array({kernel(json::array({line("PC4", 6, "stall_math_pipe_throttle", 0.7)}), "warps", {}, "walk")}),
          k_loop);
  EXPECT_TRUE(quiet.edits.empty());
}

namespace {

const char* k_scale = R"(__global__ void norm(float* out, const float* in, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = i; k < n; k += blockDim.x * gridDim.x)
    out[k] = in[k] / scale;
}
int main() { return 0; }
)";

prompt::Reply ask_with(const json& kernels, const char* src, bool allow_fp) {
  auto config = llm::parse_model("builtin");
  if (allow_fp) config.options["allow_fp_changes"] = "true";
  auto backend = llm::make_backend(config);
  llm::Request r;
  r.context = {{"diagnostics", {{"kernels", kernels}}}, {"sources", {{"norm.cu", src}}}};
  auto parsed = prompt::parse_reply(std::get<llm::Response>(backend->complete(r)).text);
  EXPECT_TRUE(parsed.ok());
  return *parsed.reply;
}

} // namespace

TEST(Builtin, ResultChangingRuleIsWithheldUnlessAllowed) {
  json lines = json::array({json{
      {"id", "PC3"}, {"file", "norm.cu"}, {"line", 4}, {"stall", "stall_math_pipe_throttle"}, {"fraction", 0.6}}});
  json k = kernel(lines, "warps", {}, "norm");
  auto strict = ask_with(json::array({k}), k_scale, false);
  EXPECT_TRUE(strict.edits.empty());
  ASSERT_EQ(strict.withheld.size(), 1u);
  EXPECT_NE(strict.withheld[0].reason.find("bit for bit"), std::string::npos);
  EXPECT_EQ(strict.withheld[0].evidence, (std::vector<std::string>{"PC3"}));

  auto allowed = ask_with(json::array({k}), k_scale, true);
  ASSERT_EQ(allowed.edits.size(), 2u);
  EXPECT_EQ(*allowed.edits[0].new_text,
            "  const auto scale_inv = 1.0f / scale;\n  int i = blockIdx.x * blockDim.x + threadIdx.x;");
  EXPECT_EQ(*allowed.edits[1].new_text, "    out[k] = in[k] * scale_inv;");
}

// Kernels written the way public suites write them (what the cuda-samples sweep of
// docs/h200-builtin.md met): the star beside the name, writes through members and increments
// through `*`, a prototype before the definition, an element that is an array passed on. Each
// made the restrict rule's variant fail to build before.
const char* k_styles = R"(__global__ void scale_members(float2 *out, float2 *in, int *left, int n);

__global__ void scale_members(float2 *out, float2 *in, int *left, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i].x = 2.0f * in[i].x;
  out[i].y = in[i].y;
  if (i == 0) --(*left);
}

__global__ void count_up(float *C, float *A, int *flag, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) C[i] = A[i];
  if (i == 0) (*flag)++;
}

typedef unsigned int table_t[4];
__device__ void seed(table_t t, unsigned int* s) { s[0] = t[0]; }

__global__ void seed_all(table_t *tables, unsigned int *states) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  seed(tables[0], &states[i]);
}

int main() {
  float2 *a, *b;
  float *c, *d;
  int *e, *f;
  table_t *g;
  unsigned int *h;
  scale_members<<<1, 32>>>(a, b, e, 32);
  count_up<<<1, 32>>>(c, d, f, 32);
  seed_all<<<1, 32>>>(g, h);
  return 0;
}
)";

// Every rule's output is valid CUDA: applied to its fixture, it compiles with nvcc (no GPU
// needed; skipped where CUDA is not installed).
TEST(Builtin, RuleOutputsCompileWithNvcc) {
  std::string nvcc = "/usr/local/cuda/bin/nvcc";
  if (auto found = optimas::util::find_executable("nvcc")) nvcc = *found;
  if (!optimas::util::find_executable(nvcc)) GTEST_SKIP() << "nvcc not found";
  optimas::test::TempDir dir;
  json pc_fir = json::array({line("PC1", 7, "stall_long_scoreboard", 0.9), line("PC2", 6, "stall_wait", 0.6)});
  json bounded = kernel(pc_fir, "registers", {{"registers", 2}, {"warps", 8}});
  json walk = kernel(json::array({line("PC4", 5, "stall_long_scoreboard", 0.7)}), "warps", {}, "walk");
  json lines = json::array({json{
      {"id", "PC3"}, {"file", "norm.cu"}, {"line", 4}, {"stall", "stall_math_pipe_throttle"}, {"fraction", 0.6}}});
  json styles =
      json::array({kernel(json::array({line("PC5", 6, "stall_long_scoreboard", 0.8)}), "warps", {}, "scale_members"),
                   kernel(json::array({line("PC6", 14, "stall_long_scoreboard", 0.8)}), "warps", {}, "count_up"),
                   kernel(json::array({line("PC7", 22, "stall_long_scoreboard", 0.8)}), "warps", {}, "seed_all")});
  struct Case {
    std::string name, source;
    prompt::Reply reply;
  } cases[] = {{"fir.cu", k_src, ask(json::array({bounded}))},
               {"fir.cu", k_styles, ask(styles, k_styles)},
               {"fir.cu", k_loop, ask(json::array({walk}), k_loop)},
               {"norm.cu", k_scale, ask_with(json::array({kernel(lines, "warps", {}, "norm")}), k_scale, true)}};
  int n = 0;
  for (auto& c : cases) {
    ASSERT_FALSE(c.reply.edits.empty()) << c.name;
    auto app = edit::apply_edits({{c.name, c.source}}, c.reply, {});
    ASSERT_EQ(app.not_applied(), 0u) << c.name << ": " << app.outcomes[0].reason;
    auto path = dir.file(std::to_string(n++) + "_" + c.name, app.result[c.name]);
    optimas::util::ProcessSpec spec;
    spec.argv = {nvcc, "-arch=sm_90", "-c", path, "-o", path + ".o"};
    spec.timeout_s = 120;
    auto r = optimas::util::run_process(spec);
    EXPECT_TRUE(r.ok()) << c.name << ":\n" << app.result[c.name] << "\n" << r.err;
  }
}

// The rule table and docs/builtin-memory-rules.md's list agree: every rule is documented, in the
// order it runs.
TEST(Builtin, EveryRuleIsInTheDocs) {
  std::string docs = util::read_file(std::string(OPTIMAS_TEST_DATA) + "/../../docs/builtin-memory-rules.md");
  int order = 0;
  for (const auto& rule : builtin::rule_table()) {
    std::string row = "| " + std::to_string(++order) + " | `" + rule.name + "` |";
    EXPECT_NE(docs.find(row), std::string::npos) << row;
  }
  EXPECT_GE(order, 10);
  order = 0;
  for (const auto& rule : builtin::application_rule_table()) {
    std::string row = "| A" + std::to_string(++order) + " | `" + rule.name + "` |";
    EXPECT_NE(docs.find(row), std::string::npos) << row;
  }
  EXPECT_GE(order, 1);
}
