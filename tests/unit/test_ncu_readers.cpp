// The page readers on real H200 exports (tests/data/ncu-samples, facts checked by hand) and
// on broken input.
#include "profile/ncu_page.hpp"
#include "profile/ncu_readers.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numeric>
#include <tuple>

using namespace optimas::profile;
using optimas::ParseError;
using optimas::test::data_path;
using optimas::test::read_all;
using optimas::test::TempDir;

namespace {

std::uint64_t sum(const StallCounts& c) {
  return std::accumulate(c.begin(), c.end(), std::uint64_t{0});
}

const SourceLine* find_line(const KernelSource& k, int line) {
  for (const auto& l : k.lines)
    if (l.line == line) return &l;
  return nullptr;
}

} // namespace

TEST(NcuPages, SniffedByContent) {
  EXPECT_EQ(sniff_page(data_path("ncu-samples/details_base_name.csv")), PageKind::details);
  EXPECT_EQ(sniff_page(data_path("ncu-samples/raw_base.csv")), PageKind::raw);
  EXPECT_EQ(sniff_page(data_path("ncu-samples/src_both.csv")), PageKind::source);
  EXPECT_EQ(sniff_page(data_path("ncu-samples/src_sass.csv")), PageKind::source);
  EXPECT_EQ(sniff_page(data_path("ncu-samples/session.csv")), PageKind::session);
  EXPECT_EQ(sniff_page(data_path("ncu-samples/sum_kernel.csv")), PageKind::summary);
  EXPECT_EQ(sniff_page(data_path("ncu-samples/extra/live_metrics_time.csv")), PageKind::details);
  EXPECT_EQ(sniff_page(data_path("ncu-samples/extra/k.cu")), PageKind::unknown);
  EXPECT_EQ(sniff_page(data_path("ncu-samples/extra/locale_test.txt")), PageKind::unknown);
}

TEST(NcuDetails, LaunchesDurationsAndRules) {
  std::vector<Launch> launches;
  read_details_page(data_path("ncu-samples/details_base_name.csv"), launches);
  ASSERT_EQ(launches.size(), 4u);
  EXPECT_EQ(launches[0].kernel, "saxpy");
  EXPECT_EQ(launches[0].demangled, "saxpy(int, float, const float *, float *)");
  EXPECT_EQ(launches[1].kernel, "dloop");
  EXPECT_DOUBLE_EQ(launches[0].duration_ns, 62368);
  EXPECT_DOUBLE_EQ(launches[1].duration_ns, 353024);
  EXPECT_DOUBLE_EQ(launches[2].duration_ns, 61664);
  EXPECT_DOUBLE_EQ(launches[3].duration_ns, 352960);
  EXPECT_EQ(launches[1].block, (std::array<std::int64_t, 3>{256, 1, 1}));
  EXPECT_EQ(launches[1].grid, (std::array<std::int64_t, 3>{65536, 1, 1}));
  EXPECT_EQ(launches[1].cc, "9.0");
  EXPECT_EQ(launches[0].pid, 479);
  // "3,198,905,421.58" hz in the file.
  EXPECT_DOUBLE_EQ(launches[0].value("dram__cycles_elapsed.avg.per_second"), 3198905421.58);
  EXPECT_EQ(launches[0].metric("dram__cycles_elapsed.avg.per_second")->unit, "hz");
  bool sol = false;
  for (const auto& r : launches[0].rules) sol = sol || (r.name == "SOLBottleneck" && r.type == "OPT");
  EXPECT_TRUE(sol);
}

TEST(NcuDetails, LiveOutputWithProfilerChatterAndFifteenColumns) {
  std::vector<Launch> launches;
  read_details_page(data_path("ncu-samples/extra/live_metrics_time.csv"), launches);
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].kernel, "fk");
  EXPECT_DOUBLE_EQ(launches[0].duration_ns, 95936); // printed "95,936"
  EXPECT_DOUBLE_EQ(launches[1].duration_ns, 95616);
  EXPECT_EQ(launches[2].grid, (std::array<std::int64_t, 3>{16384, 1, 1}));
}

