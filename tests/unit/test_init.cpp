// optimas init (src/init/): the build read from a folder, printed times, what runs show, the
// command line made into placeholders, and the written file read back by the loader. The test
// that matters most: on every example of ours, init (reading the folder only) writes the same
// build, binary, sources, run command, output and time pattern as the hand-written optimas.yml.
#include "config/app_config.hpp"
#include "init/arguments.hpp"
#include "init/build_detect.hpp"
#include "init/init.hpp"
#include "init/observe.hpp"
#include "init/printed_times.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>

namespace fs = std::filesystem;
using namespace optimas;
using namespace optimas::init;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string p = (fs::temp_directory_path() / "optimas-test-init-XXXXXX").string();
    path = mkdtemp(p.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  util::write_file(p.string(), text);
}

std::string no_arch(std::string command) {
  return std::regex_replace(command, std::regex(R"( -arch=[a-z_0-9]+)"), "");
}

} // namespace

TEST(Init, ReproducesEveryExampleFromItsFolder) {
  fs::path examples = fs::path(OPTIMAS_TEST_DATA) / ".." / ".." / "examples";
  int compared = 0;
  for (const auto& e : fs::directory_iterator(examples)) {
    if (!fs::exists(e.path() / "optimas.yml")) continue;
    SCOPED_TRACE(e.path().filename().string());
    config::AppConfig mine = config::load_app_config((e.path() / "optimas.yml").string());
    TempDir t;
    fs::path copy = t.path / e.path().filename();
    fs::copy(e.path(), copy, fs::copy_options::recursive);
    fs::remove(copy / "optimas.yml");
    InitOptions o;
    o.dir = copy.string();
    o.no_run = true;
    std::string output = mine.outputs.empty() ? "out.bin" : mine.outputs[0];
    auto argv = util::split_simple_command(mine.command_for(mine.default_config(), output));
    ASSERT_TRUE(argv);
    o.run_argv = *argv;
    InitResult r = init_application(o);
    config::AppConfig theirs = config::load_app_config(r.path);
    EXPECT_EQ(no_arch(theirs.build_command), no_arch(mine.build_command));
    EXPECT_EQ(theirs.binary, mine.binary);
    EXPECT_EQ(theirs.build_dir, mine.build_dir);
    EXPECT_EQ(std::set<std::string>(theirs.sources.begin(), theirs.sources.end()),
              std::set<std::string>(mine.sources.begin(), mine.sources.end()));
    EXPECT_EQ(theirs.run_command, mine.run_command);
    EXPECT_EQ(theirs.kernel_time.pattern, mine.kernel_time.pattern);
    EXPECT_EQ(theirs.kernel_time.unit, mine.kernel_time.unit);
    EXPECT_EQ(theirs.kernel_time.per_call, mine.kernel_time.per_call);
    EXPECT_EQ(theirs.kernel_time.calls, mine.kernel_time.calls);
    EXPECT_EQ(theirs.seed_param, mine.seed_param);
    EXPECT_EQ(theirs.default_config().params, mine.default_config().params);
    ++compared;
  }
  EXPECT_GE(compared, 15);
}

TEST(Init, LeavesAnExistingFileUnlessForced) {
  TempDir t;
  write(t.path / "app" / "main.cu", "__global__ void k() {}\nint main() { k<<<1, 1>>>(); }\n");
  write(t.path / "app" / "optimas.yml", "mine\n");
  InitOptions o;
  o.dir = (t.path / "app").string();
  o.no_run = true;
  EXPECT_THROW(init_application(o), Error);
  EXPECT_EQ(util::read_file((t.path / "app" / "optimas.yml").string()), "mine\n");
  o.force = true;
  InitResult r = init_application(o);
  config::AppConfig app = config::load_app_config(r.path);
  EXPECT_EQ(app.run_command, "./app");
  EXPECT_EQ(app.sources, std::vector<std::string>{"main.cu"});
}

