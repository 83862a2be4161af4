#include "config/app_config.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

using namespace optimas::config;
using optimas::ParseError;
using optimas::test::TempDir;

namespace {

const char* k_valid = R"(name: demo
description: a demo
sources: [main.cu]
build:
  command: nvcc -O3 -arch=sm_90 -lineinfo -o demo main.cu
  binary: demo
run:
  command: ./demo --n {n} --seed {seed} --out {output}
  output: demo.out
  kernel_time: 'kernel_time_ms: ([0-9.]+)'
  timeout_s: 30
configs:
  - {name: small, n: 1024, seed: 1}
  - {name: default, n: 4096, seed: 2, default: true}
  - {name: hidden, n: 2048, seed: 3, held_out: true}
)";

std::size_t error_line(const std::string& path) {
  try {
    load_app_config(path);
  } catch (const ParseError& e) {
    return e.line();
  }
  return 0;
}

} // namespace

TEST(AppConfig, Valid) {
  TempDir dir;
  dir.file("main.cu", "");
  auto app = load_app_config(dir.file("optimas.yml", k_valid));
  EXPECT_EQ(app.name, "demo");
  EXPECT_EQ(app.dir, dir.path().string());
  EXPECT_EQ(app.configs.size(), 3u);
  EXPECT_EQ(app.default_config().name, "default");
  EXPECT_TRUE(app.find("hidden")->held_out);
  EXPECT_DOUBLE_EQ(app.timeout_s, 30);
  EXPECT_EQ(app.command_for(*app.find("small"), "/tmp/o.bin"), "./demo --n 1024 --seed 1 --out /tmp/o.bin");
}

TEST(AppConfig, ErrorsNameTheLine) {
  TempDir dir;
  dir.file("main.cu", "");
  std::string typo = k_valid;
  typo.replace(typo.find("  binary:"), 9, "  binry: ");
  EXPECT_EQ(error_line(dir.file("a.yml", typo)), 6u);

  std::string missing = k_valid;
  missing.replace(missing.find("seed: 2, "), 9, "");
  EXPECT_EQ(error_line(dir.file("b.yml", missing)), 14u);

  std::string unused = k_valid;
  unused.replace(unused.find("seed: 1}"), 8, "seed: 1, m: 3}");
  EXPECT_EQ(error_line(dir.file("c.yml", unused)), 13u);

  std::string two_defaults = k_valid;
  two_defaults.replace(two_defaults.find("seed: 1}"), 8, "seed: 1, default: true}");
  EXPECT_GT(error_line(dir.file("d.yml", two_defaults)), 0u);

  EXPECT_EQ(error_line(dir.file("e.yml", "name: [unclosed\n")), 2u);

  std::string bad_regex = k_valid;
  bad_regex.replace(bad_regex.find("'kernel_time_ms: ([0-9.]+)'"), 27, "'no group here'");
  EXPECT_EQ(error_line(dir.file("f.yml", bad_regex)), 10u);

  // libstdc++'s regex compiler overflows a long on this repeat count (found by fuzz_app_config).
  std::string huge_repeat = k_valid;
  huge_repeat.replace(huge_repeat.find("'kernel_time_ms: ([0-9.]+)'"), 27, "'x{7777777777777777777}([0-9]+)'");
  EXPECT_EQ(error_line(dir.file("g.yml", huge_repeat)), 10u);
}

TEST(AppConfig, MissingSourceAndFile) {
  TempDir dir;
  EXPECT_GT(error_line(dir.file("optimas.yml", k_valid)), 0u); // main.cu does not exist
  EXPECT_THROW(load_app_config((dir.path() / "none.yml").string()), optimas::Error);
}

// A source name longer than the system looks up: an error on its line, not a crash
// (fuzz_app_config's crash-7405ba0b: the throwing std::filesystem::exists ended the process).
TEST(AppConfig, ASourceNameTooLongToLookUpIsAnError) {
  TempDir dir;
  dir.file("main.cu", "");
  std::string yml = k_valid;
  yml.replace(yml.find("[main.cu]"), 9, "[" + std::string(5000, 'L') + "]");
  const auto path = dir.file("optimas.yml", yml);
  try {
    load_app_config(path);
    FAIL() << "a source name of 5,000 letters was taken";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), 3u);
    EXPECT_NE(e.reason().find("cannot be looked up in"), std::string::npos) << e.reason();
  }
}