TEST(NcuRaw, MetricsUnitsAndMergeWithDetails) {
  std::vector<Launch> launches;
  read_raw_page(data_path("ncu-samples/raw_base.csv"), launches);
  ASSERT_EQ(launches.size(), 4u);
  EXPECT_DOUBLE_EQ(launches[3].duration_ns, 352960);
  EXPECT_EQ(launches[0].metrics.size(), 2227u); // 2,238 columns less 11 identifying ones
  EXPECT_DOUBLE_EQ(launches[0].value("smsp__pcsamp_sample_count"), 5728);
  EXPECT_DOUBLE_EQ(launches[1].value("smsp__pcsamp_sample_count"), 33845);
  const Metric* name = launches[0].metric("device__attribute_display_name");
  ASSERT_NE(name, nullptr);
  EXPECT_TRUE(std::isnan(name->value));
  EXPECT_EQ(name->text, "NVIDIA H200");
  // Merging the details page into the same launches keeps one launch per result ID.
  read_details_page(data_path("ncu-samples/details_base_name.csv"), launches);
  EXPECT_EQ(launches.size(), 4u);
}

TEST(NcuSource, CudaSassPerLineStalls) {
  auto blocks = read_source_page(data_path("ncu-samples/src_both.csv"), 4);
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(blocks[0].kernel, "saxpy");
  EXPECT_EQ(blocks[1].kernel, "dloop");
  const SourceLine* l4 = find_line(blocks[0], 4);
  ASSERT_NE(l4, nullptr);
  EXPECT_EQ(l4->file, "/tmp/w/k.cu");
  EXPECT_EQ(l4->code, "if(i<n) y[i]=a*x[i]+y[i];");
  EXPECT_EQ(l4->samples.all, 5075u);
  EXPECT_EQ(l4->samples.stalls[static_cast<std::size_t>(Stall::long_scoreboard)], 4613u);
  EXPECT_EQ(l4->samples.stalls[static_cast<std::size_t>(Stall::wait)], 216u);
  // Per-kernel totals equal smsp__pcsamp_sample_count of the raw page.
  const std::uint64_t expected[] = {5728, 33845, 5720, 33847};
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    std::uint64_t lines = 0, instructions = 0;
    for (const auto& l : blocks[b].lines) {
      // Every line's stall columns sum to its sample count.
      EXPECT_EQ(sum(l.samples.stalls), l.samples.all) << "block " << b << " line " << l.line;
      EXPECT_EQ(sum(l.samples.stalls_not_issued), l.samples.not_issued) << "block " << b << " line " << l.line;
      lines += l.samples.all;
    }
    for (const auto& i : blocks[b].instructions) {
      EXPECT_EQ(sum(i.samples.stalls), i.samples.all);
      EXPECT_GT(i.line, 0);
      instructions += i.samples.all;
    }
    EXPECT_EQ(lines, expected[b]);
    EXPECT_EQ(instructions, expected[b]);
    EXPECT_EQ(blocks[b].total_samples(), expected[b]);
  }
  // Instructions listed twice around "..." rows are kept once.
  EXPECT_EQ(blocks[0].instructions.size(), 32u);
}