TEST(InitBuild, MakefileArchVariableAndForcedClean) {
  TempDir t;
  write(t.path / "Makefile", "NVCC ?= nvcc\nARCH ?= sm_70\nEXE = solver\n"
                             "all: $(EXE)\n$(EXE): main.cu\n\t$(NVCC) -arch=$(ARCH) -o $@ main.cu\n"
                             "clean:\n\trm -f $(EXE)\n.PHONY: all clean\n");
  BuildGuess b = detect_build(t.path.string(), "90");
  EXPECT_EQ(b.kind, "make");
  EXPECT_EQ(b.command.value, "NVCC_APPEND_FLAGS=\"$NVCC_APPEND_FLAGS -lineinfo\" make ARCH=sm_90");
  EXPECT_EQ(b.clean.value, "make clean");
  EXPECT_EQ(b.binary.value, "solver");
  // No GPU known: the Makefile's architecture stays.
  EXPECT_EQ(detect_build(t.path.string(), "").command.value, "NVCC_APPEND_FLAGS=\"$NVCC_APPEND_FLAGS -lineinfo\" make");
}

TEST(InitBuild, MakefileThatClimbsOutAndCleansWithoutForce) {
  TempDir t;
  // As Rodinia's: an include two folders up, the program named by a variable, rm without -f.
  write(t.path / "Makefile", "include ../../common/make.config\nCC := $(CUDA_DIR)/bin/nvcc\nSRC = gaussian.cu\n"
                             "EXE = gaussian\nrelease: $(SRC)\n\t$(CC) $(SRC) -o $(EXE) -I../util\n"
                             "clean:\n\trm gaussian\n");
  // A copy of the folder lacks what climbs out: make finds the include through -I, nvcc the
  // folders through -I (../util exists; the original folder is searched for "../x.h" includes).
  fs::create_directories(t.path / ".." / "util");
  BuildGuess b = detect_build(t.path.string(), "90");
  std::string util_dir = (t.path / ".." / "util").lexically_normal().string();
  EXPECT_EQ(b.command.value, "NVCC_APPEND_FLAGS=\"$NVCC_APPEND_FLAGS -lineinfo -arch=sm_90 -I" + util_dir + " -I" +
                                 t.path.string() + "\" make -I " + t.path.string());
  fs::remove_all(t.path / ".." / "util");
  EXPECT_EQ(b.binary.value, "gaussian");
  EXPECT_TRUE(b.clean.value.empty());
  EXPECT_NE(b.clean.todo.find("rm gaussian"), std::string::npos);
  EXPECT_EQ(b.outside, (std::vector<std::string>{"../../common/make.config", "../util"}));
}

// As PolyBench-ACC's: the Makefile sets variables and includes a common.mk named through one of
// them, which holds the nvcc line and the clean rule. The included file is read where it stands:
// its recipe names the program and calls nvcc, and make finds it from a copy through -I.
TEST(InitBuild, MakefileThatIncludesItsRulesThroughAVariable) {
  TempDir t;
  write(t.path / "utilities" / "common.mk",
        "all:\n\tnvcc -O3 ${CUFILES} -I${PATH_TO_UTILS} -o ${EXECUTABLE}\nclean:\n\trm -f *~ *.exe\n");
  write(t.path / "kernels" / "atax" / "Makefile",
        "EXECUTABLE := atax.exe\nCUFILES := atax.cu\nPATH_TO_UTILS := ../../utilities\n\n"
        "include ${PATH_TO_UTILS}/common.mk\n");
  const fs::path dir = t.path / "kernels" / "atax";
  BuildGuess b = detect_build(dir.string(), "90");
  const std::string utilities = (t.path / "utilities").string();
  EXPECT_EQ(b.command.value, "NVCC_APPEND_FLAGS=\"$NVCC_APPEND_FLAGS -lineinfo -arch=sm_90 -I" + utilities + " -I" +
                                 dir.string() + "\" make -I " + dir.string());
  EXPECT_EQ(b.binary.value, "atax.exe");
  EXPECT_EQ(b.clean.value, "make -I " + dir.string() + " clean");
  // An include that is not there is left to make (a copy of the folder finds it through -I).
  fs::remove(t.path / "utilities" / "common.mk");
  BuildGuess missing = detect_build(dir.string(), "90");
  EXPECT_NE(missing.command.value.find("make -I " + dir.string()), std::string::npos) << missing.command.value;
}

