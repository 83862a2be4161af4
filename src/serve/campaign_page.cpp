#include "serve/campaign_page.hpp"

#include "serve/charts.hpp"
#include "serve/html.hpp"
#include "serve/run_files.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>

namespace optimas::serve {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* k_table_schema = "optimas.campaign-table/1";

using util::member;
using util::member_string;

bool inside(const fs::path& outer, const fs::path& inner) {
  auto o = outer.begin(), i = inner.begin();
  for (; o != outer.end(); ++o, ++i)
    if (i == inner.end() || *o != *i) return false;
  return true;
}

// root/campaigns/id when it is a folder whose real location (links resolved) is inside the store.
std::optional<fs::path> campaign_folder(const store::RunStore& store, const std::string& id) {
  if (!store::is_valid_run_id(id)) return std::nullopt;
  std::error_code ec;
  fs::path root = fs::canonical(store.root(), ec);
  if (ec) return std::nullopt;
  fs::path dir = fs::canonical(campaign_dir(store, id), ec);
  if (ec || !inside(root, dir) || dir == root || !fs::is_directory(dir, ec)) return std::nullopt;
  return dir;
}

// The document in `file`, or null with a line in `problems` when it is there but unreadable.
json read_doc(const fs::path& file, std::vector<std::string>& problems) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return nullptr;
  if (!fs::is_regular_file(file, ec)) {
    problems.push_back(fmt::format("{}: not a regular file", file.string()));
    return nullptr;
  }
  if (fs::file_size(file, ec) > k_max_file_bytes) {
    problems.push_back(fmt::format("{}: larger than {} MiB, not read", file.string(), k_max_file_bytes >> 20));
    return nullptr;
  }
  try {
    json doc = store::parse_json(util::read_file(file.string()), file.string());
    if (doc.is_object() || doc.is_array()) return doc;
    problems.push_back(fmt::format("{}:1: not a JSON object", file.string()));
  } catch (const Error& e) {
    problems.push_back(e.what());
  }
  return nullptr;
}

CampaignData read_campaign(const fs::path& dir, const std::string& id) {
  CampaignData c;
  c.id = id;
  fs::path table = dir / "table.json";
  c.table = read_doc(table, c.problems);
  c.table_unreadable = !c.problems.empty();
  if (!c.table.is_null()) {
    std::string schema = member_string(c.table, "schema");
    if (!c.table.is_object() || !member(c.table, "rows").is_array()) {
      c.problems.push_back(fmt::format("{}: no \"rows\" array; the table is not shown", table.string()));
      c.table = nullptr;
      c.table_unreadable = true;
    } else if (schema != k_table_schema) {
      c.problems.push_back(
          fmt::format("{}: schema \"{}\", not {}; shown as far as it reads", table.string(), schema, k_table_schema));
    }
  }
  c.state = read_doc(dir / "state.json", c.problems);
  return c;
}

// {total, done, failed, running, pending}: from the cells of state.json when it has them (they
// are the live record), else table.json's counts; null where neither says.
json cell_counts(const CampaignData& c) {
  auto cells = campaign_cells(c.state);
  if (!cells.empty()) {
    json n = {{"total", cells.size()}, {"done", 0}, {"failed", 0}, {"running", 0}, {"pending", 0}};
    for (const auto& cell : cells) {
      std::string s = member_string(cell, "state");
      const char* key = s == "done"                   ? "done"
                        : s == "running"              ? "running"
                        : s == "pending" || s.empty() ? "pending"
                                                      : "failed";
      n[key] = n[key].get<int>() + 1;
    }
    return n;
  }
  const json& t = member(c.table, "cells");
  return {{"total", member(t, "total")},
          {"done", member(t, "done")},
          {"failed", member(t, "failed")},
          {"running", nullptr},
          {"pending", member(t, "pending")}};
}

std::string percent(const json& v) {
  return v.is_number() ? fmt::format("{:.0f}%", 100 * v.get<double>()) : text_of(v);
}

// "4", or "4 + 1 A/A" when the row's A/A runs were left out of its figures.
std::string runs_text(const json& row) {
  const json& aa = member(row, "aa_runs");
  std::string runs = text_of(member(row, "runs"));
  return aa.is_number_integer() && aa.get<long long>() > 0 ? runs + " + " + text_of(aa) + " A/A" : runs;
}

std::string cost(const json& v) {
  return v.is_number() ? fmt::format("${:.4f}", v.get<double>()) : text_of(v);
}

