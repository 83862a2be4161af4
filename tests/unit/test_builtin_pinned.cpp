// The builtin's application rule pinned_host: under optimize.scope application, host buffers of
// recurring copies from or to pageable memory (an AP item) are allocated with cudaMallocHost and
// freed with cudaFreeHost; silent without the item or under the kernel scope; withheld where
// the swap could break the program or cost more than it saves; the edited program compiles with
// nvcc. A variant with such an edit is judged by the wall time (propose::acts_on_application).
#include "analysis/application.hpp"
#include "builtin/optimizer.hpp"
#include "propose/propose.hpp"
#include "util/process.hpp"

#include "builtin_helpers.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>

using namespace optimas;
using namespace optimas::test;
using nlohmann::json;

namespace {

// A time-stepping program of ours: each step copies the state in, runs a kernel, copies it out.
const char* k_steps = R"(#include <cstdio>
#include <cstdlib>

__global__ void relax(float* u, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) u[i] = 0.5f * u[i] + 1.0f;
}

int main() {
  const int n = 1 << 20;
  float* state = (float*)malloc(n * sizeof(float));
  float* d_state;
  cudaMalloc((void**)&d_state, n * sizeof(float));
  for (int i = 0; i < n; ++i) state[i] = i % 7;
  for (int step = 0; step < 40; ++step) {
    cudaMemcpy(d_state, state, n * sizeof(float), cudaMemcpyHostToDevice);
    relax<<<(n + 255) / 256, 256>>>(d_state, n);
    cudaMemcpy(state, d_state, n * sizeof(float), cudaMemcpyDeviceToHost);
    state[0] += 1.0f;
  }
  printf("%f\n", state[n - 1]);
  free(state);
  cudaFree(d_state);
  return 0;
}
)";

profile::Traffic traffic(const std::string& direction, std::uint64_t count, std::uint64_t pageable) {
  return {direction, count, count * (4u << 20), count, pageable, count * 1e6, count * 1e6};
}

// Diagnostics with the kernel and a timeline whose copies of each direction are AP items.
json diagnostics(const std::vector<profile::Traffic>& copies) {
  json d = {{"kernels", json::array({{{"kernel", "relax"}, {"share", 1.0}}})}};
  json items = json::array(), t = json::array();
  for (const auto& c : copies) {
    t.push_back(profile::to_json(c));
    items.push_back({{"id", "AP" + std::to_string(items.size() + 2)},
                     {"kind", "application"},
                     {"kernel", ""},
                     {"text", analysis::traffic_text(c) + " [gain if these copies ran under kernels: ...]"}});
  }
  d["timeline"] = {{"traffic", t}};
  d["evidence"] = items;
  return d;
}

prompt::Reply ask_app(const json& d, const std::string& src, const std::string& scope = "application",
                      const std::string& file = "main.cu") {
  auto backend = llm::make_backend(llm::parse_model("builtin"));
  llm::Request r;
  r.context = {{"diagnostics", d}, {"sources", {{file, src}}}, {"scope", scope}};
  auto result = backend->complete(r);
  EXPECT_TRUE(llm::ok(result));
  auto parsed = prompt::parse_reply(std::get<llm::Response>(result).text);
  EXPECT_TRUE(parsed.ok()) << (parsed.errors.empty() ? "" : parsed.errors[0]);
  return parsed.reply.value_or(prompt::Reply{});
}

std::string edited(const prompt::Reply& r, const std::string& src, const std::string& file = "main.cu") {
  auto a = edit::apply_edits({{file, src}}, r, {"AP2", "AP3"});
  EXPECT_EQ(a.not_applied(), 0u);
  return a.result.at(file);
}

std::vector<prompt::Withheld> pinned_withheld(const prompt::Reply& r) {
  std::vector<prompt::Withheld> out;
  for (const auto& w : r.withheld)
    if (w.suggestion.find("(pinned_host)") != std::string::npos) out.push_back(w);
  return out;
}

} // namespace

