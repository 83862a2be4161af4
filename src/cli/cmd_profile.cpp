// optimas profile: run Nsight Compute over an application, or import existing reports.
#include "cli/commands.hpp"

#include "config/app_config.hpp"
#include "profile/hot_kernels.hpp"
#include "profile/importer.hpp"
#include "profile/json.hpp"
#include "profile/ncu_agent.hpp"

#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <fmt/printf.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace optimas::cli {

namespace fs = std::filesystem;

namespace {

struct ProfileArgs {
  std::string app = ".";
  std::string import_path;
  std::string out;
  std::vector<std::string> inputs;
  bool full = false;
  double alpha = profile::k_default_alpha;
  std::string clock_control = "none";
  std::vector<std::string> sections;
  std::string metrics;
  int repeats = 1;
  int launch_count = 0;
  int launch_cap = 3;
  std::string tracer = "auto";
  double budget_s = 0;
  int warp_sampling_interval = -1;
  double timeout_s = 1800;
  std::string ncu = "ncu";
  bool no_build = false;
  bool dry_run = false;
  bool json = false;
  bool all_metrics = false;
  bool instructions = false;
};

std::string app_config_path(const std::string& app) {
  fs::path p(app);
  if (fs::is_directory(p)) p /= "optimas.yml";
  return p.string();
}

void print_summary(const profile::Profile& prof) {
  for (const auto& run : prof.runs) {
    std::cout << fmt::sprintf("run %s (repeat %d): %zu profiled launches", run.config.c_str(), run.repeat,
                              run.launches.size());
    if (!run.timing.empty()) std::cout << fmt::sprintf(", %zu in the timing pass", run.timing.size());
    std::cout << fmt::sprintf(", %.1f KB of pages\n", static_cast<double>(run.input_bytes) / 1024.0);
    auto hot = profile::select_hot_kernels(run.timed_launches());
    std::cout << fmt::sprintf("  %-40s %8s %12s %7s\n", "kernel", "launches", "time (us)", "share");
    for (const auto& k : hot.kernels)
      std::cout << fmt::sprintf("  %-40s %8d %12.3f %6.1f%%%s\n", k.kernel.c_str(), k.launches, k.total_ns / 1e3,
                                100 * k.share, k.hot ? "  hot" : "");
    for (const auto& s : run.sources) {
      std::cout << fmt::sprintf("  source of result %d (%s): %llu samples over %zu lines, %zu instructions\n",
                                s.result_id, s.kernel.c_str(), static_cast<unsigned long long>(s.total_samples()),
                                s.lines.size(), s.instructions.size());
      std::vector<const profile::SourceLine*> lines;
      for (const auto& l : s.lines) lines.push_back(&l);
      std::stable_sort(lines.begin(), lines.end(), [](auto* a, auto* b) { return a->samples.all > b->samples.all; });
      for (std::size_t i = 0; i < std::min<std::size_t>(3, lines.size()); ++i) {
        const auto* l = lines[i];
        if (l->samples.all == 0) break;
        std::size_t top = 0;
        for (std::size_t k = 1; k < profile::k_stall_count; ++k)
          if (l->samples.stalls[k] > l->samples.stalls[top]) top = k;
        std::cout << fmt::sprintf("    %s:%d  %llu samples, most %s  | %s\n", fs::path(l->file).filename().c_str(),
                                  l->line, static_cast<unsigned long long>(l->samples.all),
                                  std::string(profile::stall_label(static_cast<profile::Stall>(top))).c_str(),
                                  std::string(util::trim(l->code)).substr(0, 60).c_str());
      }
    }
  }
}

void run_profile(const ProfileArgs& a) {
  profile::Profile prof;
  if (!a.import_path.empty()) {
    profile::ImportOptions io;
    io.ncu = a.ncu;
    io.timeout_s = a.timeout_s;
    if (!a.out.empty()) io.export_dir = a.out;
    log::info("importing {}", a.import_path);
    prof = profile::import_profile(a.import_path, io);
  } else {
    auto app = config::load_app_config(app_config_path(a.app));
    profile::NcuOptions o;
    o.ncu = a.ncu;
    o.mode = a.full ? profile::ProfileMode::full : profile::ProfileMode::two_pass;
    o.alpha = a.alpha;
    o.clock_control = a.clock_control;
    o.sections = a.sections;
    if (!a.metrics.empty())
      for (auto m : util::split(a.metrics, ',')) o.metrics.emplace_back(util::trim(m));
    o.configs = a.inputs;
    o.repeats = a.repeats;
    o.launch_count = a.launch_count;
    o.launch_cap = a.launch_cap;
    o.tracer = a.tracer;
    o.budget_s = a.budget_s;
    o.warp_sampling_interval = a.warp_sampling_interval;
    o.timeout_s = a.timeout_s;
    o.build = !a.no_build;
    std::string out = a.out.empty() ? (fs::path("optimas-profile") / app.name).string() : a.out;
    if (a.dry_run) {
      std::cout << fmt::sprintf("build (in %s): %s\n", app.dir.c_str(), app.build_command.c_str());
      for (const auto& c : app.configs) {
        if (!o.configs.empty() && std::find(o.configs.begin(), o.configs.end(), c.name) == o.configs.end()) continue;
        if (o.configs.empty() && c.held_out) continue;
        auto argv = profile::program_argv(
            app.command_for(c, util::shell_quote((fs::path(out) / c.name / "program.out").string())));
        bool two_pass = o.mode == profile::ProfileMode::two_pass;
        std::string tracer = two_pass ? profile::resolve_tracer(o.tracer) : "";
        if (two_pass)
          std::cout << fmt::sprintf("%s: %s\n", c.name.c_str(),
                      util::shell_join(tracer.empty()
                                           ? profile::timing_command(o, (fs::path(out) / c.name / "timing").string(), argv)
                                           : profile::trace_command(tracer, (fs::path(out) / c.name / "trace").string(), argv))
                          .c_str());
        // The heavy pass's kernels and launches come from the timing pass; placeholders stand for them.
        std::vector<profile::LaunchPick> picks;
        if (two_pass && o.launch_cap > 0) picks.push_back({"HOT_KERNEL", {1}, 1});
        std::cout << fmt::sprintf("%s: %s\n", c.name.c_str(),
                    util::shell_join(profile::heavy_command(o, (fs::path(out) / c.name / "report").string(),
                                                            two_pass ? std::vector<std::string>{"HOT_KERNEL"}
                                                                     : std::vector<std::string>{},
                                                            picks, argv))
                        .c_str());
      }
      return;
    }
    prof = profile::profile_app(app, o, out, [](const std::string& line) { log::info("{}", line); });
    log::info("profile written to {}", out);
  }
  if (a.json) {
    profile::JsonOptions jo;
    jo.metrics = a.all_metrics;
    jo.instructions = a.instructions;
    std::cout << util::json_text(profile::to_json(prof, jo)) << "\n";
  } else {
    print_summary(prof);
  }
}

} // namespace

