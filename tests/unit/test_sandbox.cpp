#include "evaluate/sandbox.hpp"
#include "evaluate/snapshot.hpp"

#include "util/secrets.hpp"

#include "config/app_config.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include "sandbox_fixture.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

using namespace optimas::evaluate;
using optimas::test::host_app;
using optimas::test::read_all;
using optimas::test::ScopedEnv;
using optimas::test::TempDir;

namespace fs = std::filesystem;

namespace {

// Runs the app's only configuration in its own folder; the output and logs go to `out`.
Execution run_once(const optimas::config::AppConfig& app, const TempDir& out, const Sandbox& sandbox) {
  return execute_in(app, app.dir, app.configs.front(), (out.path() / "result.out").string(),
                    (out.path() / "run.log").string(), sandbox);
}

Sandbox quick() {
  Sandbox s;
  s.timeout_s = 60;
  s.limits.core_dumps = false; // the crash test leaves no core file
  return s;
}

} // namespace

TEST(Sandbox, DefaultsForAnApplication) {
  ScopedEnv key("OPENAI_API_KEY", "sk-test");
  TempDir dir;
  auto host = host_app(dir, "  command: 'true'\n  timeout_s: 12\n");
  auto s = sandbox_for(host);
  EXPECT_DOUBLE_EQ(s.timeout_s, 12);
  EXPECT_FALSE(s.limits.core_dumps);
  EXPECT_EQ(s.limits.file_bytes, 16ull << 30);
  EXPECT_EQ(s.limits.address_space, 64ull << 30);

  TempDir gpu_dir;
  std::string yml = "name: gpu\nbuild: {command: 'true'}\nrun: {command: ./a}\nconfigs: [{name: only}]\n";
  auto gpu = optimas::config::load_app_config(gpu_dir.file("optimas.yml", yml));
  EXPECT_EQ(sandbox_for(gpu).limits.address_space, 0u); // CUDA reserves huge virtual ranges
}

TEST(Sandbox, ChildrenDoNotSeeSecrets) {
  ScopedEnv a("OPENAI_API_KEY", "sk-test");
  ScopedEnv b("MY_TOKEN", "t");
  ScopedEnv c("DB_PASSWORD", "p");
  ScopedEnv d("OPTIMAS_TEST_VISIBLE", "yes");
  // The api_key_env case: a key in a variable with no telltale name, known only by registration.
  ScopedEnv e("OPTIMAS_TEST_LLM_ACCESS", "plain-named-value-77");
  optimas::util::register_secret_variable("OPTIMAS_TEST_LLM_ACCESS");
  TempDir dir, out;
  auto app = host_app(dir, "  command: 'env > env.txt'\n", "  command: 'env > build_env.txt'\n");
  auto sandbox = sandbox_for(app);

  auto b_result = build_in(app, app.dir, (out.path() / "build.log").string(), sandbox);
  ASSERT_TRUE(b_result.ok) << b_result.result;
  auto e_result = run_once(app, out, sandbox);
  ASSERT_TRUE(e_result.ok) << e_result.failure;

  for (const char* file : {"build_env.txt", "env.txt"}) {
    std::string env = read_all((dir.path() / file).string());
    EXPECT_NE(env.find("OPTIMAS_TEST_VISIBLE=yes"), std::string::npos) << file;
    EXPECT_NE(env.find("PATH="), std::string::npos) << file;
    EXPECT_EQ(env.find("OPENAI_API_KEY"), std::string::npos) << file;
    EXPECT_EQ(env.find("MY_TOKEN"), std::string::npos) << file;
    EXPECT_EQ(env.find("DB_PASSWORD"), std::string::npos) << file;
    EXPECT_EQ(env.find("OPTIMAS_TEST_LLM_ACCESS"), std::string::npos) << file;
    EXPECT_EQ(env.find("plain-named-value-77"), std::string::npos) << file;
  }
}

