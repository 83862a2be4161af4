// A backend's reply as `optimas optimize` takes it: parsed, its edits applied to a copy of the
// sources, the guardrails checked and the unified diff written (propose/propose.cpp's order).
// Input: the reply; or, with a NUL byte, the source of main.cu before it and the reply after;
// either part may hold repeated segments (fuzz::amplify), up to 64 KiB each (a megabyte in ctest).
#include "fuzz_common.hpp"

#include "edit/apply.hpp"
#include "edit/guardrails.hpp"
#include "prompt/reply.hpp"
#include "util/error.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace {

const char* k_source = "#include <cstdio>\n"
                       "__device__ float twice(float x) { return 2.0f * x; }\n"
                       "__global__ void scale(float* a, const float* __restrict__ b, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) a[i] = twice(b[i]);\n"
                       "}\n"
                       "template <int N> __global__ void __launch_bounds__(256) sum(const float* x, float* out) {\n"
                       "  __shared__ float s[N];\n"
                       "  s[threadIdx.x] = x[threadIdx.x];\n"
                       "  __syncthreads();\n"
                       "  if (threadIdx.x == 0) *out = s[0];\n"
                       "}\n"
                       "int main() { return 0; }\n";

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace optimas;
  std::string_view raw(reinterpret_cast<const char*>(data), size);
  std::string source = k_source;
  if (auto nul = raw.find('\0'); nul != std::string_view::npos) {
    source = fuzz::amplify(raw.substr(0, nul));
    raw.remove_prefix(nul + 1);
  }
  const std::string input = fuzz::amplify(raw);
  try {
    auto parsed = prompt::parse_reply(input);
    if (!parsed.reply) return 0;
    prompt::to_json(*parsed.reply).dump();
    std::map<std::string, std::string> sources{{"main.cu", source},
                                               {"util.cuh", "__device__ int one() { return 1; }\n"}};
    auto app = edit::apply_edits(sources, *parsed.reply, {"PC1", "RF1", "SL1"});
    // Every claimed edit is applied or recorded as not applied, with its reason.
    if (app.outcomes.size() != parsed.reply->edits.size()) __builtin_trap();
    for (auto scope : {edit::Scope::kernel, edit::Scope::file}) edit::check_guardrails(app, {scope, {"scale", "sum"}});
    for (const auto& [name, text] : app.result) edit::unified_diff(app.original.at(name), text, name);
  } catch (const Error&) {
  }
  return 0;
}
