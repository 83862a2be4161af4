#include "init/init.hpp"

#include "cuda/source.hpp"
#include "evaluate/sandbox.hpp"
#include "evaluate/snapshot.hpp"
#include "init/arguments.hpp"
#include "init/build_detect.hpp"
#include "init/observe.hpp"
#include "init/yml_writer.hpp"
#include "profile/ncu_agent.hpp"
#include "profile/trace.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/names.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

namespace fs = std::filesystem;

namespace optimas::init {
namespace {

const std::set<std::string> k_skipped_folders = {
    ".git", ".optimas", "runs", "optimas-profile", "optimas-variant", "optimas-manual", "CMakeFiles"};

// Every regular file below `dir` with one of `extensions`, relative, skipping hidden and
// Optimas' folders and `build_dir`; at most 20,000 looked at.
std::vector<std::string> files_below(const fs::path& dir, const std::set<std::string>& extensions,
                                     const std::string& build_dir) {
  std::vector<std::string> found;
  int looked = 0;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied);
       it != fs::recursive_directory_iterator() && ++looked < 20000; ++it) {
    std::string name = it->path().filename().string();
    fs::path rel = fs::relative(it->path(), dir);
    if (it->is_directory()) {
      if (name[0] == '.' || k_skipped_folders.count(name) || rel == fs::path(build_dir) || it.depth() > 6)
        it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && extensions.count(it->path().extension().string())) found.push_back(rel.string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

struct Scratch {
  fs::path work; // init's own folder: logs, traces
  fs::path copy; // the application's copy
  evaluate::Snapshot snapshot;
  double build_s = 0; // the build's wall time
};

std::string make_temp_folder() {
  std::string pattern = (fs::temp_directory_path() / "optimas-init-XXXXXX").string();
  if (!mkdtemp(pattern.data()))
    throw Error(fmt::format("cannot create a scratch folder in {}", fs::temp_directory_path().string()));
  return pattern;
}

// Files below `dir` with size and modification time, to see what a run wrote.
std::map<std::string, std::pair<std::uintmax_t, fs::file_time_type>> listing(const fs::path& dir) {
  std::map<std::string, std::pair<std::uintmax_t, fs::file_time_type>> files;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied);
       it != fs::recursive_directory_iterator(); ++it)
    if (it->is_regular_file()) files[fs::relative(it->path(), dir).string()] = {it->file_size(), it->last_write_time()};
  return files;
}

// What the build made that can run: new executable files of the copy (not scripts or libraries).
std::vector<std::string> new_programs(const Scratch& s) {
  std::vector<std::string> programs;
  for (auto it = fs::recursive_directory_iterator(s.copy); it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_regular_file()) continue;
    std::string rel = fs::relative(it->path(), s.copy).string();
    std::string ext = it->path().extension().string();
    bool executable = (fs::status(it->path()).permissions() & fs::perms::owner_exec) != fs::perms::none;
    if (executable && !s.snapshot.files.count(rel) && ext != ".so" && ext != ".o" && ext != ".a" && ext != ".sh" &&
        ext != ".py" && rel.find("CMakeFiles") == std::string::npos)
      programs.push_back(rel);
  }
  std::sort(programs.begin(), programs.end());
  return programs;
}

