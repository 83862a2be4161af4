// optimas runs list|show|reindex: reading the run store.
#include "cli/commands.hpp"

#include "cli/common.hpp"
#include "cli/options.hpp"

#include "evaluate/verdict.hpp"
#include "store/run_store.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <functional>
#include <signal.h>

#include <filesystem>
#include <iostream>

namespace optimas::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string text(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string("-");
}

// A run still marked running whose process is gone was interrupted (killed, machine lost).
std::string live_status(const json& run) {
  std::string status = text(run, "status");
  if (status == "running" && run.contains("pid") && run["pid"].is_number()) {
    pid_t pid = run["pid"].get<pid_t>();
    if (::kill(pid, 0) != 0 && errno == ESRCH) return "interrupted";
  }
  return status;
}

void list_runs(const std::string& root, const std::string& campaign, bool as_json) {
  if (!std::filesystem::is_directory(root))
    throw UsageError(fmt::format("--runs-dir {}: no such folder (no run was made there)", root));
  store::RunStore st(root);
  auto runs = st.list_runs_now(campaign);
  for (const auto& r : runs)
    if (r.contains("problem")) log::warn("{}", r["problem"].get<std::string>());
  if (as_json) {
    std::cout << util::json_text(json(runs)) << "\n";
    return;
  }
  if (runs.empty()) {
    std::cout << "no runs in " << root << (campaign.empty() ? "" : " of campaign " + campaign) << "\n";
    return;
  }
  std::cout << fmt::format("{:<36}  {:<10} {:<11} {:<15} {:<10} {:>8}  {}\n", "id", "app", "status", "outcome",
                           "backend", "speedup", "started");
  for (const auto& r : runs) {
    std::string speedup = r.contains("speedup") && r["speedup"].is_number()
                              ? fmt::format("{:.3f}x", r["speedup"].get<double>())
                              : std::string("-");
    // An A/A run's backend proposed nothing: the column says what the run was.
    std::string backend = r.value("aa", false) ? "A/A" : text(r, "backend");
    std::cout << fmt::format("{:<36}  {:<10} {:<11} {:<15} {:<10} {:>8}  {}\n", text(r, "id"), text(r, "app"),
                             text(r, "status"), text(r, "outcome"), backend, speedup, text(r, "started"));
  }
}

// A fraction of the roofline as a percentage, "-" when unknown.
std::string percent_of(const json& v) {
  return v.is_number() ? fmt::format("{:.0f}%", 100 * v.get<double>()) : "-";
}

// Each hot kernel's speed of light before and after the variant (its re-profile).
void print_speed_of_light(const json& sol) {
  if (!sol.is_object() || sol.empty()) return;
  std::vector<std::string> parts;
  for (const auto& [kernel, e] : sol.items())
    parts.push_back(fmt::format(
        "{} {} -> {}{}", kernel, percent_of(util::member(e, "before")), percent_of(util::member(e, "after")),
        util::member_string(e, "limit_after").empty() ? "" : " (" + util::member_string(e, "limit_after") + ")"));
  std::cout << "      speed of light: " << util::join(parts, "; ") << "\n";
}

// The search tree of a run with several rounds or candidates: each node under its parent.
void print_search(const json& run) {
  const json& search = util::member(run, "search");
  if (!search.is_object() || search.value("rounds", 1) * search.value("candidates", 1) <= 1) return;
  std::cout << fmt::format("  search: {} round(s) x {} candidate(s), best {}\n", search.value("rounds", 1),
                           search.value("candidates", 1), text(search, "best"));
  const json& nodes = util::member(search, "nodes");
  std::function<void(const std::string&, int)> children = [&](const std::string& parent, int depth) {
    if (depth > 100) return; // a parent loop in a damaged run.json
    for (const auto& n : nodes) {
      if (!n.is_object() || n.value("parent", "") != parent) continue;
      std::string measured =
          n.contains("speedup") ? fmt::format(" {} {:.3f}x", text(n, "verdict"), n.value("speedup", 0.0)) : "";
      std::string cost = n.contains("cost_usd") && n["cost_usd"].is_number() && n["cost_usd"].get<double>() > 0
                             ? fmt::format(", ${:.4f}", n["cost_usd"].get<double>())
                             : "";
      std::cout << fmt::format("    {}{} (round {}, candidate {}): {}{}; {:.1f} s{}\n", std::string(2 * depth, ' '),
                               text(n, "key"), n.value("round", 0), n.value("candidate", 1), text(n, "status"),
                               measured, n.value("seconds", 0.0), cost);
      if (n.value("status", "") == "accepted") children(n.value("key", ""), depth + 1);
    }
  };
  std::cout << "    baseline\n";
  children("baseline", 1);
}

