// The memory-access rules of the builtin optimizer (warp_rows, coalesce_tiles, vector_loads): each fires
// on its evidence, stays silent without it, is withheld when its argument does not hold, keeps
// every result bit for bit (the edited kernels run on the host, threads meeting at
// __syncthreads through std::barrier) and compiles with nvcc.
#include "edit/apply.hpp"
#include "llm/backend.hpp"
#include "prompt/reply.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include "builtin_helpers.hpp"
#include "host_run.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace optimas;
using nlohmann::json;
using namespace optimas::test;

namespace {

// The rows example's kernel (examples/rows/main.cu), alone: the host test compiles it as C++.
const char* k_rows = R"(#define BLOCK 256
__global__ void row_features(const float* x, float* mean, float* stdev, float* peak, int* peak_col,
                             int rows, int cols) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;

  float sum = 0.0f, sq = 0.0f, top = -INFINITY;
  int top_col = 0;
  for (int j = 0; j < cols; j++) {
    float v = x[(size_t)row * cols + j];
    sum += v;
    sq += v * v;
    if (v > top) {
      top = v;
      top_col = j;
    }
  }
  float m = sum / cols;
  mean[row] = m;
  stdev[row] = sqrtf(fmaxf(sq / cols - m * m, 0.0f));
  peak[row] = top;
  peak_col[row] = top_col;
}
)";

// A two-pass row statistic: the kernel walks each row twice (the mean, then the squared deviations).
const char* k_rows2 = R"(#define BLOCK 256
__global__ void row_stats(const float* x, float* mean, float* var, int rows, int cols) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;

  float sum = 0.0f;
  for (int j = 0; j < cols; j++) {
    sum += x[(size_t)row * cols + j];
  }
  float m = sum / cols;
  float sq = 0.0f;
  for (int j = 0; j < cols; j++) {
    float d = x[(size_t)row * cols + j] - m;
    sq += d * d;
  }
  mean[row] = m;
  var[row] = sq / cols;
}
)";

// The mix example's kernel (examples/mix/main.cu).
const char* k_mix =
    R"(__global__ void mix(const float* a, const float* b, float* out, float gain_a, float gain_b, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    float s = gain_a * a[i] + gain_b * b[i];
    out[i] = fminf(fmaxf(s, -1.0f), 1.0f);
  }
}
)";

json stall(const char* id, const char* file, int line, const char* kind = "stall_long_scoreboard") {
  return {{"id", id}, {"file", std::string("/app/") + file}, {"line", line}, {"stall", kind}, {"fraction", 0.8}};
}

// A kernel's diagnostics entry: `access` is the roofline's access object (null: none).
json kernel(const std::string& name, json lines, json access, double rho_memory = 0.3, int block = 256) {
  json occupancy = {{"limiter", "warps"}, {"blocks_per_sm_limits", json::object()}};
  if (block > 0) occupancy["block_size"] = block;
  json roofline = {{"id", "RF1"}, {"rho_memory", rho_memory}, {"memory_saturated", false}, {"occupancy", occupancy}};
  if (!access.is_null()) roofline["access"] = access;
  return {{"kernel", name}, {"demangled", name + "(...)"}, {"roofline", roofline}, {"stalls", {{"lines", lines}}}};
}

json sectors(double per_request) {
  return {{"global_load_sectors_per_request", per_request},
          {"global_store_sectors_per_request", 4.0},
          {"summary", "synthetic"}};
}

json rows_kernel(json access = sectors(28.0), int block = 256) {
  return kernel("row_features", json::array({stall("PC7", "rows.cu", 10)}), access, 0.3, block);
}

json mix_kernel(double rho = 0.12) {
  return kernel("mix", json::array({stall("PC3", "mix.cu", 3)}), sectors(4.0), rho, 128);
}

} // namespace

