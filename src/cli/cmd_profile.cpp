// optimas profile: run Nsight Compute over an application, or import existing reports.
#include "cli/commands.hpp"

#include "cli/options.hpp"
#include "config/app_config.hpp"
#include "profile/hot_kernels.hpp"
#include "profile/importer.hpp"
#include "profile/json.hpp"
#include "profile/ncu_agent.hpp"

#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/names.hpp"
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

// The profiler's options are bound to profile::NcuOptions itself, so that its defaults are the
// only ones; the option table's rows (ncu, tracer, alpha, input) start at the table's.
struct ProfileArgs {
  std::string app = ".";
  std::string import_path;
  std::string out;
  profile::NcuOptions ncu;
  bool full = false;
  std::string metrics;
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

void print_summary(const profile::Profile& prof, double alpha) {
  const auto& manifest_runs = prof.manifest.value("runs", nlohmann::json::array());
  for (std::size_t i = 0; i < prof.runs.size(); ++i) {
    const auto& run = prof.runs[i];
    std::cout << fmt::sprintf("run %s (repeat %d): %zu profiled launches", run.config.c_str(), run.repeat,
                              run.launches.size());
    if (!run.timing.empty()) std::cout << fmt::sprintf(", %zu in the timing pass", run.timing.size());
    std::cout << fmt::sprintf(", %.1f KB of pages\n", static_cast<double>(run.input_bytes) / 1024.0);
    // A heavy pass cut by the budget or a timeout: what the run holds of what was planned.
    if (i < manifest_runs.size() && manifest_runs[i].contains("cut"))
      std::cout << fmt::sprintf("  %s; %s\n", profile::cut_text(manifest_runs[i]).c_str(),
                                manifest_runs[i]["cut"]["why"].get<std::string>().c_str());
    auto hot = profile::select_hot_kernels(run.timed_launches(), alpha);
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
    io.ncu = a.ncu.ncu;
    io.timeout_s = a.ncu.timeout_s;
    if (!a.out.empty()) io.export_dir = a.out;
    log::info("importing {}", a.import_path);
    prof = profile::import_profile(a.import_path, io);
  } else {
    auto app = config::load_app_config(app_config_path(a.app));
    profile::NcuOptions o = a.ncu;
    o.mode = a.full ? profile::ProfileMode::full : profile::ProfileMode::two_pass;
    if (!a.metrics.empty())
      for (auto m : util::split(a.metrics, ',')) o.metrics.emplace_back(util::trim(m));
    o.build = !a.no_build;
    for (const auto& name : o.configs)
      if (!app.find(name)) {
        std::vector<std::string> names;
        for (const auto& c : app.configs) names.push_back(c.name);
        throw UsageError(
            fmt::format("-i {}: {} has no such configuration (it has {})", name, app.path, util::join(names, ", ")));
      }
    // Absolute, as the program is handed it: it runs in its own folder (the dry run shows the same).
    std::string out = fs::absolute(a.out.empty() ? util::path_in("optimas-profile", app.name) : fs::path(a.out))
                          .lexically_normal()
                          .string();
    if (a.dry_run) {
      std::cout << fmt::sprintf("build (in %s): %s\n", app.dir.c_str(), app.build_command.c_str());
      for (const auto& c : app.configs) {
        if (!o.configs.empty() && std::find(o.configs.begin(), o.configs.end(), c.name) == o.configs.end()) continue;
        if (o.configs.empty() && c.held_out) continue;
        auto argv = profile::program_argv(
            app.command_for(c, util::shell_quote((util::path_in(out, c.name) / "program.out").string())));
        bool two_pass = o.mode == profile::ProfileMode::two_pass;
        std::string tracer = two_pass ? profile::resolve_tracer(o.tracer) : "";
        if (two_pass)
          std::cout << fmt::sprintf(
              "%s: %s\n", c.name.c_str(),
              util::shell_join(
                  tracer.empty()
                      ? profile::timing_command(o, (util::path_in(out, c.name) / "timing").string(), argv)
                      : profile::trace_command(tracer, (util::path_in(out, c.name) / "trace").string(), argv))
                  .c_str());
        // The heavy pass's kernels and launches come from the timing pass; placeholders stand for them.
        std::vector<profile::LaunchPick> picks;
        if (two_pass && o.launch_cap > 0) picks.push_back({"HOT_KERNEL", {1}, 1});
        std::cout << fmt::sprintf(
            "%s: %s\n", c.name.c_str(),
            util::shell_join(
                profile::heavy_command(o, (util::path_in(out, c.name) / "report.r1").string(),
                                       two_pass ? std::vector<std::string>{"HOT_KERNEL"} : std::vector<std::string>{},
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
    jo.alpha = a.ncu.alpha;
    std::cout << util::json_text(profile::to_json(prof, jo)) << "\n";
  } else {
    print_summary(prof, a.ncu.alpha);
  }
}

} // namespace

void add_profile_command(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  auto* cmd = app.add_subcommand("profile", "Profile an application with Nsight Compute, or import existing reports");
  cmd->add_option("app", args->app, "optimas.yml of the application, or its folder")->capture_default_str();
  add_option(cmd, "app", args->app);
  add_option(cmd, "import", args->import_path);
  cmd->add_option("-o,--out", args->out, "Profile directory to write (default: optimas-profile/<app>)");
  add_option(cmd, "input", args->ncu.configs);
  add_flag(cmd, "full_profile", args->full);
  add_option(cmd, "alpha", args->ncu.alpha);
  cmd->add_option("--clock-control", args->ncu.clock_control, "ncu --clock-control (none keeps the GPU's clocks)")
      ->check(CLI::IsMember({"none", "base"}))
      ->capture_default_str();
  cmd->add_option("--section", args->ncu.sections,
                  "ncu section for the heavy pass (repeatable; default: roofline, PC "
                  "sampling, occupancy, launch, memory)");
  cmd->add_option("--metrics", args->metrics, "Comma-separated counters to collect (default: FLOP and byte counts)");
  cmd->add_option("--repeats", args->ncu.repeats, "Passes per input configuration")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--launch-count", args->ncu.launch_count,
                  "Profile at most this many launches in the heavy pass (0: all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--launch-cap", args->ncu.launch_cap,
                  "Heavy pass: profile at most this many launches of each hot kernel, spread over the run (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_option(cmd, "tracer", args->ncu.tracer);
  cmd->add_option("--budget", args->ncu.budget_s, "Seconds the whole profile may take (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--warp-sampling-interval", args->ncu.warp_sampling_interval, "ncu --warp-sampling-interval (0..31)")
      ->check(CLI::Range(0, 31));
  cmd->add_option("--timeout", args->ncu.timeout_s, "Seconds allowed for each ncu invocation")->capture_default_str();
  add_option(cmd, "ncu", args->ncu.ncu);
  cmd->add_flag("--no-build", args->no_build, "Do not run the application's build command first");
  cmd->add_flag("--dry-run", args->dry_run, "Print the commands that would run, and run nothing");
  cmd->add_flag("--json", args->json, "Print the profile model as JSON on stdout");
  cmd->add_flag("--all-metrics", args->all_metrics, "With --json: every metric of every launch");
  cmd->add_flag("--instructions", args->instructions, "With --json: per-SASS-instruction samples");
  cmd->callback([args] { run_profile(*args); });
}

} // namespace optimas::cli