bool build_copy(const InitOptions& o, Scratch& s, Proposal& p) {
  if (o.progress) o.progress(fmt::format("building a copy: {}", p.build.command.value));
  util::ProcessSpec spec = util::shell(p.build.command.value);
  spec.cwd = s.copy.string();
  spec.timeout_s = o.build_timeout_s;
  spec.stdout_path = (s.work / "build.log").string();
  spec.stderr_to_stdout = true;
  auto r = util::run_process(spec);
  s.build_s = r.wall_s;
  std::string log = fs::exists(spec.stdout_path) ? util::read_file(spec.stdout_path) : "";
  if (!r.ok()) {
    auto lines = util::split(util::trim(log), '\n');
    std::vector<std::string> last(lines.end() - std::min<std::ptrdiff_t>(8, static_cast<std::ptrdiff_t>(lines.size())),
                                  lines.end());
    p.findings.push_back(
        fmt::format("the build failed ({}); the end of its log:\n{}", r.describe(), util::join(last, "\n")));
    p.todo.push_back("make build.command work (init built a copy of the folder; the log's end is above)");
    for (auto& cause : build_failure_causes(log)) p.todo.push_back(std::move(cause));
    if (!p.build.outside.empty())
      p.todo.push_back(fmt::format("the build reaches outside the folder ({}), and Optimas builds in a copy of it "
                                   "(init points -I at the originals): if that is why it fails, run init on a folder "
                                   "that holds them, or make the paths absolute",
                                   util::join(p.build.outside, ", ")));
    return false;
  }
  std::vector<std::string> programs = new_programs(s);
  bool guessed = !p.build.binary.value.empty() &&
                 std::find(programs.begin(), programs.end(),
                           fs::path(p.build.binary.value).lexically_normal().string()) != programs.end();
  // The program the run command starts, when the build made it, is the binary.
  std::string started = o.run_argv.empty() ? "" : fs::path(o.run_argv[0]).lexically_normal().string();
  if (std::find(programs.begin(), programs.end(), started) != programs.end() && started != p.build.binary.value) {
    p.build.binary = {started, "the program the run command starts (the build made it)"};
  } else if (guessed) {
    p.build.binary.why += " (the build made it)";
  } else if (programs.size() == 1) {
    p.build.binary = {programs[0], "the one program the build made"};
  } else {
    p.build.binary.todo = programs.empty() ? "the build made no new executable file: which program runs?"
                                           : "the build made several programs: " + util::join(programs, ", ");
    return !p.build.binary.value.empty() && fs::exists(s.copy / p.build.binary.value);
  }
  return true;
}

struct RunSetup {
  std::string command;
  std::string tracer;
};

ObservedRun observe_run(const InitOptions& o, const Scratch& s, const RunSetup& r, int k, std::string& failure) {
  ObservedRun run;
  auto before = listing(s.copy);
  util::ProcessSpec spec = util::shell(r.command);
  spec.cwd = s.copy.string();
  spec.timeout_s = o.run_timeout_s;
  spec.stdout_path = (s.work / fmt::format("run-{}.log", k)).string();
  spec.stderr_path = (s.work / fmt::format("run-{}.stderr.log", k)).string();
  fs::path trace_dir = s.work / fmt::format("run-{}.trace", k);
  if (!r.tracer.empty()) {
    fs::create_directories(trace_dir);
    spec.env["CUDA_INJECTION64_PATH"] = r.tracer;
    spec.env["OPTIMAS_TRACE_DIR"] = trace_dir.string();
  }
  auto result = util::run_process(spec);
  run.wall_s = result.wall_s;
  run.stdout_text = fs::exists(spec.stdout_path) ? util::read_file(spec.stdout_path) : "";
  if (!result.ok()) {
    std::string err = fs::exists(spec.stderr_path) ? util::read_file(spec.stderr_path) : "";
    std::string text(util::trim(err.empty() ? run.stdout_text : err));
    failure = result.describe() + (text.empty() ? "" : ": " + text.substr(text.rfind('\n') + 1));
    return run;
  }
  for (const auto& [path, stamp] : listing(s.copy)) {
    auto was = before.find(path);
    if (was != before.end() && was->second == stamp) continue;
    run.written[path] = util::sha256_file((s.copy / path).string());
    if (was == before.end()) fs::remove(s.copy / path); // the next run starts from the same folder
  }
  if (!r.tracer.empty() && !fs::is_empty(trace_dir)) {
    profile::Trace trace = profile::read_trace(trace_dir.string());
    run.traced_ms = profile::traced_time_ns(trace) / 1e6;
    std::map<std::string, KernelLaunches> by_name;
    for (const auto& l : trace.launches) {
      auto& k = by_name[l.kernel];
      k.name = l.kernel;
      k.launches += 1;
      k.total_ms += l.duration_ns / 1e6;
    }
    for (auto& [name, k] : by_name) run.kernels.push_back(k);
  }
  return run;
}

