// config/tune_config: optimas.yml's tune: block, read through load_app_config as every key is.
#include "config/app_config.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

using namespace optimas::config;
using optimas::ConfigError;
using optimas::test::TempDir;

namespace {

const std::string k_head = R"(name: demo
sources: [main.cu]
build:
  command: nvcc -O3 -o demo main.cu
  binary: demo
run:
  command: ./demo --out {output}
configs:
  - {name: default}
)";

AppConfig load(TempDir& dir, const std::string& tune) {
  dir.file("main.cu", "");
  return load_app_config(dir.file("optimas.yml", k_head + tune));
}

// The error's line and message for a tune: block, or line 0 when it loads.
std::pair<std::size_t, std::string> error_of(const std::string& tune) {
  TempDir dir;
  try {
    load(dir, tune);
  } catch (const ConfigError& e) {
    return {e.line(), e.what()};
  }
  return {0, ""};
}

// Lines of k_head: the tune: block starts on line 10 (an error about the whole block names its
// first key's line, where yaml-cpp marks the mapping).
constexpr std::size_t k_tune_line = 10;

} // namespace

TEST(TuneConfig, NoBlockNoStage) {
  TempDir dir;
  auto app = load(dir, "");
  EXPECT_TRUE(app.tune.empty());
  EXPECT_FALSE(app.tune.runs());
  EXPECT_EQ(app.tune.search, "auto");
  EXPECT_EQ(app.tune.budget, 32);
}

TEST(TuneConfig, MacrosFlagsAndConstraints) {
  TempDir dir;
  auto app = load(dir, R"(tune:
  search: nlopt
  budget: 12
  macros:
    TPB: [64, 128, 256]
    UNROLL: {min: 1, max: 8, pow2: true}
    TILE: {min: 8, max: 32, step: 8}
  flags:
    dlcm: ["", "-Xptxas -dlcm=ca", "-Xptxas -dlcm=cg"]
    regs: ["", "-maxrregcount=64", "--extra-device-vectorization -maxrregcount=32"]
  constraints:
    - TPB * UNROLL <= 1024
)");
  const auto& t = app.tune;
  EXPECT_EQ(t.search, "nlopt");
  EXPECT_EQ(t.budget, 12);
  ASSERT_EQ(t.params.size(), 5u);
  EXPECT_EQ(t.params[0].name, "TPB");
  EXPECT_EQ(t.params[0].values, (std::vector<std::string>{"64", "128", "256"}));
  EXPECT_EQ(t.params[1].values, (std::vector<std::string>{"1", "2", "4", "8"}));
  EXPECT_EQ(t.params[2].values, (std::vector<std::string>{"8", "16", "24", "32"}));
  EXPECT_EQ(t.params[3].kind, TuneParam::Kind::flag);
  EXPECT_EQ(t.params[3].values, (std::vector<std::string>{"", "-Xptxas -dlcm=ca", "-Xptxas -dlcm=cg"}));
  EXPECT_EQ(t.params[4].line, static_cast<int>(k_tune_line) + 9);
  EXPECT_EQ(t.grid_size(), 3u * 4 * 4 * 3 * 3);
  ASSERT_EQ(t.constraints.size(), 1u);
  EXPECT_EQ(t.constraints[0].line, static_cast<int>(k_tune_line) + 11);
  EXPECT_EQ(t.constraints[0].expr.evaluate({{"TPB", 256}, {"UNROLL", 8}}), 0);
}

