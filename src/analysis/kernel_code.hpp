// A kernel's SASS as the source page gives it, its instructions' samples and SourceCounters
// figures summed over the kernel's launches, and what they say of each source line's memory
// accesses and active threads (issue #49). The root-cause walk (analysis/causes.hpp) reads it.
#pragma once

#include "profile/profile.hpp"
#include "profile/sass.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace optimas::analysis {

// One instruction of a kernel: where it is, what it is, and its samples and counters summed over
// the kernel's launches.
struct CodeInstruction {
  std::uint64_t offset = 0; // from the kernel's first instruction
  std::string sass;
  std::string file;
  int line = 0;
  profile::Samples samples;
  profile::InstructionCounters counters;
  profile::sass::Instruction decoded;
};

// A kernel's SASS in address order. `base` is the address of its first instruction in the first
// block read (branch targets in the text are absolute).
struct KernelCode {
  std::uint64_t base = 0;
  std::vector<CodeInstruction> instructions;
  bool has_counters = false; // the pages had the SourceCounters columns
};

// Sums the instructions of each launch of a kernel by their offset from its first instruction,
// so memory stays bounded by the code size.
class CodeAggregator {
public:
  void add(const profile::KernelSource& block);
  // Sorted by offset, decoded. Empty when the kernel's blocks had no SASS.
  KernelCode code(const std::string& demangled) const;

private:
  struct Kernel {
    std::uint64_t base = 0;
    bool has_counters = false;
    std::map<std::uint64_t, CodeInstruction> by_offset;
  };
  std::map<std::string, Kernel> m_kernels;
};

// One kind of memory access of a line (its instructions of one space and operation together).
struct LineAccess {
  std::string space;          // "global", "shared", "local", "generic", "texture"
  std::string operation;      // "load", "store", "atomic", "reduction"
  int bits = 0;               // per thread, the widest of its instructions
  std::uint64_t executed = 0; // warp-level executions: the requests
  int instructions = 0;       // distinct SASS instructions (more than the source's accesses: unrolled)
  std::uint64_t requests = 0, sectors = 0, sectors_ideal = 0, sectors_excessive = 0; // global; requests: tag lookups
  std::uint64_t wavefronts = 0, wavefronts_ideal = 0, wavefronts_excessive = 0;      // shared
  std::uint32_t conflict_ways = 0;                                                   // shared, the most
  double sectors_per_request() const;                                                // NaN without requests
  double ideal_sectors_per_request() const;                                          // NaN without requests
  double excessive_share() const; // of the sectors (global) or wavefronts (shared); NaN without
  // "global load (32-bit): 32.0 sectors per request where 4.0 would do, 88% excessive"
  std::string text() const;
};

struct LineFacts {
  std::vector<LineAccess> accesses;
  double threads = profile::k_nan; // average active threads of its instructions (per execution); NaN unknown
  std::uint64_t divergent_branches = 0;
  // "global load (32-bit): 4.0 sectors per request (ideal 4.0); 4.0 of 32 threads active"; empty
  // when there is nothing to say.
  std::string text() const;
};

// The facts of the instructions of (file, line).
LineFacts line_facts(const KernelCode& code, const std::string& file, int line);

} // namespace optimas::analysis
