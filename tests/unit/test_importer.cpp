#include "profile/importer.hpp"
#include "profile/json.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <filesystem>

using namespace optimas::profile;
using optimas::test::data_path;
using optimas::test::TempDir;
namespace fs = std::filesystem;

TEST(Importer, FolderOfPagesPicksCudaSassSource) {
  auto pages = find_pages(data_path("ncu-samples"));
  EXPECT_EQ(fs::path(pages.details).filename(), "details_base_name.csv");
  EXPECT_EQ(fs::path(pages.raw).filename(), "raw_base.csv");
  EXPECT_EQ(fs::path(pages.source).filename(), "src_both.csv");
  EXPECT_EQ(fs::path(pages.session).filename(), "session.csv");
}

TEST(Importer, SamplesFolder) {
  auto prof = import_profile(data_path("ncu-samples"));
  ASSERT_EQ(prof.runs.size(), 1u);
  const optimas::profile::Run& run = prof.runs[0];
  ASSERT_EQ(run.launches.size(), 4u);
  ASSERT_EQ(run.sources.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(run.sources[i].result_id, run.launches[i].id);
    EXPECT_EQ(run.sources[i].kernel, run.launches[i].kernel);
    EXPECT_EQ(static_cast<double>(run.sources[i].total_samples()), run.launches[i].value("smsp__pcsamp_sample_count"));
  }
  EXPECT_EQ(run.session.at("display_name"), "NVIDIA H200");
  auto j = to_json(prof);
  ASSERT_EQ(j["launches"].size(), 4u);
  EXPECT_EQ(j["launches"][1]["kernel"], "dloop");
  EXPECT_EQ(j["launches"][1]["duration_ns"], 353024.0);
  EXPECT_EQ(j["launches"][3]["duration_ns"], 352960.0);
  EXPECT_EQ(j["sources"][0]["lines"].size(), 4u);
  EXPECT_EQ(j["runs"][0]["hot_kernels"]["kernels"][0]["kernel"], "dloop");
}

TEST(Importer, ManifestDirectoryReadsTheSameData) {
  TempDir dir;
  fs::create_directories(dir.path() / "default");
  for (const char* f : {"details_base_name.csv", "raw_base.csv", "src_both.csv", "session.csv"})
    fs::copy_file(data_path(std::string("ncu-samples/") + f), dir.path() / "default" / f);
  dir.file("manifest.json", R"({"runs": [{"config": "default", "repeat": 0, "pages": {
    "details": "default/details_base_name.csv", "raw": "default/raw_base.csv",
    "source": "default/src_both.csv", "session": "default/session.csv"}}]})");
  auto a = import_profile(data_path("ncu-samples"));
  auto b = import_profile(dir.path().string());
  ASSERT_EQ(b.runs.size(), 1u);
  EXPECT_EQ(b.runs[0].config, "default");
  JsonOptions all{true, true};
  auto ja = to_json(a, all), jb = to_json(b, all);
  for (auto* j : {&ja, &jb})
    for (auto* key : {"launches", "sources"})
      for (auto& item : (*j)[key]) item.erase("config");
  EXPECT_EQ(ja["launches"], jb["launches"]);
  EXPECT_EQ(ja["sources"], jb["sources"]);
}