TEST(TuneConfig, ErrorsNameTheLine) {
  struct Case {
    std::string tune;
    std::size_t line;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"tune:\n  serch: auto\n  macros: {A: [1]}\n", k_tune_line + 1, "unknown key \"serch\" in tune"},
      {"tune:\n  search: bayes\n  macros: {A: [1]}\n", k_tune_line + 1, "tune.search (--tune-search) is one of auto, exhaustive, nlopt"},
      {"tune:\n  budget: 0\n  macros: {A: [1]}\n", k_tune_line + 1, "tune.budget (--tune-budget) must be at least 1"},
      {"tune:\n  budget: many\n  macros: {A: [1]}\n", k_tune_line + 1, "must be a whole number"},
      {"tune:\n  search: auto\n", k_tune_line + 1, "tune needs macros or flags"},
      {"tune:\n  macros:\n    TPB: [64, x]\n", k_tune_line + 2, "whole number, not \"x\""},
      {"tune:\n  macros:\n    TPB: [64, 64]\n", k_tune_line + 2, "lists 64 twice"},
      {"tune:\n  macros:\n    TPB: {min: 64}\n", k_tune_line + 2, "needs values: [...] or min and max"},
      {"tune:\n  macros:\n    TPB: {min: 64, max: 32}\n", k_tune_line + 2, "max (32) is below min (64)"},
      {"tune:\n  macros:\n    TPB: {min: 3, max: 3, pow2: true}\n", k_tune_line + 2, "no power of two"},
      {"tune:\n  macros:\n    TPB: {min: 1, max: 9, stp: 2}\n", k_tune_line + 2, "unknown key \"stp\""},
      {"tune:\n  macros:\n    2TPB: [1]\n", k_tune_line + 2, "must be a C identifier"},
      {"tune:\n  macros:\n    A: [1]\n  flags:\n    A: [\"\"]\n", k_tune_line + 4, "\"A\" is declared twice"},
      {"tune:\n  flags:\n    fm: [\"\", \"--use_fast_math\"]\n", k_tune_line + 2, "changes floating-point results"},
      {"tune:\n  flags:\n    fm: [\"-Xptxas -dlcm=cs\"]\n", k_tune_line + 2, "takes -dlcm=ca or -dlcm=cg"},
      {"tune:\n  flags:\n    o: [\"-O0\"]\n", k_tune_line + 2, "not a flag the tuner passes"},
      {"tune:\n  flags:\n    r: [\"-maxrregcount=8\"]\n", k_tune_line + 2, "outside 16..255"},
      {"tune:\n  flags:\n    r: \"-maxrregcount=32\"\n", k_tune_line + 2, "must be a list of choices"},
      {"tune:\n  macros:\n    BX: [1, 2]\n  constraints:\n    - BX * <= 4\n", k_tune_line + 4, "column 6"},
      {"tune:\n  macros:\n    BX: [1, 2]\n  constraints:\n    - BX * BY <= 4\n", k_tune_line + 4,
       "names \"BY\", which is not a macro"},
      {"tune:\n  macros:\n    BX: [1]\n  flags:\n    f: [\"\"]\n  constraints:\n    - f > 0\n", k_tune_line + 6,
       "flags have no numeric value"},
      {"tune:\n  macros:\n    A: {min: 1, max: 1000}\n    B: {min: 1, max: 1000}\n    C: {min: 1, max: 2}\n",
       k_tune_line + 1, "more than 1000000"},
      // Thousands of parentheses overflowed the parser's stack (fuzz bug 10).
      {"tune:\n  macros:\n    BX: [1, 2]\n  constraints:\n    - \"" + std::string(5000, '(') + "BX\"\n", k_tune_line + 4,
       "column 201"},
      // yaml-cpp's own depth limit calls itself "bad file"; its mark is past the line's end.
      {"tune:\n  macros:\n    BX: " + std::string(5000, '[') + "\n", k_tune_line + 3, "nested too deep"},
  };
  for (const auto& c : cases) {
    auto [line, what] = error_of(c.tune);
    EXPECT_EQ(line, c.line) << c.tune << " -> " << what;
    EXPECT_NE(what.find(c.says), std::string::npos) << c.tune << " -> " << what;
    EXPECT_NE(what.find("optimas.yml:" + std::to_string(c.line)), std::string::npos) << what;
  }
}

TEST(TuneConfig, FastMathWithAllowFpChanges) {
  TempDir dir;
  auto app = load(dir, "tune:\n  allow_fp_changes: true\n  flags:\n    fm: [\"\", \"--use_fast_math\"]\n");
  EXPECT_TRUE(app.tune.allow_fp_changes);
  EXPECT_EQ(app.tune.params[0].values[1], "--use_fast_math");
  // The order of keys does not matter: allow_fp_changes after flags is read first.
  TempDir dir2;
  EXPECT_NO_THROW(load(dir2, "tune:\n  flags:\n    fm: [\"-ftz=true\"]\n  allow_fp_changes: true\n"));
}

TEST(TuneFlags, Problems) {
  EXPECT_EQ(tune_flag_problem("", false), "");
  EXPECT_EQ(tune_flag_problem("-Xptxas -dlcm=cg -maxrregcount=128 --extra-device-vectorization", false), "");
  EXPECT_NE(tune_flag_problem("--use_fast_math", false), "");
  EXPECT_EQ(tune_flag_problem("--use_fast_math", true), "");
  EXPECT_NE(tune_flag_problem("--fmad=false", false), "");
  EXPECT_NE(tune_flag_problem("-Xptxas", false), "");
  EXPECT_NE(tune_flag_problem("-DTPB=1", false), ""); // macros belong in tune.macros
}