namespace {

// k_valid with `extra` appended (its lines start at 16) and `run_extra` added to the run section
// after timeout_s (line 12 on).
std::string with(const std::string& extra, const std::string& run_extra = "") {
  std::string yml = k_valid;
  if (!run_extra.empty()) yml.replace(yml.find("  timeout_s: 30\n"), 16, "  timeout_s: 30\n" + run_extra);
  return yml + extra;
}

// k_valid with the first `from` replaced by `to`.
std::string replaced(const std::string& from, const std::string& to) {
  std::string yml = k_valid;
  yml.replace(yml.find(from), from.size(), to);
  return yml;
}

std::string error_reason(const std::string& path) {
  try {
    load_app_config(path);
  } catch (const ParseError& e) {
    return e.reason();
  }
  return "";
}

} // namespace

TEST(AppConfig, RunSettingsDefaults) {
  TempDir dir;
  dir.file("main.cu", "");
  auto app = load_app_config(dir.file("optimas.yml", k_valid));
  EXPECT_EQ(app.seed_param, "seed"); // {seed} in run.command
  EXPECT_TRUE(app.needs_gpu);

  const auto& o = app.optimize;
  EXPECT_EQ(o.backend, "builtin");
  EXPECT_TRUE(o.options.empty());
  EXPECT_EQ(o.diagnostics, "pc,ia,roofline");
  EXPECT_EQ(o.scope, "kernel");
  EXPECT_EQ(o.rounds, 1);
  EXPECT_EQ(o.candidates, 1);
  EXPECT_EQ(o.retries, 3);

  const auto& m = app.measure;
  EXPECT_EQ(m.runs, 5);
  EXPECT_EQ(m.warmup, 1);
  EXPECT_EQ(m.timing, "auto");
  EXPECT_TRUE(m.configs.empty());
  EXPECT_DOUBLE_EQ(m.confidence, 0.95);
  EXPECT_DOUBLE_EQ(m.significance, 0.05);

  const auto& v = app.validate;
  EXPECT_EQ(v.tolerance, "exact");
  EXPECT_DOUBLE_EQ(v.tolerance_value, 0);
  EXPECT_EQ(v.fresh_seeds, 1);
  EXPECT_TRUE(v.configs.empty());

  // No {seed} in the command: the program takes no seed.
  std::string unseeded = k_valid;
  unseeded.replace(unseeded.find(" --seed {seed}"), 14, "");
  for (const char* s : {", seed: 1", ", seed: 2", ", seed: 3"}) unseeded.erase(unseeded.find(s), std::strlen(s));
  EXPECT_TRUE(load_app_config(dir.file("unseeded.yml", unseeded)).seed_param.empty());
}

