// Matching a source page's blocks to the profiled launches of the same report.
//
// The source page has no ID column: its blocks come in result order, one per profiled launch,
// but a page need not line up with the launch tables (a kernel printed twice, blocks missing,
// another interleaving of kernels, a name spelled another way). Each block is matched by its
// kernel and instance instead of by its position; what cannot be matched is kept and reported,
// never an error.
#pragma once

#include "profile/profile.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace optimas::profile {

// What matching did, for the caller's messages and for tests.
struct SourceMatch {
  std::size_t matched = 0;         // blocks that got a result ID
  std::size_t renamed = 0;         // of those, blocks whose name was spelled differently from the launch's
  std::size_t by_samples = 0;      // of those, blocks placed by their sample count rather than their turn
  std::size_t duplicates = 0;      // blocks dropped as a second print of a matched block
  std::size_t unmatched = 0;       // blocks kept without a result ID
  std::vector<int> without_source; // result IDs of launches no block matched
};

// Gives each block the result ID of its launch. A block's kernel is the launches' kernel with
// the same demangled name, else the same signature key, else the same name key (template
// arguments included, so instances never mix); within that kernel the block takes the first
// launch not yet taken whose smsp__pcsamp_sample_count equals the block's samples, else the
// first launch not yet taken. A matched block takes its launch's spelling of the name, so later
// stages find it under the launch's kernel. A block identical to one already matched is a second
// print and is dropped; any other block left over keeps result ID -1 (its samples still count
// for its kernel), named as the timing pass names its kernel where that spelling differs.
// `page` names the page in warnings.
SourceMatch match_sources(std::vector<KernelSource>& blocks, const std::vector<Launch>& launches,
                          const std::vector<Launch>& timing, const std::string& page);

// match_sources block by block, as a page is read: a block printed a second time is dropped as it
// comes, so a page of many repeated blocks never holds more than the blocks it keeps.
class SourceMatcher {
public:
  SourceMatcher(const std::vector<Launch>& launches, const std::vector<Launch>& timing, std::string page);
  ~SourceMatcher();
  void add(KernelSource&& block);
  // Appends the kept blocks, with their result IDs and names, to `out`.
  SourceMatch finish(std::vector<KernelSource>& out);

private:
  struct State;
  std::unique_ptr<State> m_state;
  const std::vector<Launch>& m_launches;
  const std::vector<Launch>& m_timing;
  std::string m_page;
};

} // namespace optimas::profile
