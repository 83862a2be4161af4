// optimas campaign: many loop runs (diagnostic subsets x backends x applications x seeds) through
// a launcher (src/campaign/, src/launch/; docs/campaigns.md). `campaign FILE` runs it to its end,
// `campaign status ID` prints each cell's state, `campaign table ID` the summary table.
#include "cli/commands.hpp"

#include "cli/options.hpp"

#include "campaign/runner.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <iostream>
#include <map>

namespace optimas::cli {

namespace {

using nlohmann::json;

struct CampaignCommand {
  std::string file;
  bool dry_run = false;
  bool resume = false;
  bool json = false;
  std::string id;
  std::string runs_dir = config::default_of<std::string>("runs_dir");
  std::string format = "md";
  double poll_s = campaign::RunnerOptions{}.poll_s;
};

void print_plan(const json& plan) {
  std::cout << fmt::format("campaign {}: {} cell(s) into {}, launcher {}\n", plan["campaign"].get<std::string>(),
                           plan["cells"].size(), plan["runs_dir"].get<std::string>(),
                           plan["launcher"]["name"].get<std::string>());
  for (const auto& c : plan["cells"])
    std::cout << fmt::format("  {}\n    {}\n", c["id"].get<std::string>(), c["command"].get<std::string>());
}

void run_file(const CampaignCommand& c) {
  auto file = campaign::load_campaign(c.file);
  if (c.dry_run) {
    json plan = campaign::plan_cells(file);
    if (c.json)
      std::cout << util::json_text(plan) << "\n";
    else
      print_plan(plan);
    return;
  }
  campaign::RunnerOptions o;
  o.resume = c.resume;
  o.poll_s = c.poll_s;
  o.progress = [](const std::string& line) {
    if (log::level() <= log::Level::info) fmt::print(stderr, "{}\n", line);
  };
  auto r = campaign::run_campaign(file, o);
  if (c.json)
    std::cout << util::json_text(r.table) << "\n";
  else
    std::cout << campaign::table_markdown(r.table);
  command_exit_code() = r.failed ? k_exit_error : r.waiting ? k_exit_pending : k_exit_ok;
}

void print_status(const CampaignCommand& c) {
  json state = campaign::load_state(c.runs_dir, c.id);
  if (c.json) {
    std::cout << util::json_text(state) << "\n";
    return;
  }
  std::map<std::string, int> counts;
  for (const auto& s : state.value("cells", json::array())) ++counts[s.value("state", "?")];
  std::string summary;
  for (const auto& [name, n] : counts) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, name);
  std::cout << fmt::format("campaign {}: {} cell(s), {} (as of {})\n", c.id, state.value("cells", json::array()).size(),
                           summary, state.value("updated", "?"));
  std::cout << fmt::format("  {:<40} {:<10} {:>8} {:<14} {:<36}  {}\n", "cell", "state", "attempts", "job", "run",
                           "detail");
  for (const auto& s : state.value("cells", json::array())) {
    auto text = [&](const char* k) { return s.contains(k) && s[k].is_string() ? s[k].get<std::string>() : "-"; };
    std::cout << fmt::format("  {:<40} {:<10} {:>8} {:<14} {:<36}  {}\n", text("id"), text("state"),
                             s.value("attempts", 0), text("job"), text("run_id"), text("detail"));
  }
}

void print_table(const CampaignCommand& c) {
  json table = campaign::campaign_table(c.runs_dir, c.id);
  if (c.format == "json")
    std::cout << util::json_text(table) << "\n";
  else if (c.format == "csv")
    std::cout << campaign::table_csv(table);
  else
    std::cout << campaign::table_markdown(table);
}

} // namespace

void add_campaign_command(CLI::App& app) {
  auto c = std::make_shared<CampaignCommand>();
  auto* cmd = app.add_subcommand("campaign", "A campaign: one loop run per cell (subset x backend x application x "
                                             "seed) through a launcher, and its summary table");
  cmd->add_option("file", c->file, "The campaign file (docs/campaigns.md)");
  cmd->add_flag("--dry-run", c->dry_run, "List the cells and each one's optimas run command; run nothing");
  cmd->add_flag("--resume", c->resume, "Continue the campaign: cells whose run finished are not run again");
  cmd->add_flag("--json", c->json, "Print JSON (the plan, or the table at the end)");
  cmd->add_option("--poll", c->poll_s, "Seconds between asking a scheduler for the cells' states (local wakes at once)")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  cmd->callback([c, cmd] {
    if (!cmd->get_subcommands().empty()) return;
    if (c->file.empty()) throw UsageError("optimas campaign needs a campaign file (or: campaign status|table ID)");
    run_file(*c);
  });

  auto* status = cmd->add_subcommand("status", "Each cell's state, attempts, job and run");
  status->add_option("id", c->id, "The campaign id")->required();
  add_option(status, "runs_dir", c->runs_dir);
  status->add_flag("--json", c->json, "Print state.json");
  status->callback([c] { print_status(*c); });

  auto* table = cmd->add_subcommand("table", "The summary table: per subset and backend, rates, speedups, EAR metrics");
  table->add_option("id", c->id, "The campaign id")->required();
  add_option(table, "runs_dir", c->runs_dir);
  table->add_option("--format", c->format, "md (Markdown), csv or json")
      ->check(CLI::IsMember({"md", "csv", "json"}))
      ->capture_default_str();
  table->callback([c] { print_table(*c); });
}

} // namespace optimas::cli