TEST(AppConfig, RunSettingsParsed) {
  TempDir dir;
  dir.file("main.cu", "");
  std::string yml = with("optimize:\n"
                         "  backend: openai\n"
                         "  options: {model: gpt-x, temperature: 0.2}\n"
                         "  diagnostics: pc,stalls\n"
                         "  scope: file\n"
                         "  iterations: 3\n"
                         "  retries: 0\n"
                         "measure:\n"
                         "  runs: 9\n"
                         "  warmup: 0\n"
                         "  timing: kernel_time\n"
                         "  configs: [small, hidden]\n"
                         "  confidence: 0.99\n"
                         "  significance: 0.01\n"
                         "validate:\n"
                         "  tolerance: {rel: 1e-12}\n"
                         "  fresh_seeds: 4\n"
                         "  configs: [default]\n",
                         "  needs_gpu: false\n");
  auto app = load_app_config(dir.file("optimas.yml", yml));
  EXPECT_FALSE(app.needs_gpu);
  EXPECT_EQ(app.optimize.backend, "openai");
  EXPECT_EQ(app.optimize.options, (std::map<std::string, std::string>{{"model", "gpt-x"}, {"temperature", "0.2"}}));
  EXPECT_EQ(app.optimize.diagnostics, "pc,stalls");
  EXPECT_EQ(app.optimize.scope, "file");
  EXPECT_EQ(app.optimize.rounds, 3);
  EXPECT_EQ(app.optimize.retries, 0);
  EXPECT_EQ(app.measure.runs, 9);
  EXPECT_EQ(app.measure.warmup, 0);
  EXPECT_EQ(app.measure.timing, "kernel_time");
  EXPECT_EQ(app.measure.configs, (std::vector<std::string>{"small", "hidden"}));
  EXPECT_DOUBLE_EQ(app.measure.confidence, 0.99);
  EXPECT_DOUBLE_EQ(app.measure.significance, 0.01);
  EXPECT_EQ(app.validate.tolerance, "rel");
  EXPECT_DOUBLE_EQ(app.validate.tolerance_value, 1e-12);
  EXPECT_EQ(app.validate.fresh_seeds, 4);
  EXPECT_EQ(app.validate.configs, (std::vector<std::string>{"default"}));

  for (const char* mode : {"abs: 0.5", "ulp: 4", "rel: 0"}) {
    auto v = load_app_config(dir.file("t.yml", with(std::string("validate:\n  tolerance: {") + mode + "}\n"))).validate;
    EXPECT_EQ(v.tolerance, std::string(mode).substr(0, 3));
  }
  EXPECT_EQ(load_app_config(dir.file("e.yml", with("validate:\n  tolerance: exact\n"))).validate.tolerance, "exact");
  EXPECT_EQ(load_app_config(dir.file("w.yml", with("measure:\n  timing: wall\n"))).measure.timing, "wall");
  EXPECT_EQ(load_app_config(dir.file("v.yml", with("measure:\n  verdict: fixed\n"))).measure.verdict, "fixed");
  EXPECT_EQ(load_app_config(dir.file("f.yml", with(""))).measure.verdict, "sequential");
}

TEST(AppConfig, NamedSeedParameter) {
  TempDir dir;
  dir.file("main.cu", "");
  std::string yml = k_valid;
  for (std::size_t at; (at = yml.find("seed")) != std::string::npos;) yml.replace(at, 4, "rng");
  yml.replace(yml.find("  timeout_s: 30\n"), 16, "  timeout_s: 30\n  seed: rng\n");
  EXPECT_EQ(load_app_config(dir.file("a.yml", yml)).seed_param, "rng");

  // A seed that the command does not take: the error names the seed line.
  std::string missing = with("", "  seed: nonce\n");
  EXPECT_EQ(error_line(dir.file("b.yml", missing)), 12u);
  EXPECT_NE(error_reason(dir.file("b.yml", missing)).find("{nonce}"), std::string::npos);

  EXPECT_EQ(error_line(dir.file("c.yml", with("", "  needs_gpu: maybe\n"))), 12u);
}