TEST(BuiltinAccess, WarpRowsOnAnUncoalescedRowWalk) {
  auto r = ask(rows_kernel(), "rows.cu", k_rows);
  auto edits = by_rule(r, "warp_rows");
  ASSERT_EQ(edits.size(), 1u);
  const auto& e = edits[0];
  EXPECT_EQ(e.evidence, (std::vector<std::string>{"PC7", "RF1"}));
  EXPECT_EQ(e.line_start, 9); // the loop, whole
  EXPECT_EQ(e.line_end, 17);
  ASSERT_TRUE(e.new_text);
  const std::string& code = *e.new_text;
  EXPECT_NE(code.find("if (blockDim.x % 32 == 0 && blockDim.x <= 256 && blockDim.y == 1 && blockDim.z == 1 &&"),
            std::string::npos)
      << code;
  EXPECT_NE(code.find("(long long)(row) - (long long)(threadIdx.x % 32) + 32 <= (long long)(rows)"), std::string::npos)
      << code;
  EXPECT_NE(code.find("__shared__ float x_tile[256 / 32][32][32 + 1];"), std::string::npos) << code;
  EXPECT_NE(code.find("x_w[x_r][x_lane] = x[(size_t)row_t * cols + j_t];"), std::string::npos) << code;
  EXPECT_NE(code.find("float v = x_w[x_lane][j - j_tile];"), std::string::npos) << code;
  EXPECT_NE(code.find("__syncwarp();"), std::string::npos) << code;
  EXPECT_EQ(code.find("__syncthreads"), std::string::npos) << code;
  // The original loop is the fallback, unchanged but for its indentation.
  EXPECT_NE(code.find("} else {\n    for (int j = 0; j < cols; j++) {\n      float v = x[(size_t)row * cols + j];"),
            std::string::npos)
      << code;
  EXPECT_NE(e.rationale.find("28.0 sectors per request"), std::string::npos) << e.rationale;
  EXPECT_NE(e.rationale.find("A warp takes the tiled path only when its 32 rows all exist (below rows)"),
            std::string::npos)
      << e.rationale;
  // The block form of the same rewrite is displaced, and offered as a search's alternative.
  EXPECT_TRUE(by_rule(r, "coalesce_tiles").empty());
  bool displaced = false;
  for (const auto& w : r.withheld)
    displaced = displaced || (w.suggestion.rfind("coalesce_tiles:", 0) == 0 &&
                              w.reason.find("overlaps the warp_rows edit") != std::string::npos);
  EXPECT_TRUE(displaced);
}

TEST(BuiltinAccess, CoalesceTilesIsTheAlternative) {
  auto r = alone(rows_kernel(), "rows.cu", k_rows, "coalesce_tiles");
  auto edits = by_rule(r, "coalesce_tiles");
  ASSERT_EQ(edits.size(), 1u);
  const auto& e = edits[0];
  EXPECT_EQ(e.evidence, (std::vector<std::string>{"PC7", "RF1"}));
  EXPECT_EQ(e.line_start, 9);
  EXPECT_EQ(e.line_end, 17);
  ASSERT_TRUE(e.new_text);
  const std::string& code = *e.new_text;
  EXPECT_NE(code.find("__shared__ float x_tile[256][32 + 1];"), std::string::npos) << code;
  EXPECT_NE(code.find("(long long)(row) - (long long)threadIdx.x + 256 <= (long long)(rows)"), std::string::npos)
      << code;
  EXPECT_NE(code.find("x_tile[x_r][x_c] = x[(size_t)row_t * cols + j_t];"), std::string::npos) << code;
  EXPECT_NE(code.find("float v = x_tile[threadIdx.x][j - j_tile];"), std::string::npos) << code;
  EXPECT_NE(code.find("} else {\n    for (int j = 0; j < cols; j++) {\n      float v = x[(size_t)row * cols + j];"),
            std::string::npos)
      << code;
  EXPECT_NE(e.rationale.find("Only full blocks of 256x1x1 threads"), std::string::npos) << e.rationale;
  EXPECT_TRUE(by_rule(r, "warp_rows").empty());
  EXPECT_TRUE(withheld_of(r, "coalesce_tiles").empty());
}

TEST(BuiltinAccess, RowTilesSilentWithoutTheirEvidence) {
  for (json access : {sectors(4.0), json(nullptr),
                      json{{"global_load_sectors_per_request", nullptr}, {"summary", "metric missing"}}}) {
    auto r = ask(rows_kernel(access), "rows.cu", k_rows);
    for (const char* rule : {"warp_rows", "coalesce_tiles"}) {
      EXPECT_TRUE(by_rule(r, rule).empty()) << rule << " " << access.dump();
      EXPECT_TRUE(withheld_of(r, rule).empty()) << rule << " " << access.dump();
    }
  }
  // Many sectors, but no long_scoreboard in the loop.
  json quiet =
      kernel("row_features", json::array({stall("PC7", "rows.cu", 10, "stall_math_pipe_throttle")}), sectors(28.0));
  auto r = ask(quiet, "rows.cu", k_rows);
  for (const char* rule : {"warp_rows", "coalesce_tiles"}) {
    EXPECT_TRUE(by_rule(r, rule).empty()) << rule;
    EXPECT_TRUE(withheld_of(r, rule).empty()) << rule;
  }
}

