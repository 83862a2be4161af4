// optimas.yml of an application: how to build it, how to run it under each input
// configuration, and where its output is.
#pragma once

#include "config/options.hpp"
#include "config/tune_config.hpp"

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
// validate); the command line overrides each key. The defaults are the option table's.
struct OptimizeSettings {
  std::string backend = default_of<std::string>("model");
  std::map<std::string, std::string> options; // backend options (key -> value)
  std::string diagnostics = default_of<std::string>("diagnostics");
  std::string scope = default_of<std::string>("scope");
  // allowed: the prompt lets a model reorder floating-point operations, since the compared output
  // is the program's own check; validation is unchanged (docs/prompts-and-backends.md).
  std::string fp_reassociation = default_of<std::string>("fp_reassociation");
  // Rounds of ask -> edit -> evaluate, each from the best variant so far and told what earlier
  // candidates measured (optimize.iterations is its older name), and candidates asked per round.
  int rounds = default_of<int>("rounds");
  int candidates = default_of<int>("candidates");
  bool candidates_given = false; // set in optimas.yml or on the command line (else the builtin may offer more)
  // corpus: worked examples from the store's earlier accepted variants (store/memory.hpp); off.
  std::string memory = default_of<std::string>("memory");
  int retries = default_of<int>("retries"); // further attempts after a build failure or a guardrail rejection
};

struct MeasureSettings {
  int runs = default_of<int>("runs");     // timed runs of baseline and variant each, interleaved
  int warmup = default_of<int>("warmup"); // untimed runs of each first
  // Acceptance (docs/loop.md): the speedup's interval must lie above min_speedup, and a
  // confirmation round of `runs` fresh interleaved runs must agree.
  double min_speedup = default_of<double>("min_speedup");
  bool confirm = default_of<bool>("confirm");
  // fixed, or sequential: per-launch hot-kernel times, judged at looks until the decision is clear.
  std::string verdict = default_of<std::string>("verdict");
  // auto: traced measurement runs end after the hot kernels' launches (docs/loop.md); off: whole.
  std::string end_after_kernels = default_of<std::string>("end_after_kernels");
  // trace (the traced GPU time of every kernel), kernel_time (the program's printed time), wall,
  // or auto: trace for CUDA programs where the tracer exists, else kernel_time when configured.
  std::string timing = default_of<std::string>("timing");
  std::vector<std::string> configs; // empty: every configuration
  double confidence = default_of<double>("confidence");
  double significance = default_of<double>("significance");
};

struct ValidateSettings {
  std::string tolerance = parse_tolerance(default_of<std::string>("tolerance")).mode; // exact, abs, rel or ulp
  double tolerance_value = parse_tolerance(default_of<std::string>("tolerance")).value;
  int fresh_seeds = default_of<int>("fresh_seeds"); // extra runs per configuration with seeds nobody has seen
  std::vector<std::string> configs;                 // empty: every configuration (held-out ones included)
  std::vector<std::string> ignore;                  // regexes: stdout lines dropped before stdout is compared
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
  TuneSettings tune; // empty: no tune: block

  const InputConfig& default_config() const;
  const InputConfig* find(const std::string& name) const;
  // The run command with placeholders filled; {output} becomes `output_path`.
  std::string command_for(const InputConfig& c, const std::string& output_path) const;
  // How many kernel calls one run of `c` makes (kernel_time.calls filled in); 1 when per run.
  double kernel_calls(const InputConfig& c) const;
};

// Reads and validates an optimas.yml; errors name the file and line.
AppConfig load_app_config(const std::string& path);

// The checks of settings that depend on the rest of the file, for the yml loader and the command
// line's overrides alike: why `timing` cannot be used for `app`, or empty.
std::string timing_needs(const AppConfig& app, const std::string& timing);
// Why optimize.fp_reassociation: allowed is likely to be wasted on `app`: validation is byte for
// byte on files the program writes, which hold floating-point data that a reordered sum changes.
// Empty when it is not allowed, validation has a tolerance, or the compared output is stdout (a
// program's own check, PASS, as often as not: the user's call).
std::string fp_reassociation_caveat(const AppConfig& app);
// Why a measure.configs or validate.configs list (`section`) cannot be used for `app`, or empty.
std::string unknown_config(const AppConfig& app, const std::vector<std::string>& names, const char* section);

} // namespace optimas::config
