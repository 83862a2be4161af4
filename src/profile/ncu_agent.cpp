#include "profile/ncu_agent.hpp"

#include "profile/hot_kernels.hpp"
#include "profile/ncu_readers.hpp"

#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <regex>

namespace optimas::profile {

namespace fs = std::filesystem;

std::vector<std::string> default_sections() {
  return {"SpeedOfLight", "SpeedOfLight_RooflineChart", "SourceCounters",         "WarpStateStats", "Occupancy",
          "LaunchStats",  "ComputeWorkloadAnalysis",    "MemoryWorkloadAnalysis", "SchedulerStats"};
}

std::vector<std::string> default_metrics() {
  // Plain FLOP and byte counts (not part of the sections) for roofline arithmetic intensity.
  return {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
          "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
          "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
          "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
          "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
          "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
          "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
          "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
          "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
          "dram__bytes_read.sum",
          "dram__bytes_write.sum",
          "lts__t_bytes.sum",
          "l1tex__t_bytes.sum",
          "smsp__inst_executed.sum",
          "smsp__pcsamp_sample_count"};
}

namespace {

// ncu output must not depend on the user's locale (thousands separators).
const std::map<std::string, std::string> k_ncu_env = {{"LC_ALL", "C"}};

std::string regex_escape(std::string_view s) {
  static constexpr std::string_view k_special = R"(\^$.|?*+()[]{})";
  std::string out;
  for (char c : s) {
    if (k_special.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// ncu's default --kernel-name-base "function" is the name without parameters or templates.
std::string function_name(std::string_view kernel) {
  std::string_view s = kernel;
  if (auto lt = s.find('<'); lt != std::string_view::npos) s = s.substr(0, lt);
  return std::string(s);
}

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

std::string log_tail(const std::string& path, std::size_t max_chars = 2000) {
  std::string text;
  try {
    text = util::read_file(path);
  } catch (const Error&) {
    return {};
  }
  if (text.size() > max_chars) text = "..." + text.substr(text.size() - max_chars);
  return text;
}

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

} // namespace

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

std::vector<std::string> heavy_command(const NcuOptions& o, const std::string& report,
                                       const std::vector<std::string>& hot_kernels,
                                       const std::vector<std::string>& app_argv) {
  std::vector<std::string> cmd = {o.ncu, "--target-processes", "all"};
  if (o.mode == ProfileMode::full) {
    cmd.insert(cmd.end(), {"--set", "full"});
  } else {
    for (const auto& s : o.sections.empty() ? default_sections() : o.sections) cmd.insert(cmd.end(), {"--section", s});
  }
  auto metrics = o.metrics.empty() ? default_metrics() : o.metrics;
  if (!metrics.empty()) cmd.insert(cmd.end(), {"--metrics", util::join(metrics, ",")});
  if (!hot_kernels.empty()) {
    std::vector<std::string> names;
    for (const auto& k : hot_kernels) {
      std::string f = regex_escape(function_name(k));
      if (std::find(names.begin(), names.end(), f) == names.end()) names.push_back(f);
    }
    cmd.insert(cmd.end(), {"-k", "regex:^(" + util::join(names, "|") + ")$"});
  }
  if (o.launch_count > 0) cmd.insert(cmd.end(), {"-c", std::to_string(o.launch_count)});
  if (o.warp_sampling_interval >= 0)
    cmd.insert(cmd.end(), {"--warp-sampling-interval", std::to_string(o.warp_sampling_interval)});
  cmd.insert(cmd.end(), {"--import-source", "yes", "--clock-control", o.clock_control, "-f", "-o", report});
  cmd.insert(cmd.end(), app_argv.begin(), app_argv.end());
  return cmd;
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
  for (auto& p : wanted) {
    std::string file = prefix + p.name + ".csv";
    std::string path = (fs::path(dir) / file).string();
    std::vector<std::string> argv = {ncu, "-i", report, "--csv"};
    argv.insert(argv.end(), p.args.begin(), p.args.end());
    util::ProcessSpec spec;
    spec.argv = argv;
    spec.env = k_ncu_env;
    spec.timeout_s = timeout_s;
    spec.stdout_path = path;
    auto r = util::run_process(spec);
    bool empty = fs::exists(path) && fs::file_size(path) == 0;
    if (!r.ok() || empty) {
      std::string why = r.ok() ? "it printed nothing" : r.describe() + ": " + std::string(util::trim(r.err));
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

  fs::create_directories(out_dir);
  std::string out_abs = fs::absolute(out_dir).lexically_normal().string();
  int passes = o.mode == ProfileMode::two_pass ? 2 : 1;
  int steps = (o.build ? 1 : 0) + static_cast<int>(configs.size()) * o.repeats * passes;
  int step = 0;
  auto say = [&](const std::string& what) { progress(fmt::format("[{}/{}] {}", ++step, steps, what)); };

  nlohmann::json manifest;
  manifest["schema"] = "optimas.profile-dir/1";
  manifest["created"] = util::utc_now_iso8601();
  manifest["mode"] = o.mode == ProfileMode::full ? "full" : "two-pass";
  manifest["alpha"] = o.alpha;
  manifest["clock_control"] = o.clock_control;
  manifest["app"] = {{"name", app.name}, {"config_file", app.path}, {"dir", app.dir}};
  manifest["ncu"] = {{"path", o.ncu}, {"version", ncu_version(o.ncu)}};
  manifest["gpu"] = gpu_info();

  if (o.build) {
    say("build: " + app.build_command);
    util::ProcessSpec spec = util::shell(app.build_command);
    spec.cwd = app.dir;
    spec.timeout_s = app.timeout_s;
    spec.stdout_path = (fs::path(out_abs) / "build.log").string();
    spec.stderr_to_stdout = true;
    auto r = util::run_process(spec);
    manifest["build"] = {
        {"command", app.build_command}, {"exit", r.exit_code}, {"log", "build.log"}, {"wall_s", r.wall_s}};
    if (!r.ok())
      throw Error(fmt::format("building {} failed ({}): {}\n{}", app.name, r.describe(), app.build_command,
                              log_tail(spec.stdout_path)));
  }

  // What went in: the configuration, the sources and the binary.
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
  manifest["inputs"] = inputs;
  manifest["runs"] = nlohmann::json::array();

  // The manifest is rewritten after every run so that an interrupted profile keeps what it has.
  auto save_manifest = [&] {
    std::string tmp = (fs::path(out_abs) / "manifest.json.tmp").string();
    util::write_file(tmp, util::json_text(manifest) + "\n");
    fs::rename(tmp, fs::path(out_abs) / "manifest.json");
  };

  for (const auto* c : configs) {
    for (int rep = 0; rep < o.repeats; ++rep) {
      std::string run_name = o.repeats > 1 ? fmt::format("{}.r{}", c->name, rep) : c->name;
      fs::path run_dir = fs::path(out_abs) / run_name;
      fs::create_directories(run_dir);
      std::string program_out = (run_dir / "program.out").string();
      std::string command = app.command_for(*c, util::shell_quote(program_out));
      std::vector<std::string> app_argv = program_argv(command);
      nlohmann::json run = {{"config", c->name},  {"repeat", rep},   {"params", c->params},
                            {"command", command}, {"dir", run_name}, {"pages", nlohmann::json::object()}};

      std::vector<std::string> hot;
      if (o.mode == ProfileMode::two_pass) {
        say(fmt::format("{}: timing pass over every kernel", run_name));
        std::string report = (run_dir / "timing").string();
        auto cmd = timing_command(o, report, app_argv);
        run["timing_command"] = util::shell_join(cmd);
        std::string log_path = (run_dir / "timing.log").string();
        auto r = run_logged(cmd, app.dir, log_path, o.timeout_s);
        if (!r.ok())
          throw Error(fmt::format("{}: the timing pass failed ({})\n{}\n{}", run_name, r.describe(),
                                  run["timing_command"].get<std::string>(), log_tail(log_path)));
        RunPages tp =
            export_pages(o.ncu, report + ".ncu-rep", run_dir.string(), "timing_", PageSet::timing, o.timeout_s);
        run["pages"]["timing_raw"] = fs::relative(tp.raw, out_abs).string();
        std::vector<Launch> timed;
        read_raw_page(tp.raw, timed);
        if (timed.empty()) throw Error(fmt::format("{}: the timing pass saw no kernel launch", run_name));
        HotKernels hk = select_hot_kernels(timed, o.alpha);
        hot = hk.hot_names();
        run["hot_kernels"] = hot;
        progress(fmt::format("      hot kernels ({:.0f}% of {:.3f} ms): {}", 100 * o.alpha, hk.total_ns / 1e6,
                             util::join(hot, ", ")));
      }

      say(fmt::format("{}: {} pass{}", run_name, o.mode == ProfileMode::full ? "--set full" : "roofline + PC sampling",
                      hot.empty() ? "" : " over the hot kernels"));
      std::string report = (run_dir / "report").string();
      auto cmd = heavy_command(o, report, hot, app_argv);
      run["ncu_command"] = util::shell_join(cmd);
      std::string log_path = (run_dir / "ncu.log").string();
      auto r = run_logged(cmd, app.dir, log_path, o.timeout_s);
      run["exit"] = r.exit_code;
      run["wall_s"] = r.wall_s;
      if (!r.ok())
        throw Error(fmt::format("{}: profiling failed ({})\n{}\n{}", run_name, r.describe(),
                                run["ncu_command"].get<std::string>(), log_tail(log_path)));
      RunPages pages = export_pages(o.ncu, report + ".ncu-rep", run_dir.string(), "", PageSet::all, o.timeout_s);
      for (auto [key, path] : {std::pair{"details", pages.details},
                               {"raw", pages.raw},
                               {"source", pages.source},
                               {"session", pages.session}})
        if (!path.empty()) run["pages"][key] = fs::relative(path, out_abs).string();
      run["report"] = fs::relative(report + ".ncu-rep", out_abs).string();
      std::error_code ec;
      fs::remove(program_out, ec); // the program's own output can be large and is not profile data
      manifest["runs"].push_back(run);
      save_manifest();
    }
  }
  return import_profile(out_abs);
}

} // namespace optimas::profile