TEST(BuiltinAccess, RowTilesWithheldWhenTheirArgumentFails) {
  struct Case {
    std::string what, source, reason;
    int block = 256;
  } cases[] = {
      {"an exit inside the walk", replaced(k_rows, "    sum += v;\n", "    if (v > 1e30f) return;\n    sum += v;\n"),
       "`return`"},
      {"a break", replaced(k_rows, "    sum += v;\n", "    if (v > 1e30f) break;\n    sum += v;\n"), "`break`"},
      {"a trip count per thread", replaced(k_rows, "j < cols;", "j < cols - row % 3;"), "data-dependent trip count"},
      {"a start per thread", replaced(k_rows, "int j = 0;", "int j = row % 2;"), "data-dependent trip count"},
      {"a write to the matrix",
       replaced(k_rows, "  peak_col[row] = top_col;", "  peak_col[row] = top_col;\n  ((float*)x)[0] = 0;"),
       "written or passed on"},
      {"shared memory already", replaced(k_rows, "  float sum", "  __shared__ float spare[32];\n  float sum"),
       "already uses shared memory"},
      {"a row that is not the thread's",
       replaced(k_rows, "int row = blockIdx.x * blockDim.x + threadIdx.x;", "int row = blockIdx.x;"),
       "blockIdx.x * blockDim.x + threadIdx.x"},
      {"an early exit of some threads before the walk",
       replaced(k_rows, "  float sum", "  if (cols > 1000 && row % 2) return;\n  float sum"), "leave __syncthreads"},
      {"an unknown block size", k_rows, "block size is unknown", 0},
  };
  for (const auto& c : cases) {
    auto r = ask(rows_kernel(sectors(28.0), c.block), "rows.cu", c.source);
    EXPECT_TRUE(by_rule(r, "warp_rows").empty()) << c.what;
    EXPECT_TRUE(by_rule(r, "coalesce_tiles").empty()) << c.what;
    auto w = withheld_of(r, "warp_rows");
    ASSERT_EQ(w.size(), 1u) << c.what;
    EXPECT_NE(w[0].reason.find(c.reason), std::string::npos) << c.what << ": " << w[0].reason;
    EXPECT_EQ(w[0].evidence, (std::vector<std::string>{"PC7", "RF1"})) << c.what;
    // The two forms share their checks: the block form does not say the same reason again.
    EXPECT_TRUE(withheld_of(r, "coalesce_tiles").empty()) << c.what;
  }
}

TEST(BuiltinAccess, VectorLoadsOnALatencyBoundGridStrideLoop) {
  auto r = ask(mix_kernel(), "mix.cu", k_mix);
  auto edits = by_rule(r, "vector_loads");
  ASSERT_EQ(edits.size(), 1u);
  const auto& e = edits[0];
  EXPECT_EQ(e.evidence, (std::vector<std::string>{"PC3", "RF1"}));
  EXPECT_EQ(e.line_start, 2);
  EXPECT_EQ(e.line_end, 5);
  const std::string& code = *e.new_text;
  EXPECT_NE(code.find("if ((reinterpret_cast<size_t>(a) & 15) == 0 && (reinterpret_cast<size_t>(b) & 15) == 0 && "
                      "(reinterpret_cast<size_t>(out) & 15) == 0) {"),
            std::string::npos)
      << code;
  EXPECT_NE(code.find("const float4 a_q = reinterpret_cast<const float4*>(a)[i_v];"), std::string::npos) << code;
  EXPECT_NE(code.find("float s = gain_a * a_e[i_k] + gain_b * b_e[i_k];"), std::string::npos) << code;
  // out is only stored: it is not loaded first.
  EXPECT_EQ(code.find("out_q"), std::string::npos) << code;
  EXPECT_NE(code.find("reinterpret_cast<float4*>(out)[i_v] = make_float4(out_e[0], out_e[1], out_e[2], out_e[3]);"),
            std::string::npos)
      << code;
  EXPECT_NE(e.rationale.find("memory at 12% of its peak"), std::string::npos) << e.rationale;
}

