// Tests of serve/campaign_page: campaign folders found in the store (and those refused), the
// Campaign page's table, cells and charts from tests/data/campaign, nulls, escaping, broken
// files, and the reload while cells are pending or running.
#include "serve/campaign_page.hpp"
#include "serve/server.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include "serve_fixture.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

using namespace optimas;
using namespace optimas::serve;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

class CampaignPage : public ::testing::Test {
protected:
  void SetUp() override {
    m_campaign = test::write_fixture_campaign(m_dir);
    m_store.emplace(m_dir.path().string());
  }
  void write(const std::string& name, const json& doc) { store::write_json_atomic(m_campaign + "/" + name, doc); }
  json fixture(const std::string& name) { return json::parse(util::read_file(m_campaign + "/" + name)); }
  std::string page() { return campaign_page(load_campaign(*m_store, test::k_campaign_id)); }

  test::TempDir m_dir;
  std::string m_campaign;
  std::optional<store::RunStore> m_store;
};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The cells (<td>...</td> contents) of the summary table's row for subset and backend.
std::vector<std::string> table_row(const std::string& html, const std::string& subset, const std::string& backend) {
  std::smatch m;
  std::regex re("<tr><td>" + std::regex_replace(subset, std::regex(R"([+])"), R"(\+)") + "</td><td>" + backend +
                "</td>(.*?)</tr>");
  std::vector<std::string> out = {subset, backend};
  if (!std::regex_search(html, m, re)) return {};
  std::string rest = m[1];
  std::regex cell("<td[^>]*>(.*?)</td>");
  for (auto it = std::sregex_iterator(rest.begin(), rest.end(), cell); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

} // namespace

TEST_F(CampaignPage, TheStoresCampaignsAreFoundAndRead) {
  auto all = list_campaigns(*m_store);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].id, test::k_campaign_id);
  EXPECT_TRUE(all[0].problems.empty()) << all[0].problems[0];
  EXPECT_EQ(all[0].table["rows"].size(), 16u);
  EXPECT_EQ(campaign_cells(all[0].state).size(), 32u);
  std::string section = campaigns_section(all);
  EXPECT_NE(section.find("<a href=\"/campaigns/examples-ablation\">examples-ablation</a>"), std::string::npos)
      << section;
  // Counts from state.json: 29 done, 1 failed, 1 running, 1 pending.
  EXPECT_NE(section.find("32 cells: 29 <span class=\"status status-done\">done</span>, 1 "), std::string::npos)
      << section;
  // No campaigns, no section.
  EXPECT_EQ(campaigns_section({}), "");
}

TEST_F(CampaignPage, EveryColumnOfTheTableIsShownWithNullsAsADash) {
  std::string html = page();
  for (const char* header : {"diagnostics",
                             "backend",
                             "cells",
                             "runs",
                             "valid-edit rate",
                             "accepted rate",
                             "speedup (geomean)",
                             "95% interval",
                             "<th>n</th>",
                             "evidence coverage",
                             "localisation",
                             "directional consistency",
                             "hallucinations",
                             "prompt tokens",
                             "completion tokens",
                             "cost (USD)",
                             "<th>rounds</th>",
                             "<th>candidates</th>",
                             "search s/run",
                             "speed of light (median)",
                             "verdicts/run"})
    EXPECT_NE(html.find(header), std::string::npos) << header;
  auto row = table_row(html, "PC+IA", "builtin");
  ASSERT_EQ(row.size(), 21u) << html;
  json t = fixture("table.json");
  const json* want = nullptr;
  for (const auto& r : t["rows"])
    if (r["diagnostics"] == "PC+IA" && r["backend"] == "builtin") want = &r;
  ASSERT_TRUE(want);
  // A table from before the search's axes: one round, one candidate.
  EXPECT_EQ(row[2], "1");
  EXPECT_EQ(row[3], "1");
  EXPECT_EQ(row[4], (*want)["cells"].dump());
  EXPECT_EQ(row[6], fmt::format("{:.0f}%", 100 * (*want)["valid_edit_rate"].get<double>()));
  EXPECT_EQ(row[8], fmt::format("{:.3g}x", (*want)["speedup"]["geomean"].get<double>()));
  EXPECT_EQ(row[16], (*want)["tokens"]["completion"].dump());
  // The manual backend's code-only row is nearly all null: each shows as the dash.
  auto nulls = table_row(html, "code-only", "manual");
  ASSERT_EQ(nulls.size(), 21u);
  for (std::size_t i : {6, 7, 8, 9, 11, 12, 13, 14, 17, 18, 19, 20}) EXPECT_EQ(nulls[i], "\xE2\x80\x93") << i;
  EXPECT_EQ(nulls[15], "9600");
  // One row per row of the table.
  EXPECT_EQ(count(html, "<tr><td>"), 16u + 2u); // + the cells and table generated rows of the summary
}