// The heavy pass's rounds are reports of their own, each numbering its results from 0: read as
// one run, a later round's launches follow the earlier ones and its source blocks match its own.
TEST(Importer, RoundsReadAsOneRun) {
  TempDir dir;
  fs::create_directories(dir.path() / "default");
  for (const char* round : {"r1", "r2"})
    for (const char* f : {"details_base_name.csv", "raw_base.csv", "src_both.csv", "session.csv"})
      fs::copy_file(data_path(std::string("ncu-samples/") + f),
                    dir.path() / "default" / (std::string(round) + "_" + f));
  auto pages = [](const char* r) {
    return fmt::format(R"({{"details": "default/{0}_details_base_name.csv", "raw": "default/{0}_raw_base.csv",
      "source": "default/{0}_src_both.csv", "session": "default/{0}_session.csv"}})",
                       r);
  };
  dir.file("manifest.json",
           fmt::format(R"({{"runs": [{{"config": "default", "pages": {{}}, "rounds": [{{"round": 1, "pages": {}}},
             {{"round": 2, "pages": {}}}], "profiled": [{{"function": "dloop", "launches": 2, "of": 3}}],
             "cut": {{"why": "budget ended", "round": 3}}}}]}})",
                       pages("r1"), pages("r2")));
  auto prof = import_profile(dir.path().string());
  ASSERT_EQ(prof.runs.size(), 1u);
  const auto& run = prof.runs[0];
  ASSERT_EQ(run.launches.size(), 8u);
  ASSERT_EQ(run.sources.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(run.launches[i].id, static_cast<int>(i)) << "no two rounds share a result ID";
    EXPECT_EQ(run.sources[i].result_id, run.launches[i].id);
    EXPECT_EQ(run.sources[i].kernel, run.launches[i].kernel);
    EXPECT_EQ(static_cast<double>(run.sources[i].total_samples()), run.launches[i].value("smsp__pcsamp_sample_count"));
  }
  EXPECT_EQ(run.launches[5].kernel, "dloop");
  EXPECT_EQ(run.launches[5].duration_ns, run.launches[1].duration_ns) << "round 2's launch 1 is the run's launch 5";
  EXPECT_EQ(cut_text(prof.manifest["runs"][0]), "2 of 3 launches of dloop profiled");
  // A round's pages are checked as the run's are.
  dir.file("manifest.json", R"({"runs": [{"config": "default", "rounds": [{"pages": {"raw": "../x.csv"}}]}]})");
  EXPECT_THROW(import_profile(dir.path().string()), optimas::ParseError);
  dir.file("manifest.json", R"({"runs": [{"config": "default", "rounds": [{"pages": {"raw": 3}}]}]})");
  EXPECT_THROW(import_profile(dir.path().string()), optimas::ParseError);
  dir.file("manifest.json", R"({"runs": [{"config": "default", "rounds": 3}]})");
  EXPECT_THROW(import_profile(dir.path().string()), optimas::ParseError);
}

TEST(Importer, Errors) {
  TempDir dir;
  EXPECT_THROW(import_profile((dir.path() / "missing").string()), optimas::Error);
  dir.file("notes/readme.txt", "hello\n");
  EXPECT_THROW(import_profile((dir.path() / "notes").string()), optimas::Error);
  dir.file("bad/manifest.json", "{ not json");
  EXPECT_THROW(import_profile((dir.path() / "bad").string()), optimas::ParseError);
  // A .ncu-rep needs ncu: the message says so instead of failing obscurely.
  auto rep = dir.file("r.ncu-rep", "binary");
  ImportOptions o;
  o.ncu = "/nonexistent/ncu";
  try {
    import_profile(rep, o);
    FAIL();
  } catch (const optimas::Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs Nsight Compute"), std::string::npos);
  }
}