// The causes init names from a failed build's log (nvcc 13.0's own messages).
TEST(InitBuild, KnownCausesOfAFailedBuild) {
  const std::string arch = "the build names a GPU architecture this nvcc does not support: set the build's arch";
  using V = std::vector<std::string>;
  EXPECT_EQ(build_failure_causes("nvcc fatal   : Unsupported gpu architecture 'sm_13'\n"), V{arch});
  // Rodinia's cfd: --gpu-architecture=compute_20 --gpu-code=compute_20.
  EXPECT_EQ(build_failure_causes("nvcc fatal   : Value 'compute_20' is not defined for option 'gpu-code'\n"), V{arch});
  EXPECT_EQ(build_failure_causes("atax.cu(164): error: identifier \"cudaThreadSynchronize\" is undefined\n"),
            V{"cudaThreadSynchronize is gone from this CUDA: the sources need cudaDeviceSynchronize in its place (init "
              "changes no source)"});
  // Rodinia's gaussian (a member CUDA 13 removed) and kmeans (texture references, gone since CUDA 12).
  EXPECT_EQ(
      build_failure_causes("gaussian.cu(244): error: class \"cudaDeviceProp\" has no member \"clockRate\"\n"),
      V{"clockRate is gone from this CUDA: the sources need cudaDeviceGetAttribute with cudaDevAttrClockRate in its "
        "place (init changes no source)"});
  EXPECT_EQ(
      build_failure_causes("kmeans_cuda.cu(169): error: identifier \"cudaBindTexture\" is undefined\n"),
      V{"cudaBindTexture is gone from this CUDA: the sources need a texture object (cudaCreateTextureObject) in its "
        "place (init changes no source)"});
  EXPECT_TRUE(build_failure_causes("main.cu(3): error: expected a \";\"\n").empty());
}

TEST(InitBuild, CMakeKeepsTheProjectsArchitecturesAndNvccLineLinksLibraries) {
  TempDir t;
  write(t.path / "c" / "CMakeLists.txt", "project(p LANGUAGES CXX CUDA)\nset(CMAKE_CUDA_ARCHITECTURES 75 80 90)\n"
                                         "include_directories(../../../Common)\nadd_executable(matrixMul m.cu)\n");
  fs::create_directories(t.path / "c" / "../../../Common");
  BuildGuess c = detect_build((t.path / "c").string(), "90");
  std::string common = (t.path / "c" / "../../../Common").lexically_normal().string();
  std::string reach = "-I" + common + " -I" + (t.path / "c").string();
  // Its three architectures are compiled side by side.
  EXPECT_EQ(c.command.value, "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_FLAGS='-lineinfo " + reach +
                                 " --threads 0' -DCMAKE_CXX_FLAGS='" + reach + "' && cmake --build build");
  EXPECT_NE(c.command.why.find("nvcc compiles the 3 architectures CMakeLists.txt lists in parallel"), std::string::npos)
      << c.command.why;
  // One architecture, or a list held in a variable, gets no --threads.
  write(t.path / "c" / "CMakeLists.txt", "project(p LANGUAGES CXX CUDA)\nset(CMAKE_CUDA_ARCHITECTURES 90)\n"
                                         "add_executable(m m.cu)\n");
  EXPECT_EQ(detect_build((t.path / "c").string(), "90").command.value.find("--threads"), std::string::npos);
  write(t.path / "c" / "CMakeLists.txt", "project(p LANGUAGES CXX CUDA)\nset(CMAKE_CUDA_ARCHITECTURES ${ARCHS})\n"
                                         "add_executable(m m.cu)\n");
  EXPECT_EQ(detect_build((t.path / "c").string(), "90").command.value.find("--threads"), std::string::npos);
  // A list set only where none is given: init gives this GPU's, one architecture.
  write(t.path / "c" / "CMakeLists.txt", "project(p LANGUAGES CXX CUDA)\nif(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)\n"
                                         "  set(CMAKE_CUDA_ARCHITECTURES 75 80 90)\nendif()\nadd_executable(m m.cu)\n");
  const std::string given = detect_build((t.path / "c").string(), "90").command.value;
  EXPECT_NE(given.find("-DCMAKE_CUDA_ARCHITECTURES=90"), std::string::npos) << given;
  EXPECT_EQ(given.find("--threads"), std::string::npos) << given;
  fs::remove_all(common);
  EXPECT_EQ(c.binary.value, "build/matrixMul");
  EXPECT_EQ(c.outside, std::vector<std::string>{"../../../Common"});
  write(t.path / "n" / "fft.cu", "#include <cufft.h>\n#include \"k.cu\"\nint main() {}\n");
  write(t.path / "n" / "k.cu", "__global__ void k() {}\n");
  BuildGuess n = detect_build((t.path / "n").string(), "");
  EXPECT_EQ(n.command.value, "nvcc -O3 -arch=native -lineinfo -o n fft.cu -lcufft");
  EXPECT_TRUE(n.command.todo.empty());
  EXPECT_THROW(detect_build((t.path / "c" / "..").string() + "/nothing-here", ""), std::exception);
}