TEST(AppConfig, RunSettingsErrorsNameTheLine) {
  TempDir dir;
  dir.file("main.cu", "");
  auto line_of = [&](const std::string& extra, const std::string& run_extra = "") {
    return error_line(dir.file("x.yml", with(extra, run_extra)));
  };
  // Unknown keys, one per section.
  EXPECT_EQ(line_of("", "  sead: 3\n"), 12u);
  EXPECT_EQ(line_of("optimize:\n  backend: openai\n  iteration: 2\n"), 18u);
  EXPECT_EQ(line_of("measure:\n  runs: 5\n  warmups: 2\n"), 18u);
  EXPECT_EQ(line_of("validate:\n  tolerance: exact\n  fresh_seed: 2\n"), 18u);
  EXPECT_NE(error_reason(dir.file("y.yml", with("measure:\n  repeat: 2\n"))).find("unknown key \"repeat\" in measure"),
            std::string::npos);

  // Values out of range or of the wrong kind.
  EXPECT_EQ(line_of("measure:\n  runs: 1\n"), 17u);
  EXPECT_NE(error_reason(dir.file("y.yml", with("measure:\n  runs: 1\n"))).find("at least 2"), std::string::npos);
  EXPECT_EQ(line_of("measure:\n  warmup: -1\n"), 17u);
  EXPECT_EQ(line_of("measure:\n  runs: many\n"), 17u);
  EXPECT_EQ(line_of("measure:\n  timing: cycles\n"), 17u);
  EXPECT_EQ(line_of("measure:\n  verdict: sometimes\n"), 17u);
  EXPECT_NE(error_reason(dir.file("y.yml", with("measure:\n  verdict: sometimes\n"))).find("fixed, sequential"),
            std::string::npos);
  EXPECT_EQ(line_of("measure:\n  runs: 5\n  confidence: 1.5\n"), 18u);
  EXPECT_EQ(line_of("measure:\n  significance: 0\n"), 17u);
  EXPECT_EQ(line_of("optimize:\n  scope: program\n"), 17u);
  EXPECT_NE(error_reason(dir.file("y.yml", with("optimize:\n  scope: program\n"))).find("kernel, file, application"),
            std::string::npos);
  EXPECT_EQ(line_of("optimize:\n  scope: application\n"), 0u) << "issue #30's scope";
  EXPECT_EQ(line_of("optimize:\n  iterations: 0\n"), 17u);
  EXPECT_EQ(line_of("optimize:\n  retries: -1\n"), 17u);
  EXPECT_EQ(line_of("optimize:\n  options: [a, b]\n"), 17u);
  EXPECT_EQ(line_of("validate:\n  fresh_seeds: -1\n"), 17u);
  // Whole numbers are bounded (docs/options.md): 2147483648 warm-ups ran as -2147483648.
  for (const char* big : {"measure:\n  warmup: 2147483648\n", "measure:\n  warmup: 101\n", "measure:\n  runs: 1001\n",
                          "optimize:\n  iterations: 1000000000\n", "optimize:\n  iterations: 101\n",
                          "optimize:\n  retries: 101\n", "validate:\n  fresh_seeds: 101\n"}) {
    EXPECT_EQ(line_of(big), 17u) << big;
    EXPECT_NE(error_reason(dir.file("y.yml", with(big))).find("must be at most"), std::string::npos)
        << big << error_reason(dir.file("y.yml", with(big)));
  }
  EXPECT_EQ(line_of("measure:\n  warmup: 100\n  runs: 1000\n"), 0u);
  EXPECT_EQ(line_of("optimize:\n  iterations: 1e9\n"), 17u);
  EXPECT_EQ(line_of("measure:\n  runs: 99999999999999999999\n"), 17u);
  // A configuration list holds names: one that could be no configuration's is said as such.
  EXPECT_NE(error_reason(dir.file("y.yml", with("measure:\n  configs: [../x]\n"))).find("takes 1 to 128 letters"),
            std::string::npos);
  EXPECT_EQ(line_of("validate:\n  configs: [a/b]\n"), 17u);
  EXPECT_EQ(line_of("validate:\n  ignore: ['(x*)*y']\n"), 17u);

  // Tolerances.
  EXPECT_EQ(line_of("validate:\n  tolerance: {approx: 1e-3}\n"), 17u);
  EXPECT_NE(error_reason(dir.file("y.yml", with("validate:\n  tolerance: {approx: 1e-3}\n"))).find("\"approx\""),
            std::string::npos);
  EXPECT_EQ(line_of("validate:\n  tolerance: rel\n"), 17u); // needs a value: {rel: X}
  EXPECT_EQ(line_of("validate:\n  tolerance: {abs: -1}\n"), 17u);
  EXPECT_EQ(line_of("validate:\n  tolerance: {rel: 1, abs: 2}\n"), 17u);

  // Configuration lists naming something that is not a config.
  EXPECT_EQ(line_of("measure:\n  runs: 5\n  configs: [small, huge]\n"), 18u);
  EXPECT_NE(
      error_reason(dir.file("y.yml", with("measure:\n  configs: [huge]\n"))).find("\"huge\", which is not a config"),
      std::string::npos);
  EXPECT_EQ(line_of("validate:\n  configs: [tiny]\n"), 17u);
  EXPECT_EQ(line_of("validate:\n  configs: small\n"), 17u); // not a list
}

TEST(AppConfig, KernelTimeTimingNeedsThePattern) {
  TempDir dir;
  dir.file("main.cu", "");
  std::string yml = with("measure:\n  runs: 5\n  timing: kernel_time\n");
  yml.erase(yml.find("  kernel_time: "), yml.find("  timeout_s") - yml.find("  kernel_time: "));
  // Without the kernel_time line everything after it moves up by one.
  EXPECT_EQ(error_line(dir.file("a.yml", yml)), 17u);
  EXPECT_NE(error_reason(dir.file("a.yml", yml)).find("run.kernel_time"), std::string::npos);
  // auto and wall need no pattern.
  std::string wall = yml;
  wall.replace(wall.find("timing: kernel_time"), 19, "timing: wall");
  EXPECT_EQ(load_app_config(dir.file("b.yml", wall)).measure.timing, "wall");
}

