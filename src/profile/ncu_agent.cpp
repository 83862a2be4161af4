#include "profile/ncu_agent.hpp"

#include "profile/heavy_pass.hpp"
#include "profile/heavy_rounds.hpp"
#include "profile/hot_kernels.hpp"
#include "profile/ncu_readers.hpp"

#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/names.hpp"
#include "util/process.hpp"
#include "util/regex.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <regex>
#include <tuple>
#include <utility>

// The installed library folder relative to the installed bin folder (cmake/install.cmake).
#ifndef OPTIMAS_LIBDIR_FROM_BINDIR
#define OPTIMAS_LIBDIR_FROM_BINDIR "../lib"
#endif

namespace optimas::profile {

namespace fs = std::filesystem;

std::vector<std::string> default_sections() {
  return {"SpeedOfLight", "SpeedOfLight_RooflineChart", "SourceCounters",         "WarpStateStats", "Occupancy",
          "LaunchStats",  "ComputeWorkloadAnalysis",    "MemoryWorkloadAnalysis", "SchedulerStats"};
}

std::vector<std::string> default_metrics() {
  // Plain FLOP and byte counts (not part of the sections) for roofline arithmetic intensity.
  return {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
          "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
          "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum", "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
          "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum", "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
          "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
          "lts__t_bytes.sum", "l1tex__t_bytes.sum", "smsp__inst_executed.sum", "smsp__pcsamp_sample_count",
          // Memory-access figures (analysis::MemoryAccess): sectors per request of global loads and
          // stores, shared-memory bank conflicts, local-memory traffic. The default sections do not
          // collect them (MemoryWorkloadAnalysis_Tables does, in --set full).
          "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
          "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
          "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
          "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum",
          "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"};
}

namespace {

// ncu output must not depend on the user's locale (thousands separators).
const std::map<std::string, std::string> k_ncu_env = {{"LC_ALL", "C"}};

nlohmann::json gpu_info() {
  nlohmann::json out = nlohmann::json::object();
  if (!util::find_executable("nvidia-smi")) return out;
  util::ProcessSpec spec;
  spec.argv = {"nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"};
  spec.timeout_s = 30;
  auto r = util::run_process(spec);
  if (!r.ok()) return out;
  auto first = r.out.substr(0, r.out.find('\n'));
  auto parts = util::split(first, ',');
  if (parts.size() >= 2) {
    out["name"] = std::string(util::trim(parts[0]));
    out["driver"] = std::string(util::trim(parts[1]));
  }
  return out;
}

// The old timing pass: ncu times every launch (each one replayed; slow with many launches).
std::vector<Launch> ncu_timing_pass(const NcuOptions& o, nlohmann::json& run, const fs::path& run_dir,
                                    const std::vector<std::string>& app_argv, const std::string& cwd,
                                    const std::string& out_abs, double timeout_s, const Say& say) {
  const std::string run_name = run["dir"];
  say(fmt::format("{}: timing pass over every kernel (ncu)", run_name));
  std::string report = (run_dir / "timing").string();
  auto cmd = timing_command(o, report, app_argv);
  run["timing_command"] = util::shell_join(cmd);
  std::string log_path = (run_dir / "timing.log").string();
  double started = profile_clock_s();
  auto r = run_logged(cmd, cwd, log_path, timeout_s);
  run["timing_wall_s"] = profile_clock_s() - started;
  if (!r.ok())
    throw Error(fmt::format("{}: the timing pass failed ({})\n{}\n{}", run_name, r.describe(),
                            run["timing_command"].get<std::string>(), log_tail(log_path)));
  RunPages tp = export_pages(o.ncu, report + ".ncu-rep", run_dir.string(), "timing_", PageSet::timing, o.timeout_s);
  run["pages"]["timing_raw"] = fs::relative(tp.raw, out_abs).string();
  std::vector<Launch> timed;
  read_raw_page(tp.raw, timed);
  if (timed.empty()) throw Error(fmt::format("{}: the timing pass saw no kernel launch", run_name));
  return timed;
}

// The timing pass with the kernel tracer: one plain run of the program, every launch recorded.
std::vector<Launch> traced_timing_pass(const std::string& tracer, nlohmann::json& run, const fs::path& run_dir,
                                       const std::vector<std::string>& app_argv, const std::string& cwd,
                                       const std::string& out_abs, double timeout_s, const Say& say) {
  const std::string run_name = run["dir"];
  say(fmt::format("{}: timing pass over every kernel (kernel tracer)", run_name));
  fs::path trace_dir = run_dir / "trace";
  fs::remove_all(trace_dir);
  fs::create_directories(trace_dir);
  auto cmd = trace_command(tracer, trace_dir.string(), app_argv);
  run["timing_command"] = util::shell_join(cmd);
  std::string log_path = (run_dir / "timing.log").string();
  double started = profile_clock_s();
  auto r = run_logged(cmd, cwd, log_path, timeout_s);
  run["timing_wall_s"] = profile_clock_s() - started;
  if (!r.ok())
    throw Error(fmt::format("{}: the traced run failed ({})\n{}\n{}", run_name, r.describe(),
                            run["timing_command"].get<std::string>(), log_tail(log_path)));
  // No trace at all: CUPTI could not start in this program (its message is in the log), or the
  // program is no CUDA program; ncu's own timing pass then decides.
  std::error_code ec;
  if (fs::is_empty(trace_dir, ec)) {
    log::warn("{}: the kernel tracer wrote no trace (see {}); timing with ncu instead", run_name, log_path);
    fs::remove_all(trace_dir, ec);
    return {};
  }
  Trace t = read_trace(trace_dir.string());
  if (t.launches.empty()) throw Error(fmt::format("{}: the traced run launched no kernel", run_name));
  for (const auto& f : t.incomplete) log::warn("{}: the trace has no end line (a process did not exit normally)", f);
  if (t.dropped > 0) log::warn("{}: CUPTI dropped {} kernel records; times are a lower bound", run_name, t.dropped);
  run["pages"]["trace"] = fs::relative(trace_dir, out_abs).string();
  return std::move(t.launches);
}

} // namespace

util::ProcessResult run_logged(const std::vector<std::string>& argv, const std::string& cwd,
                               const std::string& log_path, double timeout_s) {
  util::ProcessSpec spec;
  spec.argv = argv;
  spec.cwd = cwd;
  spec.env = k_ncu_env;
  spec.timeout_s = timeout_s;
  spec.stdout_path = log_path;
  spec.stderr_to_stdout = true;
  return util::run_process(spec);
}

double profile_clock_s() {
  const char* seam = std::getenv("OPTIMAS_PROFILE_CLOCK");
  if (seam == nullptr || *seam == '\0')
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  double s = 0;
  std::ifstream(seam) >> s;
  return s;
}

std::string log_tail(const std::string& path, std::size_t max_chars) {
  std::string text;
  try {
    text = util::read_file(path);
  } catch (const Error&) {
    return {};
  }
  if (text.size() > max_chars) text = "..." + text.substr(text.size() - max_chars);
  return text;
}

std::string ncu_version(const std::string& ncu) {
  util::ProcessSpec spec;
  spec.argv = {ncu, "--version"};
  spec.env = k_ncu_env;
  spec.timeout_s = 60;
  auto r = util::run_process(spec);
  if (!r.ok()) return {};
  static const std::regex k_re(R"(Version\s+([0-9][0-9.]*))");
  std::smatch m;
  if (std::regex_search(r.out, m, k_re)) return m[1].str();
  return std::string(util::trim(r.out));
}

std::vector<std::string> program_argv(const std::string& command) {
  // A plain command runs as itself: under ncu a program started through /bin/sh took seconds
  // per launch of a profiled kernel's function (heat, 1,500 launches: over 45 s against 8 s
  // run directly; H200, ncu 2025.3.1). Its words mean the same without the shell.
  if (auto words = util::split_simple_command(command)) return *words;
  return {"/bin/sh", "-c", command};
}

// The program runs under /bin/sh, so ncu follows child processes (--target-processes all).
std::vector<std::string> timing_command(const NcuOptions& o, const std::string& report,
                                        const std::vector<std::string>& app_argv) {
  std::vector<std::string> cmd = {o.ncu,
                                  "--target-processes",
                                  "all",
                                  "--metrics",
                                  "gpu__time_duration.sum",
                                  "--clock-control",
                                  o.clock_control,
                                  "-f",
                                  "-o",
                                  report};
  cmd.insert(cmd.end(), app_argv.begin(), app_argv.end());
  return cmd;
}

std::vector<std::string> trace_command(const std::string& tracer, const std::string& trace_dir,
                                       const std::vector<std::string>& app_argv) {
  std::vector<std::string> cmd = {"env", "CUDA_INJECTION64_PATH=" + tracer, "OPTIMAS_TRACE_DIR=" + trace_dir};
  cmd.insert(cmd.end(), app_argv.begin(), app_argv.end());
  return cmd;
}

std::string find_tracer() {
  if (const char* env = std::getenv("OPTIMAS_TRACER")) {
    std::string v = env;
    return v == "none" ? "" : v;
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  // Beside optimas in a build tree; in the library folder of an installed one (the relative path
  // cmake/install.cmake compiles in: lib64 or lib/<multiarch> on some systems); or ../lib.
  const fs::path dir = exe.parent_path();
  for (const auto& candidate :
       {dir / "liboptimas-trace.so", (dir / OPTIMAS_LIBDIR_FROM_BINDIR / "liboptimas-trace.so").lexically_normal(),
        dir.parent_path() / "lib" / "liboptimas-trace.so"})
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  return {};
}

std::string resolve_tracer(const std::string& setting) {
  std::string path = setting == "auto" ? find_tracer() : setting == "none" ? "" : setting;
  if (path.empty()) return {};
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw UsageError(
        fmt::format("the kernel tracer {} does not exist (build it with CUPTI, or pass --tracer none)", path));
  return fs::absolute(path).lexically_normal().string();
}

std::vector<std::string> heavy_command(const NcuOptions& o, const std::string& report,
                                       const std::vector<std::string>& hot_kernels,
                                       const std::vector<LaunchPick>& picks, const std::vector<std::string>& app_argv) {
  std::vector<std::string> cmd = {o.ncu, "--target-processes", "all"};
  if (o.mode == ProfileMode::full) {
    cmd.insert(cmd.end(), {"--set", "full"});
  } else {
    for (const auto& s : o.sections.empty() ? default_sections() : o.sections) cmd.insert(cmd.end(), {"--section", s});
  }
  auto metrics = o.metrics.empty() ? default_metrics() : o.metrics;
  if (!metrics.empty()) cmd.insert(cmd.end(), {"--metrics", util::join(metrics, ",")});
  auto add_name = [](std::vector<std::string>& names, std::string_view kernel) {
    std::string f = util::regex_literal(std::string(kernel_function_name(kernel)));
    if (std::find(names.begin(), names.end(), f) == names.end()) names.push_back(f);
  };
  if (!picks.empty() && o.launch_cap > 0) {
    // --kernel-id ::regex:NAMES:INVOCATIONS, 1-based invocations of each function name. Its
    // fields are split at ':', so a namespace's "::" in a name is matched as any character.
    std::vector<std::string> names, invocations;
    for (const auto& p : picks) {
      add_name(names, p.function);
      for (auto n : p.invocations)
        if (std::find(invocations.begin(), invocations.end(), std::to_string(n)) == invocations.end())
          invocations.push_back(std::to_string(n));
    }
    std::string name_re = "^(" + util::join(names, "|") + ")$";
    std::replace(name_re.begin(), name_re.end(), ':', '.');
    cmd.insert(cmd.end(), {"--kernel-id", "::regex:" + name_re + ":^(" + util::join(invocations, "|") + ")$"});
  } else if (!hot_kernels.empty()) {
    std::vector<std::string> names;
    for (const auto& k : hot_kernels) add_name(names, k);
    cmd.insert(cmd.end(), {"-k", "regex:^(" + util::join(names, "|") + ")$"});
  }
  if (o.launch_count > 0) cmd.insert(cmd.end(), {"-c", std::to_string(o.launch_count)});
  if (o.warp_sampling_interval >= 0)
    cmd.insert(cmd.end(), {"--warp-sampling-interval", std::to_string(o.warp_sampling_interval)});
  cmd.insert(cmd.end(), {"--import-source", "yes", "--clock-control", o.clock_control, "-f", "-o", report});
  cmd.insert(cmd.end(), app_argv.begin(), app_argv.end());
  return cmd;
}

namespace {

// The "==..." lines ncu printed at the head of a file it wrote to (its errors and warnings).
std::string ncu_messages(const std::string& path) {
  std::ifstream in(path);
  std::string out;
  int lines = 0;
  for (std::string line; lines < 50 && std::getline(in, line); ++lines)
    if (line.rfind("==", 0) == 0) out += (out.empty() ? "" : "\n") + line;
  return out;
}

} // namespace

double optional_export_limit(double timeout_s, double required_s) {
  double limit = std::max(k_optional_export_floor_s, 10 * required_s);
  return timeout_s > 0 ? std::min(timeout_s, limit) : limit;
}

RunPages export_pages(const std::string& ncu, const std::string& report, const std::string& dir,
                      const std::string& prefix, PageSet set, double timeout_s) {
  RunPages pages;
  struct Page {
    std::string* slot;
    const char* name;
    std::vector<std::string> args;
    bool required;
  };
  std::vector<Page> wanted = {{&pages.raw, "raw", {"--page", "raw", "--print-units", "base"}, true}};
  if (set == PageSet::all) {
    wanted.push_back({&pages.details,
                      "details",
                      {"--page", "details", "--print-units", "base", "--print-metric-name", "name"},
                      true});
    wanted.push_back({&pages.source, "source", {"--page", "source", "--print-source", "cuda,sass"}, false});
    wanted.push_back({&pages.session, "session", {"--page", "session"}, false});
  }
  // An optional page gets a limit of its own: ncu once stalled for minutes at the end of a source
  // page it had all but written (cuda-samples' sortingNetworks, H200, session 24), where the
  // required pages of the same report took a second. Without the page the round loses its
  // PC samples; the run goes on.
  double required_s = 0;
  for (auto& p : wanted) {
    std::string file = prefix + p.name + ".csv";
    std::string path = (fs::path(dir) / file).string();
    std::vector<std::string> argv = {ncu, "-i", report, "--csv"};
    argv.insert(argv.end(), p.args.begin(), p.args.end());
    util::ProcessSpec spec;
    spec.argv = argv;
    spec.env = k_ncu_env;
    spec.timeout_s = p.required ? timeout_s : optional_export_limit(timeout_s, required_s);
    spec.stdout_path = path;
    auto r = util::run_process(spec);
    if (p.required) required_s += r.wall_s;
    bool empty = fs::exists(path) && fs::file_size(path) == 0;
    if (!r.ok() || empty) {
      // ncu prints its errors ("==ERROR== ...") on stdout, into the page's file; a page cut short
      // by its limit holds rows, not messages.
      std::string said(util::trim(r.err));
      if (said.empty() && !empty && !r.timed_out) said = ncu_messages(path);
      std::string why = r.ok() ? "it printed nothing" : r.describe() + ": " + said;
      if (p.required) throw Error(fmt::format("exporting the {} page of {} failed: {}", p.name, report, why));
      log::warn("{}: no {} page ({})", report, p.name, why);
      std::error_code ec;
      fs::remove(path, ec);
      continue;
    }
    *p.slot = path;
  }
  return pages;
}

namespace {

// The configurations to profile: those named, or every one that is not held out.
std::vector<const config::InputConfig*> profiled_configs(const config::AppConfig& app, const NcuOptions& o) {
  std::vector<const config::InputConfig*> configs;
  if (o.configs.empty()) {
    for (const auto& c : app.configs)
      if (!c.held_out) configs.push_back(&c);
  } else {
    for (const auto& name : o.configs) {
      const auto* c = app.find(name);
      if (!c) throw UsageError(fmt::format("{}: no input configuration named \"{}\"", app.path, name));
      configs.push_back(c);
    }
  }
  return configs;
}

// manifest.json's head: how the profile was taken, of what, on which GPU.
nlohmann::json new_manifest(const config::AppConfig& app, const NcuOptions& o, const std::string& tracer) {
  nlohmann::json manifest;
  manifest["schema"] = "optimas.profile-dir/1";
  manifest["created"] = util::utc_now_iso8601();
  manifest["mode"] = o.mode == ProfileMode::full ? "full" : "two-pass";
  manifest["alpha"] = o.alpha;
  manifest["clock_control"] = o.clock_control;
  manifest["app"] = {{"name", app.name}, {"config_file", app.path}, {"dir", app.dir}};
  manifest["ncu"] = {{"path", o.ncu}, {"version", ncu_version(o.ncu)}};
  manifest["timing"] = o.mode == ProfileMode::full ? "none" : tracer.empty() ? "ncu" : "trace";
  manifest["launch_cap"] = o.launch_cap;
  manifest["gpu"] = gpu_info();
  return manifest;
}

// Builds the application in its folder, logging to build.log; its record for the manifest.
nlohmann::json build_app(const config::AppConfig& app, const std::string& out_abs) {
  util::ProcessSpec spec = util::shell(app.build_command);
  spec.cwd = app.dir;
  spec.timeout_s = app.timeout_s;
  spec.stdout_path = (fs::path(out_abs) / "build.log").string();
  spec.stderr_to_stdout = true;
  auto r = util::run_process(spec);
  if (!r.ok())
    throw Error(fmt::format("building {} failed ({}): {}\n{}", app.name, r.describe(), app.build_command,
                            log_tail(spec.stdout_path)));
  return {{"command", app.build_command}, {"exit", r.exit_code}, {"log", "build.log"}, {"wall_s", r.wall_s}};
}

// What went in: the configuration, the sources and the binary, with their hashes.
nlohmann::json profile_inputs(const config::AppConfig& app) {
  nlohmann::json inputs = nlohmann::json::array();
  inputs.push_back({{"path", app.path}, {"sha256", util::sha256_file(app.path)}});
  for (const auto& s : app.sources) {
    auto p = (fs::path(app.dir) / s).string();
    inputs.push_back({{"path", s}, {"sha256", util::sha256_file(p)}});
  }
  if (!app.binary.empty()) {
    auto p = (fs::path(app.dir) / app.binary).string();
    if (fs::exists(p)) inputs.push_back({{"path", app.binary}, {"sha256", util::sha256_file(p)}});
  }
  return inputs;
}

// The timing pass's choice in the run's record: the hot kernels and the launches the heavy
// pass profiles of each.
void record_hot(nlohmann::json& run, const std::vector<std::string>& hot, const std::vector<LaunchPick>& picks) {
  run["hot_kernels"] = hot;
  nlohmann::json cap = nlohmann::json::array();
  for (const auto& p : picks)
    cap.push_back({{"function", p.function}, {"invocations", p.invocations}, {"launches", p.traced}});
  run["launch_picks"] = cap;
}

// manifest.json written whole or not at all.
void save_manifest(const nlohmann::json& manifest, const std::string& out_abs) {
  std::string tmp = (fs::path(out_abs) / "manifest.json.tmp").string();
  util::write_file(tmp, util::json_text(manifest) + "\n");
  fs::rename(tmp, fs::path(out_abs) / "manifest.json");
}

// What the heavy pass profiles after the timing pass: the hot kernels, and those of
// o.also_profile that are hot no longer (recorded as the run's also_profiled); their names and
// the launches picked of each.
std::pair<std::vector<std::string>, std::vector<LaunchPick>>
heavy_kernels(const HotKernels& hk, const std::vector<Launch>& timed, const NcuOptions& o, nlohmann::json& run,
              const std::function<void(const std::string&)>& progress) {
  std::vector<std::string> names = hk.hot_names(), demangled = hk.hot_demangled(), also;
  for (const auto& k : hk.not_hot_of(o.also_profile)) {
    demangled.push_back(k.demangled);
    if (std::find(also.begin(), also.end(), k.kernel) == also.end()) also.push_back(k.kernel);
  }
  auto picks = pick_launches(timed, demangled, o.launch_cap);
  record_hot(run, names, picks);
  if (!also.empty()) {
    run["also_profiled"] = also;
    progress("      profiled too, hot before: " + util::join(also, ", "));
    names.insert(names.end(), also.begin(), also.end());
  }
  return {names, picks};
}

} // namespace

Profile profile_app(const config::AppConfig& app, const NcuOptions& options, const std::string& out_dir,
                    const std::function<void(const std::string&)>& progress) {
  auto ncu = util::find_executable(options.ncu);
  if (!ncu)
    throw Error(fmt::format("Nsight Compute's ncu was not found (looked for \"{}\" on PATH); install it or "
                            "pass --ncu PATH, or import existing reports with --import",
                            options.ncu));
  NcuOptions o = options;
  o.ncu = *ncu;
  if (o.repeats < 1) throw UsageError("--repeats must be at least 1");

  const std::vector<const config::InputConfig*> configs = profiled_configs(app, o);

  fs::create_directories(out_dir);
  std::string out_abs = fs::absolute(out_dir).lexically_normal().string();
  std::string tracer = o.mode == ProfileMode::two_pass ? resolve_tracer(o.tracer) : "";
  int passes = o.mode == ProfileMode::two_pass ? 2 : 1;
  int steps = (o.build ? 1 : 0) + static_cast<int>(configs.size()) * o.repeats * passes;
  int step = 0;
  const double started = profile_clock_s();
  auto elapsed = [&] { return profile_clock_s() - started; };
  std::function<void(const std::string&)> say = [&](const std::string& what) {
    progress(fmt::format("[{}/{}] {}", ++step, steps, what));
  };
  // Each pass may take what is left of the budget, and no more than its own limit.
  auto pass_timeout = [&] {
    if (o.budget_s <= 0) return o.timeout_s;
    double left = o.budget_s - elapsed();
    if (left <= 1)
      throw Error(fmt::format("the profile's time budget of {:.0f} s is spent after {} of {} steps; what was "
                              "finished is in {} (manifest.json); raise --budget or profile fewer "
                              "configurations (-i)",
                              o.budget_s, step, steps, out_abs));
    return std::min(o.timeout_s, left);
  };
  auto budget_left = [&] { return o.budget_s > 0 ? o.budget_s - elapsed() : std::numeric_limits<double>::infinity(); };
  int runs_after = static_cast<int>(configs.size()) * o.repeats - 1;
  if (o.mode == ProfileMode::two_pass)
    progress(tracer.empty() ? std::string("timing pass: ncu (no kernel tracer; build it with CUPTI for a faster one)")
                            : "timing pass: kernel tracer " + tracer);

  nlohmann::json manifest = new_manifest(app, o, tracer);

  if (o.build) {
    say("build: " + app.build_command);
    manifest["build"] = build_app(app, out_abs);
  }
  manifest["inputs"] = profile_inputs(app);
  manifest["runs"] = nlohmann::json::array();

  for (const auto* c : configs) {
    for (int rep = 0; rep < o.repeats; ++rep) {
      std::string run_name = o.repeats > 1 ? fmt::format("{}.r{}", c->name, rep) : c->name;
      fs::path run_dir = util::path_in(out_abs, run_name);
      fs::create_directories(run_dir);
      std::string program_out = (run_dir / "program.out").string();
      std::string command = app.command_for(*c, util::shell_quote(program_out));
      std::vector<std::string> app_argv = program_argv(command);
      nlohmann::json run = {{"config", c->name},  {"repeat", rep},   {"params", c->params},
                            {"command", command}, {"dir", run_name}, {"pages", nlohmann::json::object()}};

      std::vector<std::string> hot;
      std::vector<LaunchPick> picks;
      if (o.mode == ProfileMode::two_pass) {
        std::vector<Launch> timed;
        if (!tracer.empty())
          timed = traced_timing_pass(tracer, run, run_dir, app_argv, app.dir, out_abs, pass_timeout(), say);
        if (timed.empty()) {
          if (!tracer.empty()) --step; // the same step, done the other way
          timed = ncu_timing_pass(o, run, run_dir, app_argv, app.dir, out_abs, pass_timeout(), say);
        }
        HotKernels hk = select_hot_kernels(timed, o.alpha);
        progress(fmt::format("      hot kernels ({:.0f}% of {:.3f} ms): {} ({} launches timed, {:.0f} s so far)",
                             100 * o.alpha, hk.total_ns / 1e6, util::join(hk.hot_names(), ", "), timed.size(),
                             elapsed()));
        std::tie(hot, picks) = heavy_kernels(hk, timed, o, run, progress);
      }

      say(fmt::format("{}: {} pass{}", run_name, o.mode == ProfileMode::full ? "--set full" : "roofline + PC sampling",
                      hot.empty() ? "" : " over the hot kernels"));
      bool kept = false;
      auto keep = [&](const nlohmann::json& r) {
        if (!kept)
          manifest["runs"].push_back(r);
        else
          manifest["runs"].back() = r;
        kept = true;
        save_manifest(manifest, out_abs); // after every run: an interrupted profile keeps what it has
      };
      RoundContext rc{o,           app_argv, app.dir, out_abs,      run_dir, pass_timeout,
                      budget_left, elapsed,  0,       runs_after--, keep,    progress};
      heavy_pass(rc, run, hot, picks);
      std::error_code ec;
      fs::remove(program_out, ec); // the program's own output can be large and is not profile data
    }
  }
  return import_profile(out_abs);
}

} // namespace optimas::profile