TEST(Sandbox, BuildResult) {
  TempDir dir, out;
  std::string log = (out.path() / "build.log").string();
  auto ok = host_app(dir, "  command: ./prog\n",
                     "  command: 'echo compiling; echo warning >&2; touch prog'\n  binary: prog\n");
  auto b = build_in(ok, ok.dir, log, quick());
  EXPECT_TRUE(b.ok) << b.result;
  EXPECT_EQ(b.result, "exit code 0");
  EXPECT_EQ(b.log, log);
  EXPECT_EQ(read_all(log), "compiling\nwarning\n");
  EXPECT_EQ(b.tail(1), "warning\n");

  TempDir dir2;
  auto no_binary = host_app(dir2, "  command: ./prog\n", "  command: 'echo compiled'\n  binary: prog\n");
  b = build_in(no_binary, no_binary.dir, log, quick());
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.result, "the build succeeded but made no prog");

  TempDir dir3;
  auto failing = host_app(dir3, "  command: ./prog\n", "  command: 'echo error: oops; exit 2'\n");
  b = build_in(failing, failing.dir, log, quick());
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.result, "exit code 2");
  EXPECT_EQ(b.tail(), "error: oops\n");
}

TEST(Sandbox, SnapshotLeavesOutBinaryOutputAndGit) {
  TempDir dir, to;
  dir.file("main.cpp", "int main() {}\n");
  dir.file("include/util.h", "#pragma once\n");
  dir.file("data/input.txt", "1 2 3\n");
  dir.file("bin/prog", "binary");
  dir.file("result.out", "old output");
  dir.file(".git/config", "[core]\n");
  dir.file("vendor/lib/.git/HEAD", "ref");
  dir.file("vendor/lib/lib.h", "// lib\n");
  dir.file(".optimas/cache", "x");
  dir.file("runs/r1/log", "x");
  auto app =
      host_app(dir, "  command: ./bin/prog\n  output: result.out\n", "  command: 'true'\n  binary: ./bin/prog\n");
  std::string target = (to.path() / "copy").string();
  snapshot_application(app, target);
  const fs::path t(target);
  EXPECT_EQ(read_all((t / "main.cpp").string()), "int main() {}\n");
  EXPECT_TRUE(fs::exists(t / "include/util.h"));
  EXPECT_TRUE(fs::exists(t / "data/input.txt"));
  EXPECT_TRUE(fs::exists(t / "optimas.yml"));
  EXPECT_TRUE(fs::exists(t / "vendor/lib/lib.h"));
  EXPECT_FALSE(fs::exists(t / "bin/prog"));
  EXPECT_FALSE(fs::exists(t / "result.out"));
  EXPECT_FALSE(fs::exists(t / ".git"));
  EXPECT_FALSE(fs::exists(t / "vendor/lib/.git"));
  EXPECT_FALSE(fs::exists(t / ".optimas"));
  EXPECT_FALSE(fs::exists(t / "runs"));
  // The original is untouched.
  EXPECT_TRUE(fs::exists(dir.path() / "bin/prog"));
  EXPECT_TRUE(fs::exists(dir.path() / ".git/config"));
}

TEST(Sandbox, ParseKernelTime) {
  EXPECT_FALSE(parse_kernel_time("", "kernel: 1.0 ms").has_value());
  EXPECT_FALSE(parse_kernel_time("kernel: ([0-9.]+)", "nothing here").has_value());
  auto t = parse_kernel_time("kernel: ([0-9.e+-]+)", "kernel: 1.5\nother\nkernel: 2.25 ms\nkernel: 1e-1\n");
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(*t, 3.85);
  // A match whose group is no number is skipped, not the end of the sum.
  t = parse_kernel_time("kernel: (\\S+)", "kernel: n/a\nkernel: 2.5\n");
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(*t, 2.5);
  // Two on one line; "^" is each line's start, not the start of a later match.
  t = parse_kernel_time("^k: ([0-9.]+)", "k: 1 k: 2\nk: 4\n");
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(*t, 5);
  t = parse_kernel_time("k: ([0-9.]+)", "k: 1 k: 2\nk: 4");
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(*t, 7);
}