// build.clean and build.dir, several output files, validate.ignore, the acceptance settings.
TEST(AppConfig, RealProjectKeys) {
  TempDir dir;
  dir.file("main.cu", "");
  std::string yml = k_valid;
  yml.replace(yml.find("  binary: demo\n"), 15, "  binary: build/demo\n  clean: make clean\n  dir: build\n");
  yml.replace(yml.find("  output: demo.out\n"), 19, "  output: [demo.out, extra.bin]\n");
  yml += "measure:\n  min_speedup: 1.03\n  confirm: false\nvalidate:\n  ignore: ['^Bandwidth', 'took [0-9.]+ s']\n";
  auto app = load_app_config(dir.file("optimas.yml", yml));
  EXPECT_EQ(app.clean_command, "make clean");
  EXPECT_EQ(app.build_dir, "build");
  EXPECT_EQ(app.outputs, (std::vector<std::string>{"demo.out", "extra.bin"}));
  EXPECT_DOUBLE_EQ(app.measure.min_speedup, 1.03);
  EXPECT_FALSE(app.measure.confirm);
  EXPECT_EQ(app.validate.ignore.size(), 2u);

  std::string one = k_valid;
  EXPECT_EQ(load_app_config(dir.file("one.yml", one)).outputs, std::vector<std::string>{"demo.out"});
  EXPECT_DOUBLE_EQ(load_app_config(dir.file("one.yml", one)).measure.min_speedup, 1.01);

  std::string bad_ignore = yml;
  bad_ignore.replace(bad_ignore.find("'^Bandwidth'"), 12, "'(unclosed'");
  EXPECT_EQ(error_line(dir.file("bad-ignore.yml", bad_ignore)), 22u);
  std::string low = yml;
  low.replace(low.find("1.03"), 4, "0.98");
  EXPECT_EQ(error_line(dir.file("low.yml", low)), 19u);
}

// kernel_time as a regex is milliseconds for the whole run; as a mapping it has a unit and may
// be one call's figure, with the number of calls a run makes.
TEST(AppConfig, KernelTimeUnitsAndCalls) {
  TempDir dir;
  dir.file("main.cu", "");
  auto plain = load_app_config(dir.file("plain.yml", k_valid));
  EXPECT_EQ(plain.kernel_time.pattern, "kernel_time_ms: ([0-9.]+)");
  EXPECT_DOUBLE_EQ(plain.kernel_time.unit_ms, 1.0);
  EXPECT_FALSE(plain.kernel_time.per_call);
  EXPECT_DOUBLE_EQ(plain.kernel_calls(*plain.find("small")), 1.0);

  std::string per_call = k_valid;
  per_call.replace(per_call.find("  kernel_time: 'kernel_time_ms: ([0-9.]+)'\n"), 43,
                   "  kernel_time: {pattern: 'Average: ([0-9.]+) us', unit: us, per: call, calls: '{n}'}\n");
  auto app = load_app_config(dir.file("per-call.yml", per_call));
  EXPECT_DOUBLE_EQ(app.kernel_time.unit_ms, 1e-3);
  EXPECT_TRUE(app.kernel_time.per_call);
  EXPECT_DOUBLE_EQ(app.kernel_calls(*app.find("small")), 1024.0);
  EXPECT_DOUBLE_EQ(app.kernel_calls(*app.find("default")), 4096.0);

  // A placeholder only the call count uses is a parameter in use, not a typo.
  std::string own = per_call;
  own.replace(own.find("calls: '{n}'"), 12, "calls: '{iters}'");
  own.replace(own.find("seed: 1}"), 8, "seed: 1, iters: 10}");
  own.replace(own.find("seed: 2, "), 9, "seed: 2, iters: 20, ");
  own.replace(own.find("seed: 3, "), 9, "seed: 3, iters: 30, ");
  auto own_app = load_app_config(dir.file("own.yml", own));
  EXPECT_DOUBLE_EQ(own_app.kernel_calls(*own_app.find("default")), 20.0);

  std::string no_calls = per_call;
  no_calls.replace(no_calls.find(", calls: '{n}'"), 14, "");
  EXPECT_EQ(error_line(dir.file("no-calls.yml", no_calls)), 10u);
  std::string unit = per_call;
  unit.replace(unit.find("unit: us"), 8, "unit: ps");
  EXPECT_EQ(error_line(dir.file("unit.yml", unit)), 10u);
  std::string per = per_call;
  per.replace(per.find("per: call"), 9, "per: kernel");
  EXPECT_EQ(error_line(dir.file("per.yml", per)), 10u);
  std::string not_number = per_call;
  not_number.replace(not_number.find("calls: '{n}'"), 12, "calls: '{seed}x'");
  EXPECT_GT(error_line(dir.file("nan.yml", not_number)), 0u);
}