void show_run(const std::string& root, const std::string& id, bool as_json) {
  if (!std::filesystem::is_directory(root))
    throw UsageError(fmt::format("--runs-dir {}: no such folder (no run was made there)", root));
  store::RunStore st(root);
  std::string full = st.resolve(id);
  json run = st.load_run(full);
  run["status"] = live_status(run);
  for (const auto& problem : store::check_journals(st.run_dir(full), run)) log::warn("{}", problem);
  if (as_json) {
    std::cout << util::json_text(run) << "\n";
    return;
  }
  std::cout << fmt::format("run {}{}\n  app {} ({})\n  status {}, outcome {}\n  backend {}, diagnostics {}\n", full,
                           run.value("aa", false) ? " (A/A: the baseline against itself)" : "", text(run, "app"),
                           text(run, "config_path"), text(run, "status"), text(run, "outcome"), text(run, "model"),
                           text(run, "diagnostics"));
  std::cout << fmt::format("  hardware {}; software {}\n  started {}, finished {}\n  inputs sha256 {}\n",
                           text(run, "hw"), text(run, "sw"), text(run, "started"), text(run, "finished"),
                           text(run, "sha256"));
  if (run.contains("error")) std::cout << "  error: " << text(run, "error") << "\n";
  if (run.contains("not_executed_because")) std::cout << "  not run: " << text(run, "not_executed_because") << "\n";
  for (const auto& v : run.value("variants", json::array())) {
    std::cout << fmt::format("  {} ({}): {} - {}\n", text(v, "key"), text(v, "dir"), text(v, "status"),
                             text(v, "reason"));
    // What the variant cost, step by step (measure includes its confirmation).
    std::vector<std::string> steps;
    for (const auto& [key, label] : {std::pair{"ask_s", "ask"},
                                     {"build_s", "build"},
                                     {"validate_s", "validate"},
                                     {"measure_s", "measure"},
                                     {"confirm_s", "of which confirm"},
                                     {"ear_s", "re-profile"}})
      if (v.contains("times") && v["times"].contains(key) && v["times"][key].is_number())
        steps.push_back(fmt::format("{} {:.1f} s", label, v["times"][key].get<double>()));
    if (!steps.empty()) std::cout << "      time: " << util::join(steps, ", ") << "\n";
    if (v.contains("measurement"))
      for (const auto& [name, m] : v["measurement"]["configs"].items())
        std::cout << fmt::format("      {:<12} {:<22} {:.3f}x [{:.3f}, {:.3f}] p={:.3g}\n", name,
                                 evaluate::config_verdict(v["measurement"], name), m.value("speedup", 0.0),
                                 m["ci"][0].get<double>(), m["ci"][1].get<double>(), m.value("p_value", 1.0));
    print_speed_of_light(util::member(v, "speed_of_light"));
  }
  print_search(run);
  print_builds_ahead(run);
  print_tune(run);
  std::cout << fmt::format("  folder {}\n", st.run_dir(full));
}

} // namespace

void add_runs_command(CLI::App& app) {
  auto root = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  auto id = std::make_shared<std::string>();
  auto campaign = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("runs", "List and inspect stored runs");
  cmd->require_subcommand(1);
  auto* list = cmd->add_subcommand("list", "The runs in the store, newest first");
  add_option(list, "runs_dir", *root);
  list->add_flag("--json", *as_json, "Print JSON");
  list->add_option("--campaign", *campaign, "Only the runs of this campaign (optimas campaign)");
  list->callback([=] { list_runs(*root, *campaign, *as_json); });
  auto* show = cmd->add_subcommand("show", "One run: its variants, verdicts and artifacts");
  add_option(show, "runs_dir", *root);
  show->add_option("id", *id, "Run id or unique prefix")->required();
  show->add_flag("--json", *as_json, "Print run.json");
  show->callback([=] { show_run(*root, *id, *as_json); });
  auto* reindex = cmd->add_subcommand("reindex", "Rebuild index.sqlite from the run folders");
  add_option(reindex, "runs_dir", *root);
  reindex->callback([=] {
    store::RunStore st(*root);
    std::cout << fmt::format("{} run(s) indexed in {}\n", st.reindex(), st.index_path());
  });
}

} // namespace optimas::cli
