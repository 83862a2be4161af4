// store/apply_run.cpp: optimas apply copies a variant into your tree only over the files the run
// started from, unchanged since.
#include "store/apply_run.hpp"

#include "store/run_store.hpp"
#include "test_helpers.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/strings.hpp"

#include <gtest/gtest.h>

#include <filesystem>

using namespace optimas;
using optimas::test::TempDir;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* k_id = "3f2a0000-0000-4000-8000-000000000001";

constexpr const char* k_yml =
    "name: demo\nsources: [main.cu]\nbuild: {command: make}\n"
    "run: {command: \"./demo --out {output}\"}\nconfigs:\n  - {name: default, default: true}\n";

struct Fixture {
  TempDir app, runs;
  store::RunStore st{runs.path().string()};
  std::string yml = app.file("optimas.yml", k_yml);
  std::string source = app.file("main.cu", "slow\n");
  json run;

  // A run of the application with variant v1 (`status`) whose main.cu reads "fast", its folder
  // as the loop leaves it (the copy of optimas.yml, the snapshot and its record).
  void make_run(const std::string& status) {
    std::string dir = st.create_run(k_id);
    runs.file(std::string(k_id) + "/v1/src/main.cu", "fast\n");
    runs.file(std::string(k_id) + "/config/optimas.yml", k_yml);
    runs.file(std::string(k_id) + "/snapshot/main.cu", "slow\n");
    store::write_json_atomic(dir + "/snapshot.json",
                             {{"files", {{"main.cu", util::sha256_file(source)}}}, {"left_out", json::array()}});
    run = {{"id", k_id},
           {"config_path", yml},
           {"best", status == "accepted" ? json(std::string("v1")) : json(nullptr)},
           {"inputs", {{"main.cu", util::sha256_file(source)}, {"optimas.yml", util::sha256_file(yml)}}},
           {"variants", {{{"key", "v1"}, {"status", status}, {"reason", "why"}, {"source", "v1/src"}, {"dir", "v1"}}}}};
    write_run();
  }
  void write_run() const { store::write_json_atomic(st.run_dir(k_id) + "/run.json", run); }
};

} // namespace

TEST(ApplyRun, CopiesTheBestVariant) {
  Fixture f;
  f.make_run("accepted");
  auto applied = store::apply_variant(f.st, std::string(k_id).substr(0, 6), "", false);
  EXPECT_EQ(applied.run_id, k_id);
  EXPECT_EQ(applied.key, "v1");
  ASSERT_EQ(applied.copies.size(), 1u);
  EXPECT_EQ(applied.copies[0].second, f.source);
  EXPECT_EQ(util::read_file(f.source), "fast\n");
  EXPECT_NE(applied.diff.find("v1/diff.patch"), std::string::npos);
}

TEST(ApplyRun, RefusesChangedFilesAndUnacceptedVariantsUnlessForced) {
  Fixture f;
  f.make_run("rejected");
  EXPECT_THROW(store::apply_variant(f.st, k_id, "", false), Error); // no best
  EXPECT_THROW(store::apply_variant(f.st, k_id, "v1", false), Error);
  EXPECT_THROW(store::apply_variant(f.st, k_id, "v9", true), UsageError);
  EXPECT_EQ(util::read_file(f.source), "slow\n");
  util::write_file(f.source, "edited by hand\n");
  EXPECT_THROW(store::apply_variant(f.st, k_id, "v1", false), Error);
  EXPECT_EQ(util::read_file(f.source), "edited by hand\n");
  store::apply_variant(f.st, k_id, "v1", true);
  EXPECT_EQ(util::read_file(f.source), "fast\n");
}

TEST(ApplyRun, NothingIsCopiedWhenOneFileIsNotTheRunsSource) {
  Fixture f;
  f.make_run("accepted");
  f.runs.file(std::string(k_id) + "/v1/src/zzz.cu", "planted\n");
  EXPECT_THROW(store::apply_variant(f.st, k_id, "", false), Error);
  EXPECT_EQ(util::read_file(f.source), "slow\n");
  EXPECT_FALSE(fs::exists(f.app.path() / "zzz.cu"));
}

TEST(ApplyRun, TheVariantsOptimasYmlIsNotASource) {
  Fixture f;
  f.make_run("accepted");
  f.runs.file(std::string(k_id) + "/v1/src/optimas.yml", "name: planted\nsources: [main.cu]\n");
  try {
    store::apply_variant(f.st, k_id, "", false);
    FAIL() << "applied a variant's optimas.yml";
  } catch (const Error& e) {
    EXPECT_TRUE(util::contains(e.what(), "optimas.yml: not one of the run's sources")) << e.what();
  }
  EXPECT_EQ(util::read_file(f.yml), k_yml);
  EXPECT_EQ(util::read_file(f.source), "slow\n");
}

// An edited run.json sends apply nowhere else: a config_path naming another folder, or a source
// outside the run, is refused before anything is read or written (issue #52, item 3).
TEST(ApplyRun, RunFilesThatLeadElsewhereAreRefused) {
  Fixture f;
  f.make_run("accepted");
  TempDir elsewhere;
  const std::string other = elsewhere.file("optimas.yml", "name: victim\nsources: [main.cu]\nbuild: {command: make}\n"
                                                          "run: {command: \"./demo --out {output}\"}\n"
                                                          "configs:\n  - {name: default, default: true}\n");
  elsewhere.file("main.cu", "slow\n");
  f.run["config_path"] = other;
  f.write_run();
  EXPECT_THROW(store::apply_variant(f.st, k_id, "", true), UsageError); // --force does not override it
  EXPECT_EQ(util::read_file((elsewhere.path() / "main.cu").string()), "slow\n");

  f.run["config_path"] = f.yml;
  elsewhere.file("src/main.cu", "planted\n");
  f.run["variants"][0]["source"] = (elsewhere.path() / "src").string();
  f.write_run();
  EXPECT_THROW(store::apply_variant(f.st, k_id, "", false), UsageError);
  EXPECT_EQ(util::read_file(f.source), "slow\n");

  f.run["variants"][0]["source"] = "v1/src";
  f.write_run();
  util::write_file((f.runs.path() / k_id / "snapshot" / "main.cu").string(), "edited\n");
  EXPECT_THROW(store::apply_variant(f.st, k_id, "", false), UsageError);
  EXPECT_EQ(util::read_file(f.source), "slow\n");
  util::write_file((f.runs.path() / k_id / "snapshot" / "main.cu").string(), "slow\n");
  store::apply_variant(f.st, k_id, "", false);
  EXPECT_EQ(util::read_file(f.source), "fast\n");
}
