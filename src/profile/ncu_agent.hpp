// The profiling agent: builds an application, runs Nsight Compute over each input
// configuration (a cheap timing pass, then the heavy sections for the hot kernels only, or
// the paper's single --set full pass) and exports the pages into a profile directory.
#pragma once

#include "config/app_config.hpp"
#include "profile/importer.hpp"
#include "profile/profile.hpp"
#include "profile/trace.hpp"

#include <functional>
#include <string>
#include <vector>

namespace optimas::profile {

enum class ProfileMode { two_pass, full };

struct NcuOptions {
  std::string ncu = config::default_of<std::string>("ncu");
  ProfileMode mode = ProfileMode::two_pass;
  double alpha = config::default_of<double>("alpha"); // hot-kernel time share
  std::string clock_control = "none";                 // ncu --clock-control
  std::vector<std::string> sections;                  // heavy-pass sections; empty: default_sections()
  std::vector<std::string> metrics; // extra counters for interaction analysis; empty: default_metrics()
  std::vector<std::string> configs; // input configurations to profile; empty: all visible ones
  int repeats = 1;                  // passes per configuration (more runs for counter analysis)
  int launch_count = 0;             // max profiled launches in the heavy pass, all kernels together (0: all)
  int launch_cap = 3;               // heavy pass: launches per hot kernel, spread over the run (0: all)
  // liboptimas-trace.so for the timing pass; "auto": find_tracer(); "": ncu
  std::string tracer = config::default_of<std::string>("tracer");
  double budget_s = 0;             // the whole profile's time limit in seconds (0: none)
  int warp_sampling_interval = -1; // ncu --warp-sampling-interval (-1: ncu's default)
  double timeout_s = 1800;         // per ncu invocation; the whole process group is killed
  bool build = true;               // run the application's build command first
  // Kernels (KernelTime::kernel names) the heavy pass profiles too where the timing pass finds
  // them no longer hot: a variant's re-profile asks for its parent's hot kernels, so that an edit
  // that made its kernel fast enough to leave the hot set is still compared before and after.
  std::vector<std::string> also_profile;
};

// Roofline (SpeedOfLight + RooflineChart), PC sampling (SourceCounters + WarpStateStats),
// occupancy, launch and memory sections.
std::vector<std::string> default_sections();
std::vector<std::string> default_metrics();

// Profiles every selected configuration of `app` into `out_dir` and reads the result back.
// `progress` receives one line per step.
Profile profile_app(const config::AppConfig& app, const NcuOptions& options, const std::string& out_dir,
                    const std::function<void(const std::string&)>& progress);

// The time an optional page (source, session) may take to export: ten times what the required
// pages of the same report took, at least k_optional_export_floor_s, at most timeout_s (0: none).
constexpr double k_optional_export_floor_s = 30;
double optional_export_limit(double timeout_s, double required_s);

// Which pages to export: the timing pass needs only its raw page.
enum class PageSet { timing, all };

// Exports the pages of an .ncu-rep into `dir` (files named <prefix>details.csv, ...) with
// LC_ALL=C and base units. Optional pages ncu cannot produce for the report, or does not
// produce within optional_export_limit, are left out with a warning.
RunPages export_pages(const std::string& ncu, const std::string& report, const std::string& dir,
                      const std::string& prefix, PageSet set, double timeout_s);

// "2025.3.1.0", from `ncu --version`; empty when it cannot be run.
std::string ncu_version(const std::string& ncu);

// The ncu command line of each pass (exposed for --dry-run and tests).
// How a profiler starts run.command: a plain command (util::split_simple_command) as its own
// words, anything else through /bin/sh -c, so that redirections, pipes and `;` mean what they
// mean in a shell.
std::vector<std::string> program_argv(const std::string& command);

std::vector<std::string> timing_command(const NcuOptions& o, const std::string& report,
                                        const std::vector<std::string>& app_argv);
// The timing pass with the kernel tracer: the program itself, with the tracer injected.
std::vector<std::string> trace_command(const std::string& tracer, const std::string& trace_dir,
                                       const std::vector<std::string>& app_argv);
// `picks` (from the timing pass) cap the launches per kernel with --kernel-id; without them
// every launch of the hot kernels is profiled (up to launch_count).
std::vector<std::string> heavy_command(const NcuOptions& o, const std::string& report,
                                       const std::vector<std::string>& hot_kernels,
                                       const std::vector<LaunchPick>& picks, const std::vector<std::string>& app_argv);

// The tracer to use: $OPTIMAS_TRACER ("none" or "" turns it off), else liboptimas-trace.so
// beside the optimas executable, in the installed library folder or in ../lib; empty when there
// is none.
std::string find_tracer();
// NcuOptions::tracer resolved: "auto" becomes find_tracer(), a path must exist.
std::string resolve_tracer(const std::string& setting);

} // namespace optimas::profile
