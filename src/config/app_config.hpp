// optimas.yml of an application: how to build it, how to run it under each input
// configuration, and where its output is.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace optimas::config {

struct InputConfig {
  std::string name;
  bool is_default = false;
  bool held_out = false;                     // never shown to a backend; used to validate variants
  std::map<std::string, std::string> params; // values of the run command's {placeholders}
  int line = 0;                              // where it is declared, for messages
};

// How `optimas run` works on this application (optimas.yml sections optimize, measure,
// validate); the command line overrides each key.
struct OptimizeSettings {
  std::string backend = "builtin";
  std::map<std::string, std::string> options; // backend options (key -> value)
  std::string diagnostics = "pc,ia,roofline";
  std::string scope = "kernel";
  int iterations = 1; // rounds of profile -> edit -> evaluate, each from the best variant so far
  int retries = 3;    // further attempts after a build failure or a guardrail rejection
};

struct MeasureSettings {
  int runs = 5;   // timed runs of baseline and variant each, interleaved
  int warmup = 1; // untimed runs of each first
  // Acceptance (docs/loop.md): the speedup's interval must lie above min_speedup, and a
  // confirmation round of `runs` fresh interleaved runs must agree.
  double min_speedup = 1.01;
  bool confirm = true;
  // trace (the traced GPU time of every kernel), kernel_time (the program's printed time), wall,
  // or auto: trace for CUDA programs where the tracer exists, else kernel_time when configured.
  std::string timing = "auto";
  std::vector<std::string> configs; // empty: every configuration
  double confidence = 0.95;
  double significance = 0.05;
};

struct ValidateSettings {
  std::string tolerance = "exact"; // exact, abs, rel or ulp
  double tolerance_value = 0;
  int fresh_seeds = 1;              // extra runs per configuration with seeds nobody has seen
  std::vector<std::string> configs; // empty: every configuration (held-out ones included)
  std::vector<std::string> ignore;  // regexes: stdout lines dropped before stdout is compared
};

// The time a program prints about its own kernels (run.kernel_time).
struct KernelTime {
  std::string pattern;     // regex, group 1 = the figure; empty: the program prints none
  double unit_ms = 1;      // milliseconds per unit of the figure (ms 1, us 1e-3, ns 1e-6, s 1e3)
  std::string unit = "ms"; // as written: ms, us, ns or s
  bool per_call = false;   // the figure is one call's time (an average), not the whole run's
  std::string calls;       // with per_call: calls in one run, a number or a {placeholder}

  bool empty() const { return pattern.empty(); }
};

struct AppConfig {
  std::string path; // the optimas.yml file
  std::string dir;  // its folder: build and run happen there
  std::string name;
  std::string description;
  std::vector<std::string> sources;
  std::string build_command;
  std::string clean_command; // run before every build in a scratch copy (e.g. make clean)
  std::string build_dir;     // out-of-tree build folder (e.g. build), never part of a snapshot
  std::string binary;
  std::string run_command;          // with {placeholders}
  std::vector<std::string> outputs; // files the program writes, compared byte for byte
  KernelTime kernel_time;
  double timeout_s = 600;
  std::string seed_param; // the placeholder holding the program's seed; empty: it takes none
  bool needs_gpu = true;  // false for host programs (tests), which can run anywhere
  std::vector<InputConfig> configs;
  OptimizeSettings optimize;
  MeasureSettings measure;
  ValidateSettings validate;

  const InputConfig& default_config() const;
  const InputConfig* find(const std::string& name) const;
  // The run command with placeholders filled; {output} becomes `output_path`.
  std::string command_for(const InputConfig& c, const std::string& output_path) const;
  // How many kernel calls one run of `c` makes (kernel_time.calls filled in); 1 when per run.
  double kernel_calls(const InputConfig& c) const;
};

// Reads and validates an optimas.yml; errors name the file and line.
AppConfig load_app_config(const std::string& path);

} // namespace optimas::config
