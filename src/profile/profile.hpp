// The typed profile model every later stage reads: launches with metrics in base units, and
// per-source-line / per-SASS-instruction warp-stall samples.
#pragma once

#include "profile/stalls.hpp"
#include "profile/timeline.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace optimas::profile {

inline constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

struct Metric {
  double value = k_nan; // in the base unit; NaN when ncu printed n/a or text
  std::string unit;     // base unit ("ns", "byte/second", "%", ...)
  std::string text;     // the printed value when it is not a number ("NVIDIA H200", "No-CC")
};

// A finding of one of ncu's own rules (details page rows without a metric).
struct Rule {
  std::string section;
  std::string name;
  std::string type; // OPT, INF, WRN
  std::string description;
  std::string speedup_type; // global, local
  double estimated_speedup = k_nan;
};

struct Launch {
  int id = -1;           // ncu's result ID within its report
  std::string kernel;    // function name with template arguments: "dloop", "rhs4<0, 1>"
  std::string demangled; // as ncu prints it: "dloop(int, double *)"
  std::string mangled;   // from a kernel trace; ncu's pages do not carry it
  std::array<std::int64_t, 3> block{0, 0, 0};
  std::array<std::int64_t, 3> grid{0, 0, 0};
  int device = 0;
  std::string cc;
  std::int64_t pid = 0;
  std::string process;
  std::int64_t context = 0;
  std::int64_t stream = 0;
  double duration_ns = k_nan; // gpu__time_duration.sum
  std::uint64_t start_ns = 0; // GPU start, from a kernel trace (CUPTI's clock); 0 when unknown
  std::map<std::string, Metric> metrics;
  std::vector<Rule> rules;

  const Metric* metric(const std::string& name) const;
  // The metric's value, or NaN when absent or not numeric.
  double value(const std::string& name) const;
};

// Samples attributed to one CUDA source line or one SASS instruction.
struct Samples {
  std::uint64_t all = 0;        // "Warp Stall Sampling (All Samples)"
  std::uint64_t not_issued = 0; // "Warp Stall Sampling (Not-issued Samples)"
  StallCounts stalls{};         // by reason, all samples
  StallCounts stalls_not_issued{};
  void add(const Samples& o);
};

struct SourceLine {
  std::string file;
  int line = 0;
  std::string code;
  Samples samples;
};

// What the source page's SourceCounters columns say of one instruction (issue #49), summed over
// launches; zero where the page lacks the column. Sectors and wavefronts are the page's
// theoretical figures: what the access pattern needs, not what hit or missed.
struct InstructionCounters {
  std::uint64_t executed = 0;           // "Instructions Executed" (per warp)
  std::uint64_t thread_executed = 0;    // "Thread Instructions Executed"
  std::uint64_t divergent_branches = 0; // "Divergent Branches"
  std::uint64_t global_requests = 0;    // "L1 Tag Requests Global"
  std::uint64_t global_sectors = 0;     // "L2 Theoretical Sectors Global"
  std::uint64_t global_sectors_ideal = 0;
  std::uint64_t global_sectors_excessive = 0;
  std::uint64_t shared_wavefronts = 0; // "L1 Wavefronts Shared"
  std::uint64_t shared_wavefronts_ideal = 0;
  std::uint64_t shared_wavefronts_excessive = 0;
  std::uint32_t shared_conflict_ways = 0; // "L1 Conflicts Shared N-Way": the most of any launch
  std::uint16_t access_bits = 0;          // "Access Size" of a memory instruction
  void add(const InstructionCounters& o);
};

struct SassInstruction {
  std::uint64_t address = 0;
  std::string sass;
  std::string file; // empty when the page had no CUDA correlation
  int line = 0;     // 0 when unknown
  Samples samples;
  InstructionCounters counters;
};

// The source page's data for one profiled launch.
struct KernelSource {
  int result_id = -1;
  std::string kernel;
  std::string demangled;
  std::vector<SourceLine> lines;
  std::vector<SassInstruction> instructions;
  bool has_counters = false;    // the page had the SourceCounters columns ("Instructions Executed", ...)
  std::uint64_t page_bytes = 0; // bytes of the source page this block took (uncompressed)
  std::size_t page_line = 0;    // the page's line where the block starts (for messages)
  std::uint64_t total_samples() const;
};

// What one ncu report (one input configuration, one repeat) holds.
struct Run {
  std::string config = "import";
  int repeat = 0;
  std::vector<Launch> timing;   // cheap first pass over every launch (two-pass mode); may be empty
  std::vector<Launch> launches; // profiled launches with their metrics
  std::vector<KernelSource> sources;
  std::map<std::string, std::string> session; // session page attributes (ncu version, device, ...)
  std::vector<std::string> files;             // the pages this run was read from
  std::uint64_t input_bytes = 0;              // their total size
  // The application's timeline, from a format-3 trace of the timing pass; none without one.
  std::optional<Timeline> timeline;

  // Launches to use for time shares: the timing pass when there is one.
  const std::vector<Launch>& timed_launches() const { return timing.empty() ? launches : timing; }
};

struct Profile {
  nlohmann::json manifest = nlohmann::json::object();
  std::vector<Run> runs;
};

// The readable name of a file-static kernel, whose symbol nvcc prefixes so that no other file's
// kernel of the same name clashes with it: "__nv_static_52__e03210f2_30_quasirandomGenerator_
// kernel_cu_71f57a80__Z26quasirandomGeneratorKernelPfjj" -> "quasirandomGeneratorKernel(float*,
// unsigned int, unsigned int)". Empty for any other symbol, or one that does not demangle.
std::string demangle_static_kernel(std::string_view mangled);

// Strips the parameter list and a leading return type: "void rhs4<0, 1>(double *)" -> "rhs4<0, 1>".
std::string kernel_base_name(std::string_view demangled);

// What ncu's default --kernel-name-base "function" matches: the base name without its
// template arguments ("rhs4<0, 1>" -> "rhs4").
std::string kernel_function_name(std::string_view kernel);

// The parameter list of a demangled name, "(const int *, int *, bool)"; empty when it has none.
std::string_view kernel_parameters(std::string_view demangled);

// Keys under which two spellings of one kernel agree (NVIDIA's "K<(int)64, (bool)1>(const int *)"
// and GNU's "K<64, true>(int const*)", "4096ul" and "(unsigned long)4096", any spacing; no
// return type, no const): the name with its template arguments, and that with the parameter
// list. Different instances and overloads keep different keys.
std::string kernel_name_key(std::string_view demangled);
std::string kernel_signature_key(std::string_view demangled);

} // namespace optimas::profile
