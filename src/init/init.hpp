// `optimas init`: writes optimas.yml for an application it has never seen. It reads the build
// files and sources, builds a copy of the folder, runs the program a few times (traced where a
// GPU and the tracer are), and turns what it saw into keys, each with its reason; the user's
// folder gets optimas.yml and nothing else.
#pragma once

#include "init/proposal.hpp"
#include "util/process.hpp"

#include <functional>
#include <string>
#include <vector>

namespace optimas::init {

struct InitOptions {
  std::string dir = ".";
  std::vector<std::string> run_argv; // after `--`; empty: the binary with no arguments
  bool force = false;                // replace an existing optimas.yml
  bool cpu = false;                  // a host program: run it here without a GPU (needs_gpu: false)
  bool no_run = false;               // read the folder only: no build, no runs
  int runs = 3;
  double run_timeout_s = 300;
  double build_timeout_s = 3600;
  std::string tracer = "auto";                      // as the option table's tracer: auto, none or a path
  std::function<void(const std::string&)> progress; // one line per step
};

struct InitResult {
  std::string path; // the optimas.yml written
  Proposal proposal;
  bool built = false;
  int runs = 0; // runs observed
};

// Investigates options.dir and writes its optimas.yml. Throws Error when the folder cannot be
// read or the file exists (without force); a build or run that fails is a finding in the file.
InitResult init_application(const InitOptions& options);

// What init says of its check, `optimas run --app FILE --dry-run` (`check`): "it loads", "it does
// not load (exit code 2), fix the file:" with the run's output below, or, where the check did
// not finish (not started, timed out, killed), that and why: "does not load" with no output read
// as a fault of the file when the binary had been replaced under a running init.
std::string check_verdict(const util::ProcessResult& check);

// The folder's kernel files: sources and headers defining __global__ or __device__ functions (relative
// paths, sorted), outside hidden folders, Optimas' folders and `build_dir`.
std::vector<std::string> kernel_sources(const std::string& dir, const std::string& build_dir);

} // namespace optimas::init
