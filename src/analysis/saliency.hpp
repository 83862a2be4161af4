// PC-stall saliency (paper 2.1.3): aggregate samples by source line and stall reason, keep a
// line's dominant stall when it holds >= tau of the line's stalled samples, rank lines by their
// share of the kernel's samples, and emit a small summary linking line, code and stall.
#pragma once

#include "analysis/causes.hpp"
#include "profile/profile.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace optimas::analysis {

inline constexpr double k_default_tau_stall = 0.30;
inline constexpr std::size_t k_default_summary_bytes = 6 * 1024;

struct SaliencyOptions {
  double tau = k_default_tau_stall;                // dominant stall share of a line's stalled samples
  std::size_t max_bytes = k_default_summary_bytes; // summary budget per kernel
  double min_line_share = 0.005;                   // lines below this share of the kernel are noise
};

struct SalientLine {
  std::string id; // evidence ID, "PC3" (given by the caller)
  std::string file;
  int line = 0;
  std::string code;
  std::uint64_t samples = 0; // all samples on the line
  std::uint64_t stalled = 0; // samples whose warp could not issue
  double kernel_share = 0;   // samples / the kernel's samples
  profile::Stall dominant = profile::Stall::selected;
  double dominant_fraction = 0; // of the line's stalled samples
  // Root causes (issue #49, analysis/causes.hpp), where the page has the line's SASS.
  LineFacts facts;                      // its memory accesses and active threads
  std::optional<Cause> cause;           // what its dominant stall waits on
  std::optional<Divergence> divergence; // where its warps split, when it runs with fewer threads
  std::vector<std::pair<std::string, int>> cause_lines() const; // (file, line) of the cause and the branch
  // "waits on the global load (32-bit) of main.cu:40 (...); global load (32-bit): ..."; empty when
  // nothing is known beyond the stall.
  std::string causes_text() const;
};

struct StallSummary {
  std::string kernel;
  std::uint64_t total_samples = 0;
  std::vector<std::pair<profile::Stall, std::uint64_t>> kernel_stalls; // kernel-wide, by count
  std::vector<SalientLine> lines;                                      // kept lines, by decreasing share of the kernel
  std::size_t lines_seen = 0;                                          // lines with samples
  std::size_t lines_below_tau = 0;                                     // no stall reached tau
  std::size_t lines_over_budget = 0;                                   // salient but left out to keep the summary small
  std::uint64_t raw_bytes = 0;                                         // source-page bytes this came from
  std::string text;                                                    // the summary itself
  double reduction() const { return raw_bytes ? 1.0 - static_cast<double>(text.size()) / raw_bytes : 0; }
};

// Sums PC samples per kernel and source line over any number of launches, so memory stays
// bounded by the code size, not by the number of launches or the size of the page.
class StallAggregator {
public:
  void add(const profile::KernelSource& block, std::uint64_t page_bytes = 0);
  std::vector<std::string> kernels() const; // in first-seen order
  StallSummary summarize(const std::string& kernel, const SaliencyOptions& options, const std::string& id_prefix = "PC",
                         int first_id = 1) const;

private:
  struct Line {
    std::string file;
    int line = 0;
    std::string code;
    profile::Samples samples;
  };
  struct Kernel {
    std::vector<Line> lines;
    std::map<std::pair<std::string, int>, std::size_t> index;
    std::uint64_t raw_bytes = 0;
    int launches = 0;
  };
  std::map<std::string, Kernel> m_kernels;
  std::vector<std::string> m_order;
  CodeAggregator m_code;
};

} // namespace optimas::analysis