// A variant is untrusted code: a line of 100,000 digits after the pattern's text overflowed the
// stack in libstdc++'s matcher and killed optimas. Lines over 4,096 bytes are not searched.
TEST(Sandbox, AnOverlongLineIsNotSearched) {
  const std::string pattern = "kernel_time_ms: ([0-9.eE+-]+)";
  std::string huge = "kernel_time_ms: " + std::string(100000, '1');
  EXPECT_FALSE(parse_kernel_time(pattern, huge + "\n").has_value());
  auto t = parse_kernel_time(pattern, huge + "\nkernel_time_ms: 0.5\n");
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(*t, 0.5);
  EXPECT_DOUBLE_EQ(parse_kernel_time(pattern, "kernel_time_ms: " + std::string(4000, '0') + "2\n").value_or(-1), 2);
}

TEST(Sandbox, KernelTimeIsTheSumOfMatchesAndLeavesTheOutput) {
  TempDir dir, out;
  auto app = host_app(dir, "  command: 'echo data 42; echo \"kernel_ms: 1.5\"; echo more; echo \"kernel_ms: 2.25\"'\n"
                           "  kernel_time: 'kernel_ms: ([0-9.]+)'\n");
  auto e = run_once(app, out, quick());
  ASSERT_TRUE(e.ok) << e.failure;
  ASSERT_TRUE(e.kernel_ms.has_value());
  EXPECT_DOUBLE_EQ(*e.kernel_ms, 3.75);
  EXPECT_EQ(e.output, (out.path() / "result.out").string());
  // The output is stdout without the lines carrying the time (they differ from run to run).
  std::string output = read_all(e.output);
  EXPECT_EQ(output.find("kernel_ms"), std::string::npos);
  EXPECT_EQ(output.rfind("data 42\nmore\n", 0), 0u) << output;
  EXPECT_GE(e.wall_s, 0.0);
}

// The stdout output keeps every line as printed (blank ones too) except the kernel-time lines.
TEST(Sandbox, StdoutOutputKeepsTheLinesAsPrinted) {
  TempDir dir, out;
  auto timed = host_app(dir, "  command: 'echo data 42; echo \"kernel_ms: 1.5\"; echo more'\n"
                             "  kernel_time: 'kernel_ms: ([0-9.]+)'\n");
  auto e = run_once(timed, out, quick());
  ASSERT_TRUE(e.ok) << e.failure;
  EXPECT_EQ(read_all(e.output), "data 42\nmore\n");

  TempDir dir2;
  auto untimed = host_app(dir2, "  command: 'printf \"a\\n\\nb\\n\"'\n");
  e = run_once(untimed, out, quick());
  ASSERT_TRUE(e.ok) << e.failure;
  EXPECT_EQ(read_all(e.output), "a\n\nb\n");
}

TEST(Sandbox, StdoutIsTheOutputWithoutKernelTime) {
  TempDir dir, out;
  auto app = host_app(dir, "  command: 'echo line 1; echo line 2; echo diagnostics >&2'\n");
  auto e = run_once(app, out, quick());
  ASSERT_TRUE(e.ok) << e.failure;
  EXPECT_FALSE(e.kernel_ms.has_value());
  EXPECT_EQ(read_all(e.output), "line 1\nline 2\n"); // stderr is not part of it
  EXPECT_EQ(read_all((out.path() / "run.stderr.log").string()), "diagnostics\n");
}

TEST(Sandbox, MissingKernelTimeFails) {
  TempDir dir, out;
  auto app = host_app(dir, "  command: 'echo data'\n  kernel_time: 'kernel_ms: ([0-9.]+)'\n");
  auto e = run_once(app, out, quick());
  EXPECT_FALSE(e.ok);
  EXPECT_EQ(e.failure, "the program printed no kernel time matching 'kernel_ms: ([0-9.]+)'");
}