// The summary table: one column per key of the contract's rows, then any key a newer table has.
std::string table_section(const json& rows) {
  static const std::vector<std::string> k_known = {"diagnostics",     "backend",
                                                   "cells",           "runs",
                                                   "valid_edit_rate", "accepted_rate",
                                                   "speedup",         "evidence_coverage",
                                                   "localisation",    "directional_consistency",
                                                   "hallucinations",  "tokens",
                                                   "cost_usd",        "aa_runs",
                                                   "rounds",          "candidates",
                                                   "seconds_per_run", "verdicts_per_run",
                                                   "sol_median"};
  std::vector<std::string> extra;
  for (const auto& r : rows)
    if (r.is_object())
      for (const auto& [key, _] : r.items())
        if (std::find(k_known.begin(), k_known.end(), key) == k_known.end() &&
            std::find(extra.begin(), extra.end(), key) == extra.end())
          extra.push_back(key);
  std::string s = "<section><h2>Summary per diagnostic subset, backend and search</h2><div class=\"wide\">"
                  "<table class=\"campaign-table\">\n<tr>"
                  "<th>diagnostics</th><th>backend</th><th>rounds</th><th>candidates</th><th>cells</th><th>runs</th>"
                  "<th>valid-edit rate</th><th>accepted rate</th><th>speedup (geomean)</th><th>95% interval</th>"
                  "<th>n</th><th>evidence coverage</th><th>localisation</th><th>directional consistency</th>"
                  "<th>hallucinations</th><th>prompt tokens</th><th>completion tokens</th><th>cost (USD)</th>"
                  "<th>search s/run</th><th>verdicts/run</th><th>speed of light (median)</th>";
  for (const auto& key : extra) s += "<th>" + escape(key) + "</th>";
  s += "</tr>\n";
  for (const auto& r : rows) {
    if (!r.is_object()) continue;
    const json& sp = member(r, "speedup");
    const json& tk = member(r, "tokens");
    std::string ci = member(sp, "ci_low").is_number() || member(sp, "ci_high").is_number()
                         ? "[" + text_of(member(sp, "ci_low")) + ", " + text_of(member(sp, "ci_high")) + "]"
                         : text_of(nullptr);
    // A table from before the search's axes: one round, one candidate.
    auto axis = [&](const char* key) { return member(r, key).is_null() ? std::string("1") : text_of(member(r, key)); };
    s += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}"
        "</td><td class=\"n\">{}</td>",
        escape(text_of(member(r, "diagnostics"))), escape(text_of(member(r, "backend"))), escape(axis("rounds")),
        escape(axis("candidates")), escape(text_of(member(r, "cells"))), escape(runs_text(r)),
        escape(percent(member(r, "valid_edit_rate"))), escape(percent(member(r, "accepted_rate"))),
        escape(speedup_text(member(sp, "geomean"))), escape(ci), escape(text_of(member(sp, "n"))));
    for (const char* key : {"evidence_coverage", "localisation", "directional_consistency", "hallucinations"})
      s += "<td class=\"n\">" + escape(text_of(member(r, key))) + "</td>";
    s += fmt::format("<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
                     escape(text_of(member(tk, "prompt"))), escape(text_of(member(tk, "completion"))),
                     escape(cost(member(r, "cost_usd"))));
    for (const char* key : {"seconds_per_run", "verdicts_per_run"}) {
      const json& v = member(r, key);
      s += "<td class=\"n\">" + escape(v.is_number() ? fmt::format("{:.1f}", v.get<double>()) : text_of(v)) + "</td>";
    }
    s += "<td class=\"n\">" + escape(percent(member(r, "sol_median"))) + "</td>";
    for (const auto& key : extra) s += "<td>" + escape(text_of(member(r, key.c_str()))) + "</td>";
    s += "</tr>\n";
  }
  return s + "</table></div></section>\n";
}

std::string cells_section(const std::vector<json>& cells) {
  std::string s = fmt::format("<section><h2>Cells</h2><table class=\"cells\">\n<tr><th>cell</th><th>app</th>"
                              "<th>diagnostics</th><th>backend</th><th>seed</th><th>state</th><th>job</th>"
                              "<th>attempts</th><th>run</th></tr>\n");
  for (const auto& c : cells) {
    std::string run = member_string(c, "run_id");
    std::string link = store::is_valid_run_id(run) ? fmt::format("<a href=\"/runs/{}\"><code>{}</code></a>", attr(run),
                                                                 escape(run.substr(0, 8)))
                                                   : escape(text_of(member(c, "run_id")));
    s += fmt::format("<tr class=\"cell\" id=\"cell-{}\"><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td>"
                     "<td class=\"n\">{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
                     anchor(member_string(c, "id")), escape(text_of(member(c, "id"))),
                     escape(text_of(member(c, "app"))), escape(text_of(member(c, "diagnostics"))),
                     escape(text_of(member(c, "backend"))), escape(text_of(member(c, "seed"))),
                     status_badge(member_string(c, "state").empty() ? "pending" : member_string(c, "state")),
                     escape(text_of(member(c, "job"))), escape(text_of(member(c, "attempts"))), link);
  }
  return s + "</table></section>\n";
}

std::string counts_text(const json& n) {
  std::string s = escape(text_of(member(n, "total"))) + " cells: ";
  std::vector<std::string> parts;
  for (const char* key : {"done", "failed", "running", "pending"})
    if (!member(n, key).is_null()) parts.push_back(escape(text_of(n[key])) + " " + status_badge(key));
  return s + util::join(parts, ", ");
}

} // namespace

