// The forked side of util::run_process (process.hpp): the supervisor, which starts the program
// and ends everything it started, and the program's last steps before exec. Everything here runs
// in a child forked from a process that may have other threads, so it keeps to calls that are
// safe there (and the program's side allocates only what it needs before exec). Internal to
// util/: process.cpp forks and calls supervisor_main.
#pragma once

#include "util/process.hpp"

#include <sys/types.h>

#include <string>
#include <vector>

namespace optimas::util::detail {

// The pipes between run_process and its supervisor and program. exec: the program's exec error;
// report: the supervisor's reports (the program's pid, then its wait status); go: the program
// waits on it until run_process has recorded it; out, err: captured output.
struct Pipes {
  int out[2] = {-1, -1}, err[2] = {-1, -1}, exec[2] = {-1, -1}, report[2] = {-1, -1}, go[2] = {-1, -1};
  bool capture_out = false, capture_err = false;
  void close_all();
};

// What the program's side needs, prepared before the fork (no allocation is safe after it).
struct ProgramImage {
  std::string exe;                      // argv[0] found on PATH
  std::vector<char*> argv, envp;        // null-terminated
  std::string stdout_path, stderr_path; // absolute
  const ProcessSpec* spec = nullptr;
};

// In the child of run_process's fork: becomes the supervisor (a subreaper that dies with
// `parent`), forks the program, and supervises it until it and everything it started have
// ended. Never returns.
[[noreturn]] void supervisor_main(pid_t parent, Pipes& pipes, const ProgramImage& image);

} // namespace optimas::util::detail