TEST(Sandbox, FailureNamesTheExitAndTheLastLine) {
  TempDir dir, out;
  auto app = host_app(dir, "  command: 'echo working; echo \"check: FAIL (3 errors)\" >&2; exit 1'\n");
  auto e = run_once(app, out, quick());
  EXPECT_FALSE(e.ok);
  EXPECT_EQ(e.failure, "exit code 1: check: FAIL (3 errors)");

  // Nothing on stderr: the last line of stdout.
  TempDir dir2;
  auto quiet = host_app(dir2, "  command: 'echo first; echo last words; exit 4'\n");
  e = run_once(quiet, out, quick());
  EXPECT_EQ(e.failure, "exit code 4: last words");
}

TEST(Sandbox, CrashNamesTheSignal) {
  TempDir dir, out;
  auto app = host_app(dir, "  command: 'echo before; kill -SEGV $$'\n");
  auto e = run_once(app, out, quick());
  EXPECT_FALSE(e.ok);
  EXPECT_NE(e.failure.find("signal 11"), std::string::npos) << e.failure;
}

TEST(Sandbox, TimeoutKillsTheRun) {
  TempDir dir, out;
  auto app = host_app(dir, "  command: 'while :; do :; done'\n");
  Sandbox s = quick();
  s.timeout_s = 0.3;
  auto e = run_once(app, out, s);
  EXPECT_FALSE(e.ok);
  EXPECT_NE(e.failure.find("timed out"), std::string::npos) << e.failure;
  EXPECT_LT(e.wall_s, 5.0);
}

TEST(Sandbox, OutputThroughThePlaceholder) {
  TempDir dir, out;
  auto app = host_app(dir, "  command: 'echo chatter; printf \"%s\\n\" {n} > {output}'\n", "  command: 'true'\n",
                      "  - {name: only, n: 17}\n");
  // A path with a space: the placeholder is filled quoted.
  std::string output = (out.path() / "my result.out").string();
  auto e = execute_in(app, app.dir, app.configs.front(), output, (out.path() / "run.log").string(), quick());
  ASSERT_TRUE(e.ok) << e.failure;
  EXPECT_EQ(e.output, output);
  EXPECT_EQ(read_all(output), "17\n");
  EXPECT_EQ(read_all((out.path() / "run.log").string()), "chatter\n");

  // A stale output from before does not count as this run's.
  optimas::test::TempDir dir2;
  auto lazy = host_app(dir2, "  command: 'true {output}'\n");
  std::string stale = out.file("stale.out", "old\n");
  e = execute_in(lazy, lazy.dir, lazy.configs.front(), stale, (out.path() / "run.log").string(), quick());
  EXPECT_FALSE(e.ok);
  EXPECT_EQ(e.failure, "the program wrote no output file");
}

TEST(Sandbox, OutputFileIsMoved) {
  TempDir dir, out;
  auto app = host_app(dir, "  command: 'echo chatter; echo value 3 > result.txt'\n  output: result.txt\n");
  auto e = run_once(app, out, quick());
  ASSERT_TRUE(e.ok) << e.failure;
  EXPECT_EQ(read_all(e.output), "value 3\n");
  EXPECT_FALSE(fs::exists(dir.path() / "result.txt")); // moved, not copied

  // A result.txt left from an earlier run is removed first: a program that writes none fails.
  TempDir dir2;
  auto lazy = host_app(dir2, "  command: 'true'\n  output: result.txt\n");
  dir2.file("result.txt", "stale\n");
  e = run_once(lazy, out, quick());
  EXPECT_FALSE(e.ok);
  EXPECT_EQ(e.failure, "the program wrote no result.txt");
}

