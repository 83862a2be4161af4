// The builtin optimizer's memory rules (builtin/memory.cpp, read_only.cpp,
// local.cpp and the index analysis of index_range.cpp): each fires on its
// evidence, stays silent without it, is withheld when its safety argument fails, and what it
// writes compiles with nvcc; on our examples too, from a recorded profile or synthetic
// diagnostics.
#include "analysis/diagnostics.hpp"
#include "analysis/json.hpp"
#include "edit/apply.hpp"
#include "llm/backend.hpp"
#include "profile/importer.hpp"
#include "prompt/reply.hpp"
#include "util/process.hpp"

#include "host_run.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace optimas;
using nlohmann::json;
using optimas::test::data_path;
using optimas::test::read_all;

namespace {

json line(const char* id, const char* file, int no, const char* stall, double fraction = 0.8) {
  return {{"id", id}, {"file", file}, {"line", no}, {"stall", stall}, {"fraction", fraction}};
}

// One kernel's diagnostics entry: its roofline's access figures (null where not given) and PC lines.
json kernel(const std::string& name, json access, json lines = json::array()) {
  json a = {{"global_load_sectors_per_request", nullptr},
            {"global_store_sectors_per_request", nullptr},
            {"shared_bank_conflicts", nullptr},
            {"shared_wavefronts", nullptr},
            {"local_load_requests", nullptr},
            {"local_store_requests", nullptr},
            {"local_sectors", nullptr},
            {"shared_excessive_wavefronts", nullptr},
            {"shared_ideal_wavefronts", nullptr},
            {"summary", ""}};
  for (auto& [key, value] : access.items()) a[key] = value;
  return {{"kernel", name},
          {"roofline", {{"id", "RF1"}, {"occupancy", {{"limiter", "warps"}, {"block_size", 256}}}, {"access", a}}},
          {"stalls", {{"lines", lines}}}};
}

prompt::Reply ask(const json& kernels, const std::map<std::string, std::string>& sources) {
  auto backend = llm::make_backend(llm::parse_model("builtin"));
  llm::Request r;
  r.context = {{"diagnostics", {{"kernels", kernels}}}, {"sources", sources}};
  auto result = backend->complete(r);
  EXPECT_TRUE(llm::ok(result));
  auto parsed = prompt::parse_reply(std::get<llm::Response>(result).text);
  EXPECT_TRUE(parsed.ok()) << (parsed.errors.empty() ? "" : parsed.errors[0]);
  return *parsed.reply;
}

std::vector<const prompt::Edit*> by_rule(const prompt::Reply& r, const std::string& rule) {
  std::vector<const prompt::Edit*> out;
  for (const auto& e : r.edits)
    if (e.rule == rule) out.push_back(&e);
  return out;
}

const prompt::Withheld* withheld_about(const prompt::Reply& r, const std::string& words) {
  for (const auto& w : r.withheld)
    if (w.suggestion.find(words) != std::string::npos) return &w;
  return nullptr;
}

std::string applied(const std::string& name, const std::string& source, const prompt::Reply& reply) {
  auto app = edit::apply_edits({{name, source}}, reply, {});
  for (const auto& o : app.outcomes) EXPECT_TRUE(o.applied) << o.reason;
  return app.result[name];
}

// --------------------------------------------------------------------------- pad_shared

const char* k_transpose = R"(#define TILE 32
__global__ void transpose(const float* in, float* out, int w, int h) {
  __shared__ float tile[TILE][TILE];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  if (x < w && y < h) tile[threadIdx.y][threadIdx.x] = in[y * w + x];
  __syncthreads();
  int ox = blockIdx.y * TILE + threadIdx.x;
  int oy = blockIdx.x * TILE + threadIdx.y;
  if (ox < h && oy < w) out[oy * h + ox] = tile[threadIdx.x][threadIdx.y];
}
int main() {
  float *a, *b;
  transpose<<<dim3(4, 4), dim3(TILE, TILE)>>>(a, b, 128, 128);
  return 0;
}
)";

const json k_conflicts = {{"shared_bank_conflicts", 3.0e6}, {"shared_wavefronts", 3.2e6}};

} // namespace