void conclude_runs(const std::vector<ObservedRun>& runs, const std::vector<PrintedTime>& source_times, double build_s,
                   Proposal& p) {
  p.kernel_time = choose_kernel_time(runs, source_times, p.run.parameters);
  const std::size_t findings_before = p.findings.size();
  std::vector<std::string> written = written_by_every_run(runs, p.findings);
  const bool same_bytes = p.findings.size() == findings_before;
  std::string file = use_output_placeholder(p.run, written);
  if (!file.empty()) {
    written.erase(std::find(written.begin(), written.end(), file));
  } else if (!written.empty() && !util::contains(p.run.command.value, "{output}")) {
    p.run.outputs = written;
    p.run.outputs_why = "the files every run wrote, compared byte for byte";
  }
  bool files_compared = util::contains(p.run.command.value, "{output}") || !p.run.outputs.empty();
  if (files_compared && same_bytes)
    p.findings.push_back(
        fmt::format("the output file(s) were the same bytes in all {} runs: exact validation", runs.size()));
  p.ignore = ignore_patterns(runs, p.kernel_time ? p.kernel_time->pattern : "", p.findings);
  if (std::any_of(p.ignore.begin(), p.ignore.end(), [](const IgnoreGuess& i) { return !i.active; }))
    p.todo.push_back("stdout varies between runs in lines that do not read as times (results of an input seeded "
                     "from the clock?): byte-for-byte validation cannot compare them, and `optimas run` stops when "
                     "it validates its first variant. Make the program deterministic (a fixed seed, or a seed "
                     "argument), or, for a line that is no result, uncomment it under validate.ignore");
  if (!files_compared)
    p.run.outputs_why = "none: the program wrote no file every run, so its stdout is the compared output (less "
                        "validate.ignore's lines)";
  static const std::regex checked(R"(\bPASS(ED)?\b|\b[Pp]assed\b|\b[Cc]orrect\b|\b[Vv]erified\b)");
  if (std::regex_search(runs[0].stdout_text, checked))
    p.findings.push_back("the program checks itself (its stdout says pass, correct or verified)" +
                         std::string(files_compared ? "" : ": that line is part of the compared stdout"));
  double slowest = 0;
  for (const auto& r : runs) slowest = std::max(slowest, r.wall_s);
  // run.timeout_s limits each build too.
  p.timeout_s = std::max({30.0, std::ceil(slowest) * 10, std::ceil(build_s / 10) * 30});
  p.timeout_why = fmt::format("the longer of ten times the slowest of {} runs here ({:.1f} s) and three times the "
                              "build ({:.0f} s): it limits each build too",
                              runs.size(), slowest, build_s);
  if (runs[0].traced_ms) {
    std::uint64_t launches = 0;
    for (const auto& k : runs[0].kernels) launches += k.launches;
    p.findings.push_back(fmt::format("{} kernel(s), {} launches, {:.3g} ms of GPU time in a run of {:.2f} s",
                                     runs[0].kernels.size(), launches, *runs[0].traced_ms, runs[0].wall_s));
  }
}

// Runs the program o.runs times and concludes; returns how many runs it observed.
int run_program(const InitOptions& o, Scratch& s, const std::vector<PrintedTime>& source_times, Proposal& p) {
  RunSetup setup;
  setup.command = o.run_argv.empty() ? "./" + p.build.binary.value : util::shell_join(o.run_argv);
  if (!o.cpu) {
    try {
      setup.tracer = profile::resolve_tracer(o.tracer);
    } catch (const Error& e) {
      p.findings.push_back(std::string("no kernel trace: ") + e.what());
    }
  }
  std::vector<ObservedRun> runs;
  for (int k = 0; k < o.runs; ++k) {
    if (o.progress) o.progress(fmt::format("run {} of {}: {}", k + 1, o.runs, setup.command));
    std::string failure;
    ObservedRun r = observe_run(o, s, setup, k, failure);
    if (!failure.empty()) {
      p.findings.push_back(fmt::format("run {} failed: {}", k + 1, failure));
      p.todo.push_back("make the run command work (its stdout and stderr are in the scratch folder named above)");
      return 0;
    }
    runs.push_back(std::move(r));
  }
  conclude_runs(runs, source_times, s.build_s, p);
  return static_cast<int>(runs.size());
}

