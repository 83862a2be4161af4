#include "serve/run_page.hpp"

#include "serve/sections.hpp"
#include "serve_fixture.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>

using namespace optimas;

namespace {

// The element with that id, up to the end of its row or block (enough to see its links).
std::string element_with_id(const std::string& html, const std::string& id) {
  auto at = html.find("id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  auto end = html.find("</tr>", at);
  auto div = html.find("</div>", at);
  return html.substr(at, std::min(end, div) - at);
}

class ServeRunPage : public ::testing::Test {
protected:
  void SetUp() override {
    test::write_fixture_run(m_dir);
    store::RunStore st(m_dir.path().string());
    m_html = serve::run_page(serve::load_run_data(st, test::k_run_id));
  }
  test::TempDir m_dir;
  std::string m_html;
};

} // namespace

TEST_F(ServeRunPage, RepliesWithMarkupShowAsText) {
  EXPECT_EQ(m_html.find("<script"), std::string::npos);
  EXPECT_EQ(m_html.find("<img"), std::string::npos);
  EXPECT_NE(m_html.find("Faster &lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(m_html.find("&lt;img src=x onerror=alert(2)&gt;"), std::string::npos);
  EXPECT_NE(m_html.find("faster &lt;by far&gt;"), std::string::npos);
  EXPECT_NE(m_html.find("DRAM 89% &lt;b&gt;of peak&lt;/b&gt;"), std::string::npos);
}

TEST_F(ServeRunPage, EditsLinkToTheirEvidenceAndBack) {
  std::string edit = element_with_id(m_html, "edit-i1a1-0");
  ASSERT_FALSE(edit.empty());
  EXPECT_NE(edit.find("href=\"#ev-PC1\""), std::string::npos);
  EXPECT_NE(edit.find("href=\"#ev-RF1\""), std::string::npos);
  EXPECT_EQ(edit.find("href=\"#ev-PC2\""), std::string::npos);
  for (const char* id : {"ev-PC1", "ev-RF1"}) {
    std::string ev = element_with_id(m_html, id);
    ASSERT_FALSE(ev.empty()) << id;
    EXPECT_NE(ev.find("href=\"#edit-i1a1-0\""), std::string::npos) << id;
    EXPECT_NE(ev.find("badge cited"), std::string::npos) << id;
  }
  std::string uncited = element_with_id(m_html, "ev-PC2");
  ASSERT_FALSE(uncited.empty());
  EXPECT_EQ(uncited.find("#edit-"), std::string::npos);
}

TEST_F(ServeRunPage, SourceLinesAreShadedByTheirShare) {
  // The snapshot holds the profiled lines, so the source is the snapshot's, lines 1-4.
  EXPECT_EQ(m_html.find("does not hold the profiled lines"), std::string::npos);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      m_html, m, std::regex("data-share=\"0.9000\" style=\"background:rgba\\(220,38,38,([0-9.]+)\\)\"")));
  double hot = std::stod(m[1]);
  ASSERT_TRUE(std::regex_search(
      m_html, m, std::regex("data-share=\"0.0500\" style=\"background:rgba\\(220,38,38,([0-9.]+)\\)\"")));
  EXPECT_GT(hot, std::stod(m[1]));
  EXPECT_NE(m_html.find("<td class=\"n\">4</td>"), std::string::npos); // context after the last stalled line
}

TEST_F(ServeRunPage, AnotherVersionOfTheSourceFallsBackToTheProfilesLines) {
  m_dir.file(std::string(test::k_run_id) + "/snapshot/main.cu", "// rewritten\nint main() {}\n");
  store::RunStore st(m_dir.path().string());
  std::string html = serve::run_page(serve::load_run_data(st, test::k_run_id));
  EXPECT_NE(html.find("does not hold the profiled lines"), std::string::npos);
  EXPECT_NE(html.find("int i = threadIdx.x;"), std::string::npos);
  EXPECT_EQ(html.find("// rewritten"), std::string::npos);
}

TEST_F(ServeRunPage, ChartsDiffAndMetricsAreThere) {
  EXPECT_NE(m_html.find("<svg class=\"roofline\""), std::string::npos);
  EXPECT_NE(m_html.find("data-label=\"before\""), std::string::npos);
  EXPECT_EQ(m_html.find("data-label=\"after\""), std::string::npos); // no re-profile in the fixture
  EXPECT_NE(m_html.find("<svg class=\"samples\""), std::string::npos);
  EXPECT_NE(m_html.find("data-low=\"1.7\" data-high=\"2.3\""), std::string::npos);
  EXPECT_NE(m_html.find("<td class=\"del\">  a[i] = b[i] + s * c[i];</td>"), std::string::npos);
  EXPECT_NE(m_html.find("<td class=\"add\">  a[i] = fma(s, c[i], b[i]);</td>"), std::string::npos);
  EXPECT_NE(m_html.find("evidence_coverage"), std::string::npos);
  EXPECT_NE(m_html.find("href=\"/runs/"), std::string::npos); // artifact links on the server's page
}

TEST_F(ServeRunPage, TheReportLinksNowhereOutsideItself) {
  store::RunStore st(m_dir.path().string());
  serve::PageOptions o;
  o.report = true;
  std::string html = serve::run_page(serve::load_run_data(st, test::k_run_id), o);
  std::smatch m;
  std::string rest = html;
  while (std::regex_search(rest, m, std::regex("(href|src)=\"([^\"]*)\""))) {
    std::string target = m[2];
    EXPECT_TRUE(target.rfind("#", 0) == 0 || target == "data:,") << target;
    rest = m.suffix();
  }
  EXPECT_NE(html.find("href=\"#ev-PC1\""), std::string::npos);
}

TEST(ServeSections, SideBySidePairsDeletionsWithAdditions) {
  std::string t = serve::side_by_side("--- a/x\n+++ b/x\n@@ -10,3 +10,3 @@\n keep\n-old <1>\n+new <1>\n tail\n");
  EXPECT_NE(t.find("<td class=\"n\">11</td><td class=\"del\">old &lt;1&gt;</td><td class=\"n\">11</td><td "
                   "class=\"add\">new &lt;1&gt;</td>"),
            std::string::npos);
  EXPECT_NE(t.find("<td class=\"n\">12</td><td>tail</td>"), std::string::npos);
  EXPECT_NE(serve::side_by_side("").find("No diff"), std::string::npos);
}

namespace {

// A stall line of diagnostics.json as `optimas analyze` writes it since it finds causes: its
// memory facts, the line its wait comes from and the branch where its warps split.
nlohmann::json line_with_causes(const std::string& id, long line, long cause_line, long branch_line) {
  using nlohmann::json;
  return {{"id", id},
          {"file", "/profiled/there/main.cu"},
          {"line", line},
          {"code", "code " + std::to_string(line)},
          {"kernel_share", 0.5},
          {"stall", "stall_long_scoreboard"},
          {"fraction", 0.8},
          {"memory",
           {{"accesses", json::array({{{"space", "global"}, {"operation", "load"}, {"text", "global load <32-bit>"}}})},
            {"threads", 12.5},
            {"divergent_branches", 3},
            {"text", "global load (32-bit): 4.0 sectors per request <ideal 1.0>"}}},
          {"cause",
           {{"status", "found"},
            {"kind", "producer"},
            {"file", "/elsewhere/main.cu"},
            {"line", cause_line},
            {"instruction", "LDG.E"},
            {"text", "waits on the global load (32-bit) of main.cu:" + std::to_string(cause_line) +
                         " (LDG.E, 32-bit, 4.0 sectors per request) & more"},
            {"facts", nullptr}}},
          {"divergence",
           {{"status", "found"},
            {"file", "main.cu"},
            {"line", branch_line},
            {"threads", 12.5},
            {"branch_threads", 32},
            {"text", "runs with 12.5 of 32 threads: its warps split at the branch of main.cu:" +
                         std::to_string(branch_line) + " <32.0 threads there>"}}}};
}

std::string numbered_source(int lines) {
  std::string text;
  for (int n = 1; n <= lines; ++n) text += "code " + std::to_string(n) + "\n";
  return text;
}

} // namespace

// A stalled line shows its memory facts, cause and divergence under it; the line its cause and
// the branch its divergence point to are shown (though far off and without samples) and marked.
TEST(ServeSections, StalledLinesShowTheirCausesAndMarkWhereTheyComeFrom) {
  auto lines = nlohmann::json::array({line_with_causes("PC1", 30, 4, 20)});
  // Causes that are not marked: in another file, not found (no line), on the stalled line itself.
  auto other = line_with_causes("PC2", 36, 10, 36);
  other["cause"]["file"] = "/profiled/there/other.cu";
  lines.push_back(other);
  auto ambiguous = line_with_causes("PC3", 38, 12, 38);
  ambiguous["cause"]["status"] = "ambiguous";
  ambiguous["cause"]["line"] = nullptr;
  ambiguous["divergence"]["line"] = "14";
  lines.push_back(ambiguous);
  std::string t = serve::stall_source(numbered_source(40), lines, {{"PC1", {"edit-i1a1-0"}}});

  const std::string memory = "<b>memory:</b> global load (32-bit): 4.0 sectors per request &lt;ideal 1.0&gt;";
  const std::string cause = "<b>cause:</b> waits on the global load (32-bit) of main.cu:4 (LDG.E, 32-bit, 4.0 sectors "
                            "per request) &amp; more";
  const std::string divergence =
      "<b>divergence:</b> runs with 12.5 of 32 threads: its warps split at the branch of main.cu:20 &lt;32.0 threads "
      "there&gt;";
  // Under line 30's row, before line 31's.
  auto row30 = t.find("<td class=\"n\">30</td>"), row31 = t.find("<td class=\"n\">31</td>");
  ASSERT_NE(row30, std::string::npos) << t;
  ASSERT_NE(row31, std::string::npos) << t;
  auto facts = t.find("<tr class=\"facts\">", row30);
  ASSERT_LT(facts, row31) << t;
  std::string under = t.substr(facts, row31 - facts);
  EXPECT_NE(under.find(memory), std::string::npos) << under;
  EXPECT_NE(under.find(cause), std::string::npos) << under;
  EXPECT_NE(under.find(divergence), std::string::npos) << under;
  EXPECT_EQ(t.find("<32"), std::string::npos) << "unescaped text";

  // Line 4 (no samples, 26 lines above) and line 20 are shown with their marks, their context too.
  EXPECT_NE(t.find("<tr class=\"marked\"><td class=\"n\">4</td><td></td><td>code 4</td><td class=\"mark\">cause of "
                   "<a class=\"badge cited\" href=\"#ev-PC1\">PC1</a></td></tr>"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("<tr class=\"marked\"><td class=\"n\">20</td><td></td><td>code 20</td><td class=\"mark\">warps "
                   "split here for <a class=\"badge cited\" href=\"#ev-PC1\">PC1</a></td></tr>"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("<td class=\"n\">1</td>"), std::string::npos);
  EXPECT_NE(t.find("<td class=\"n\">7</td>"), std::string::npos);
  EXPECT_EQ(t.find("<td class=\"n\">8</td>"), std::string::npos);
  EXPECT_EQ(t.find("<td class=\"n\">16</td>"), std::string::npos);
  EXPECT_NE(t.find("<td class=\"n\">17</td>"), std::string::npos);

  // Not marked: PC2's cause is in other.cu, its divergence on its own line; PC3's are not found.
  EXPECT_EQ(t.find("for <a class=\"badge\" href=\"#ev-PC2\">"), std::string::npos) << t;
  EXPECT_EQ(t.find("of <a class=\"badge\" href=\"#ev-PC2\">"), std::string::npos) << t;
  EXPECT_EQ(t.find("for <a class=\"badge\" href=\"#ev-PC3\">"), std::string::npos) << t;
  EXPECT_EQ(t.find("of <a class=\"badge\" href=\"#ev-PC3\">"), std::string::npos) << t;
  EXPECT_EQ(t.find("<td class=\"n\">10</td>"), std::string::npos) << t;
  EXPECT_EQ(t.find("<td class=\"n\">12</td>"), std::string::npos) << t;
  EXPECT_EQ(t.find("<td class=\"n\">14</td>"), std::string::npos) << t;
  // Their texts are still shown under them.
  EXPECT_NE(t.find("of main.cu:10 (LDG.E"), std::string::npos);
}

// A cause line that is itself a stalled line carries its mark after its stall.
TEST(ServeSections, AStalledCauseLineCarriesItsMarkToo) {
  auto lines = nlohmann::json::array({line_with_causes("PC1", 8, 5, 8), line_with_causes("PC2", 5, 5, 5)});
  std::string t = serve::stall_source(numbered_source(10), lines, {});
  auto row5 = t.find("<td class=\"n\">5</td>");
  ASSERT_NE(row5, std::string::npos);
  std::string row = t.substr(row5, t.find("</tr>", row5) - row5);
  EXPECT_NE(row.find("80% <span class=\"mark\">cause of <a class=\"badge\" href=\"#ev-PC1\">PC1</a></span>"),
            std::string::npos)
      << row;
  EXPECT_EQ(t.find("class=\"marked\""), std::string::npos) << t;
}

// A line of an older diagnostics.json (no memory, cause or divergence, or null, or mistyped):
// the row as before, no facts row and no mark.
TEST(ServeSections, OldStallLinesRenderAsBefore) {
  nlohmann::json old = {{"id", "PC1"},         {"file", "/p/main.cu"},  {"line", 2},       {"code", "b();"},
                        {"kernel_share", 0.5}, {"stall", "stall_wait"}, {"fraction", 0.75}};
  const std::string expected =
      "<table class=\"src\">\n<tr><td class=\"n\">1</td><td></td><td>a();</td></tr>\n"
      "<tr class=\"stalled\" data-share=\"0.5000\" style=\"background:rgba(220,38,38,0.336)\"><td "
      "class=\"n\">2</td><td><a class=\"badge\" href=\"#ev-PC1\">PC1</a></td><td>b();</td><td class=\"muted\">50.0% "
      "stall_wait 75%</td></tr>\n<tr><td class=\"n\">3</td><td></td><td>c();</td></tr>\n</table>\n";
  const std::string file = "a();\nb();\nc();\n";
  EXPECT_EQ(serve::stall_source(file, nlohmann::json::array({old}), {}), expected);

  auto nulls = old;
  nulls["memory"] = nullptr, nulls["cause"] = nullptr, nulls["divergence"] = nullptr;
  EXPECT_EQ(serve::stall_source(file, nlohmann::json::array({nulls}), {}), expected);

  auto empty = old; // no facts to tell, a cause not decided without words
  empty["memory"] = {
      {"accesses", nlohmann::json::array()}, {"threads", nullptr}, {"divergent_branches", 0}, {"text", ""}};
  empty["cause"] = {{"status", "found"}, {"file", "main.cu"}, {"line", 2}, {"text", ""}};
  EXPECT_EQ(serve::stall_source(file, nlohmann::json::array({empty}), {}), expected);

  auto mistyped = old;
  mistyped["memory"] = "global load";
  mistyped["cause"] = {{"status", "found"}, {"file", 3}, {"line", "1"}, {"text", 7}};
  mistyped["divergence"] = nlohmann::json::array({1, 2});
  EXPECT_EQ(serve::stall_source(file, nlohmann::json::array({mistyped}), {}), expected);
}

// The Run page: the fixture's lines (no causes) show no facts; with causes, the texts and marks.
TEST(ServeRunPageCauses, TheSourceViewShowsFactsAndCauseLines) {
  test::TempDir dir;
  test::write_fixture_run(dir);
  store::RunStore st(dir.path().string());
  std::string before = serve::run_page(serve::load_run_data(st, test::k_run_id));
  EXPECT_EQ(before.find("<tr class=\"facts\">"), std::string::npos);
  EXPECT_EQ(before.find("class=\"marked\""), std::string::npos);
  EXPECT_EQ(before.find("class=\"mark\""), std::string::npos);

  auto d = test::fixture_diagnostics();
  auto& pc1 = d["kernels"][0]["stalls"]["lines"][0]; // main.cu:3
  auto with = line_with_causes("PC1", 3, 1, 1);
  for (const char* key : {"memory", "cause", "divergence"}) pc1[key] = with[key];
  store::write_json_atomic((dir.path() / test::k_run_id / "diagnostics.json").string(), d);
  std::string html = serve::run_page(serve::load_run_data(st, test::k_run_id));
  EXPECT_NE(html.find("<b>memory:</b> global load (32-bit): 4.0 sectors per request &lt;ideal 1.0&gt;"),
            std::string::npos);
  EXPECT_NE(html.find("<b>cause:</b> waits on the global load (32-bit) of main.cu:1 (LDG.E"), std::string::npos);
  EXPECT_NE(html.find("<b>divergence:</b> runs with 12.5 of 32 threads"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"marked\"><td class=\"n\">1</td><td></td><td>__global__ void triad_kernel() "
                      "{</td><td class=\"mark\">cause of <a class=\"badge cited\" href=\"#ev-PC1\">PC1</a>, warps "
                      "split here for <a class=\"badge cited\" href=\"#ev-PC1\">PC1</a></td></tr>"),
            std::string::npos)
      << html;

  // Another version of the source: the profile's lines, and the cause line without its code.
  dir.file(std::string(test::k_run_id) + "/snapshot/main.cu", "// rewritten\nint main() {}\n");
  html = serve::run_page(serve::load_run_data(st, test::k_run_id));
  EXPECT_NE(html.find("does not hold the profiled lines"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"marked\"><td class=\"n\">1</td><td></td><td></td><td class=\"mark\">cause of "),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<b>cause:</b> waits on the global load"), std::string::npos);
}

// A search (rounds x candidates): the tree under the baseline, each node linking to its variant,
// a child under its parent, with its status, speedup, cost; the budget and why it stopped.
TEST(ServeRunPageSearch, TheTreeUnderItsParents) {
  test::TempDir dir;
  test::write_fixture_run(dir);
  const auto path = dir.path() / test::k_run_id / "run.json";
  auto run = nlohmann::json::parse(test::read_all(path.string()));
  run["search"] = {{"rounds", 2},
                   {"candidates", 2},
                   {"best", "i1a1"},
                   {"budget", {{"verdicts", {{"limit", 3}, {"spent", 3}}}}},
                   {"stopped", "the budget of 3 verdict(s) is spent"},
                   {"nodes",
                    {{{"key", "i1a1"},
                      {"parent", "baseline"},
                      {"round", 1},
                      {"candidate", 1},
                      {"status", "accepted"},
                      {"speedup", 1.5},
                      {"ci", {1.4, 1.6}},
                      {"seconds", 12.5},
                      {"cost_usd", 0.0125}},
                     {{"key", "i1c2a1"},
                      {"parent", "baseline"},
                      {"round", 1},
                      {"candidate", 2},
                      {"status", "duplicate"},
                      {"seconds", 0.1}},
                     {{"key", "i2a1"},
                      {"parent", "i1a1"},
                      {"round", 2},
                      {"candidate", 1},
                      {"status", "rejected"},
                      {"speedup", 0.9},
                      {"seconds", 20.0}}}}};
  run["memory"] = {{"1",
                    {{{"run", "aaaa0001"},
                      {"variant", "i1a1"},
                      {"kernel", "k1"},
                      {"for_kernel", "triad_kernel"},
                      {"shared", {"class:memory-bound"}},
                      {"speedup", 1.5}}}}};
  std::ofstream(path) << run.dump();
  store::RunStore st(dir.path().string());
  std::string html = serve::run_page(serve::load_run_data(st, test::k_run_id));
  auto at = [&](const std::string& text) { return html.find(text); };
  ASSERT_NE(at("<h2 id=\"search\">Search</h2>"), std::string::npos);
  EXPECT_NE(at("2 round(s) x 2 candidate(s); best i1a1"), std::string::npos);
  EXPECT_NE(at("budget verdicts: 3 of 3"), std::string::npos);
  EXPECT_NE(at("stopped: the budget of 3 verdict(s) is spent"), std::string::npos);
  // i2a1 in the list that opens inside i1a1's item, before i1a1's item closes; i1c2a1 beside it.
  auto i1 = at("<li id=\"node-i1a1\">"), i2 = at("<li id=\"node-i2a1\">"), dup = at("<li id=\"node-i1c2a1\">");
  ASSERT_NE(i1, std::string::npos);
  ASSERT_NE(i2, std::string::npos);
  ASSERT_NE(dup, std::string::npos);
  EXPECT_LT(i1, i2);
  EXPECT_LT(i2, html.find("</li>", i1 + 1) + 1);
  EXPECT_LT(i2, dup);
  EXPECT_NE(html.find("href=\"#variant-i1a1\">i1a1</a> <span class=\"status status-accepted\">accepted</span> 1.500x "
                      "[1.400, 1.600]",
                      i1),
            std::string::npos);
  EXPECT_NE(at("round 1, candidate 1; 12.5 s, $0.0125"), std::string::npos);
  EXPECT_NE(at("round 1: worked example k1 of run <code>aaaa0001</code>"), std::string::npos);
}

// A run whose profile had a timeline (issue #30): the application's section with its AP items;
// without one, no such section.
TEST(ServeRunPageApplication, TheTimelineAndItsApItems) {
  test::TempDir dir;
  test::write_fixture_run(dir);
  store::RunStore st(dir.path().string());
  EXPECT_EQ(serve::run_page(serve::load_run_data(st, test::k_run_id)).find("id=\"application\""), std::string::npos);

  auto d = test::fixture_diagnostics();
  d["timeline"] = {{"wall_ns", 24.25e6}, {"busy_ns", 5.95e6},    {"busy_fraction", 5.95 / 24.25},
                   {"kernel_ns", 5e6},   {"transfer_ns", 0.9e6}, {"gap_ns", 15.3e6}};
  d["evidence"].push_back(
      {{"id", "AP1"}, {"kind", "application"}, {"kernel", ""}, {"text", "GPU idle 75% <of> the run"}});
  store::write_json_atomic((dir.path() / test::k_run_id / "diagnostics.json").string(), d);
  std::string html = serve::run_page(serve::load_run_data(st, test::k_run_id));
  auto at = html.find("id=\"application\"");
  ASSERT_NE(at, std::string::npos);
  std::string section = html.substr(at, html.find("id=\"variants\"") - at);
  EXPECT_NE(section.find("GPU busy 24.5% of 24.250 ms (kernels 5.000 ms, copies 0.900 ms); 15.300 ms idle"),
            std::string::npos)
      << section;
  EXPECT_NE(section.find("id=\"ev-AP1\""), std::string::npos);
  EXPECT_NE(section.find("GPU idle 75% &lt;of&gt; the run"), std::string::npos);
  EXPECT_EQ(section.find("ev-PC1"), std::string::npos) << "the kernels' items stay in their sections";
}

// The tuning stage: the knobs found (no tune: block), the search, every point with its flags,
// status and speedup linked to its result; without a tune record, no such section.
TEST(ServeRunPageTune, KnobsFoundAndEveryPoint) {
  test::TempDir dir;
  test::write_fixture_run(dir);
  store::RunStore st(dir.path().string());
  EXPECT_EQ(serve::run_page(serve::load_run_data(st, test::k_run_id)).find("id=\"tune\""), std::string::npos);

  const auto path = dir.path() / test::k_run_id / "run.json";
  auto run = nlohmann::json::parse(test::read_all(path.string()));
  run["tune"] = {
      {"discovered",
       {{"knobs", {"TPB (main.cu:172, 64 128 256 512 1024): the block size of k <1>"}},
        {"passed", {"main.cu:9: other is launched with a literal block size (128)"}},
        {"edited", {"main.cu"}}}},
      {"method", "exhaustive"},
      {"grid", 5},
      {"allowed", 5},
      {"budget", 8},
      {"parent", "baseline"},
      {"best", "t2"},
      {"stopped", "the budget of 1.0 min is spent"},
      {"points",
       {{{"key", "t1"}, {"flags", "-DTPB=64"}, {"status", "rejected"}, {"speedup", 0.9}, {"ci", {0.8, 1.0}}},
        {{"key", "t2"},
         {"flags", "-DTPB=128"},
         {"status", "accepted"},
         {"speedup", 1.25},
         {"ci", {1.2, 1.3}},
         {"cached", true}},
        {{"key", "t3"}, {"flags", "-DTPB=512"}, {"status", "build_stale"}, {"speedup", nullptr}}}},
      {"passed_over",
       {{{"point", "TPB=64 dlcm=<ca>"}, {"reason", "not built: TPB=64 dlcm=none crashed the program at t1"}}}}};
  std::ofstream(path) << run.dump();
  std::string html = serve::run_page(serve::load_run_data(st, test::k_run_id));
  auto at = [&](const std::string& text) { return html.find(text); };
  ASSERT_NE(at("<h2 id=\"tune\">Tuning</h2>"), std::string::npos);
  EXPECT_NE(at("<li>TPB (main.cu:172, 64 128 256 512 1024): the block size of k &lt;1&gt;</li>"), std::string::npos);
  EXPECT_NE(at("other is launched with a literal block size (128)"), std::string::npos);
  EXPECT_NE(at("exhaustive search over 5 allowed point(s) of 5, budget 8, on baseline's sources; best t2"),
            std::string::npos);
  EXPECT_NE(at("stopped: the budget of 1.0 min is spent"), std::string::npos);
  EXPECT_NE(at("<a href=\"/runs/" + std::string(test::k_run_id) +
               "/files/tune/t2/result.json\">tune/t2/result.json</a>"
               "</td><td><code>-DTPB=128</code></td><td>accepted (cached)</td><td>1.250x [1.200, 1.300]</td>"),
            std::string::npos)
      << html.substr(at("id=\"tune\""));
  EXPECT_NE(at("<code>-DTPB=512</code></td><td>build_stale</td><td></td>"), std::string::npos);
  EXPECT_NE(at("<p>TPB=64 dlcm=&lt;ca&gt;: not built: TPB=64 dlcm=none crashed the program at t1</p>"),
            std::string::npos);
}