TEST(BuiltinMemory, PadSharedOnMeasuredBankConflicts) {
  auto r = ask(json::array({kernel("transpose", k_conflicts)}), {{"t.cu", k_transpose}});
  auto pads = by_rule(r, "pad_shared");
  ASSERT_EQ(pads.size(), 1u);
  EXPECT_EQ(pads[0]->line_start, 3);
  EXPECT_EQ(*pads[0]->new_text, "  __shared__ float tile[TILE][TILE + 1];");
  EXPECT_EQ(pads[0]->evidence, (std::vector<std::string>{"RF1"}));
  EXPECT_NE(pads[0]->rationale.find("32-way"), std::string::npos) << pads[0]->rationale;
  EXPECT_NE(pads[0]->rationale.find("Bit-identical"), std::string::npos);
  EXPECT_NE(pads[0]->rationale.find("4096 to 4224 bytes"), std::string::npos) << pads[0]->rationale;
}

TEST(BuiltinMemory, PadSharedOnStallsWhenTheCountersAreMissing) {
  // No access figures at all: a short-scoreboard stall on the line that reads the column.
  auto r = ask(json::array({kernel("transpose", json::object(),
                                   json::array({line("PC3", "t.cu", 10, "stall_short_scoreboard")}))}),
               {{"t.cu", k_transpose}});
  auto pads = by_rule(r, "pad_shared");
  ASSERT_EQ(pads.size(), 1u);
  EXPECT_EQ(pads[0]->evidence, (std::vector<std::string>{"PC3"}));
}

TEST(BuiltinMemory, PadSharedSilentWithoutEvidence) {
  // Measured: hardly any conflicts (even with a stall on the line), or no evidence at all.
  json few = {{"shared_bank_conflicts", 1000}, {"shared_wavefronts", 3.2e6}};
  auto r =
      ask(json::array({kernel("transpose", few, json::array({line("PC3", "t.cu", 10, "stall_short_scoreboard")}))}),
          {{"t.cu", k_transpose}});
  EXPECT_TRUE(by_rule(r, "pad_shared").empty());
  r = ask(json::array({kernel("transpose", json::object())}), {{"t.cu", k_transpose}});
  EXPECT_TRUE(by_rule(r, "pad_shared").empty());
  EXPECT_TRUE(r.withheld.empty());
  // Rows read along threadIdx.x only: padding would change no bank, so nothing is proposed.
  std::string rows = k_transpose;
  rows.replace(rows.find("tile[threadIdx.x][threadIdx.y]"), 30, "tile[threadIdx.y][threadIdx.x]");
  r = ask(json::array({kernel("transpose", k_conflicts)}), {{"t.cu", rows}});
  EXPECT_TRUE(by_rule(r, "pad_shared").empty());
  EXPECT_TRUE(r.withheld.empty());
}

TEST(BuiltinMemory, PadSharedWithheldWhenTheArrayIsUsedThroughAPointer) {
  std::string flat = k_transpose;
  flat.replace(flat.find("  __syncthreads();"), 18, "  __syncthreads();\n  float* p = &tile[0][0];\n  (void)p;");
  auto r = ask(json::array({kernel("transpose", k_conflicts)}), {{"t.cu", flat}});
  EXPECT_TRUE(by_rule(r, "pad_shared").empty());
  const auto* w = withheld_about(r, "pad __shared__ float tile");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->reason.find("other than as tile[i][j]"), std::string::npos) << w->reason;
  EXPECT_EQ(w->evidence, (std::vector<std::string>{"RF1"}));
}

TEST(BuiltinMemory, PadSharedWithheldOverTheStaticSharedLimit) {
  // 96 x 128 floats are 48 KiB, the static limit; one more column per row is too much.
  std::string big = k_transpose;
  big.replace(big.find("tile[TILE][TILE]"), 16, "tile[96][128]");
  auto r = ask(json::array({kernel("transpose", k_conflicts)}), {{"t.cu", big}});
  EXPECT_TRUE(by_rule(r, "pad_shared").empty());
  const auto* w = withheld_about(r, "pad __shared__ float tile");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->reason.find("49536 bytes"), std::string::npos) << w->reason;
}

