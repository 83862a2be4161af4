#include "serve/run_files.hpp"

#include "serve_fixture.hpp"
#include "util/error.hpp"

#include <gtest/gtest.h>

#include <filesystem>

using namespace optimas;
namespace fs = std::filesystem;

class ServeRunFiles : public ::testing::Test {
protected:
  void SetUp() override { test::write_fixture_run(m_dir); }
  test::TempDir m_dir;
  test::TempDir m_outside;
};

TEST_F(ServeRunFiles, PathsInsideTheRunAreAllowed) {
  store::RunStore st(m_dir.path().string());
  auto p = serve::path_in_run(st, test::k_run_id, "snapshot/main.cu");
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, fs::canonical(m_dir.path() / test::k_run_id / "snapshot/main.cu"));
  EXPECT_TRUE(serve::path_in_run(st, test::k_run_id, "not/yet/there.txt")); // need not exist
  auto text = serve::read_run_file(st, test::k_run_id, "snapshot/main.cu");
  ASSERT_TRUE(text);
  EXPECT_NE(text->find("triad_kernel"), std::string::npos);
}

TEST_F(ServeRunFiles, DotDotAbsoluteAndEmptyPathsAreRefused) {
  store::RunStore st(m_dir.path().string());
  m_outside.file("secret.txt", "secret");
  for (const std::string& p :
       std::vector<std::string>{"../index.sqlite", "snapshot/../../x", "..", "./run.json", "", "/etc/passwd",
                                (m_outside.path() / "secret.txt").string(), std::string("run.json\0x", 10)})
    EXPECT_FALSE(serve::path_in_run(st, test::k_run_id, p)) << p;
  EXPECT_FALSE(serve::read_run_file(st, test::k_run_id, "../" + std::string(test::k_run_id) + "/run.json"));
}

TEST_F(ServeRunFiles, RunIdsThatAreNotOneFolderAreRefused) {
  store::RunStore st(m_dir.path().string());
  for (std::string id : {"..", "../x", ".hidden", "a/b", ""})
    EXPECT_FALSE(serve::path_in_run(st, id, "run.json")) << id;
}

TEST_F(ServeRunFiles, SymbolicLinksOutOfTheRunAreRefused) {
  store::RunStore st(m_dir.path().string());
  fs::path run = m_dir.path() / test::k_run_id;
  m_outside.file("secret.txt", "secret");
  fs::create_symlink(m_outside.path() / "secret.txt", run / "link.txt");
  fs::create_directory_symlink(m_outside.path(), run / "linkdir");
  fs::create_symlink(run / "run.json", run / "inside.txt");
  EXPECT_FALSE(serve::path_in_run(st, test::k_run_id, "link.txt"));
  EXPECT_FALSE(serve::path_in_run(st, test::k_run_id, "linkdir/secret.txt"));
  EXPECT_FALSE(serve::read_run_file(st, test::k_run_id, "link.txt"));
  EXPECT_TRUE(serve::read_run_file(st, test::k_run_id, "inside.txt")); // a link within the run is fine
  // A run folder that is itself a link out of the store.
  fs::create_directory_symlink(m_outside.path(), m_dir.path() / "0123abcd-link");
  EXPECT_FALSE(serve::path_in_run(st, "0123abcd-link", "secret.txt"));
}

TEST_F(ServeRunFiles, LoadsTheRunAndItsArtifacts) {
  store::RunStore st(m_dir.path().string());
  auto d = serve::load_run_data(st, "0123abcd"); // a prefix
  EXPECT_EQ(d.id, test::k_run_id);
  ASSERT_EQ(d.variants.size(), 1u);
  EXPECT_EQ(d.variants[0].reply["edits"].size(), 1u);
  EXPECT_NE(d.variants[0].diff.find("+++ b/main.cu"), std::string::npos);
  EXPECT_TRUE(d.variants[0].after.is_null()); // no re-profile
  ASSERT_EQ(d.sources.count("main.cu"), 1u);  // by name, from the snapshot
  EXPECT_TRUE(d.problems.empty());
  EXPECT_THROW(serve::load_run_data(st, "ffff"), Error);
}

TEST_F(ServeRunFiles, BrokenArtifactsAreProblemsNotErrors) {
  store::RunStore st(m_dir.path().string());
  m_dir.file(std::string(test::k_run_id) + "/diagnostics.json", "{ broken");
  m_dir.file(std::string(test::k_run_id) + "/iterations/1/attempt-1/measurements.jsonl",
             "{\"kernel_ms\": 1}\nnot json\n");
  auto d = serve::load_run_data(st, test::k_run_id);
  ASSERT_EQ(d.problems.size(), 2u);
  EXPECT_NE(d.problems[0].find("diagnostics.json: not valid JSON"), std::string::npos);
  EXPECT_NE(d.problems[1].find("measurements.jsonl:2"), std::string::npos);
  EXPECT_EQ(d.variants[0].samples.size(), 1u);
}

TEST_F(ServeRunFiles, AVariantFolderOutsideTheRunIsNotRead) {
  store::RunStore st(m_dir.path().string());
  auto run = st.load_run(test::k_run_id);
  run["variants"][0]["dir"] = "../../";
  store::write_json_atomic((m_dir.path() / test::k_run_id / "run.json").string(), run);
  auto d = serve::load_run_data(st, test::k_run_id);
  EXPECT_TRUE(d.variants[0].reply.is_null());
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_NE(d.problems[0].find("outside the run"), std::string::npos);
}