TEST(Sandbox, RunsWithTheConfigurationsParameters) {
  TempDir dir, out;
  auto app = host_app(dir, "  command: 'echo n={n} seed={seed}'\n", "  command: 'true'\n",
                      "  - {name: only, n: 64, seed: 5}\n");
  auto config = app.configs.front();
  config.params["seed"] = "918273";
  auto e =
      execute_in(app, app.dir, config, (out.path() / "o.out").string(), (out.path() / "run.log").string(), quick());
  ASSERT_TRUE(e.ok) << e.failure;
  EXPECT_EQ(read_all(e.output), "n=64 seed=918273\n");
}

// A snapshot holds no build outputs: an object file copied beside an edited source looks as
// new as the source, and make would skip the compile.
TEST(Sandbox, SnapshotLeavesOutBuildOutputs) {
  TempDir dir, to;
  dir.file("main.cu", "__global__ void k() {}\n");
  dir.file("Makefile", "all:\n");
  dir.file("main.o", "stale object");
  dir.file("sub/util.obj", "stale object");
  dir.file("lib/vendor.a", "a vendored library the build links");
  dir.file("build/CMakeCache.txt", "x");
  dir.file("build/app", "binary");
  dir.file("other/CMakeFiles/x.dir/y.o", "x");
  dir.file("other/CMakeCache.txt", "x");
  auto app = host_app(dir, "  command: ./build/app\n", "  command: make\n  dir: build\n");
  auto snap = snapshot_application(app, (to.path() / "snap").string());
  const fs::path t = to.path() / "snap";
  EXPECT_TRUE(fs::exists(t / "main.cu"));
  EXPECT_TRUE(fs::exists(t / "Makefile"));
  EXPECT_TRUE(fs::exists(t / "lib/vendor.a"));
  EXPECT_FALSE(fs::exists(t / "main.o"));
  EXPECT_FALSE(fs::exists(t / "sub/util.obj"));
  EXPECT_FALSE(fs::exists(t / "build"));
  EXPECT_FALSE(fs::exists(t / "other/CMakeFiles"));
  EXPECT_FALSE(fs::exists(t / "other/CMakeCache.txt"));
  EXPECT_EQ(snap.left_out,
            (std::vector<std::string>{"main.o", "other/CMakeCache.txt", "other/CMakeFiles", "sub/util.obj"}));
  EXPECT_EQ(snap.files.count("main.cu"), 1u);
  EXPECT_EQ(snap.files.count("main.o"), 0u);
  EXPECT_EQ(snap.files.at("Makefile"), optimas::util::sha256_hex("all:\n"));

  // A scratch copy of the snapshot is the same tree.
  copy_tree(t.string(), (to.path() / "work").string());
  EXPECT_EQ(read_all((to.path() / "work/main.cu").string()), "__global__ void k() {}\n");
  EXPECT_TRUE(fs::exists(to.path() / "work/lib/vendor.a"));

  // A variant's sources written over it: into folders that exist and folders that do not.
  write_tree((to.path() / "work").string(),
             {{"main.cu", "__global__ void k() { return; }\n"}, {"sub/k.cuh", "// new\n"}});
  EXPECT_EQ(read_all((to.path() / "work/main.cu").string()), "__global__ void k() { return; }\n");
  EXPECT_EQ(read_all((to.path() / "work/sub/k.cuh").string()), "// new\n");
  EXPECT_TRUE(fs::exists(to.path() / "work/Makefile"));
}