// cuda-samples' mergeSort on the H100 (session 34): a kernel calling cg::sync(cta) is listed once
// per file its code passes through, and the inlined barrier under a line of each (the call site,
// cooperative_groups.h, sm_30_intrinsics.hpp), each line row summing it again: the header lines
// took the first four PC items and the kernel's line total was 1.7x its samples. Each instruction
// now counts once, on the line it is first listed under.
TEST(NcuSource, AnInlinedInstructionCountsOnceOnItsFirstLine) {
  TempDir dir;
  const std::string header = "\"Line No\",\"Source\",\"Address\",\"Source\",\"Warp Stall Sampling (All Samples)\","
                             "\"Warp Stall Sampling (Not-issued Samples)\",\"stall_barrier\",\"stall_long_sb\"\n";
  auto block = [&](const std::string& file) {
    return "\"File Path\",\"" + file + "\"\n\"Function Name\",\"void merge(int *)\"\n" + header;
  };
  std::string page = block("/w/mergeSort.cu") +
                     "\"10\",\"s[t] = d[t];\",\"-\",\"-\",\"40\",\"40\",\"0\",\"40\"\n"
                     "\"\",\"\",\"0x100\",\"LDG.E R2, desc[UR4][R2.64]\",\"40\",\"40\",\"0\",\"40\"\n"
                     "\"11\",\"cg::sync(cta);\",\"-\",\"-\",\"60\",\"60\",\"60\",\"0\"\n"
                     "\"\",\"\",\"0x110\",\"BAR.SYNC.DEFER_BLOCKING 0x0\",\"60\",\"60\",\"60\",\"0\"\n" +
                     block("/cuda/include/cooperative_groups.h") +
                     "\"489\",\"details::cta::sync();\",\"-\",\"-\",\"60\",\"60\",\"60\",\"0\"\n"
                     "\"\",\"\",\"0x110\",\"BAR.SYNC.DEFER_BLOCKING 0x0\",\"60\",\"60\",\"60\",\"0\"\n" +
                     block("/cuda/include/sm_30_intrinsics.hpp") +
                     "\"98\",\"return __nvvm_barrier_sync(id);\",\"-\",\"-\",\"60\",\"60\",\"60\",\"0\"\n"
                     "\"\",\"\",\"0x110\",\"BAR.SYNC.DEFER_BLOCKING 0x0\",\"60\",\"60\",\"60\",\"0\"\n";
  auto blocks = read_source_page(dir.file("source.csv", page), 1);
  ASSERT_EQ(blocks.size(), 1u);
  ASSERT_EQ(blocks[0].instructions.size(), 2u);
  EXPECT_EQ(blocks[0].total_samples(), 100u);
  std::uint64_t lines = 0;
  for (const auto& l : blocks[0].lines) lines += l.samples.all;
  EXPECT_EQ(lines, 100u);
  ASSERT_NE(find_line(blocks[0], 11), nullptr);
  EXPECT_EQ(find_line(blocks[0], 11)->samples.all, 60u);
  EXPECT_EQ(find_line(blocks[0], 11)->samples.stalls[static_cast<std::size_t>(Stall::barrier)], 60u);
  ASSERT_NE(find_line(blocks[0], 489), nullptr);
  EXPECT_EQ(find_line(blocks[0], 489)->samples.all, 0u);
  EXPECT_EQ(find_line(blocks[0], 98)->samples.all, 0u);
  // A __device__ helper of the same file, inlined: its line and the call site list the load.
  std::string one_file = block("/w/k.cu") +
                         "\"5\",\"return d[i];\",\"-\",\"-\",\"30\",\"30\",\"0\",\"30\"\n"
                         "\"\",\"\",\"0x200\",\"LDG.E R2, desc[UR4][R2.64]\",\"30\",\"30\",\"0\",\"30\"\n"
                         "\"20\",\"s += get(d, i);\",\"-\",\"-\",\"30\",\"30\",\"0\",\"30\"\n"
                         "\"\",\"\",\"0x200\",\"LDG.E R2, desc[UR4][R2.64]\",\"30\",\"30\",\"0\",\"30\"\n";
  auto one = read_source_page(dir.file("one.csv", one_file), 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(find_line(one[0], 5)->samples.all, 30u);
  EXPECT_EQ(find_line(one[0], 20)->samples.all, 0u);
  EXPECT_EQ(one[0].total_samples(), 30u);
}

TEST(NcuSource, SassViewUndoesDoubledBlocks) {
  auto both = read_source_page(data_path("ncu-samples/src_both.csv"), 4);
  // Without knowing the result count, identical pairs reveal the doubling.
  auto sass = read_source_page(data_path("ncu-samples/src_sass.csv"));
  ASSERT_EQ(sass.size(), 4u);
  // Nor when the count given is not the page's (a source page of fewer or more results).
  EXPECT_EQ(read_source_page(data_path("ncu-samples/src_sass.csv"), 3).size(), 4u);
  EXPECT_EQ(read_source_page(data_path("ncu-samples/src_sass.csv"), 4).size(), 4u);
  for (std::size_t b = 0; b < 4; ++b) {
    EXPECT_EQ(sass[b].demangled, both[b].demangled);
    ASSERT_EQ(sass[b].instructions.size(), both[b].instructions.size());
    for (std::size_t i = 0; i < sass[b].instructions.size(); ++i) {
      EXPECT_EQ(sass[b].instructions[i].address, both[b].instructions[i].address);
      EXPECT_EQ(sass[b].instructions[i].samples.stalls, both[b].instructions[i].samples.stalls);
      EXPECT_EQ(sass[b].instructions[i].line, 0); // the sass view has no line correlation
    }
  }
}

TEST(NcuSession, Attributes) {
  auto s = read_session_page(data_path("ncu-samples/session.csv"));
  EXPECT_EQ(s["display_name"], "NVIDIA H200");
  EXPECT_EQ(s["CUDA Version"], "13.0");
  EXPECT_EQ(s["multiprocessor_count"], "132");
}

// ncu leaves the quotes of the profiled command unescaped in the session page: still readable.
TEST(NcuSession, UnescapedQuotesInTheCommandLine) {
  auto s = read_session_page(data_path("ncu-samples/shell-command/session.csv"));
  EXPECT_EQ(s["display_name"], "NVIDIA H200");
  const std::string& command = s["Profiler Command Line"];
  EXPECT_NE(command.find("/bin/sh -c \"./spmv --rows 262144 --iters 10 --seed 11 --out "), std::string::npos)
      << command;
  EXPECT_EQ(command.substr(command.size() - 2), "\" ") << command;

  // Well-formed quoting: doubled quotes are one quote.
  TempDir dir;
  auto path = dir.file("session.csv", "Session Info\n\"Attribute\",\"Value\"\n\"Note\",\"say \"\"hi\"\"\"\r\n");
  EXPECT_EQ(read_session_page(path)["Note"], "say \"hi\"");
}

// A session page is read whole: one that unpacks (or is) larger than any real one is refused,
// naming it, before it is held in memory.
TEST(NcuSession, AnOversizedSessionPageIsRefused) {
  TempDir dir;
  std::string bomb = (dir.path() / "session.csv.gz").string();
  optimas::test::write_gzip(bomb, "Session Info\n\"Attribute\",\"Value\"\n", "\"k\",\"v\"\n", 400u << 20);
  try {
    read_session_page(bomb);
    FAIL() << "a session page of 400 MB was read";
  } catch (const optimas::ParseError& e) {
    EXPECT_NE(std::string(e.what()).find(bomb + ": the gzip data unpacks to more than 16 MiB"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(optimas::test::peak_rss_mib(), 200);
  std::string big = dir.file("big/session.csv", std::string(17u << 20, 'x'));
  EXPECT_THROW(read_session_page(big), optimas::ParseError);
}

// Broken input: every case is an error naming the file and the line, never a crash.
TEST(NcuBadInput, TruncatedSourcePage) {
  TempDir dir;
  std::string text = read_all(data_path("ncu-samples/src_both.csv"));
  // Cut in the middle of line 17 (a CUDA-line row): the last record lacks fields.
  std::size_t cut = 0;
  for (int line = 1; line < 17; ++line) cut = text.find('\n', cut) + 1;
  cut += 200;
  auto path = dir.file("trunc.csv", text.substr(0, cut));
  try {
    read_source_page(path);
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), 17u);
  }
}

TEST(NcuBadInput, TruncatedRawPageInsideAQuote) {
  TempDir dir;
  std::string text = read_all(data_path("ncu-samples/raw_base.csv"));
  auto path = dir.file("raw.csv", text.substr(0, text.size() - 5000));
  try {
    std::vector<Launch> launches;
    read_raw_page(path, launches);
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), 6u);
  }
}