TEST(BuiltinAccess, VectorLoadsSilentWithoutItsEvidence) {
  // Memory near its peak: bandwidth, not latency.
  EXPECT_TRUE(by_rule(ask(mix_kernel(0.85), "mix.cu", k_mix), "vector_loads").empty());
  // No rho at all.
  json k = mix_kernel();
  k["roofline"]["rho_memory"] = nullptr;
  EXPECT_TRUE(by_rule(ask(k, "mix.cu", k_mix), "vector_loads").empty());
  // The loads do not wait.
  json calm = kernel("mix", json::array({stall("PC3", "mix.cu", 3, "stall_math_pipe_throttle")}), sectors(4.0), 0.12);
  auto r = ask(calm, "mix.cu", k_mix);
  EXPECT_TRUE(by_rule(r, "vector_loads").empty());
  EXPECT_TRUE(withheld_of(r, "vector_loads").empty());
  // A row walk is no grid-stride loop: the rule says nothing about it.
  EXPECT_TRUE(withheld_of(ask(rows_kernel(sectors(4.0)), "rows.cu", k_rows), "vector_loads").empty());
}

TEST(BuiltinAccess, VectorLoadsWithheldWhenItsArgumentFails) {
  struct Case {
    std::string what, source, reason;
  } cases[] = {
      {"an accumulation across elements",
       replaced(k_mix, "    out[i] = fminf(fmaxf(s, -1.0f), 1.0f);", "    out[0] += s;"), "written at an index other"},
      {"a running sum in a register",
       replaced(replaced(k_mix, "  for (int i", "  float acc = 0.0f;\n  for (int i"), "    out[i] = fminf",
                "    acc += s;\n    out[i] = fminf"),
       "accumulates into acc"},
      {"a neighbour's element", replaced(k_mix, "gain_b * b[i]", "gain_b * b[i + 1]"), "not unit-stride"},
      {"a write other iterations read",
       replaced(k_mix, "    out[i] = fminf(fmaxf(s, -1.0f), 1.0f);", "    out[i] = s;\n    out[i + 1] = s;"),
       "written at an index other"},
      {"a call that could write", replaced(k_mix, "fminf(fmaxf(s, -1.0f), 1.0f)", "atomicAdd(out, s)"),
       "calls atomicAdd"},
      {"a mix of element sizes", replaced(k_mix, "float* out", "double* out"), "differ in size"},
  };
  for (const auto& c : cases) {
    auto r = ask(mix_kernel(), "mix.cu", c.source);
    EXPECT_TRUE(by_rule(r, "vector_loads").empty()) << c.what;
    auto w = withheld_of(r, "vector_loads");
    ASSERT_EQ(w.size(), 1u) << c.what;
    EXPECT_NE(w[0].reason.find(c.reason), std::string::npos) << c.what << ": " << w[0].reason;
  }
}

// A line edit inside a loop that a memory-access rule rewrites is withheld, not left to fail.
TEST(BuiltinAccess, AnOverlappingLineEditIsWithheld) {
  std::string fixed =
      replaced(replaced(k_rows, "j < cols;", "j < COLS;"), "#define BLOCK 256", "#define BLOCK 256\n#define COLS 64");
  json k = kernel("row_features", json::array({stall("PC7", "rows.cu", 11), stall("PC8", "rows.cu", 10, "stall_wait")}),
                  sectors(28.0));
  auto r = ask(k, "rows.cu", fixed);
  EXPECT_EQ(by_rule(r, "warp_rows").size(), 1u);
  EXPECT_TRUE(by_rule(r, "unroll").empty());
  bool said = false;
  for (const auto& w : r.withheld)
    said = said ||
           (w.suggestion.rfind("unroll:", 0) == 0 && w.reason.find("overlaps the warp_rows edit") != std::string::npos);
  EXPECT_TRUE(said);
  auto app = edit::apply_edits({{"rows.cu", fixed}}, r, {});
  EXPECT_EQ(app.not_applied(), 0u);
}

