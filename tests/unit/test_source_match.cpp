// Matching source blocks to launches, on launches and blocks made here (the importer's tests
// build whole pages; these check the rule's corners and what it reports).
#include "profile/source_match.hpp"

#include <gtest/gtest.h>

using namespace optimas::profile;

namespace {

Launch launch(int id, const std::string& demangled, double samples) {
  Launch l;
  l.id = id;
  l.demangled = demangled;
  l.kernel = kernel_base_name(demangled);
  if (samples >= 0) l.metrics["smsp__pcsamp_sample_count"] = {samples, "", ""};
  return l;
}

KernelSource block(const std::string& demangled, std::uint64_t samples, std::uint64_t address = 0x100) {
  KernelSource b;
  b.demangled = demangled;
  b.kernel = kernel_base_name(demangled);
  b.page_line = 7;
  SassInstruction& i = b.instructions.emplace_back();
  i.address = address;
  i.samples.all = samples;
  return b;
}

std::vector<int> ids(const std::vector<KernelSource>& blocks) {
  std::vector<int> out;
  for (const auto& b : blocks) out.push_back(b.result_id);
  return out;
}

const std::string k_k64 = "void K<(int)64>(const int *, int *, bool)";
const std::string k_k128 = "void K<(int)128>(const int *, int *, bool)";

} // namespace

TEST(SourceMatch, SamplesPlaceABlockWithinItsKernel) {
  std::vector<Launch> launches = {launch(0, k_k64, 5), launch(1, k_k64, 6), launch(2, k_k64, 7)};
  std::vector<KernelSource> blocks = {block(k_k64, 7), block(k_k64, 5)};
  SourceMatch m = match_sources(blocks, launches, {}, "s.csv");
  EXPECT_EQ(ids(blocks), (std::vector<int>{2, 0}));
  EXPECT_EQ(m.matched, 2u);
  EXPECT_EQ(m.by_samples, 1u); // the first block skipped two free launches; the second was next in turn
  EXPECT_EQ(m.without_source, (std::vector<int>{1}));
}

TEST(SourceMatch, WithoutSampleCountsBlocksTakeTheirTurn) {
  std::vector<Launch> launches = {launch(3, k_k64, -1), launch(5, k_k128, -1), launch(8, k_k64, -1)};
  std::vector<KernelSource> blocks = {block(k_k64, 1), block(k_k64, 2, 0x200), block(k_k128, 3)};
  match_sources(blocks, launches, {}, "s.csv");
  EXPECT_EQ(ids(blocks), (std::vector<int>{3, 8, 5}));
}

// A second print is known by its content, not its name alone: a different block of a kernel
// whose launches are all taken is kept, unmatched.
TEST(SourceMatch, DuplicatesDroppedOtherBlocksKept) {
  std::vector<Launch> launches = {launch(0, k_k64, 5)};
  std::vector<KernelSource> blocks = {block(k_k64, 5), block(k_k64, 5), block(k_k64, 9)};
  SourceMatch m = match_sources(blocks, launches, {}, "s.csv");
  EXPECT_EQ(ids(blocks), (std::vector<int>{0, -1}));
  EXPECT_EQ(m.duplicates, 1u);
  EXPECT_EQ(m.unmatched, 1u);
  EXPECT_EQ(blocks[1].total_samples(), 9u);
}

// An unmatched block takes the timing pass's spelling of its kernel, so its samples count for
// the kernel that pass timed; matched blocks take the launch tables' spelling.
TEST(SourceMatch, SpellingsFollowTheLaunchTablesAndTheTimingPass) {
  std::vector<Launch> launches = {launch(0, "void K<128>(const int *, int *, bool)", 4)};
  std::vector<Launch> timing = {launch(0, "void K<64>(const int *, int *, bool)", -1),
                                launch(1, "void K<128>(const int *, int *, bool)", -1)};
  std::vector<KernelSource> blocks = {block(k_k64, 3), block(k_k128, 4)};
  SourceMatch m = match_sources(blocks, launches, timing, "s.csv");
  EXPECT_EQ(ids(blocks), (std::vector<int>{-1, 0}));
  EXPECT_EQ(blocks[0].demangled, "void K<64>(const int *, int *, bool)");
  EXPECT_EQ(blocks[0].kernel, "K<64>");
  EXPECT_EQ(blocks[1].demangled, "void K<128>(const int *, int *, bool)");
  EXPECT_EQ(m.renamed, 1u);
}

// Overloads differ only in their parameters: the signature decides before the bare name does.
TEST(SourceMatch, OverloadsAreDifferentKernels) {
  std::vector<Launch> launches = {launch(0, "void f<(int)2>(float *)", -1), launch(1, "void f<(int)2>(int *)", -1)};
  std::vector<KernelSource> blocks = {block("void f<2>(int *)", 1), block("void f<2>(float *)", 2)};
  match_sources(blocks, launches, {}, "s.csv");
  EXPECT_EQ(ids(blocks), (std::vector<int>{1, 0}));
}
