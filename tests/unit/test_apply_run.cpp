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

struct Fixture {
  TempDir app, runs;
  store::RunStore st{runs.path().string()};
  std::string source = app.file("main.cu", "slow\n");

  // A run of the application with variant v1 (`status`) whose main.cu reads "fast".
  void make_run(const std::string& status) {
    std::string dir = st.create_run(k_id);
    runs.file(std::string(k_id) + "/v1/src/main.cu", "fast\n");
    json run = {
        {"id", k_id},
        {"config_path", (app.path() / "optimas.yml").string()},
        {"best", status == "accepted" ? json(std::string("v1")) : json(nullptr)},
        {"inputs", {{"main.cu", util::sha256_file(source)}}},
        {"variants", {{{"key", "v1"}, {"status", status}, {"reason", "why"}, {"source", "v1/src"}, {"dir", "v1"}}}}};
    store::write_json_atomic(dir + "/run.json", run);
  }
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