// Mistyped fields of manifest.json (an "internal error" before) and pages that point out of the
// folder or at a device (/dev/zero used 3 GB) are errors naming manifest.json and the field.
TEST(Importer, ManifestFieldsAndPagesAreChecked) {
  TempDir dir;
  fs::create_directories(dir.path() / "default");
  fs::copy_file(data_path("ncu-samples/raw_base.csv"), dir.path() / "default" / "raw.csv");
  auto reason = [&](const std::string& manifest) -> std::string {
    dir.file("manifest.json", manifest);
    try {
      import_profile(dir.path().string());
    } catch (const optimas::ParseError& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string run = R"({"config": "default", "pages": {"raw": "default/raw.csv"}})";
  EXPECT_EQ(reason(R"({"runs": [)" + run + "]}").find("manifest.json"), std::string::npos) << "the valid one imports";
  for (auto [manifest, says] : std::vector<std::pair<std::string, std::string>>{
           {R"({"runs": 3})", "manifest lists no runs"},
           {R"([1, 2])", "must hold a JSON object"},
           {R"({"gpu": "H200", "runs": [)" + run + "]}", "\"gpu\" must be an object"},
           {R"({"gpu": {"name": 7}, "runs": [)" + run + "]}", "\"gpu.name\" must be a string"},
           {R"({"ncu": {"version": [1]}, "runs": [)" + run + "]}", "\"ncu.version\" must be a string"},
           {R"({"runs": [{"config": 5, "pages": {"raw": "default/raw.csv"}}]})", "runs[0].config must be a string"},
           {R"({"runs": [{"config": "d", "pages": {"raw": 12}}]})", "runs[0].pages.raw must be a file name"},
           {R"({"runs": [{"config": "d", "pages": {"raw": "../../../etc/passwd"}}]})", "is not a file inside"},
           {R"({"runs": [{"config": "d", "pages": {"raw": "/dev/zero"}}]})", "is not a file inside"},
           // A name the file system refuses (ENAMETOOLONG; found by fuzz_manifest).
           {R"({"runs": [{"config": "d", "pages": {"raw": ")" + std::string(300, 'x') + R"(.csv"}}]})",
            "is not a file inside"},
           // Found by fuzz_manifest: a number too large for a double escaped as nlohmann's out_of_range.
           {R"({"alpha": 1e400, "runs": [)" + run + "]}", "not valid JSON"},
           // A million nested brackets: copying and writing such a value overflowed the stack.
           {R"({"x": )" + std::string(1000000, '[') + std::string(1000000, ']') + R"(, "runs": [)" + run + "]}",
            "nested more than 256 levels deep"},
       }) {
    std::string got = reason(manifest);
    EXPECT_NE(got.find("manifest.json"), std::string::npos) << manifest << ": " << got;
    EXPECT_NE(got.find(says), std::string::npos) << manifest << ": " << got;
  }
}

// The profiles recorded on the H200 by `optimas profile` (tests/data/h200/README.md).
TEST(ImporterRecorded, StreamDefaultDurationsAndSamples) {
  auto prof = import_profile(data_path("h200/stream"));
  ASSERT_EQ(prof.runs.size(), 2u);
  const auto& run = prof.runs[1];
  EXPECT_EQ(run.config, "default");
  ASSERT_EQ(run.launches.size(), 6u);
  const char* kernels[] = {"copy_kernel", "mul_kernel", "add_kernel", "triad_kernel", "copy_kernel", "mul_kernel"};
  const double durations[] = {138560, 140000, 185920, 184480, 138784, 138144};
  const std::uint64_t samples[] = {17207, 17408, 22959, 23327, 17298, 17331};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(run.launches[i].kernel, kernels[i]);
    EXPECT_DOUBLE_EQ(run.launches[i].duration_ns, durations[i]);
    ASSERT_EQ(run.sources[i].result_id, run.launches[i].id);
    EXPECT_EQ(run.sources[i].total_samples(), samples[i]);
  }
  // The timing pass saw every launch: 10 repetitions of 6 kernels plus a warm-up.
  EXPECT_GT(run.timing.size(), run.launches.size());
  EXPECT_EQ(prof.manifest["gpu"]["name"], "NVIDIA H200");
}

TEST(ImporterRecorded, KernelSpanningTwoFiles) {
  auto prof = import_profile(data_path("h200/gather"));
  const auto& src = prof.runs[0].sources.at(0);
  EXPECT_EQ(src.kernel, "xs_lookup_kernel");
  bool header = false, main_cu = false;
  for (const auto& l : src.lines) {
    if (fs::path(l.file).filename() == "lookup.cuh" && l.line == 21) {
      header = true;
      EXPECT_EQ(l.samples.all, 8137u);
      EXPECT_EQ(l.code, "if (grid[mid].energy > e)");
    }
    main_cu = main_cu || fs::path(l.file).filename() == "main.cu";
  }
  EXPECT_TRUE(header);
  EXPECT_TRUE(main_cu);
  EXPECT_EQ(src.total_samples(), 12659u);
  EXPECT_EQ(prof.runs[0].sources.size(), prof.runs[0].launches.size());
}

// Reports built here in Nsight Compute 2025.3.1's CSV layout (docs/ncu-formats.md):
// every field quoted, the details page's 20 columns with a trailing comma, the raw page's units
// row, and the cuda,sass source page with no ID column (its blocks are in result order).
namespace {

// One profiled launch: the kernel as ncu prints it, and its PC samples.
struct Result {
  std::string kernel;
  std::uint64_t samples;
};

std::string q(std::string_view s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_row(const std::vector<std::string>& fields, bool trailing_comma = false) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + q(fields[i]);
  return out + (trailing_comma ? ",\n" : "\n");
}

std::vector<std::string> id_fields(int id, const Result& r) {
  return {std::to_string(id), "4711", "app", "127.0.0.1", r.kernel, "1", "7", "(128, 1, 1)", "(64, 1, 1)", "0", "9.0"};
}

std::string details_page(const std::vector<Result>& results) {
  std::string out = csv_row({"ID",
                             "Process ID",
                             "Process Name",
                             "Host Name",
                             "Kernel Name",
                             "Context",
                             "Stream",
                             "Block Size",
                             "Grid Size",
                             "Device",
                             "CC",
                             "Section Name",
                             "Metric Name",
                             "Metric Unit",
                             "Metric Value",
                             "Rule Name",
                             "Rule Type",
                             "Rule Description",
                             "Estimated Speedup Type",
                             "Estimated Speedup"});
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto f = id_fields(static_cast<int>(i), results[i]);
    f.insert(f.end(), {"GPU Speed Of Light Throughput", "gpu__time_duration.sum", "ns",
                       fmt::format("{},{:03}", 1 + i, 100 * i)});
    out += csv_row(f, true);
  }
  return out;
}

std::string raw_page(const std::vector<Result>& results) {
  std::vector<std::string> header = {"ID",
                                     "Process ID",
                                     "Process Name",
                                     "Host Name",
                                     "Kernel Name",
                                     "Context",
                                     "Stream",
                                     "Block Size",
                                     "Grid Size",
                                     "Device",
                                     "CC",
                                     "gpu__time_duration.sum",
                                     "smsp__pcsamp_sample_count"};
  std::string out = csv_row(header);
  std::vector<std::string> units(11, "");
  units.insert(units.end(), {"ns", ""});
  out += csv_row(units);
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto f = id_fields(static_cast<int>(i), results[i]);
    f.insert(f.end(), {std::to_string(1000 * (1 + i) + 100 * i), std::to_string(results[i].samples)});
    out += csv_row(f);
  }
  return out;
}