TEST_F(CampaignPage, CellsShowTheirStateAndLinkToTheirRuns) {
  std::string html = page();
  EXPECT_EQ(count(html, "<tr class=\"cell\""), 32u);
  EXPECT_NE(html.find("<tr class=\"cell\" id=\"cell-shmem-pc-builtin-s1\"><td><code>shmem-pc-builtin-s1</code>"),
            std::string::npos);
  EXPECT_NE(html.find("<a href=\"/runs/00000000-0000-4000-8000-000000000001\"><code>00000000</code></a>"),
            std::string::npos);
  // The pending cell has no run yet: a dash, no link.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(html, m, std::regex("id=\"cell-digits-ia_roofline-manual-s1\">(.*?)</tr>")));
  std::string pending = m[1];
  EXPECT_NE(pending.find("status-pending"), std::string::npos);
  EXPECT_EQ(pending.find("href"), std::string::npos);
  EXPECT_NE(html.find("status-failed\">failed"), std::string::npos);
  // The charts are there, one point per row with a speedup (15 of 16).
  EXPECT_EQ(count(html, "class=\"geomean\""), 15u);
  EXPECT_EQ(count(html, "class=\"rate\""), 30u);
  EXPECT_NE(html.find("class=\"reference\""), std::string::npos);
}

TEST_F(CampaignPage, ThePageReloadsOnlyWhileCellsArePendingOrRunning) {
  std::string refresh = "<meta http-equiv=\"refresh\" content=\"5\">";
  EXPECT_NE(page().find(refresh), std::string::npos);
  json state = fixture("state.json");
  for (auto& c : state["cells"])
    if (c["state"] == "pending") c["state"] = "done";
  write("state.json", state);
  EXPECT_NE(page().find(refresh), std::string::npos) << "one cell still runs";
  for (auto& c : state["cells"])
    if (c["state"] == "running") c["state"] = "failed";
  write("state.json", state);
  EXPECT_EQ(page().find(refresh), std::string::npos);
  // Without state.json, table.json's count of pending cells decides.
  fs::remove(m_campaign + "/state.json");
  EXPECT_NE(page().find(refresh), std::string::npos);
  json table = fixture("table.json");
  table["cells"]["pending"] = 0;
  write("table.json", table);
  EXPECT_EQ(page().find(refresh), std::string::npos);
}

TEST_F(CampaignPage, StateJsonMayHoldItsCellsByIdOrAsABareArray) {
  json by_id = {{"cells", {{"a-pc-builtin-s1", {{"state", "running"}, {"run_id", "r1"}}}}}};
  auto cells = campaign_cells(by_id);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0]["id"], "a-pc-builtin-s1");
  EXPECT_EQ(campaign_cells(json::array({{{"id", "x"}}, 3})).size(), 1u);
  EXPECT_TRUE(campaign_cells(json("cells")).empty());
  EXPECT_TRUE(campaign_cells(nullptr).empty());
}

TEST_F(CampaignPage, ABrokenTableIsANoteNeverAnError) {
  std::string path = (fs::canonical(m_campaign) / "table.json").string();
  std::ofstream(path) << "{\n  \"rows\": [\n    {\"diagnostics\": \"PC\",,\n";
  CampaignData c = load_campaign(*m_store, test::k_campaign_id);
  EXPECT_TRUE(c.table.is_null());
  EXPECT_TRUE(c.table_unreadable);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_NE(c.problems[0].find(path + ":3:"), std::string::npos) << c.problems[0];
  std::string html = campaign_page(c);
  EXPECT_NE(html.find("table.json:3:"), std::string::npos);
  EXPECT_EQ(count(html, "<tr class=\"cell\""), 32u) << "the cells still show";
  // The Runs page's list skips it with the note.
  std::string section = campaigns_section(list_campaigns(*m_store));
  EXPECT_EQ(section.find("href=\"/campaigns/"), std::string::npos) << section;
  EXPECT_NE(section.find("campaign examples-ablation skipped: " + path + ":3:"), std::string::npos) << section;
  // A table of another shape, and a state.json that is not JSON.
  write("table.json", {{"schema", "optimas.campaign-table/1"}, {"rows", "none"}});
  std::ofstream(m_campaign + "/state.json") << "[";
  c = load_campaign(*m_store, test::k_campaign_id);
  EXPECT_TRUE(c.table_unreadable);
  ASSERT_EQ(c.problems.size(), 2u);
  EXPECT_NE(c.problems[0].find("no \"rows\" array"), std::string::npos);
  EXPECT_NE(c.problems[1].find("state.json:1:"), std::string::npos) << c.problems[1];
  EXPECT_NO_THROW(campaign_page(c));
  // Only table.json's problems skip a campaign: one named "table.json" whose state.json is
  // broken is still listed, with its table.
  fs::create_directories(m_dir.path() / "campaigns" / "table.json");
  fs::copy_file(fs::path(OPTIMAS_TEST_DATA) / "campaign" / "campaigns" / test::k_campaign_id / "table.json",
                m_dir.path() / "campaigns" / "table.json" / "table.json");
  std::ofstream(m_dir.path() / "campaigns" / "table.json" / "state.json") << "{";
  section = campaigns_section(list_campaigns(*m_store));
  EXPECT_NE(section.find("href=\"/campaigns/table.json\""), std::string::npos) << section;
  // Through the server: 200 pages with the notes.
  Dashboard d(*m_store);
  EXPECT_EQ(d.handle("/", {}).status, 200);
  EXPECT_EQ(d.handle("/campaigns/examples-ablation", {}).status, 200);
}