// Two arrays in one declaration: the second's size is not read, so the limit cannot be checked.
TEST(BuiltinMemory, PadSharedWithheldWhenASharedArrayCannotBeSized) {
  std::string two = k_transpose;
  two.replace(two.find("tile[TILE][TILE];"), 17, "tile[TILE][TILE], spare[TILE];\n  (void)spare;");
  auto r = ask(json::array({kernel("transpose", k_conflicts)}), {{"t.cu", two}});
  EXPECT_TRUE(by_rule(r, "pad_shared").empty());
  const auto* w = withheld_about(r, "pad __shared__ float tile");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->reason.find("size this rule cannot compute"), std::string::npos) << w->reason;
}

TEST(BuiltinMemory, PadSharedPadsEightByteElementsByOneElement) {
  std::string d = k_transpose;
  d.replace(d.find("__shared__ float tile[TILE][TILE]"), 33, "__shared__ double tile[16][16]");
  for (std::size_t at; (at = d.find("float*")) != std::string::npos;) d.replace(at, 6, "double*");
  d.replace(d.find("float *a, *b"), 12, "double *a, *b");
  auto r = ask(json::array({kernel("transpose", k_conflicts)}), {{"t.cu", d}});
  auto pads = by_rule(r, "pad_shared");
  ASSERT_EQ(pads.size(), 1u);
  EXPECT_EQ(*pads[0]->new_text, "  __shared__ double tile[16][16 + 1];");
  EXPECT_NE(pads[0]->rationale.find("16 threads at a time"), std::string::npos) << pads[0]->rationale;
}

// The recorded H200 profile of examples/shmem (its SourceCounters figures: 94% of the
// transpose's shared wavefronts are excessive), analysed as `optimas optimize` does.
TEST(BuiltinMemory, PadSharedFiresOnTheRecordedShmemProfile) {
  auto prof = profile::import_profile(data_path("h200/shmem"));
  json d = analysis::to_json(analysis::analyze(prof, {}));
  std::string src = read_all(data_path("../../examples/shmem/main.cu"));
  ASSERT_FALSE(src.empty());
  auto r = ask(d["kernels"], {{"main.cu", src}});
  auto pads = by_rule(r, "pad_shared");
  ASSERT_EQ(pads.size(), 1u);
  EXPECT_EQ(pads[0]->kernel, "transpose_kernel");
  EXPECT_EQ(*pads[0]->new_text, "  __shared__ float tile[TILE][TILE + 1];");
  EXPECT_EQ(pads[0]->evidence[0].substr(0, 2), "RF");
  EXPECT_NE(pads[0]->rationale.find("beyond the ideal (94%"), std::string::npos) << pads[0]->rationale;
  // The blur's tile is read along rows: no padding proposed for it.
  for (const auto* e : pads) EXPECT_NE(e->kernel, "blur_kernel");
}

namespace {

// --------------------------------------------------------------------------- local_to_registers

const char* k_digits = R"(#define RADIX 16
__global__ void count(const unsigned int* keys, unsigned int* counts, int n, int shift) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  int threads = gridDim.x * blockDim.x;
  unsigned int cnt[RADIX];
  for (int d = 0; d < RADIX; d++) cnt[d] = 0;
  for (int i = tid; i < n; i += threads) {
    unsigned int digit = (keys[i] >> shift) & (RADIX - 1);
    cnt[digit]++;
  }
  for (int d = 0; d < RADIX; d++) counts[d * threads + tid] = cnt[d];
}
int main() { return 0; }
)";

const json k_local = {{"local_load_requests", 5.0e6}, {"local_store_requests", 5.1e6}};

} // namespace

TEST(BuiltinMemory, LocalToRegistersOnLocalTraffic) {
  auto r = ask(json::array({kernel("count", k_local)}), {{"c.cu", k_digits}});
  auto edits = by_rule(r, "local_to_registers");
  ASSERT_EQ(edits.size(), 3u);
  EXPECT_EQ(edits[0]->line_start, 6);
  EXPECT_EQ(*edits[0]->new_text, "  #pragma unroll\n  for (int d = 0; d < RADIX; d++) cnt[d] = 0;");
  EXPECT_EQ(edits[1]->line_start, 9);
  EXPECT_EQ(*edits[1]->new_text, "    {\n      const int cnt_i = (digit);\n      #pragma unroll\n"
                                 "      for (int cnt_k = 0; cnt_k < 16; ++cnt_k)\n"
                                 "        if (cnt_k == cnt_i) cnt[cnt_k]++;\n    }");
  EXPECT_EQ(edits[2]->line_start, 11);
  EXPECT_EQ(edits[0]->evidence, (std::vector<std::string>{"RF1"}));
  EXPECT_NE(edits[0]->rationale.find("`digit` lies in [0, 15]"), std::string::npos) << edits[0]->rationale;
  EXPECT_NE(edits[0]->rationale.find("Bit-identical"), std::string::npos);
}