// A cuda,sass block: one CUDA line holding the samples, spread over two SASS instructions.
std::string source_block(const Result& r, const std::string& file = "/w/app/k.cuh") {
  std::uint64_t a = r.samples * 2 / 3, b = r.samples - a;
  std::string out = csv_row({"File Path", file}) + csv_row({"Function Name", r.kernel});
  out += csv_row({"Line No", "Source", "Address", "Source", "Warp Stall Sampling (All Samples)",
                  "Warp Stall Sampling (Not-issued Samples)", "stall_long_sb", "stall_wait"});
  out += csv_row({"12", "  s += in[(i + k) % n];", "-", "-", std::to_string(r.samples), std::to_string(a),
                  std::to_string(a), std::to_string(b)});
  out += csv_row({"", "", "0x7f15bf7a0100", "      LDG.E R2, desc[UR4][R2.64]", std::to_string(a), std::to_string(a),
                  std::to_string(a), "0"});
  out +=
      csv_row({"", "", "0x7f15bf7a0110", "      IADD3 R5, R5, R2, RZ", std::to_string(b), "0", "0", std::to_string(b)});
  return out;
}

// Imports a folder holding the three pages; the source page has the given blocks.
optimas::profile::Run import_report(const TempDir& dir, const std::vector<Result>& results,
                                    const std::vector<Result>& blocks) {
  dir.file("details.csv", details_page(results));
  dir.file("raw.csv", raw_page(results));
  std::string source;
  for (const auto& b : blocks) source += source_block(b);
  dir.file("source.csv", source);
  auto prof = import_profile(dir.path().string());
  EXPECT_EQ(prof.runs.size(), 1u);
  return prof.runs.at(0);
}

std::vector<int> result_ids(const optimas::profile::Run& run) {
  std::vector<int> ids;
  for (const auto& s : run.sources) ids.push_back(s.result_id);
  return ids;
}

const std::string k_k64 = "void K<(int)64>(const int *, int *, bool)";
const std::string k_k128 = "void K<(int)128>(const int *, int *, bool)";
const std::string k_k256 = "void K<(int)256>(const int *, int *, bool)";
const std::string k_scale = "void scale<float, (int)32>(const T1 *, T1 *, int)";

} // namespace

// The failure seen on a public program: five instances of one template; the page lists the
// blocks in another order than the launch tables (an in-order scan stopped at the first block
// it had passed: 'source block for "void K<(int)64>(...)" matches no remaining launch').
TEST(ImporterMatching, TemplateInstancesInAnotherOrder) {
  TempDir dir;
  std::vector<Result> results = {{k_k64, 100}, {k_k128, 200}, {k_k64, 101}, {k_k256, 300}, {k_scale, 50}};
  optimas::profile::Run run = import_report(dir, results, {results[1], results[0], results[3], results[2], results[4]});
  EXPECT_EQ(result_ids(run), (std::vector<int>{1, 0, 3, 2, 4}));
  ASSERT_EQ(run.launches.size(), 5u);
  EXPECT_EQ(run.launches[4].kernel, "scale<float, (int)32>");
  EXPECT_EQ(run.launches[1].demangled, k_k128);
  for (const auto& s : run.sources) {
    const Launch& l = run.launches.at(static_cast<std::size_t>(s.result_id));
    EXPECT_EQ(s.demangled, l.demangled);
    EXPECT_EQ(static_cast<double>(s.total_samples()), l.value("smsp__pcsamp_sample_count"));
  }
  EXPECT_DOUBLE_EQ(run.launches[4].duration_ns, 5400); // "5,400": a thousands separator
}