void add_profile_command(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  auto* cmd = app.add_subcommand("profile", "Profile an application with Nsight Compute, or import existing reports");
  cmd->add_option("app", args->app, "optimas.yml of the application, or its folder")->capture_default_str();
  cmd->add_option("--import", args->import_path,
                  "Import instead of profiling: a profile directory, a folder of exported CSV pages, or a .ncu-rep");
  cmd->add_option("-o,--out", args->out, "Profile directory to write (default: optimas-profile/<app>)");
  cmd->add_option("-i,--input", args->inputs, "Input configuration to profile (repeatable; default: all visible)");
  cmd->add_flag("--full", args->full, "One --set full pass over every kernel (the paper's mode) instead of two passes");
  cmd->add_option("--alpha", args->alpha, "Hot kernels: smallest set with at least this share of the time")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--clock-control", args->clock_control, "ncu --clock-control (none keeps the GPU's clocks)")
      ->check(CLI::IsMember({"none", "base"}))
      ->capture_default_str();
  cmd->add_option("--section", args->sections,
                  "ncu section for the heavy pass (repeatable; default: roofline, PC "
                  "sampling, occupancy, launch, memory)");
  cmd->add_option("--metrics", args->metrics, "Comma-separated counters to collect (default: FLOP and byte counts)");
  cmd->add_option("--repeats", args->repeats, "Passes per input configuration")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("-c,--launch-count", args->launch_count,
                  "Profile at most this many launches in the heavy pass (0: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--launch-cap", args->launch_cap,
                  "Heavy pass: profile at most this many launches of each hot kernel, spread over the run (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--tracer", args->tracer,
                  "Kernel tracer for the timing pass: auto (liboptimas-trace.so beside optimas), a path, or none "
                  "(ncu times every launch)")
      ->envname("OPTIMAS_TRACER")
      ->capture_default_str();
  cmd->add_option("--budget", args->budget_s, "Seconds the whole profile may take (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--warp-sampling-interval", args->warp_sampling_interval, "ncu --warp-sampling-interval (0..31)")
      ->check(CLI::Range(0, 31));
  cmd->add_option("--timeout", args->timeout_s, "Seconds allowed for each ncu invocation")->capture_default_str();
  cmd->add_option("--ncu", args->ncu, "The ncu executable")->envname("OPTIMAS_NCU")->capture_default_str();
  cmd->add_flag("--no-build", args->no_build, "Do not run the application's build command first");
  cmd->add_flag("--dry-run", args->dry_run, "Print the commands that would run, and run nothing");
  cmd->add_flag("--json", args->json, "Print the profile model as JSON on stdout");
  cmd->add_flag("--all-metrics", args->all_metrics, "With --json: every metric of every launch");
  cmd->add_flag("--instructions", args->instructions, "With --json: per-SASS-instruction samples");
  cmd->callback([args] { run_profile(*args); });
}

} // namespace optimas::cli