// Two builds of one source by nvcc differ only in its temporary names; a build with the edits
// differs in substance.
TEST(Sandbox, BuildFingerprintIgnoresNvccTemporaryNames) {
  TempDir a, b, c;
  auto app_a = host_app(a, "  command: ./prog\n", "  command: 'true'\n  binary: prog\n");
  auto app_b = host_app(b, "  command: ./prog\n", "  command: 'true'\n  binary: prog\n");
  auto app_c = host_app(c, "  command: ./prog\n", "  command: 'true'\n  binary: prog\n");
  a.file("prog", std::string("ELF\0code _tmpxft_0000a1b2_00000000-6_main.cudafe1.cpp end", 57));
  b.file("prog", std::string("ELF\0code _tmpxft_00c0ffee_00000000-7_main.cudafe1.cpp end", 57));
  c.file("prog", std::string("ELF\0CODE _tmpxft_0000a1b2_00000000-6_main.cudafe1.cpp end", 57));
  Snapshot none;
  EXPECT_EQ(build_fingerprint(app_a, app_a.dir, none), build_fingerprint(app_b, app_b.dir, none));
  EXPECT_NE(build_fingerprint(app_a, app_a.dir, none), build_fingerprint(app_c, app_c.dir, none));

  // Without a declared binary, every file the build added counts; the snapshot's files do not.
  TempDir d;
  auto app_d = host_app(d, "  command: ./x\n");
  d.file("main.cu", "source");
  Snapshot snap;
  snap.files["main.cu"] = "hash";
  snap.files["optimas.yml"] = "hash";
  std::string before = build_fingerprint(app_d, app_d.dir, snap);
  d.file("main.cu", "edited source");
  EXPECT_EQ(build_fingerprint(app_d, app_d.dir, snap), before);
  d.file("obj/main.o", "object");
  EXPECT_NE(build_fingerprint(app_d, app_d.dir, snap), before);
}

TEST(Sandbox, CleanRunsBeforeTheBuildInOneLog) {
  TempDir dir, out;
  std::string log = (out.path() / "build.log").string();
  dir.file("stale.o", "x");
  auto app =
      host_app(dir, "  command: ./prog\n",
               "  command: 'ls *.o 2>/dev/null || echo no objects; touch prog'\n  clean: 'echo cleaning; rm -f *.o'\n"
               "  binary: prog\n");
  auto b = build_in(app, app.dir, log, quick());
  EXPECT_TRUE(b.ok) << b.result;
  EXPECT_EQ(read_all(log), "cleaning\nno objects\n");

  TempDir dir2;
  auto broken = host_app(dir2, "  command: ./prog\n", "  command: 'touch prog'\n  clean: 'exit 3'\n");
  b = build_in(broken, broken.dir, log, quick());
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.result, "build.clean failed (exit code 3): exit 3");
}

// A per-call figure in microseconds becomes the run's kernel time in milliseconds.
TEST(Sandbox, KernelTimeUnitsAndPerCallFigures) {
  TempDir dir, out;
  auto app = host_app(dir,
                      "  command: 'echo \"Average (us): 250\"; echo result {n}'\n"
                      "  kernel_time: {pattern: 'Average \\(us\\): ([0-9.]+)', unit: us, per: call, calls: '{n}'}\n",
                      "  command: 'true'\n", "  - {name: only, n: 40}\n");
  auto e = run_once(app, out, quick());
  ASSERT_TRUE(e.ok) << e.failure;
  ASSERT_TRUE(e.kernel_ms.has_value());
  EXPECT_DOUBLE_EQ(*e.kernel_ms, 250 * 1e-3 * 40); // 40 calls of 0.25 ms
  EXPECT_EQ(read_all(e.output), "result 40\n");

  TempDir dir2;
  auto seconds =
      host_app(dir2, "  command: 'echo \"took 1.5 s\"'\n  kernel_time: {pattern: 'took ([0-9.]+) s', unit: s}\n");
  e = run_once(seconds, out, quick());
  ASSERT_TRUE(e.ok) << e.failure;
  EXPECT_DOUBLE_EQ(*e.kernel_ms, 1500.0);
}