// Every path the configuration names stays inside the application folder: a source given as an
// absolute path had `optimas optimize` write the variant over the user's own file.
TEST(AppConfig, PathsStayInsideTheApplicationFolder) {
  TempDir dir, elsewhere;
  dir.file("main.cu", "");
  std::string outside = elsewhere.file("main.cu", "// the user's file elsewhere\n");
  struct Case {
    std::string from, to, what;
    std::size_t line;
  };
  for (const auto& c : std::vector<Case>{{"sources: [main.cu]", "sources: [" + outside + "]", "source", 3},
                                         {"sources: [main.cu]", "sources: [../x/main.cu]", "source", 3},
                                         {"  binary: demo", "  binary: /usr/bin/demo", "build.binary", 6},
                                         {"  binary: demo", "  binary: sub/../../demo", "build.binary", 6},
                                         {"  output: demo.out", "  output: ../demo.out", "run.output", 9},
                                         {"  binary: demo", "  binary: demo\n  dir: /tmp", "build.dir", 7}}) {
    std::string reason = error_reason(dir.file("p.yml", replaced(c.from, c.to)));
    EXPECT_NE(reason.find(c.what + " \""), std::string::npos) << c.to << ": " << reason;
    EXPECT_NE(reason.find("is not inside the application folder"), std::string::npos) << reason;
    EXPECT_EQ(error_line(dir.file("p.yml", replaced(c.from, c.to))), c.line) << c.to;
  }
  // A symbolic link out of the folder is outside too.
  std::filesystem::create_symlink(outside, dir.path() / "link.cu");
  EXPECT_NE(error_reason(dir.file("l.yml", replaced("sources: [main.cu]", "sources: [link.cu]"))).find("not inside"),
            std::string::npos);
  // Inside, in any spelling: accepted and normalised.
  dir.file("src/k.cu", "");
  auto app = load_app_config(dir.file("ok.yml", replaced("sources: [main.cu]", "sources: [./src/../src/k.cu]")));
  EXPECT_EQ(app.sources, std::vector<std::string>{"src/k.cu"});
}