TEST(InitPrinted, FormatsInSources) {
  auto found = printed_times_in_source("main.cu", R"(
    printf("n = %d\n", n);
    printf("Bandwidth: %.2f GB/s\n", bw);
    printf("Average SpMV kernel time: %.3f us over %lld iterations\n", avg_us, iters);
    fprintf(stdout, "elapsed (ms): %f\n", t);
  )");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].pattern, "Average SpMV kernel time: ([0-9.eE+-]+) us");
  EXPECT_EQ(found[0].unit, "us");
  EXPECT_TRUE(found[0].average);
  EXPECT_TRUE(found[0].kernel_word);
  EXPECT_EQ(found[0].where, "main.cu:4");
  EXPECT_EQ(found[1].pattern, R"(elapsed \(ms\): ([0-9.eE+-]+))");
  EXPECT_EQ(found[1].unit, "ms");
}

TEST(InitPrinted, LinesOfARun) {
  auto found = printed_times_in_output("Processing 3 frames on sm_90\nframe 2 took 4.5 ms\nkernel_time_us=12\n"
                                       "Throughput = 3.1 GB/s, Time = 0.00200 s, Size = 1024\n");
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].pattern, "frame *[-+0-9.eE]+ took ([0-9.eE+-]+) ms");
  EXPECT_DOUBLE_EQ(found[0].value, 4.5);
  EXPECT_EQ(found[1].unit, "us");
  EXPECT_EQ(found[2].pattern, R"(Throughput = *[-+0-9.eE]+ GB\/s, Time = ([0-9.eE+-]+) s)");
  EXPECT_EQ(found[2].unit, "s");
  EXPECT_TRUE(looks_like_timing("Effective bandwidth: 812.4 GB/s"));
  EXPECT_FALSE(looks_like_timing("checksum 1234567"));
  EXPECT_TRUE(looks_like_timing("Gigaoptions per second    : 354.754908     "));
  EXPECT_TRUE(looks_like_timing("Sorted at 12.5 Mkeys/sec"));
  EXPECT_TRUE(looks_like_timing("Options per sec.: 51234.5"));
  EXPECT_TRUE(looks_like_timing("Gsamples/s: 31.25"));
  EXPECT_FALSE(looks_like_timing("read 4096 records via I/O streams"));
  EXPECT_FALSE(looks_like_timing("a/sb ratio 3"));
  EXPECT_TRUE(looks_like_timing("51234.5 options per sec  "));
  EXPECT_FALSE(looks_like_timing("Options processed per call: 8000000"));
  EXPECT_FALSE(looks_like_timing("bytes per sector: 32"));
  EXPECT_EQ(line_shape("sum = -1.5e3 (x2)"), R"(^sum = *[-+0-9.eE]+ \(x[-+0-9.eE]+\))");
}