Proposal read_folder(const InitOptions& o, const std::string& dir, const std::string& arch) {
  Proposal p;
  std::string name = fs::path(dir).filename().string();
  p.name = util::name_problem(name).empty() ? name : "app";
  p.build = detect_build(dir, arch);
  p.sources = kernel_sources(dir, p.build.dir.value);
  p.sources_why = p.sources.empty() ? "no file defines a __global__ or __device__ function"
                                    : "the files that define __global__ kernels or __device__ functions (the optimizer "
                                      "may edit these)";
  p.run = generalise_command(o.run_argv, p.build.binary.value, dir);
  p.needs_gpu = !o.cpu;
  return p;
}

} // namespace

std::string check_verdict(const util::ProcessResult& check) {
  if (check.ok()) return "it loads";
  if (check.spawn_failed || check.timed_out || check.signal != 0)
    return "the check did not finish (" + check.describe() + ")";
  return "it does not load (" + check.describe() + "), fix the file:";
}

std::vector<std::string> kernel_sources(const std::string& dir, const std::string& build_dir) {
  std::vector<std::string> kernels;
  for (const auto& f : files_below(dir, {".cu", ".cuh", ".h", ".hpp", ".hh", ".inl", ".cuhpp"}, build_dir)) {
    std::string text = util::read_file((fs::path(dir) / f).string());
    // Kernels, and the __device__ functions they call (an edit may belong there); a file whose
    // device code is only __host__ __device__ helpers is host code's too, and is left out.
    static const std::regex host_device(R"(__host__\s+__device__|__device__\s+__host__)");
    std::string device_only = std::regex_replace(text, host_device, "");
    if (!util::contains(device_only, "__global__") && !util::contains(device_only, "__device__")) continue;
    if (!cuda::parse_source(f, text).functions.empty()) kernels.push_back(f);
  }
  return kernels;
}

InitResult init_application(const InitOptions& o) {
  if (!fs::is_directory(o.dir)) throw Error(fmt::format("{}: no such folder", o.dir));
  fs::path normal = fs::absolute(o.dir).lexically_normal();
  const std::string dir = (normal.has_filename() ? normal : normal.parent_path()).string(); // no trailing '/'
  InitResult result;
  result.path = (fs::path(dir) / "optimas.yml").string();
  if (fs::exists(result.path) && !o.force)
    throw Error(fmt::format("{} exists; init leaves it as it is (--force replaces it)", result.path));
  bool gpu = !o.cpu && evaluate::gpu_present();
  std::string arch = gpu ? gpu_arch() : "";
  Proposal p = read_folder(o, dir, arch);
  std::vector<PrintedTime> source_times;
  for (const auto& f : files_below(dir, {".cu", ".cpp", ".cc", ".cxx", ".c"}, p.build.dir.value))
    for (auto& t : printed_times_in_source(f, util::read_file((fs::path(dir) / f).string()))) source_times.push_back(t);

  if (o.no_run) {
    p.todo.push_back("--no-run: the build and the runs were not tried");
  } else {
    Scratch s;
    s.work = make_temp_folder();
    s.copy = s.work / "app";
    config::AppConfig app;
    app.dir = dir;
    app.build_dir = p.build.dir.value;
    app.binary = p.build.binary.value;
    s.snapshot = evaluate::snapshot_application(app, s.copy.string());
    result.built = build_copy(o, s, p);
    if (result.built && (gpu || o.cpu)) result.runs = run_program(o, s, source_times, p);
    if (!gpu && !o.cpu)
      p.todo.push_back("no GPU here: the runs (outputs, varying lines, kernel time) need a run on a GPU");
    // The copy goes; the logs stay for the user to read.
    std::error_code ec;
    fs::remove_all(s.copy, ec);
    p.findings.push_back("init's build and run logs: " + s.work.string());
  }
  if (result.runs == 0) p.kernel_time = choose_kernel_time({}, source_times, p.run.parameters);
  result.proposal = p;
  util::write_file(result.path, write_yml(p, fmt::format("optimas.yml written by `optimas init` on {} for {}.",
                                                         util::utc_now_iso8601().substr(0, 10), dir)));
  return result;
}

} // namespace optimas::init
