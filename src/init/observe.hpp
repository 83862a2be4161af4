// What a few runs of a program say about how to validate and time it: the stdout lines that vary
// (validate.ignore), the printed time that matches the traced kernel time (run.kernel_time), the
// files each run wrote (run.output) and whether they are the same bytes every time. Pure
// functions over recorded runs; init/init.cpp records them.
#pragma once

#include "init/printed_times.hpp"
#include "init/proposal.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace optimas::init {

struct KernelLaunches {
  std::string name;
  std::uint64_t launches = 0;
  double total_ms = 0;
};

struct ObservedRun {
  std::string stdout_text;
  double wall_s = 0;
  std::map<std::string, std::string> written; // files the run created or changed (relative path -> SHA-256)
  std::optional<double> traced_ms;            // the traced GPU time of all its kernels
  std::vector<KernelLaunches> kernels;        // from the trace, by kernel
};

// validate.ignore: the shape of every stdout line that is not printed identically by every run,
// and of every line that reads as a time or rate (a faster variant changes it). Lines the kernel
// time pattern matches are left out (they are dropped anyway). A varying line that does not read
// as a time is likely a result that is not deterministic: it comes back inactive (a TODO, not
// ignored: ignoring it would let a variant that computes something else pass), and `findings`
// gets a sentence for it.
std::vector<IgnoreGuess> ignore_patterns(const std::vector<ObservedRun>& runs, const std::string& kernel_time_pattern,
                                         std::vector<std::string>& findings);

// run.kernel_time: among the printed times, the one closest to the traced kernel time of the
// runs, per run or per call of one kernel (its launches a parameter's value where one matches);
// with no trace, the one whose words say kernel. `from_sources` are the printf formats, used
// when the runs printed none. nullopt when nothing fits.
std::optional<KernelTimeGuess> choose_kernel_time(const std::vector<ObservedRun>& runs,
                                                  const std::vector<PrintedTime>& from_sources,
                                                  const std::vector<Parameter>& parameters);

// The files every run wrote, and a finding for each that differs between runs (where the bytes
// first differ is not known from hashes: the file and how many distinct versions).
std::vector<std::string> written_by_every_run(const std::vector<ObservedRun>& runs, std::vector<std::string>& findings);

// The figure group 1 of `pattern` takes in the first matching line of `text`.
std::optional<double> figure(const std::string& pattern, const std::string& text);

} // namespace optimas::init