std::string campaign_dir(const store::RunStore& store, const std::string& id) {
  return (fs::path(store.root()) / "campaigns" / id).string();
}

std::vector<CampaignData> list_campaigns(const store::RunStore& store) {
  std::vector<CampaignData> out;
  std::error_code ec;
  fs::path root = fs::path(store.root()) / "campaigns";
  if (!fs::is_directory(root, ec)) return out;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    std::string id = entry.path().filename().string();
    auto dir = campaign_folder(store, id);
    if (!dir) continue;
    std::error_code e2;
    if (fs::exists(*dir / "table.json", e2) || fs::exists(*dir / "state.json", e2))
      out.push_back(read_campaign(*dir, id));
  }
  std::sort(out.begin(), out.end(), [](const CampaignData& a, const CampaignData& b) { return a.id < b.id; });
  return out;
}

CampaignData load_campaign(const store::RunStore& store, const std::string& id) {
  auto dir = campaign_folder(store, id);
  if (!dir) throw Error(fmt::format("no campaign \"{}\" in {}", id, (fs::path(store.root()) / "campaigns").string()));
  return read_campaign(*dir, id);
}

std::vector<json> campaign_cells(const json& state) {
  const json& cells = state.is_array() ? state : member(state, "cells");
  std::vector<json> out;
  if (cells.is_array()) {
    for (const auto& c : cells)
      if (c.is_object()) out.push_back(c);
  } else if (cells.is_object()) {
    for (const auto& [id, c] : cells.items()) {
      if (!c.is_object()) continue;
      json cell = c;
      if (!cell.contains("id")) cell["id"] = id;
      out.push_back(std::move(cell));
    }
  }
  return out;
}

bool campaign_in_progress(const CampaignData& c) {
  json n = cell_counts(c);
  for (const char* key : {"running", "pending"})
    if (member(n, key).is_number() && n[key].get<double>() > 0) return true;
  return false;
}

std::string campaigns_section(const std::vector<CampaignData>& campaigns) {
  if (campaigns.empty()) return "";
  std::string s = "<section><h2>Campaigns</h2><table class=\"campaigns\">\n<tr><th>campaign</th><th>cells</th>"
                  "<th>table generated</th></tr>\n";
  std::string notes;
  for (const auto& c : campaigns) {
    if (c.table_unreadable) {
      for (const auto& p : c.problems)
        notes += "<p class=\"note muted\">campaign " + escape(c.id) + " skipped: " + escape(p) + "</p>\n";
      continue;
    }
    s += fmt::format("<tr><td><a href=\"/campaigns/{}\">{}</a></td><td>{}</td><td>{}</td></tr>\n", attr(c.id),
                     escape(c.id), counts_text(cell_counts(c)), escape(text_of(member(c.table, "generated"))));
  }
  return s + "</table>\n" + notes + "</section>\n";
}

std::string campaign_page(const CampaignData& c) {
  bool live = campaign_in_progress(c);
  std::string s = "<h1>Campaign " + escape(c.id) + "</h1>\n";
  if (live) s += "<p class=\"muted\">Cells are pending or running: this page reloads every 5 seconds.</p>\n";
  s += "<section><table class=\"kv\">\n";
  s += "<tr><td>cells</td><td>" + counts_text(cell_counts(c)) + "</td></tr>\n";
  s += "<tr><td>table generated</td><td>" + escape(text_of(member(c.table, "generated"))) + "</td></tr>\n";
  for (const auto& p : c.problems) s += "<tr><td>not read</td><td>" + escape(p) + "</td></tr>\n";
  s += "</table></section>\n";
  const json& rows = member(c.table, "rows");
  CampaignChart chart = campaign_chart(rows);
  if (!chart.bars.empty())
    s += "<section><h2>Speedup</h2><p class=\"muted\">Geometric mean of the cells' best speedups with its interval, "
         "per diagnostic subset and backend; the dashed line is 1x.</p>\n" +
         campaign_speedup_svg(chart) + "<h2>Rates</h2>\n" + campaign_rates_svg(chart) + "</section>\n";
  if (rows.is_array()) s += table_section(rows);
  auto cells = campaign_cells(c.state);
  if (!cells.empty()) s += cells_section(cells);
  std::string html = page("Campaign " + c.id + " - Optimas", s);
  // Live progress without script, as the Run page does for a running run.
  if (live) html.replace(html.find("<title>"), 0, "<meta http-equiv=\"refresh\" content=\"5\">");
  return html;
}

json campaign_json(const CampaignData& c) {
  return {{"schema", "optimas.dashboard.campaign/1"},
          {"id", c.id},
          {"cells", cell_counts(c)},
          {"table", c.table},
          {"state", c.state},
          {"problems", c.problems}};
}

} // namespace optimas::serve