// A program that prints its results (Rodinia's gaussian, verbose: matrices of 512 figures a
// line) holds figures that are no times, and a time after them is still found.
TEST(InitPrinted, LongLinesOfFigures) {
  std::string row;
  for (int j = 0; j < 512; ++j) row += fmt::format("{:8.2f} ", j * 0.25);
  auto found = printed_times_in_output(row + "\n" + row + "took 3.5\tms\n" + row + "(us) \n" + "Time in s: " + row +
                                       "\nelapsed " + row + "\n");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_DOUBLE_EQ(found[0].value, 3.5);
  EXPECT_EQ(found[0].unit, "ms");
  EXPECT_TRUE(found[0].pattern.size() > 512 * 10 &&
              found[0].pattern.find("took ([0-9.eE+-]+)\tms") != std::string::npos)
      << found[0].pattern.substr(found[0].pattern.size() - 40);
  // A unit in the label, and a time word: its first figure, with the label's unit.
  EXPECT_EQ(found[1].unit, "s");
  EXPECT_DOUBLE_EQ(found[1].value, 0);
  EXPECT_EQ(found[1].label, "Time in s:     "); // %8.2f pads the figure
}

TEST(InitObserve, TimingLinesAreIgnoredAndAVaryingResultIsLeftToTheUser) {
  std::vector<ObservedRun> runs(3);
  for (int k = 0; k < 3; ++k)
    runs[k].stdout_text =
        fmt::format("result 42\nkernel_time_ms: {}\nbandwidth 1{}.0 GB/s\nsum {}\nPASS\n", k + 1, k, k);
  std::vector<std::string> findings;
  auto ignore = ignore_patterns(runs, "kernel_time_ms: ([0-9.eE+-]+)", findings);
  ASSERT_EQ(ignore.size(), 2u);
  EXPECT_EQ(ignore[0].pattern, R"(^bandwidth *[-+0-9.eE]+ GB\/s)");
  EXPECT_TRUE(ignore[0].active);
  // `sum` varies and is no time: likely a result, so not ignored (a TODO in optimas.yml).
  EXPECT_EQ(ignore[1].pattern, "^sum *[-+0-9.eE]+");
  EXPECT_FALSE(ignore[1].active);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].find("\"sum 0\""), std::string::npos);
  EXPECT_NE(findings[0].find("it is not ignored"), std::string::npos) << findings[0];
}

TEST(InitObserve, KernelTimeMatchedAgainstTheTracePerRunOrPerCall) {
  std::vector<Parameter> params = {{"n", "4096", "", "", false}, {"iters", "20", "", "", false}};
  std::vector<ObservedRun> runs(3);
  for (int k = 0; k < 3; ++k) {
    // 20 launches of spmv at 50 us each; the program prints the average and the total of another phase.
    runs[k].stdout_text = fmt::format("setup time: 900 ms\nAverage kernel time: {} us\n", 51 + k);
    runs[k].traced_ms = 1.0 + 0.4;
    runs[k].kernels = {{"spmv", 20, 1.0}, {"norm", 1, 0.4}};
  }
  auto k = choose_kernel_time(runs, {}, params);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->pattern, "Average kernel time: ([0-9.eE+-]+) us");
  EXPECT_TRUE(k->per_call);
  EXPECT_EQ(k->calls, "{iters}");
  EXPECT_TRUE(k->todo.empty());
  // The line states its calls: they win over the traced launches (a warm-up launch more), as in
  // examples/spmv on the H200 (11 launches traced, "over 10 iterations" printed).
  for (auto& r : runs) {
    r.stdout_text = "Average SpMV kernel time: 52 us over 10 iterations\n";
    r.kernels = {{"spmv", 11, 0.55}};
    r.traced_ms = 0.55;
  }
  std::vector<Parameter> ten = {{"rows", "4096", "", "", false}, {"iters", "10", "", "", false}};
  k = choose_kernel_time(runs, {}, ten);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->pattern, "Average SpMV kernel time: ([0-9.eE+-]+) us");
  EXPECT_EQ(k->calls, "{iters}");
  // A whole-run figure: 1.5 ms printed, 1.4 ms traced.
  for (auto& r : runs) r.stdout_text = "GPU time: 1.5 ms\n";
  k = choose_kernel_time(runs, {}, params);
  ASSERT_TRUE(k);
  EXPECT_FALSE(k->per_call);
  // The per-call time of a kernel with a minor share of the GPU time is not the program's kernel
  // time (cuda-samples' transpose prints one line per kernel).
  for (auto& r : runs) {
    r.stdout_text = "copy, Time = 0.02 ms\n";
    r.kernels = {{"copy", 10, 0.2}, {"transpose", 10, 2.0}};
    r.traced_ms = 2.2;
  }
  EXPECT_FALSE(choose_kernel_time(runs, {}, params));
  // Printed figures nowhere near the trace: none is taken.
  for (auto& r : runs) r.stdout_text = "total time: 900 ms\n";
  EXPECT_FALSE(choose_kernel_time(runs, {}, params));
}