TEST(BuiltinPinned, PinsTheBufferOfRecurringPageableCopies) {
  auto r = ask_app(diagnostics({traffic("HtoD", 40, 40), traffic("DtoH", 40, 40)}), k_steps);
  auto edits = by_rule(r, "pinned_host");
  ASSERT_EQ(edits.size(), 2u) << r.summary; // the malloc and the free, once for both directions
  EXPECT_EQ(edits[0].evidence, (std::vector<std::string>{"AP2", "AP3"}));
  const std::string out = edited(r, k_steps);
  EXPECT_NE(out.find("float* state = (float*)[&]() -> void* { void* pinned = nullptr; return "
                     "cudaMallocHost(&pinned, n * sizeof(float)) == cudaSuccess ? pinned : nullptr; }();"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  cudaFreeHost(state);"), std::string::npos) << out;
  EXPECT_EQ(out.find("free(state)"), std::string::npos);
  // The device buffer and its cudaFree are left as they were.
  EXPECT_NE(out.find("cudaFree(d_state);"), std::string::npos);
}

TEST(BuiltinPinned, SilentWithoutTheItemOrUnderTheKernelScope) {
  // The kernel scope: no application rule runs.
  EXPECT_TRUE(by_rule(ask_app(diagnostics({traffic("HtoD", 40, 40)}), k_steps, "kernel"), "pinned_host").empty());
  // Copies from pinned memory already, or no timeline at all.
  EXPECT_TRUE(by_rule(ask_app(diagnostics({traffic("HtoD", 40, 0)}), k_steps), "pinned_host").empty());
  EXPECT_TRUE(by_rule(ask_app({{"kernels", json::array()}}, k_steps), "pinned_host").empty());
  // A timeline without the AP item (the copies were below the item's share of the wall time).
  json d = diagnostics({traffic("HtoD", 40, 40)});
  d["evidence"] = json::array();
  auto r = ask_app(d, k_steps);
  EXPECT_TRUE(by_rule(r, "pinned_host").empty());
  EXPECT_TRUE(pinned_withheld(r).empty());
}

TEST(BuiltinPinned, WithheldWhereTheSwapIsUnsafeOrCostsMore) {
  struct Case {
    std::string from, to, reason;
  };
  const std::vector<Case> cases = {
      {"  float* state = (float*)malloc(n * sizeof(float));\n", "  float* state;\n", "not allocated with malloc"},
      {"  for (int step = 0; step < 40; ++step) {\n",
       "  for (int step = 0; step < 40; ++step) {\n    state = (float*)realloc(state, n * sizeof(float));\n",
       "passed to realloc (line 16)"},
      {"  free(state);\n", "  free(state);\n  float** alias = &state;\n", "address is taken"},
      {"  printf(", "  state = state + 1;\n  printf(", "assigned 2 times"},
      {"  float* state = (float*)malloc(n * sizeof(float));\n", "  float* state = new float[n];\n",
       "not allocated with malloc"},
      {"  for (int step = 0; step < 40; ++step) {\n",
       "  for (int step = 0; step < 40; ++step) {\n    float* tmp = (float*)malloc(4);\n    free(tmp);\n", ""},
  };
  for (const auto& c : cases) {
    auto src = replaced(k_steps, c.from, c.to);
    auto r = ask_app(diagnostics({traffic("HtoD", 40, 40)}), src);
    if (c.reason.empty()) { // an unrelated buffer in a loop changes nothing for `state`
      EXPECT_EQ(by_rule(r, "pinned_host").size(), 2u) << c.to;
      continue;
    }
    EXPECT_TRUE(by_rule(r, "pinned_host").empty()) << c.to;
    auto w = pinned_withheld(r);
    ASSERT_EQ(w.size(), 1u) << c.to;
    EXPECT_NE(w[0].reason.find(c.reason), std::string::npos) << w[0].reason;
    EXPECT_EQ(w[0].evidence, std::vector<std::string>{"AP2"});
  }
  // Allocated inside the loop: pinned again each step.
  std::string in_loop = replaced(k_steps, "  float* state = (float*)malloc(n * sizeof(float));\n", "  float* state;\n");
  in_loop = replaced(in_loop, "  for (int step = 0; step < 40; ++step) {\n",
                     "  for (int step = 0; step < 40; ++step) {\n    state = (float*)malloc(n * sizeof(float));\n");
  auto r = ask_app(diagnostics({traffic("HtoD", 40, 40)}), in_loop);
  ASSERT_EQ(pinned_withheld(r).size(), 1u);
  EXPECT_NE(pinned_withheld(r)[0].reason.find("inside a loop"), std::string::npos);
  // Allocated in a function other than main that copies it in no loop of its own: the function
  // itself may run again and again (Rodinia's streamcluster allocates in each call of pgain).
  std::string per_call = replaced(k_steps, "int main() {", R"(void report(const float* d, int n) {
  float* work = (float*)malloc(n * sizeof(float));
  cudaMemcpy(work, d, n * sizeof(float), cudaMemcpyDeviceToHost);
  printf("%f\n", work[0]);
  free(work);
}

int main() {)");
  r = ask_app(diagnostics({traffic("DtoH", 40, 40)}), per_call);
  EXPECT_EQ(by_rule(r, "pinned_host").size(), 2u) << "state, in main";
  ASSERT_EQ(pinned_withheld(r).size(), 1u);
  EXPECT_NE(pinned_withheld(r)[0].reason.find("allocated in report, which copies it in no loop of its own"),
            std::string::npos)
      << pinned_withheld(r)[0].reason;
  // The same program's loop in a function of its own, which copies in its loop: pinned.
  std::string simulate = replaced(k_steps, "int main() {", "int simulate() {");
  simulate += "\nint main() { return simulate(); }\n";
  EXPECT_EQ(by_rule(ask_app(diagnostics({traffic("HtoD", 40, 40)}), simulate), "pinned_host").size(), 2u);
  // Copied once: pinning costs about what the copy saves.
  r = ask_app(diagnostics({traffic("HtoD", 1, 1)}), k_steps);
  EXPECT_TRUE(by_rule(r, "pinned_host").empty());
  ASSERT_EQ(pinned_withheld(r).size(), 1u);
  EXPECT_NE(pinned_withheld(r)[0].reason.find("copied about once"), std::string::npos);
  // A file g++ compiles: the CUDA runtime's calls may be unknown there.
  r = ask_app(diagnostics({traffic("HtoD", 40, 40)}), k_steps, "application", "main.cpp");
  EXPECT_TRUE(by_rule(r, "pinned_host").empty());
  ASSERT_EQ(pinned_withheld(r).size(), 1u);
  EXPECT_NE(pinned_withheld(r)[0].reason.find("not compiled by nvcc"), std::string::npos);
  // Freed in a function that neither copies nor launches: no edit may go there.
  std::string helper = replaced(k_steps, "int main() {", "void release(float* p) { free(p); }\n\nint main() {");
  helper = replaced(helper, "  free(state);\n", "  release(state);\n");
  r = ask_app(diagnostics({traffic("HtoD", 40, 40)}), helper);
  EXPECT_TRUE(by_rule(r, "pinned_host").empty());
  ASSERT_EQ(pinned_withheld(r).size(), 1u);
  EXPECT_NE(pinned_withheld(r)[0].reason.find("passed to release (line 24), which frees memory"), std::string::npos)
      << pinned_withheld(r)[0].reason;
  // Passed to a function of the sources that frees nothing, or to one they do not define.
  std::string fill = replaced(k_steps, "int main() {", "void fill(float* p, int n) { p[0] = n; }\n\nint main() {");
  fill = replaced(fill, "  free(state);\n", "  fill(state, n);\n  free(state);\n");
  EXPECT_EQ(by_rule(ask_app(diagnostics({traffic("HtoD", 40, 40)}), fill), "pinned_host").size(), 2u);
  std::string unknown = replaced(k_steps, "  free(state);\n", "  consume(state);\n  free(state);\n");
  r = ask_app(diagnostics({traffic("HtoD", 40, 40)}), unknown);
  ASSERT_EQ(pinned_withheld(r).size(), 1u);
  EXPECT_NE(pinned_withheld(r)[0].reason.find("do not define"), std::string::npos);
}

// The edit compiles with nvcc, and the proposal of it is judged by the wall time.
TEST(BuiltinPinned, TheEditCompilesAndIsJudgedByTheWallTime) {
  const json d = diagnostics({traffic("HtoD", 40, 40), traffic("DtoH", 40, 40)});
  auto r = ask_app(d, k_steps);
  std::string reply = prompt::to_json(r).dump();
  analysis::Diagnostics diag;
  for (const char* id : {"AP2", "AP3"}) diag.evidence.push_back({id, "application", "", "copies"});
  auto proposal = propose::make_proposal({reply}, diag, {{"main.cu", k_steps}}, {{"main.cu", "main.cu"}},
                                         edit::Scope::application, false, true);
  EXPECT_TRUE(propose::acts_on_application(proposal));
  // A kernel edit citing a PC item is judged by the kernels' time.
  propose::Proposal kernel_only;
  kernel_only.application.outcomes.push_back({0, true, "", "main.cu", 5, 5, {}, 1, {"PC1"}, false, "hot"});
  EXPECT_FALSE(propose::acts_on_application(kernel_only));

  std::string nvcc = "/usr/local/cuda/bin/nvcc";
  if (auto found = util::find_executable("nvcc")) nvcc = *found;
  if (!util::find_executable(nvcc)) GTEST_SKIP() << "nvcc not found";
  TempDir dir;
  auto path = dir.file("steps.cu", edited(r, k_steps));
  util::ProcessSpec spec;
  spec.argv = {nvcc, "-arch=sm_90", "-c", path, "-o", path + ".o"};
  spec.timeout_s = 180;
  auto result = util::run_process(spec);
  EXPECT_TRUE(result.ok()) << result.err;
}