TEST_F(CampaignPage, TextFromTheFilesIsEscaped) {
  json table = fixture("table.json");
  table["rows"][0]["diagnostics"] = "<script>alert(1)</script>";
  table["rows"][0]["backend"] = "<img src=x onerror=alert(2)>";
  table["rows"][0]["surprise<b>"] = "<i>new</i>";
  table["generated"] = "<b>now</b>";
  write("table.json", table);
  json state = fixture("state.json");
  state["cells"][0]["id"] = "<svg onload=alert(3)>";
  state["cells"][0]["run_id"] = "\"><script>";
  state["cells"][1]["state"] = "<u>odd</u>";
  write("state.json", state);
  std::string html = page();
  for (const char* raw : {"<script", "<img", "<svg onload", "<b>now", "<i>", "<u>"})
    EXPECT_EQ(html.find(raw), std::string::npos) << raw;
  EXPECT_NE(html.find("&lt;b&gt;now&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(html.find("<td>&quot;&gt;&lt;script&gt;</td>"), std::string::npos) << "a run id that is not one, as text";
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("<th>surprise&lt;b&gt;</th>"), std::string::npos) << "a key a newer table has is a column";
  EXPECT_NE(html.find("<td>&lt;i&gt;new&lt;/i&gt;</td>"), std::string::npos);
  EXPECT_EQ(html.find("href=\"/runs/\""), std::string::npos) << "no link from an id that is not one";
}

TEST_F(CampaignPage, IdsThatAreNotCampaignsOrLeaveTheStoreAreRefused) {
  for (const char* id : {"nope", "..", "../campaigns", "<script>", "", ".hidden"})
    EXPECT_THROW(load_campaign(*m_store, id), Error) << id;
  // A campaign folder that is a link out of the store is not listed and not read.
  test::TempDir outside;
  test::write_fixture_campaign(outside);
  fs::create_directory_symlink(outside.path() / "campaigns" / test::k_campaign_id,
                               m_dir.path() / "campaigns" / "elsewhere");
  EXPECT_THROW(load_campaign(*m_store, "elsewhere"), Error);
  EXPECT_EQ(list_campaigns(*m_store).size(), 1u);
  // A folder with neither file is not a campaign (yet).
  fs::create_directories(m_dir.path() / "campaigns" / "empty");
  EXPECT_EQ(list_campaigns(*m_store).size(), 1u);
  Dashboard d(*m_store);
  auto r = d.handle("/campaigns/<script>alert(1)</script>", {});
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body.find("<script>"), std::string::npos);
}

TEST_F(CampaignPage, TheServerRoutesThePageAndItsJson) {
  Dashboard d(*m_store);
  auto runs = d.handle("/", {});
  EXPECT_NE(runs.body.find("href=\"/campaigns/examples-ablation\""), std::string::npos);
  auto page = d.handle("/campaigns/examples-ablation", {});
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<svg class=\"campaign-speedup\""), std::string::npos);
  auto list = json::parse(d.handle("/api/campaigns", {}).body);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["id"], "examples-ablation");
  EXPECT_EQ(list[0]["cells"]["total"], 32);
  EXPECT_FALSE(list[0].contains("state"));
  auto one = json::parse(d.handle("/api/campaigns/examples-ablation", {}).body);
  EXPECT_EQ(one["schema"], "optimas.dashboard.campaign/1");
  EXPECT_EQ(one["table"], fixture("table.json"));
  EXPECT_EQ(one["state"]["cells"].size(), 32u);
  EXPECT_EQ(d.handle("/api/campaigns/nope", {}).status, 404);
}