TEST(BuiltinMemory, LocalToRegistersSilentWithoutLocalTraffic) {
  json none = {{"local_load_requests", 0}, {"local_store_requests", 0}};
  json lines = json::array({line("PC1", "c.cu", 9, "stall_lg_throttle")});
  auto r = ask(json::array({kernel("count", none, lines)}), {{"c.cu", k_digits}});
  EXPECT_TRUE(by_rule(r, "local_to_registers").empty());
  r = ask(json::array({kernel("count", json::object())}), {{"c.cu", k_digits}});
  EXPECT_TRUE(by_rule(r, "local_to_registers").empty());
  EXPECT_TRUE(r.withheld.empty());
  // Unmeasured, but an lg_throttle stall on a line using the array: it fires on that.
  r = ask(json::array({kernel("count", json::object(), lines)}), {{"c.cu", k_digits}});
  auto edits = by_rule(r, "local_to_registers");
  ASSERT_FALSE(edits.empty());
  EXPECT_EQ(edits[0]->evidence, (std::vector<std::string>{"PC1"}));
}

namespace {

// k_digits with a digit the source does not bound: the shift decides whether it fits.
std::string unbounded_digits() {
  std::string wide = k_digits;
  wide.replace(wide.find("(keys[i] >> shift) & (RADIX - 1)"), 32, "keys[i] >> shift");
  return wide;
}

} // namespace

// An index the source cannot bound is checked at run time (the guarded form); one that is
// fixed once loops are unrolled, or never inside, withholds the edit.
TEST(BuiltinMemory, LocalToRegistersGuardsAnIndexItCannotBound) {
  auto r = ask(json::array({kernel("count", k_local)}), {{"c.cu", unbounded_digits()}});
  auto edits = by_rule(r, "local_to_registers");
  ASSERT_EQ(edits.size(), 3u) << (r.withheld.empty() ? "" : r.withheld[0].reason);
  EXPECT_EQ(edits[1]->line_start, 9);
  EXPECT_EQ(*edits[1]->new_text,
            "    {\n      const long long cnt_i = (long long)(digit);\n"
            "      if (cnt_i < 0 || cnt_i >= 16) __trap(); // outside the array: the original's access is undefined\n"
            "      #pragma unroll\n      for (int cnt_k = 0; cnt_k < 16; ++cnt_k)\n"
            "        if (cnt_k == cnt_i) cnt[cnt_k]++;\n    }");
  EXPECT_NE(edits[0]->rationale.find("Guarded: the source does not bound `digit` on line 9"), std::string::npos)
      << edits[0]->rationale;
  EXPECT_NE(edits[0]->rationale.find("past the guard, every index lies in [0, 16)"), std::string::npos);

  // A loop bound past the end is a fault of the original, not data: withheld.
  std::string past = k_digits;
  past.replace(past.find("d < RADIX; d++) cnt[d] = 0"), 9, "d <= RADIX");
  r = ask(json::array({kernel("count", k_local)}), {{"c.cu", past}});
  EXPECT_TRUE(by_rule(r, "local_to_registers").empty());
  auto* w = withheld_about(r, "cnt[RADIX]");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->reason.find("it lies in [0, 16]"), std::string::npos) << w->reason;
  // An index that can never be inside: withheld.
  std::string never = k_digits;
  never.replace(never.find("cnt[digit]++"), 12, "cnt[digit + RADIX]++");
  r = ask(json::array({kernel("count", k_local)}), {{"c.cu", never}});
  EXPECT_TRUE(by_rule(r, "local_to_registers").empty());
  w = withheld_about(r, "cnt[RADIX]");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->reason.find("`digit + RADIX` on line 9 could lie outside [0, 16) (it lies in [16, 31])"),
            std::string::npos)
      << w->reason;
}

