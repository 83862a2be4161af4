#include "profile/importer.hpp"
#include "profile/json.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

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
           // Found by fuzz_manifest: a number too large for a double escaped as nlohmann's out_of_range.
           {R"({"alpha": 1e400, "runs": [)" + run + "]}", "not valid JSON"},
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