// A raw page is a header, a units row and one row per launch. Cut short at a line's end (raw.csv
// cut to 4 lines imported with exit 0), it is an error at its line: a header alone, a header and
// units without launches, a launch where the units belong, a last row cut at a field, and a page
// missing launches that the details page of the same report has.
TEST(NcuBadInput, TruncatedRawPages) {
  TempDir dir;
  const std::string text = read_all(data_path("ncu-samples/raw_base.csv"));
  std::vector<std::size_t> ends; // just past each line's newline
  for (std::size_t p = text.find('\n'); p != std::string::npos; p = text.find('\n', p + 1)) ends.push_back(p + 1);
  ASSERT_EQ(ends.size(), 6u); // header, units, launches 0-3
  auto error_of = [&](const std::string& page, bool with_details) {
    std::vector<Launch> launches;
    if (with_details) read_details_page(data_path("ncu-samples/details_base_name.csv"), launches);
    std::string path = dir.file("raw.csv", page);
    try {
      read_raw_page(path, launches);
    } catch (const ParseError& e) {
      EXPECT_EQ(e.file(), path);
      return std::make_pair(e.line(), std::string(e.what()));
    }
    return std::make_pair(std::size_t{0}, std::string("no error"));
  };
  auto [line, what] = error_of(text.substr(0, ends[0]), false);
  EXPECT_EQ(line, 1u);
  EXPECT_NE(what.find("header is followed by no units row (truncated file?)"), std::string::npos) << what;
  std::tie(line, what) = error_of(text.substr(0, ends[1]), false);
  EXPECT_EQ(line, 1u);
  EXPECT_NE(what.find("its units row and no launch rows"), std::string::npos) << what;
  std::tie(line, what) = error_of(text.substr(0, ends[0]) + text.substr(ends[1]), false);
  EXPECT_EQ(line, 2u);
  EXPECT_NE(what.find("a launch row where the units row"), std::string::npos) << what;
  // The last row cut after a field: fewer fields than the header.
  std::string cut = text.substr(0, ends[3]);
  cut = cut.substr(0, cut.rfind("\",\"", cut.size() - 2000) + 1) + "\n";
  std::tie(line, what) = error_of(cut, false);
  EXPECT_EQ(line, 4u);
  EXPECT_NE(what.find("truncated file?"), std::string::npos) << what;
  // Cut to 4 lines: two launches of four, each row whole. Alone it is a page of two launches;
  // beside its details page, the page that lacks launches 2 and 3.
  std::tie(line, what) = error_of(text.substr(0, ends[3]), true);
  EXPECT_EQ(line, 4u);
  EXPECT_NE(what.find("without a row for result 2 (saxpy(int"), std::string::npos) << what;
  EXPECT_EQ(error_of(text, true).second, "no error");
  EXPECT_EQ(error_of(text.substr(0, ends[3]), false).second, "no error");
}

