// Root causes per source line (issue #49; docs/analysis.md, "What a stall waits on"): what the
// stalled instructions of a line wait on, found by a backward walk over the kernel's SASS in
// address order, and how the line's memory accesses behave, from the source page's
// SourceCounters columns. After LEO's backward slicing and HPCToolkit GPA's instruction blame.
#pragma once

#include "profile/profile.hpp"
#include "profile/sass.hpp"

#include <cstdint>
#include <map>
#include <optional>
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

// What a line's stall waits on.
struct Cause {
  enum class Status { found, ambiguous, undecided };
  Status status = Status::undecided;
  // producer: the stalled instructions wait on an instruction's result (scoreboards, wait);
  // queue: they are memory instructions waiting for their own queue (lg, mio, tex throttle);
  // barrier: warps wait at a barrier for other warps' work before it; membar: a memory barrier
  // waits for earlier stores.
  std::string kind;
  profile::Stall stall = profile::Stall::selected;
  std::string file;
  int line = 0;
  std::string code;                    // the cause line's source text, where the page has it
  std::string instruction;             // the producer's SASS ("LDG.E R5, desc[UR8][R4.64]")
  std::string details;                 // its mnemonic and memory figures ("LDG.E, 32-bit, 4.0 sectors per request")
  std::string operation;               // "global load (32-bit)", "shared load", "fixed-latency FFMA"
  double share = 0;                    // of the line's samples of the stall that wait on this cause
  std::string barrier_at;              // barrier: the barrier's file:line
  std::vector<std::string> candidates; // ambiguous: "main.cu:37", "main.cu:40"
  std::string why;                     // ambiguous or undecided: the reason
  std::optional<LineFacts> facts;      // the cause line's facts, when it is another line
  // "waits on the load of main.cu:40 (LDG.E, 32-bit, 4.0 sectors per request)"
  std::string text() const;
};

// The cause of the dominant stall of (file, line): for a dependency reason (long_scoreboard,
// short_scoreboard, wait, lg/mio/tex throttle, barrier, membar) walks back from the line's
// instructions stalled for it. None for other reasons.
std::optional<Cause> find_cause(const KernelCode& code, const std::string& file, int line, profile::Stall stall);

// Where the warps of a line whose instructions run with fewer than 32 threads split: the
// conditional branches met first walking back from it whose own threads are more.
struct Divergence {
  Cause::Status status = Cause::Status::undecided;
  std::string file;
  int line = 0;
  std::string code;          // the branch line's source text, where the page has it
  double threads = 0;        // the line's average active threads
  double branch_threads = 0; // the branch's
  std::vector<std::string> candidates;
  std::string why;
  // "runs with 4.0 of 32 threads: its warps split at the branch of main.cu:94"
  std::string text() const;
};
std::optional<Divergence> find_divergence(const KernelCode& code, const std::string& file, int line);

} // namespace optimas::analysis
