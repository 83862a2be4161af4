#include "serve/server.hpp"

#include "serve_fixture.hpp"

#include <gtest/gtest.h>

using namespace optimas;

class ServeServer : public ::testing::Test {
protected:
  void SetUp() override {
    test::write_fixture_run(m_dir);
    m_store.emplace(m_dir.path().string());
    m_store->reindex();
  }
  serve::Response get(const std::string& path, std::map<std::string, std::string> params = {}) {
    return serve::Dashboard(*m_store).handle(path, params);
  }
  test::TempDir m_dir;
  std::optional<store::RunStore> m_store;
};

TEST_F(ServeServer, EveryPageAnswers) {
  EXPECT_EQ(get("/").status, 200);
  EXPECT_NE(get("/").body.find(test::k_run_id), std::string::npos);
  EXPECT_EQ(get(std::string("/runs/") + test::k_run_id).status, 200);
  EXPECT_EQ(get("/runs/0123abcd").status, 200); // a prefix
  EXPECT_EQ(get("/compare").status, 200);
  auto c = get("/compare", {{"a", test::k_run_id}, {"b", std::string(test::k_run_id) + ":i1a1"}});
  EXPECT_EQ(c.status, 200);
  EXPECT_NE(c.body.find("triad_kernel"), std::string::npos);
}

TEST_F(ServeServer, UnknownRunsAndPagesAreNotFound) {
  EXPECT_EQ(get("/runs/ffffffff").status, 404);
  EXPECT_EQ(get("/nothing").status, 404);
  EXPECT_EQ(get("/api/nothing").status, 404);
  auto r = get("/runs/<script>x");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body.find("<script>"), std::string::npos);
  EXPECT_EQ(get("/compare", {{"a", test::k_run_id}, {"b", std::string(test::k_run_id) + ":nope"}}).status, 404);
}

TEST_F(ServeServer, FilesOutsideTheRunAreRefused) {
  std::string base = std::string("/runs/") + test::k_run_id + "/files/";
  auto ok = get(base + "snapshot/main.cu");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(get(base + "../index.sqlite").status, 403);
  EXPECT_EQ(get(base + "/etc/passwd").status, 403);
  EXPECT_EQ(get(base + "missing.txt").status, 404);
  EXPECT_EQ(get("/runs/../files/run.json").status, 404);
}

TEST_F(ServeServer, JsonEndpoints) {
  auto runs = nlohmann::json::parse(get("/api/runs").body);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["id"], test::k_run_id);
  EXPECT_EQ(runs[0]["status"], "finished");
  auto run = nlohmann::json::parse(get(std::string("/api/runs/") + test::k_run_id).body);
  EXPECT_EQ(run["schema"], "optimas.dashboard.run/1");
  EXPECT_EQ(run["variants"][0]["reply"]["edits"][0]["rationale"], "Faster <script>alert(1)</script>"); // JSON is data
  auto progress = nlohmann::json::parse(get(std::string("/api/runs/") + test::k_run_id + "/progress").body);
  EXPECT_EQ(progress["variants"][0]["status"], "accepted");
  auto cmp = get("/api/compare", {{"a", test::k_run_id}, {"b", test::k_run_id}});
  EXPECT_EQ(nlohmann::json::parse(cmp.body)["kernels"]["triad_kernel"]["FLOP/s"][1], 3.6e11);
  EXPECT_EQ(get("/api/compare").status, 400);
}

TEST_F(ServeServer, FilterAndSortTheRuns) {
  EXPECT_EQ(get("/", {{"q", "stream"}}).body.find("1 of 1 run(s)") != std::string::npos, true);
  EXPECT_NE(get("/", {{"q", "nomatch"}}).body.find("0 of 1 run(s)"), std::string::npos);
}

TEST_F(ServeServer, TheReportIsOnePage) {
  std::string html = serve::report_html(*m_store, test::k_run_id);
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u);
  EXPECT_EQ(html.find("href=\"/"), std::string::npos);
}

// Issue #52: the dashboard answers only to the names of this machine it listens on (DNS
// rebinding: a page of another site, loaded by a browser here, reaching the store through a
// name that resolves to 127.0.0.1).
TEST(ServeHost, OnlyThisServersNamesAreAnswered) {
  optimas::serve::ServeOptions o;
  for (const char* ok : {"127.0.0.1:8765", "localhost", "LOCALHOST:80", "[::1]:8765", "::1", "127.0.0.1", ""})
    EXPECT_TRUE(optimas::serve::host_allowed(ok, o)) << ok;
  for (const char* no : {"evil.example", "evil.example:8765", "127.0.0.1.evil.example", "localhost.evil.example:8765",
                         "[::1", "10.0.0.5:8765"})
    EXPECT_FALSE(optimas::serve::host_allowed(no, o)) << no;
  o.host = "10.0.0.5";
  o.allowed_hosts = {"Dash.Example.org"};
  EXPECT_TRUE(optimas::serve::host_allowed("10.0.0.5:8765", o));
  EXPECT_TRUE(optimas::serve::host_allowed("dash.example.org", o));
  EXPECT_FALSE(optimas::serve::host_allowed("other.example.org", o));
}
