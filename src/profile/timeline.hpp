// The application's timeline from a format-3 kernel trace (issue #30): how much of the run the
// GPU worked, where its time went (kernels, copies by direction), and the host gaps between its
// work, grouped by what comes before and after them so that a gap that recurs is seen as one.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace optimas::profile {

struct Trace;

// The copies of one direction ("HtoD", "DtoH", ...; "set" for memsets).
struct Traffic {
  std::string direction;
  std::uint64_t count = 0, bytes = 0;
  std::uint64_t synchronous = 0; // not issued by an ...Async call: the host thread waited
  std::uint64_t pageable = 0;    // from or to pageable host memory (staged, never truly async)
  double ns = 0;                 // summed copy time
  double exposed_ns = 0;         // of it, the time no kernel ran
};

// Host gaps that share what ends before them and what starts after them.
struct GapGroup {
  std::string before;        // "step_kernel", "synchronous device-to-host copy of 4 B", "memset of 1 MiB"
  std::string after;         // what the GPU does next
  std::string kernel_before; // the last kernel that ended before them; empty when none had
  std::uint64_t count = 0;
  double total_ns = 0, largest_ns = 0;
  double at_ns = 0; // where the largest starts, from the start of the run
};

// Copies or memsets that follow a kernel directly (nothing else on the GPU between them).
struct Follow {
  std::string what;   // a copy's or memset's label, as GapGroup::before
  std::string kernel; // the kernel before it
  std::uint64_t count = 0;
  std::uint64_t kernel_launches = 0; // all launches of that kernel
};

// Calls or host waits of one name, summed.
struct HostTotal {
  std::string name; // "cudaMemcpy", ...; a wait's type: "context", "stream", "event", ...
  std::uint64_t count = 0;
  double ns = 0;
};

struct Timeline {
  double wall_ns = 0;                            // from the tracer's start (the first CUDA call) to its end line
  double busy_ns = 0;                            // the GPU did anything: kernels, copies or memsets (their union)
  double kernel_ns = 0;                          // a kernel ran (their union)
  double transfer_ns = 0, memset_ns = 0;         // summed
  double before_first_ns = 0, after_last_ns = 0; // idle before the first GPU work and after the last
  std::uint64_t launches = 0, copies = 0, memsets = 0, gaps = 0; // gaps: between the first and last GPU work
  std::vector<Traffic> traffic;                                  // by direction, the most time first
  std::vector<GapGroup> groups;                                  // every group of gaps, the most idle time first
  std::optional<GapGroup> largest;                               // the largest single gap between GPU work (count 1)
  std::vector<Follow> follows;
  std::vector<HostTotal> calls, waits; // R and Y lines by name and type, the most time first
  std::size_t processes = 0;
  bool ended_early = false; // the tracer ended the program (measure.end_after_kernels)

  double idle_ns() const { return wall_ns - busy_ns; }
  // Idle time between the first and the last GPU work: what the host did while the GPU waited.
  double gap_ns() const { return idle_ns() - before_first_ns - after_last_ns; }
  double busy_fraction() const { return wall_ns > 0 ? busy_ns / wall_ns : 0; }
  const Follow* follow(const std::string& what, const std::string& kernel) const;
};

// The timeline of a format-3 trace; none for an older one (no copies or waits recorded) or one
// without its start and end times.
std::optional<Timeline> summarize_timeline(const Trace& trace);

// "device-to-host" for "DtoH", and so on; an unknown direction as it is.
std::string direction_words(const std::string& direction);

// "4 B", "1 MiB", "1.5 GiB".
std::string bytes_text(std::uint64_t bytes);

nlohmann::json to_json(const Timeline& timeline);

// One direction's copies as the timeline's JSON holds them ("traffic"), and back: a member that
// is absent or not a number reads as 0 (diagnostics from older versions, or hand-made).
nlohmann::json to_json(const Traffic& traffic);
Traffic traffic_from_json(const nlohmann::json& j);

} // namespace optimas::profile