namespace {

// The digit counts on the host, 2 blocks of 64 threads: with shift 16 every digit of keys below
// 2^20 fits the 16 counters (the original and the guarded edit agree bit for bit); with shift 8
// digits reach 4095, where the original's access is undefined and the guard stops the kernel.
const char* k_digits_driver = R"(int main(int argc, char**) {
  std::vector<unsigned> keys(5000);
  unsigned long long s = 5;
  for (auto& k : keys) k = (unsigned)(next_value(s) * 1e6f) & 0xFFFFF;
  const int threads = 128, shift = ARGS_SHIFT;
  std::vector<unsigned> c0(16 * threads), c1(16 * threads);
  if (shift == 16)
    launch(2, 64, [&] { original::count(keys.data(), c0.data(), (int)keys.size(), shift); });
  launch(2, 64, [&] { edited::count(keys.data(), c1.data(), (int)keys.size(), shift); });
  bool ok = same("counts", c0, c1);
  std::printf(ok ? "identical\n" : "DIFFERENT\n");
  return ok ? 0 : 1;
}
)";

std::string digits_driver(int shift) {
  std::string d = k_digits_driver;
  d.replace(d.find("ARGS_SHIFT"), 10, std::to_string(shift));
  return d;
}

} // namespace

TEST(BuiltinMemory, LocalToRegistersGuardKeepsResultsAndStopsOutsideTheArray) {
  std::string src = unbounded_digits();
  auto r = ask(json::array({kernel("count", k_local)}), {{"c.cu", src}});
  ASSERT_EQ(by_rule(r, "local_to_registers").size(), 3u);
  std::string edited = applied("c.cu", src, r);
  std::string host_src = src.substr(0, src.find("int main()"));
  std::string host_edited = edited.substr(0, edited.find("int main()"));
  EXPECT_EQ(optimas::test::run_on_host(host_src, host_edited, digits_driver(16).c_str()), "identical");
  // The fallback: an index outside the array stops the run.
  std::string outside = optimas::test::run_on_host(host_src, host_edited, digits_driver(8).c_str());
  EXPECT_NE(outside.find("trap"), std::string::npos) << outside;
  EXPECT_NE(outside, "identical");
}

TEST(BuiltinMemory, LocalToRegistersWithheldWhenTheAddressEscapesOrTheSizeIsUnknown) {
  std::string escapes = k_digits;
  escapes.replace(escapes.find("    cnt[digit]++;"), 17, "    unsigned int* p = cnt;\n    p[digit]++;");
  auto r = ask(json::array({kernel("count", k_local)}), {{"c.cu", escapes}});
  EXPECT_TRUE(by_rule(r, "local_to_registers").empty());
  const auto* w = withheld_about(r, "cnt[RADIX]");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->reason.find("address escapes"), std::string::npos) << w->reason;

  std::string templ = k_digits;
  templ.replace(0, templ.find('\n') + 1, "template <int RADIX>\n");
  r = ask(json::array({kernel("count", k_local)}), {{"c.cu", templ}});
  EXPECT_TRUE(by_rule(r, "local_to_registers").empty());
  w = withheld_about(r, "cnt[RADIX]");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->reason.find("not a constant"), std::string::npos) << w->reason;
}

namespace {

// A lookup table read by data, in a declaration and in an expression statement.
const char* k_table = R"(__global__ void lookup(const int* idx, float* out, int n) {
  float table[8];
  for (int k = 0; k < 8; ++k) table[k] = 0.5f * k;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = table[idx[i] & 7];
  out[i] = v + table[min(max(idx[i], 0), 7)] * 2.0f;
}
int main() { return 0; }
)";

} // namespace

TEST(BuiltinMemory, LocalToRegistersRewritesReadsAndDeclarations) {
  auto r = ask(json::array({kernel("lookup", k_local)}), {{"l.cu", k_table}});
  auto edits = by_rule(r, "local_to_registers");
  ASSERT_EQ(edits.size(), 3u) << (r.withheld.empty() ? "" : r.withheld[0].reason);
  EXPECT_EQ(*edits[1]->new_text, "  float v;\n  {\n    const int table_i = (idx[i] & 7);\n    #pragma unroll\n"
                                 "    for (int table_k = 0; table_k < 8; ++table_k)\n"
                                 "      if (table_k == table_i) v = table[table_k];\n  }");
  EXPECT_NE(edits[2]->new_text->find("if (table_k == table_i) out[i] = v + table[table_k] * 2.0f;"), std::string::npos)
      << *edits[2]->new_text;
}