TEST(Sandbox, IgnoredStdoutLinesAreNotCompared) {
  TempDir dir, out;
  auto app =
      host_app(dir, "  command: 'echo result 42; echo \"Bandwidth: 812.3 GB/s\"; echo \"took 0.31 s\"; echo PASS'\n",
               "  command: 'true'\n", "  - {name: only}\nvalidate:\n  ignore: ['^Bandwidth:', 'took [0-9.]+ s']\n");
  auto e = run_once(app, out, quick());
  ASSERT_TRUE(e.ok) << e.failure;
  EXPECT_EQ(read_all(e.output), "result 42\nPASS\n");
}

TEST(Sandbox, SeveralOutputFiles) {
  TempDir dir, out;
  auto app = host_app(dir, "  command: 'echo a > first.txt; mkdir -p res; echo b > res/second.bin'\n"
                           "  output: [first.txt, res/second.bin]\n");
  auto e = run_once(app, out, quick());
  ASSERT_TRUE(e.ok) << e.failure;
  ASSERT_EQ(e.outputs.size(), 2u);
  EXPECT_EQ(e.outputs[0], (out.path() / "result.out").string());
  EXPECT_EQ(read_all(e.outputs[0]), "a\n");
  EXPECT_EQ(read_all(e.outputs[1]), "b\n");
  EXPECT_FALSE(fs::exists(dir.path() / "res/second.bin")); // moved, not copied
  EXPECT_EQ(outputs_bytes(e), 4u);
  std::string both = outputs_sha256(e);
  EXPECT_NE(both, optimas::util::sha256_file(e.outputs[0]));
  remove_outputs(e);
  EXPECT_FALSE(fs::exists(e.outputs[0]));
  EXPECT_FALSE(fs::exists(e.outputs[1]));

  TempDir dir2;
  auto missing = host_app(dir2, "  command: 'echo a > first.txt'\n  output: [first.txt, second.bin]\n");
  e = run_once(missing, out, quick());
  EXPECT_FALSE(e.ok);
  EXPECT_EQ(e.failure, "the program wrote no second.bin");
}

// ---------------------------------------------------------------------------------------------

namespace {

// A program that writes the trace liboptimas-trace would: launches of h (hot, _Z1hv) and k
// alternating, 4 in all. With "early" as its argument it stops after the second launch of h as
// the tracer ends a process (X line), then fails as a shell command's later step would without
// the outputs. It leaves what it was asked (OPTIMAS_TRACE_END_AFTER:OPTIMAS_TRACE_END_KERNELS) in
// `asked`.
const char* k_traced_program = R"(t="$OPTIMAS_TRACE_DIR/trace-$$.tsv"
printf '# optimas-trace 2\nP\t1\t0\nK\t0\t_Z1hv\th()\nK\t1\t_Z1kv\tk()\n' > "$t"
printf 'L\t0\t0\t1\t7\t1\t1\t1\t32\t1\t1\t0\t0\t8\t100\t200\nL\t1\t0\t1\t7\t1\t1\t1\t32\t1\t1\t0\t0\t8\t250\t300\n' >> "$t"
printf 'L\t0\t0\t1\t7\t1\t1\t1\t32\t1\t1\t0\t0\t8\t400\t500\n' >> "$t"
echo "$OPTIMAS_TRACE_END_AFTER:$OPTIMAS_TRACE_END_KERNELS" > asked
if [ "$1" = early ]; then
  printf 'X\t2\nE\t3\t0\t600\n' >> "$t"
  exit 1
fi
printf 'L\t1\t0\t1\t7\t1\t1\t1\t32\t1\t1\t0\t0\t8\t600\t700\nE\t4\t0\t1000000500\n' >> "$t"
echo 'kernel_ms: 1.5'
)";

Sandbox traced(std::uint64_t end_after) {
  Sandbox s = quick();
  s.tracer = "/nonexistent/liboptimas-trace.so"; // only the variable: the program writes the trace
  s.hot_kernels = {"h"};
  if (end_after) s.end_after = {end_after, {"_Z1hv"}};
  return s;
}

} // namespace