// Every recorded raw page reads, beside its details page.
TEST(NcuRaw, EveryRecordedPageReads) {
  int pages = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(data_path(""))) {
    if (e.path().filename() != "raw.csv.gz") continue;
    std::vector<Launch> launches;
    auto details = e.path().parent_path() / "details.csv.gz";
    if (std::filesystem::exists(details)) read_details_page(details.string(), launches);
    EXPECT_NO_THROW(read_raw_page(e.path().string(), launches)) << e.path();
    auto timing = e.path().parent_path() / "timing_raw.csv.gz";
    std::vector<Launch> timed;
    if (std::filesystem::exists(timing)) {
      EXPECT_NO_THROW(read_raw_page(timing.string(), timed)) << timing;
    }
    ++pages;
  }
  EXPECT_GE(pages, 20);
}

TEST(NcuBadInput, WrongPage) {
  std::vector<Launch> launches;
  try {
    read_details_page(data_path("ncu-samples/raw_base.csv"), launches);
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), 1u);
    EXPECT_NE(std::string(e.what()).find("Metric Name"), std::string::npos);
  }
  EXPECT_THROW(read_raw_page(data_path("ncu-samples/details_base_name.csv"), launches), ParseError);
  EXPECT_THROW(read_source_page(data_path("ncu-samples/raw_base.csv")), ParseError);
}