// One kernel profiled several times: the n-th block is the n-th launch, unless its samples say
// which launch it is (a block missing in the middle).
TEST(ImporterMatching, SameKernelProfiledSeveralTimes) {
  TempDir dir;
  std::vector<Result> results = {{k_k64, 10}, {k_k64, 11}, {k_k64, 12}, {k_k128, 20}};
  optimas::profile::Run run = import_report(dir, results, results);
  EXPECT_EQ(result_ids(run), (std::vector<int>{0, 1, 2, 3}));
  run = import_report(dir, results, {results[0], results[2], results[3]});
  EXPECT_EQ(result_ids(run), (std::vector<int>{0, 2, 3}));
}

// More blocks than launches: a block printed twice is dropped, a block of a kernel the launch
// tables lack is kept without a result ID; neither is an error, and nothing matched is lost.
TEST(ImporterMatching, MoreBlocksThanLaunches) {
  TempDir dir;
  std::vector<Result> results = {{k_k64, 10}, {k_k128, 20}};
  optimas::profile::Run run = import_report(dir, results, {results[0], results[0], {k_k256, 30}, results[1]});
  EXPECT_EQ(result_ids(run), (std::vector<int>{0, -1, 1}));
  EXPECT_EQ(run.sources[1].demangled, k_k256);
  EXPECT_EQ(run.sources[1].total_samples(), 30u);
  // Fewer blocks than launches: the launches without one stay, the blocks are matched.
  run = import_report(dir, {{k_k64, 10}, {k_k128, 20}, {k_k256, 30}}, {{k_k256, 30}});
  EXPECT_EQ(result_ids(run), (std::vector<int>{2}));
  EXPECT_EQ(run.launches.size(), 3u);
}

// A page that spells the kernels another way than the launch tables (another demangler's
// "K<64>", "int const*") still matches each instance to its own launches, never to another
// instance's, and the blocks take the launch tables' spelling for the later stages.
TEST(ImporterMatching, NamesSpelledAnotherWay) {
  TempDir dir;
  std::vector<Result> results = {{"void K<64>(int const*, int*, bool)", 10},
                                 {"void K<128>(int const*, int*, bool)", 20},
                                 {"void K<64>(int const*, int*, bool)", 11}};
  optimas::profile::Run run = import_report(dir, results, {{k_k128, 20}, {k_k64, 10}, {k_k64, 11}});
  EXPECT_EQ(result_ids(run), (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(run.sources[0].demangled, results[1].kernel);
  EXPECT_EQ(run.sources[0].kernel, "K<128>");
}

// Names with commas, parentheses and quotes survive the CSV quoting of every page.
TEST(ImporterMatching, NamesWithCommasParenthesesAndQuotes) {
  TempDir dir;
  const std::string anon = "void (anonymous namespace)::K<(int)64, (bool)1>(const int *, int *, bool)";
  const std::string quoted = "void tag<\"x,y\">(int)";
  std::vector<Result> results = {{anon, 10}, {k_scale, 20}, {quoted, 30}};
  optimas::profile::Run run = import_report(dir, results, results);
  EXPECT_EQ(result_ids(run), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(run.launches[0].demangled, anon);
  EXPECT_EQ(run.launches[0].kernel, "(anonymous namespace)::K<(int)64, (bool)1>");
  EXPECT_EQ(run.launches[0].block, (std::array<std::int64_t, 3>{128, 1, 1}));
  EXPECT_EQ(run.launches[2].demangled, quoted);
  EXPECT_EQ(run.sources[2].demangled, quoted);
}

// A timing pass traced in format 3 leaves the run its timeline (issue #30), which the profile's
// JSON carries; a format-1 trace (tests/data/h200) leaves none.
TEST(Importer, AFormat3TraceGivesTheRunItsTimeline) {
  optimas::profile::RunPages pages;
  pages.trace = optimas::test::data_path("trace-v3/sync-copy");
  auto run = optimas::profile::read_run(pages);
  ASSERT_TRUE(run.timeline);
  EXPECT_EQ(run.timing.size(), 50u);
  EXPECT_DOUBLE_EQ(run.timeline->wall_ns, 24250e3);
  optimas::profile::Profile p;
  p.runs.push_back(run);
  EXPECT_EQ(optimas::profile::to_json(p)["runs"][0]["timeline"]["gap_groups"][0]["count"], 49);

  auto old = optimas::profile::import_profile(optimas::test::data_path("h200/heat"));
  EXPECT_FALSE(old.runs.at(0).timeline);
  EXPECT_TRUE(optimas::profile::to_json(old)["runs"][0]["timeline"].is_null());
}