namespace {

const char* k_rows_driver =
    R"(// Every row count and shape: full blocks, a partial last block, a block size the edit was not
// made for (the fallback), columns that are no multiple of the tile.
int main() {
  bool ok = true;
  for (auto [rows, cols, block] : {std::tuple{600, 77, 256}, std::tuple{512, 64, 256}, std::tuple{300, 40, 128}}) {
    std::vector<float> x((size_t)rows * cols);
    unsigned long long s = 7;
    for (auto& v : x) v = next_value(s);
    auto run = [&](auto kernel, std::vector<float>& m, std::vector<float>& sd, std::vector<float>& p,
                   std::vector<int>& c) {
      m.assign(rows, 0), sd.assign(rows, 0), p.assign(rows, 0), c.assign(rows, -1);
      launch((rows + block - 1) / block, block,
             [&] { kernel(x.data(), m.data(), sd.data(), p.data(), c.data(), rows, cols); });
    };
    std::vector<float> m0, s0, p0, m1, s1, p1;
    std::vector<int> c0, c1;
    run(original::row_features, m0, s0, p0, c0);
    run(edited::row_features, m1, s1, p1, c1);
    ok = same("mean", m0, m1) && same("stdev", s0, s1) && same("peak", p0, p1) && same("column", c0, c1) && ok;
  }
  std::printf(ok ? "identical\n" : "DIFFERENT\n");
  return ok ? 0 : 1;
}
)";

const char* k_mix_driver = R"(// Sizes with and without a tail, aligned and unaligned arrays (the fallback).
int main() {
  bool ok = true;
  for (auto [n, offset] : {std::pair{1001, 0}, std::pair{1024, 0}, std::pair{999, 1}}) {
    std::vector<float> a(n + 4), b(n + 4);
    unsigned long long s = 11;
    for (auto& v : a) v = next_value(s);
    for (auto& v : b) v = next_value(s);
    alignas(16) static float out0[2048], out1[2048];
    std::memset(out0, 0, sizeof out0);
    std::memset(out1, 0, sizeof out1);
    launch(3, 64, [&] { original::mix(a.data() + offset, b.data() + offset, out0 + offset, 0.7f, 1.3f, n); });
    launch(3, 64, [&] { edited::mix(a.data() + offset, b.data() + offset, out1 + offset, 0.7f, 1.3f, n); });
    ok = same("out", std::vector<float>(out0, out0 + 2048), std::vector<float>(out1, out1 + 2048)) && ok;
  }
  std::printf(ok ? "identical\n" : "DIFFERENT\n");
  return ok ? 0 : 1;
}
)";

} // namespace

TEST(BuiltinAccess, RowTilesKeepEveryThreadsResultsBitForBit) {
  auto r = ask(rows_kernel(), "rows.cu", k_rows);
  ASSERT_EQ(by_rule(r, "warp_rows").size(), 1u);
  EXPECT_EQ(run_on_host(k_rows, edited_source(r, "rows.cu", k_rows), k_rows_driver), "identical");
  auto block = alone(rows_kernel(), "rows.cu", k_rows, "coalesce_tiles");
  ASSERT_EQ(by_rule(block, "coalesce_tiles").size(), 1u);
  EXPECT_EQ(run_on_host(k_rows, edited_source(block, "rows.cu", k_rows), k_rows_driver), "identical");
}

TEST(BuiltinAccess, VectorLoadsKeepEveryElementBitForBit) {
  auto r = ask(mix_kernel(), "mix.cu", k_mix);
  ASSERT_EQ(by_rule(r, "vector_loads").size(), 1u);
  EXPECT_EQ(run_on_host(k_mix, edited_source(r, "mix.cu", k_mix), k_mix_driver), "identical");
}

namespace {

const char* k_rows2_driver = R"(int main() {
  bool ok = true;
  for (auto [rows, cols, block] : {std::tuple{600, 77, 256}, std::tuple{512, 64, 256}, std::tuple{300, 40, 128}}) {
    std::vector<float> x((size_t)rows * cols);
    unsigned long long s = 13;
    for (auto& v : x) v = next_value(s);
    std::vector<float> m0(rows), v0(rows), m1(rows), v1(rows);
    launch((rows + block - 1) / block, block, [&] { original::row_stats(x.data(), m0.data(), v0.data(), rows, cols); });
    launch((rows + block - 1) / block, block, [&] { edited::row_stats(x.data(), m1.data(), v1.data(), rows, cols); });
    ok = same("mean", m0, m1) && same("var", v0, v1) && ok;
  }
  std::printf(ok ? "identical\n" : "DIFFERENT\n");
  return ok ? 0 : 1;
}
)";

} // namespace