// A duration that is not a time (n/a, negative, 1e400) was counted as 0 when hot kernels were
// chosen; it is an error naming the file and line, in the details and in the raw page.
TEST(NcuBadInput, DurationsThatAreNotTimes) {
  for (const char* value : {"n/a", "-5", "1e400", "inf"}) {
    TempDir dir;
    auto details = dir.file(
        "d.csv",
        "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
        "\"0\",\"k(int)\",\"(32, 1, 1)\",\"(1, 1, 1)\",\"gpu__time_duration.sum\",\"ns\",\"12\"\n"
        "\"1\",\"k(int)\",\"(32, 1, 1)\",\"(1, 1, 1)\",\"gpu__time_duration.sum\",\"ns\",\"" +
            std::string(value) + "\"\n");
    std::vector<Launch> launches;
    try {
      read_details_page(details, launches);
      FAIL() << value << ": expected a ParseError";
    } catch (const ParseError& e) {
      EXPECT_EQ(e.line(), 3u) << value;
      EXPECT_NE(std::string(e.what()).find("gpu__time_duration.sum"), std::string::npos) << e.what();
    }
    auto raw = dir.file("r.csv", "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"nsecond\"\n"
                                 "\"0\",\"k(int)\",\"" +
                                     std::string(value) + "\"\n");
    launches.clear();
    try {
      read_raw_page(raw, launches);
      FAIL() << value << ": expected a ParseError";
    } catch (const ParseError& e) {
      EXPECT_EQ(e.line(), 3u) << value;
    }
  }
}

TEST(NcuBadInput, GarbageValues) {
  TempDir dir;
  auto details = dir.file(
      "d.csv", "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
               "\"0\",\"k(int)\",\"(32, 1, 1)\",\"(1, 1, 1)\",\"sm__throughput.avg.pct_of_peak\",\"%\",\"n/a\"\n"
               "\"x1\",\"k(int)\",\"(32, 1, 1)\",\"(1, 1, 1)\",\"gpu__time_duration.sum\",\"ns\",\"5\"\n");
  std::vector<Launch> launches;
  try {
    read_details_page(details, launches);
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), 3u);
    EXPECT_NE(std::string(e.what()).find("ID"), std::string::npos);
  }
  auto source = dir.file("s.csv", "\"Kernel Name\",\"k(int)\"\n\"Address\",\"Source\",\"Warp Stall Sampling (All "
                                  "Samples)\",\"stall_wait\"\n\"0x10\",\"NOP\",\"12\",\"lots\"\n");
  try {
    read_source_page(source);
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), 3u);
    EXPECT_NE(std::string(e.what()).find("stall_wait"), std::string::npos);
  }
  auto binary = dir.file("b.csv", std::string("\x7f"
                                              "ELF\x02\x01\x01\0\0\"\0\n",
                                              13));
  EXPECT_THROW(read_raw_page(binary, launches), ParseError);
}

// Found by fuzz_csv: an ID, process ID or grid size of inf or 1e300 was cast to an integer
// (undefined behaviour); it is an error at its line.
TEST(NcuBadInput, IntegersOutOfRange) {
  TempDir dir;
  const std::string header = "\"ID\",\"Process ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"Metric Name\","
                             "\"Metric Unit\",\"Metric Value\"\n";
  for (const char* row :
       {"\"inf\",\"1\",\"k()\",\"(32, 1, 1)\",\"(1, 1, 1)\"", "\"0\",\"1e300\",\"k()\",\"(32, 1, 1)\",\"(1, 1, 1)\"",
        "\"0\",\"1\",\"k()\",\"(32, 1, 1)\",\"(inf, 1, 1)\""}) {
    auto details = dir.file("d.csv", header + row + ",\"gpu__time_duration.sum\",\"ns\",\"5\"\n");
    std::vector<Launch> launches;
    try {
      read_details_page(details, launches);
      FAIL() << row << ": expected a ParseError";
    } catch (const ParseError& e) {
      EXPECT_EQ(e.line(), 2u) << row;
    }
  }
}