// Nonsense that used to surface as "internal error" (yaml-cpp's bad conversion) or pass silently.
TEST(AppConfig, BadValuesNameTheirLine) {
  TempDir dir;
  dir.file("main.cu", "");
  struct Case {
    std::string from, to, says;
    std::size_t line;
  };
  for (const auto& c : std::vector<Case>{
           {"seed: 2, default: true}", "seed: 2, default: maybe}", "must be true or false", 14},
           {"held_out: true}", "held_out: 7}", "must be true or false", 15},
           {"sources: [main.cu]", "sources: [{a: b}]", "must be a single value", 3},
           {"name: demo", "name: ../../evil", "it names files and folders", 1},
           // A configuration's name becomes file names (runs/<id>/baseline/runs/<name>.log,
           // measure-<name>-...): ../../../../../decoy/victim wrote victim.log outside the runs folder.
           {"{name: small,", "{name: ../../../../../decoy/victim,", "config name takes 1 to 128 letters", 13},
           {"{name: small,", "{name: a/b,", "config name takes", 13},
           {"{name: small,", "{name: \"x\\0y\", ", "got \"x\\x00y\"", 13},
           {"{name: small,", "{name: '..',", "config name takes", 13},
           {"{name: small,", "{name: .,", "config name takes", 13},
           {"{name: small,", "{name: -rf,", "config name takes", 13},
           {"name: demo", "name: \"demo\\0\"", "name takes", 1},
           // The seed a config gives is a seed.
           {"seed: 1}", "seed: abc}", "\"seed\" is the program's seed (run.seed): a whole number from 0 to", 13},
           {"seed: 1}", "seed: 4294967296}", "a whole number from 0 to 4294967295", 13},
           // A user regex that backtracks for ever on a long line.
           {"  kernel_time: 'kernel_time_ms: ([0-9.]+)'", "  kernel_time: 'ms: ((a+)+)'", "catastrophic backtracking",
            10},
           {"  timeout_s: 30", "  timeout_s: .inf", "at most a week", 11},
           {"  timeout_s: 30", "  timeout_s: -2", "positive", 11},
           {"  kernel_time: 'kernel_time_ms: ([0-9.]+)'", "  kernel_time: ''", "needs a pattern", 10},
           {"  timeout_s: 30", "  timeout_s: 30\n  timeout_s: 40", "given twice", 12},
           {"{name: small, n: 1024, seed: 1}", "{name: small, n: 1024, n: 2048, seed: 1}", "given twice", 13},
       }) {
    std::string path = dir.file("bad.yml", replaced(c.from, c.to));
    std::string reason = error_reason(path);
    EXPECT_NE(reason.find(c.says), std::string::npos) << c.to << ": " << reason;
    EXPECT_EQ(error_line(path), c.line) << c.to << ": " << reason;
  }
}

// optimize.fp_reassociation: forbidden by default; allowed changes what the prompt permits, not
// validation. Allowed with byte-for-byte validation of files the program writes is likely wasted.
TEST(AppConfig, FpReassociation) {
  TempDir dir;
  dir.file("main.cu", "");
  EXPECT_EQ(load_app_config(dir.file("a.yml", k_valid)).optimize.fp_reassociation, "forbidden");
  auto allowed = load_app_config(dir.file("b.yml", with("optimize:\n  fp_reassociation: allowed\n")));
  EXPECT_EQ(allowed.optimize.fp_reassociation, "allowed");
  EXPECT_EQ(allowed.validate.tolerance, "exact"); // validation stays as validate: says
  EXPECT_EQ(error_line(dir.file("c.yml", with("optimize:\n  fp_reassociation: yes\n"))), 17u);
  EXPECT_NE(error_reason(dir.file("c.yml", with("optimize:\n  fp_reassociation: yes\n"))).find("forbidden, allowed"),
            std::string::npos);

  // k_valid's output is a file ({output}): compared byte for byte, a reordered sum fails.
  std::string caveat = fp_reassociation_caveat(allowed);
  EXPECT_NE(caveat.find("byte for byte"), std::string::npos) << caveat;
  EXPECT_NE(caveat.find("validate.tolerance"), std::string::npos) << caveat;
  EXPECT_EQ(caveat.rfind(allowed.path, 0), 0u) << caveat;
  // Not with a tolerance, nor when forbidden, nor on stdout (often the program's own PASS).
  EXPECT_EQ(fp_reassociation_caveat(load_app_config(dir.file(
                "d.yml", with("optimize:\n  fp_reassociation: allowed\nvalidate:\n  tolerance: {rel: 1e-12}\n")))),
            "");
  EXPECT_EQ(fp_reassociation_caveat(load_app_config(dir.file("a.yml", k_valid))), "");
  std::string on_stdout = replaced(" --out {output}", "");
  on_stdout.replace(on_stdout.find("  output: demo.out\n"), 19, "");
  auto stdout_app = load_app_config(dir.file("e.yml", on_stdout + "optimize:\n  fp_reassociation: allowed\n"));
  EXPECT_TRUE(stdout_app.outputs.empty());
  EXPECT_EQ(fp_reassociation_caveat(stdout_app), "");
  // Files named by run.output (no {output}): the caveat names them.
  std::string named = replaced(" --out {output}", "");
  auto named_app = load_app_config(dir.file("f.yml", named + "optimize:\n  fp_reassociation: allowed\n"));
  EXPECT_NE(fp_reassociation_caveat(named_app).find("demo.out"), std::string::npos);
}