TEST(InitObserve, OutputFilesOfEveryRun) {
  std::vector<ObservedRun> runs(3);
  for (int k = 0; k < 3; ++k) runs[k].written = {{"out.bin", "aa"}, {"log.txt", k == 2 ? "c" : "b"}};
  runs[1].written["tmp.txt"] = "x";
  std::vector<std::string> findings;
  EXPECT_EQ(written_by_every_run(runs, findings), (std::vector<std::string>{"log.txt", "out.bin"}));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].find("log.txt differs between runs (2 versions in 3 runs)"), std::string::npos);
}

TEST(InitArguments, PlaceholdersOutputAndSeed) {
  TempDir t;
  write(t.path / "input.dat", "x");
  RunGuess r = generalise_command(
      {"./app", "--n", "4096", "--steps=10", "-o", "result.bin", "--random-seed", "7", "input.dat", "512", "-v"}, "app",
      t.path.string());
  EXPECT_EQ(r.command.value,
            "./app --n {n} --steps={steps} -o {output} --random-seed {random_seed} input.dat {arg2} -v");
  ASSERT_EQ(r.parameters.size(), 4u);
  EXPECT_EQ(r.parameters[0].small, "2048");
  EXPECT_EQ(r.parameters[0].heldout, "3072");
  EXPECT_EQ(r.parameters[1].small, "10"); // an iteration count stays
  EXPECT_TRUE(r.parameters[2].seed);
  EXPECT_EQ(r.parameters[2].heldout, "1234");
  // An output named by position, found because the runs wrote it.
  RunGuess p = generalise_command({"./hotspot", "512", "2", "temp_512", "out.txt"}, "hotspot", t.path.string());
  EXPECT_EQ(use_output_placeholder(p, {"out.txt"}), "out.txt");
  EXPECT_EQ(p.command.value, "./hotspot {arg1} {arg2} temp_512 {output}");
}

// init's last line: a check that ran and failed blames the file; one that did not finish says so
// and why (with no output of its own, "does not load" alone blamed a file that loads).
TEST(InitCheck, AFailedCheckSaysWhetherTheFileOrTheCheckFailed) {
  util::ProcessResult r;
  r.exit_code = 0;
  EXPECT_EQ(init::check_verdict(r), "it loads");
  r.exit_code = 2;
  EXPECT_EQ(init::check_verdict(r), "it does not load (exit code 2), fix the file:");
  util::ProcessResult gone;
  gone.spawn_failed = true;
  gone.err = "execv: No such file or directory";
  EXPECT_EQ(init::check_verdict(gone),
            "the check did not finish (could not be started: execv: No such file or directory)");
  util::ProcessResult slow;
  slow.timed_out = true;
  slow.wall_s = 120;
  EXPECT_EQ(init::check_verdict(slow),
            "the check did not finish (timed out after 120.0 s (killed with everything it started))");
}
