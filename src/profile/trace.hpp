// Kernel traces written by liboptimas-trace (src/tracer/; format in docs/trace-format.md):
// every launch of a program with its GPU start and end, read into the profile model so that
// hot kernels, launch caps and trace-based measurement come from real durations. From format 3
// on, also the copies, memsets and host waits around them: the application's timeline.
#pragma once

#include "profile/profile.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace optimas::profile {

// A memory copy (format 3's M line) or memset (S line) on the GPU.
struct Transfer {
  bool memset = false;
  std::string direction;  // "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "HtoA", ...; "set" for a memset
  std::string src_memory; // "pageable", "pinned", "device", "managed", ...; empty for a memset
  std::string dst_memory;
  std::uint64_t bytes = 0;
  int device = 0;
  std::int64_t context = 0, stream = 0, pid = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  bool async = false; // issued by an ...Async call; otherwise the host thread waited for it
  std::uint64_t correlation = 0;
};

// The host waiting for the GPU (Y line): an event, stream or context synchronisation, or a
// stream made to wait for an event.
struct HostWait {
  std::string type; // "event", "stream", "context", "stream_wait_event", "unknown"
  std::int64_t context = 0, stream = 0, pid = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint64_t correlation = 0;
};

// A runtime API call that may block the host thread (R line): cudaMemcpy, cudaDeviceSynchronize, ...
struct BlockingCall {
  std::string name;
  std::uint64_t thread = 0;
  std::int64_t pid = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint64_t correlation = 0;
};

struct Trace {
  std::vector<Launch> launches; // in order of GPU start; duration_ns = end - start
  // Format 3 on (empty before): in order of start.
  std::vector<Transfer> transfers;
  std::vector<HostWait> waits;
  std::vector<BlockingCall> calls;
  int version = 0;            // the oldest format of the files read
  std::uint64_t start_ns = 0; // the earliest P line's timestamp (CUPTI's clock at the tracer's start)
  std::vector<std::string> files;
  std::uint64_t dropped = 0;            // records CUPTI reported as lost
  std::vector<std::string> incomplete;  // files without their end line (the program did not exit normally)
  std::vector<std::string> ended_early; // files whose process the tracer ended (OPTIMAS_TRACE_END_AFTER)
  std::uint64_t end_ns = 0;             // the latest end line's timestamp (format 2 on; 0 in format 1)
  std::uint64_t bytes = 0;
};

// Reads one trace file, or every trace-*.tsv of a folder (one per traced process). Bad lines
// are errors naming the file and line; a missing end line is recorded in `incomplete`.
Trace read_trace(const std::string& path);

// Summed GPU time of the launches whose kernel_signature_key is in `keys` (all when empty), ns.
double traced_time_ns(const Trace& trace, const std::vector<std::string>& keys = {});

// The durations (ms, in GPU order) of the launches of each function in `functions` (base names,
// without template arguments or parameters: "triad", "reduce" for reduce<64>), one list per
// function in that order; a function never launched has an empty list. A template instance
// changed by an edit is still its function's.
// Whether `l` is a launch of one of `functions` (as launch_durations_ms matches them).
bool is_launch_of(const Launch& l, const std::vector<std::string>& functions);

std::vector<std::vector<double>> launch_durations_ms(const Trace& trace, const std::vector<std::string>& functions);

// Gives traced launches the names Nsight Compute uses for the same kernels (matched by
// kernel_signature_key: the tracer's demangler spells "K<64>(int const*)" where ncu spells
// "void K<(int)64>(const int *)"), or, where ncu names a template's parameters by its
// placeholders ("(const T1 *)"), by name and template arguments when those have one profiled
// signature), so that later stages match launches of both by name.
void adopt_profiled_names(std::vector<Launch>& traced, const std::vector<Launch>& profiled);

// The launches of each hot kernel to profile in the heavy pass: at most `cap` per kernel,
// spread evenly over its traced launches (first, ..., last). Invocation numbers are 1-based
// and count the launches of the kernel's function name, as ncu's --kernel-id does.
struct LaunchPick {
  std::string function; // ncu's --kernel-name-base function: no parameters, no template arguments
  std::vector<std::int64_t> invocations;
  std::int64_t traced = 0; // launches of this function in the trace
};
std::vector<LaunchPick> pick_launches(const std::vector<Launch>& traced, const std::vector<std::string>& hot_demangled,
                                      int cap);

} // namespace optimas::profile