// Found by fuzz_ncu_pages: a sample count of 1e39 or inf was converted to an integer
// (undefined behaviour); like a fraction, it is an error naming the column and line.
TEST(NcuBadInput, SampleCountsThatAreNotWholeNumbers) {
  TempDir dir;
  for (const char* count : {"1.11111e+39", "inf", "2.5"}) {
    auto source = dir.file("s.csv", std::string("\"Kernel Name\",\"k(int)\"\n\"Address\",\"Source\",\"Warp Stall "
                                                "Sampling (All Samples)\"\n\"0x10\",\"NOP\",\"") +
                                        count + "\"\n");
    try {
      read_source_page(source);
      FAIL() << count << ": expected a ParseError";
    } catch (const ParseError& e) {
      EXPECT_EQ(e.line(), 3u) << count;
      EXPECT_NE(std::string(e.what()).find("not a sample count"), std::string::npos) << e.what();
    }
  }
}

TEST(NcuDetails, NaValueIsKeptAsText) {
  TempDir dir;
  auto details =
      dir.file("d.csv", "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\n"
                        "\"0\",\"void k<2>(int)\",\"sm__throughput.avg.pct_of_peak_sustained_elapsed\",\"%\",\"n/a\",\n"
                        "\"0\",\"void k<2>(int)\",\"gpu__time_duration.sum\",\"usecond\",\"1.5\",\n");
  std::vector<Launch> launches;
  read_details_page(details, launches);
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].kernel, "k<2>");
  EXPECT_DOUBLE_EQ(launches[0].duration_ns, 1500);
  const Metric* m = launches[0].metric("sm__throughput.avg.pct_of_peak_sustained_elapsed");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(std::isnan(m->value));
  EXPECT_EQ(m->text, "n/a");
}

TEST(NcuDetails, RepeatedHeaderWithDifferentColumns) {
  TempDir dir;
  auto details =
      dir.file("d.csv", "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
                        "\"0\",\"a()\",\"gpu__time_duration.sum\",\"ns\",\"10\"\n"
                        "\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
                        "\"1\",\"b()\",\"S\",\"gpu__time_duration.sum\",\"ns\",\"1,000\"\n");
  std::vector<Launch> launches;
  read_details_page(details, launches);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_DOUBLE_EQ(launches[1].duration_ns, 1000);
}

// Recorded on the H200 (tests/data/h200-ldg/README.md): ncu leaves the quotes of source text
// undoubled, here those of CUDA's __ldg, and the page must read as it is.
TEST(NcuSource, UndoubledQuotesInSourceTextOfARecordedPage) {
  auto blocks = read_source_page(data_path("h200-ldg/source.csv.gz"));
  ASSERT_EQ(blocks.size(), 3u);
  for (const auto& b : blocks) {
    EXPECT_EQ(b.kernel, "echo");
    const optimas::profile::SourceLine* ldg = nullptr;
    for (const auto& l : b.lines)
      if (l.line == 134 && l.file.find("sm_32_intrinsics.hpp") != std::string::npos) ldg = &l;
    ASSERT_NE(ldg, nullptr);
    EXPECT_NE(ldg->code.find(R"(asm volatile ("ld.global.nc.f32 %0, [%1];"  : "=f"(ret) : __LDG_PTR (ptr));)"),
              std::string::npos)
        << ldg->code;
    // Its load is listed under main.cu:41 first, the line calling __ldg, and counts there once.
    EXPECT_EQ(ldg->samples.all, 0u);
    const optimas::profile::SourceLine* call = find_line(b, 41);
    ASSERT_NE(call, nullptr);
    EXPECT_GT(call->samples.all, 45000u);
    std::uint64_t lines = 0;
    for (const auto& l : b.lines) lines += l.samples.all;
    EXPECT_EQ(lines, b.total_samples());
  }
  EXPECT_EQ(blocks[0].lines.front().file.find("sm_32"), std::string::npos); // main.cu's lines come first
}