namespace {

// --------------------------------------------------------------------------- read_only

const char* k_blend = R"(__global__ void blend(const float* a, const float* b, float* out, int n) {
  int stride = blockDim.x * gridDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = a[i] * 0.5f + b[i];
}
int main() {
  float *x, *y;
  blend<<<64, 256>>>(x, x, y, 1000);
  return 0;
}
)";

json blend_lines() {
  return json::array({line("PC7", "b.cu", 4, "stall_long_scoreboard")});
}

} // namespace

TEST(BuiltinMemory, ReadOnlyWhereAnAliasingLaunchWithheldRestrict) {
  auto r = ask(json::array({kernel("blend", json::object(), blend_lines())}), {{"b.cu", k_blend}});
  ASSERT_NE(withheld_about(r, "__restrict__"), nullptr); // the restrict rule's
  auto edits = by_rule(r, "read_only");
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(*edits[0]->new_text, "    out[i] = __ldg(&a[i]) * 0.5f + __ldg(&b[i]);");
  EXPECT_EQ(edits[0]->evidence, (std::vector<std::string>{"PC7"}));
  EXPECT_NE(edits[0]->rationale.find("Bit-identical"), std::string::npos);
}

TEST(BuiltinMemory, ReadOnlySilentWithoutEvidenceOrWhenRestrictApplies) {
  auto r = ask(json::array({kernel("blend", json::object())}), {{"b.cu", k_blend}});
  EXPECT_TRUE(by_rule(r, "read_only").empty());
  // Distinct buffers: restrict (with const) applies and gives the read-only path itself.
  std::string distinct = k_blend;
  distinct.replace(distinct.find("(x, x, y, 1000)"), 15, "(x, z, y, 1000)");
  distinct.replace(distinct.find("float *x, *y;"), 13, "float *x, *y, *z;");
  r = ask(json::array({kernel("blend", json::object(), blend_lines())}), {{"b.cu", distinct}});
  EXPECT_TRUE(by_rule(r, "read_only").empty());
  EXPECT_EQ(r.edits.size(), 1u);
  EXPECT_EQ(r.edits[0].rule, "restrict");
}

TEST(BuiltinMemory, ReadOnlyWithheldForABufferTheKernelWrites) {
  // x + 8 twice (a and b) and x (out): the loads of a and b could see the kernel's stores.
  std::string writes = k_blend;
  writes.replace(writes.find("(x, x, y, 1000)"), 15, "(x + 8, x + 8, x, 1000)");
  auto r = ask(json::array({kernel("blend", json::object(), blend_lines())}), {{"b.cu", writes}});
  EXPECT_TRUE(by_rule(r, "read_only").empty());
  for (const char* p : {"load a through", "load b through"}) {
    const auto* w = withheld_about(r, p);
    ASSERT_NE(w, nullptr) << p;
    EXPECT_NE(w->reason.find("to out too, which the kernel writes"), std::string::npos) << w->reason;
    EXPECT_EQ(w->evidence, (std::vector<std::string>{"PC7"}));
  }
  // One buffer for a and out (the kernel runs in place): the restrict rule's withheld reason
  // covers it; this rule proposes nothing and adds nothing.
  writes = k_blend;
  writes.replace(writes.find("(x, x, y, 1000)"), 15, "(x, y, x, 1000)");
  r = ask(json::array({kernel("blend", json::object(), blend_lines())}), {{"b.cu", writes}});
  EXPECT_TRUE(by_rule(r, "read_only").empty());
  ASSERT_EQ(r.withheld.size(), 1u);
  EXPECT_NE(r.withheld[0].suggestion.find("__restrict__"), std::string::npos);
}