// measure.end_after_kernels: a run the tracer ended counts, whatever its exit status, without
// outputs or a printed time; its figures cover the launches up to the last counted one.
TEST(Sandbox, ARunTheTracerEndedCountsWithoutOutputs) {
  TempDir dir, out;
  dir.file("run.sh", k_traced_program);
  auto app = host_app(dir, "  command: 'sh run.sh early'\n  kernel_time: 'kernel_ms: ([0-9.]+)'\n");
  auto e = run_once(app, out, traced(2));
  ASSERT_TRUE(e.ok) << e.failure;
  EXPECT_TRUE(e.ended_early);
  EXPECT_TRUE(e.outputs.empty());
  EXPECT_FALSE(e.kernel_ms);
  EXPECT_EQ(e.traced_launches, 3u);
  EXPECT_DOUBLE_EQ(*e.traced_ms, 250e-6);
  EXPECT_EQ(e.hot_launches, 2u);
  EXPECT_EQ(e.hot_symbols, std::vector<std::string>{"_Z1hv"});
  EXPECT_EQ(read_all(dir.path() / "asked"), "2:_Z1hv\n");

  // Without the early end asked for, an X line excuses nothing: the exit status is a failure.
  e = run_once(app, out, traced(0));
  EXPECT_FALSE(e.ok);
  EXPECT_FALSE(e.ended_early);
  EXPECT_EQ(read_all(dir.path() / "asked"), ":\n");
}

// A run that went on to the end anyway (it ended before the tracer could end it) is measured on
// the same launches as one that ended early, so both kinds compare.
TEST(Sandbox, AWholeRunIsMeasuredUpToTheCountedLaunch) {
  TempDir dir, out;
  dir.file("run.sh", k_traced_program);
  auto app = host_app(dir, "  command: 'sh run.sh whole'\n  kernel_time: 'kernel_ms: ([0-9.]+)'\n");
  auto e = run_once(app, out, traced(2));
  ASSERT_TRUE(e.ok) << e.failure;
  EXPECT_FALSE(e.ended_early);
  EXPECT_EQ(e.traced_launches, 3u);
  EXPECT_DOUBLE_EQ(*e.traced_ms, 250e-6);
  EXPECT_EQ(e.outputs.size(), 1u);
  EXPECT_DOUBLE_EQ(*e.kernel_ms, 1.5);

  // Whole and not cut: every launch, and the time from the last hot launch to the end line.
  e = run_once(app, out, traced(0));
  ASSERT_TRUE(e.ok) << e.failure;
  EXPECT_EQ(e.traced_launches, 4u);
  EXPECT_DOUBLE_EQ(*e.traced_ms, 350e-6);
  ASSERT_TRUE(e.after_hot_s);
  EXPECT_DOUBLE_EQ(*e.after_hot_s, 1.0);
}

// Validation runs are traced only to inform measurement: a missing trace fails none of them.
TEST(Sandbox, AnOptionalTraceFailsNoRun) {
  TempDir dir, out;
  auto app = host_app(dir, "  command: 'echo data'\n");
  Sandbox s = traced(0);
  auto e = run_once(app, out, s);
  EXPECT_FALSE(e.ok);
  EXPECT_NE(e.failure.find("the run left no kernel trace"), std::string::npos) << e.failure;
  EXPECT_NE(e.failure.find("the tracer said nothing: most likely CUDA did not load"), std::string::npos) << e.failure;
  // What the tracer said, where it said something (it could not write its trace, say).
  auto said =
      host_app(dir, "  command: 'echo data; echo \"optimas-trace: cannot write /x: Read-only file system\" >&2'\n");
  e = run_once(said, out, s);
  EXPECT_NE(e.failure.find("the tracer said: optimas-trace: cannot write /x: Read-only file system"), std::string::npos)
      << e.failure;
  s.trace_optional = true;
  e = run_once(app, out, s);
  ASSERT_TRUE(e.ok) << e.failure;
  EXPECT_FALSE(e.traced_ms);
}