// Every loop walking the same rows takes the form, though the profile caught one: each cites
// that walk's evidence, the tiles share the 48 KiB, and every result stays bit for bit.
TEST(BuiltinAccess, WarpRowsTakesEveryWalkOfTheSameRows) {
  json k = kernel("row_stats", json::array({stall("PC4", "rows2.cu", 8)}), sectors(28.0));
  auto r = ask(k, "rows2.cu", k_rows2);
  auto edits = by_rule(r, "warp_rows");
  ASSERT_EQ(edits.size(), 2u) << r.summary;
  EXPECT_EQ(edits[0].line_start, 7);
  EXPECT_EQ(edits[1].line_start, 12);
  for (const auto& e : edits) {
    EXPECT_EQ(e.evidence, (std::vector<std::string>{"PC4", "RF1"}));
    EXPECT_NE(e.rationale.find("in 2 loops: each is tiled, its tile within 24576 bytes"), std::string::npos)
        << e.rationale;
  }
  EXPECT_EQ(run_on_host(k_rows2, edited_source(r, "rows2.cu", k_rows2), k_rows2_driver), "identical");
}

// The host run can fail: a kernel that reads one element past its tile differs.
TEST(BuiltinAccess, TheHostRunSeesADifference) {
  auto r = ask(rows_kernel(), "rows.cu", k_rows);
  std::string edited = edited_source(r, "rows.cu", k_rows);
  std::string wrong = replaced(edited, "[j - j_tile]", "[(j - j_tile + 1) % 32]");
  EXPECT_NE(run_on_host(k_rows, wrong, k_rows_driver), "identical");
}

// The rules' edits of the examples they were written for compile with nvcc (skipped without it).
TEST(BuiltinAccess, RuleOutputsCompileWithNvcc) {
  std::string nvcc = "/usr/local/cuda/bin/nvcc";
  if (auto found = util::find_executable("nvcc")) nvcc = *found;
  if (!util::find_executable(nvcc)) GTEST_SKIP() << "nvcc not found";
  optimas::test::TempDir dir;
  std::string examples = std::string(OPTIMAS_TEST_DATA) + "/../../examples/";
  struct Case {
    std::string example, rule;
    json kernel;
    int loop_line;      // the hot loop's load line in the example
    bool alone = false; // the rule as a search's alternative offers it
  } cases[] = {{"rows", "warp_rows", rows_kernel(), 0},
               {"rows", "coalesce_tiles", rows_kernel(), 0, true},
               {"mix", "vector_loads", mix_kernel(), 0}};
  for (auto& c : cases) {
    std::ifstream in(examples + c.example + "/main.cu");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string src = ss.str();
    ASSERT_FALSE(src.empty()) << c.example;
    // Point the stall line at the example's own load line.
    auto lines = util::split(src, '\n');
    std::string needle = c.example == "rows" ? "float v = x[" : "float s = gain_a";
    for (std::size_t i = 0; i < lines.size(); ++i)
      if (lines[i].find(needle) != std::string::npos) c.loop_line = static_cast<int>(i + 1);
    ASSERT_GT(c.loop_line, 0) << c.example;
    c.kernel["stalls"]["lines"][0]["line"] = c.loop_line;
    c.kernel["stalls"]["lines"][0]["file"] = "/app/main.cu";
    auto r = c.alone ? alone(c.kernel, "main.cu", src, c.rule) : ask(c.kernel, "main.cu", src);
    ASSERT_EQ(by_rule(r, c.rule).size(), 1u) << c.example << " " << c.rule << ": " << r.summary;
    auto path = dir.file(c.example + "_" + c.rule + ".cu", edited_source(r, "main.cu", src));
    util::ProcessSpec spec;
    spec.argv = {nvcc, "-arch=sm_90", "-c", path, "-o", path + ".o"};
    spec.timeout_s = 180;
    auto result = util::run_process(spec);
    EXPECT_TRUE(result.ok()) << c.example << ":\n" << result.err;
  }
}
