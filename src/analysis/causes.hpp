// Root causes per source line (issue #49; docs/analysis.md, "What a stall waits on"): what the
// stalled instructions of a line wait on, found by a backward walk over the kernel's SASS in
// address order, and how the line's memory accesses behave, from the source page's
// SourceCounters columns. After LEO's backward slicing and HPCToolkit GPA's instruction blame.
#pragma once

#include "analysis/kernel_code.hpp"
#include "profile/profile.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace optimas::analysis {

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