// A write through a pointer that is no parameter (here `q`, after an `else`) cannot be traced
// to a launch argument: it might reach a or b, so nothing goes through __ldg.
TEST(BuiltinMemory, ReadOnlyWithheldWhenTheKernelWritesThroughAnotherPointer) {
  std::string other = k_blend;
  other.replace(other.find("    out[i] = a[i] * 0.5f + b[i];"), 32,
                "    if (i & 1) out[i] = a[i] * 0.5f + b[i]; else q[i] = a[i];");
  other.replace(other.find("  int stride"), 12, "  float* q = out + 1;\n  int stride");
  json lines = json::array({line("PC7", "b.cu", 5, "stall_long_scoreboard")});
  auto r = ask(json::array({kernel("blend", json::object(), lines)}), {{"b.cu", other}});
  EXPECT_TRUE(by_rule(r, "read_only").empty());
  const auto* w = withheld_about(r, "load a through");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->reason.find("writes through `q`"), std::string::npos) << w->reason;
}

// --------------------------------------------------------------------------- compiling

// Every rule's output is valid CUDA: applied to its fixture or to our examples, it compiles with
// nvcc (no GPU needed; skipped where CUDA is not installed).
TEST(BuiltinMemory, RuleOutputsCompileWithNvcc) {
  std::string nvcc = "/usr/local/cuda/bin/nvcc";
  if (auto found = optimas::util::find_executable("nvcc")) nvcc = *found;
  if (!optimas::util::find_executable(nvcc)) GTEST_SKIP() << "nvcc not found";
  optimas::test::TempDir dir;
  std::string shmem = read_all(data_path("../../examples/shmem/main.cu"));
  std::string digits = read_all(data_path("../../examples/digits/main.cu"));
  std::string labels = read_all(data_path("../../examples/labels/main.cu"));
  ASSERT_FALSE(shmem.empty());
  ASSERT_FALSE(digits.empty());
  ASSERT_FALSE(labels.empty());
  struct Case {
    std::string name, source;
    json kernels;
    std::string rule;
    std::string registers_only = {}; // a kernel whose local array the edit must move to registers
  } cases[] = {
      {"t.cu", k_transpose, json::array({kernel("transpose", k_conflicts)}), "pad_shared"},
      {"c.cu", k_digits, json::array({kernel("count", k_local)}), "local_to_registers"},
      {"l.cu", k_table, json::array({kernel("lookup", k_local)}), "local_to_registers"},
      {"g.cu", unbounded_digits(), json::array({kernel("count", k_local)}), "local_to_registers", "count"},
      {"b.cu", k_blend, json::array({kernel("blend", json::object(), blend_lines())}), "read_only"},
      // Our examples with synthetic diagnostics: bank conflicts in shmem, local traffic in digits.
      {"main.cu", shmem, json::array({kernel("transpose_kernel", k_conflicts)}), "pad_shared"},
      {"main.cu", digits, json::array({kernel("digit_count_kernel", k_local)}), "local_to_registers",
       "digit_count_kernel"},
      // Both of labels' arrays leave local memory under the guard (its labels are unbounded).
      {"main.cu", labels, json::array({kernel("tally_kernel", k_local)}), "local_to_registers", "tally_kernel"},
  };
  int n = 0;
  for (auto& c : cases) {
    auto reply = ask(c.kernels, {{c.name, c.source}});
    ASSERT_FALSE(by_rule(reply, c.rule).empty()) << c.name << " " << c.rule;
    std::string edited = applied(c.name, c.source, reply);
    EXPECT_NE(edited, c.source);
    auto path = dir.file(std::to_string(n++) + "_" + c.name, edited);
    optimas::util::ProcessSpec spec;
    spec.argv = {nvcc, "-O3", "-arch=sm_90", "-Xptxas", "-v", "-c", path, "-o", path + ".o"};
    spec.timeout_s = 180;
    auto r = optimas::util::run_process(spec);
    EXPECT_TRUE(r.ok()) << c.name << ":\n" << edited << "\n" << r.err;
    if (c.registers_only.empty()) continue;
    // ptxas -v: "Function properties for _Z18digit_count_kernel...\n    N bytes stack frame"; the
    // original has a 64-byte frame (the local array), the edited kernel none.
    auto at = r.err.find("Function properties for _Z" + std::to_string(c.registers_only.size()) + c.registers_only);
    ASSERT_NE(at, std::string::npos) << r.err;
    auto frame = r.err.find("bytes stack frame", at);
    ASSERT_NE(frame, std::string::npos) << r.err;
    std::string before = r.err.substr(at, frame - at);
    EXPECT_NE(before.find("\n    0 "), std::string::npos) << edited << "\n" << r.err;
  }
}
