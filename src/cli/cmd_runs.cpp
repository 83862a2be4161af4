// optimas runs list|show|reindex, optimas apply and optimas corpus export: reading the run
// store. Only `apply` writes outside it, and only into the files the run was made from.
#include "cli/commands.hpp"

#include "store/corpus.hpp"
#include "store/run_store.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
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

void add_root_option(CLI::App* cmd, std::string& root) {
  cmd->add_option("--runs-dir", root, "Where runs are stored")->envname("OPTIMAS_RUNS")->capture_default_str();
}

void list_runs(const std::string& root, bool as_json) {
  store::RunStore st(root);
  auto runs = st.list_runs();
  for (auto& r : runs) {
    // The index holds the status when it was written; the folder knows whether it still runs.
    try {
      r["status"] = live_status(st.load_run(r["id"].get<std::string>()));
    } catch (const Error&) {
    }
  }
  if (as_json) {
    std::cout << util::json_text(json(runs)) << "\n";
    return;
  }
  if (runs.empty()) {
    std::cout << "no runs in " << root << "\n";
    return;
  }
  std::cout << fmt::format("{:<36}  {:<10} {:<11} {:<15} {:<10} {:>8}  {}\n", "id", "app", "status", "outcome",
                           "backend", "speedup", "started");
  for (const auto& r : runs) {
    std::string speedup = r.contains("speedup") && r["speedup"].is_number()
                              ? fmt::format("{:.3f}x", r["speedup"].get<double>())
                              : std::string("-");
    std::cout << fmt::format("{:<36}  {:<10} {:<11} {:<15} {:<10} {:>8}  {}\n", text(r, "id"), text(r, "app"),
                             text(r, "status"), text(r, "outcome"), text(r, "backend"), speedup, text(r, "started"));
  }
}

void show_run(const std::string& root, const std::string& id, bool as_json) {
  store::RunStore st(root);
  std::string full = st.resolve(id);
  json run = st.load_run(full);
  run["status"] = live_status(run);
  if (as_json) {
    std::cout << util::json_text(run) << "\n";
    return;
  }
  std::cout << fmt::format("run {}\n  app {} ({})\n  status {}, outcome {}\n  backend {}, diagnostics {}\n", full,
                           text(run, "app"), text(run, "config_path"), text(run, "status"), text(run, "outcome"),
                           text(run, "model"), text(run, "diagnostics"));
  std::cout << fmt::format("  hardware {}; software {}\n  started {}, finished {}\n  inputs sha256 {}\n",
                           text(run, "hw"), text(run, "sw"), text(run, "started"), text(run, "finished"),
                           text(run, "sha256"));
  if (run.contains("error")) std::cout << "  error: " << text(run, "error") << "\n";
  if (run.contains("not_executed_because")) std::cout << "  not run: " << text(run, "not_executed_because") << "\n";
  for (const auto& v : run.value("variants", json::array())) {
    std::cout << fmt::format("  {} ({}): {} - {}\n", text(v, "key"), text(v, "dir"), text(v, "status"),
                             text(v, "reason"));
    if (v.contains("measurement"))
      for (const auto& [name, m] : v["measurement"]["configs"].items())
        std::cout << fmt::format("      {:<12} {:<22} {:.3f}x [{:.3f}, {:.3f}] p={:.3g}\n", name, text(m, "verdict"),
                                 m.value("speedup", 0.0), m["ci"][0].get<double>(), m["ci"][1].get<double>(),
                                 m.value("p_value", 1.0));
  }
  std::cout << fmt::format("  folder {}\n", st.run_dir(full));
}

struct ApplyArgs {
  std::string root = "runs";
  std::string id;
  std::string variant;
  bool force = false;
};

// Copies a variant's sources over the application's, after checking the files are still the
// ones the run started from (or --force).
void apply_run(const ApplyArgs& a) {
  store::RunStore st(a.root);
  std::string id = st.resolve(a.id);
  json run = st.load_run(id);
  std::string key = a.variant.empty() ? (run["best"].is_string() ? run["best"].get<std::string>() : "") : a.variant;
  if (key.empty())
    throw Error(
        fmt::format("run {} has no accepted variant; name one with --variant KEY (see optimas runs show {})", id, id));
  const json* variant = nullptr;
  const json variants = run.value("variants", json::array());
  for (const auto& v : variants)
    if (v.value("key", "") == key) variant = &v;
  if (!variant) throw UsageError(fmt::format("run {} has no variant {}", id, key));
  if (variant->value("status", "") != "accepted" && !a.force)
    throw Error(fmt::format("variant {} of run {} was not accepted ({}: {}); --force applies it anyway", key, id,
                            variant->value("status", ""), variant->value("reason", "")));
  fs::path app_dir = fs::path(run.value("config_path", "")).parent_path();
  fs::path src = fs::path(st.run_dir(id)) / variant->value("source", "");
  if (!fs::is_directory(src)) throw Error(fmt::format("{}: the variant's sources are missing", src.string()));
  const json& inputs = run.value("inputs", json::object());
  std::vector<std::pair<fs::path, fs::path>> copies;
  for (auto it = fs::recursive_directory_iterator(src); it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_regular_file()) continue;
    std::string rel = fs::relative(it->path(), src).string();
    fs::path target = app_dir / rel;
    if (!inputs.contains(rel)) throw Error(fmt::format("{}: not one of the run's sources", rel));
    if (fs::exists(target) && util::sha256_file(target.string()) != inputs[rel].get<std::string>() && !a.force)
      throw Error(fmt::format("{} changed since run {} started; apply would overwrite those changes (--force to "
                              "do it anyway)",
                              target.string(), id));
    copies.emplace_back(it->path(), target);
  }
  for (const auto& [from, to] : copies) {
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    std::cout << fmt::format("applied {} -> {}\n", from.string(), to.string());
  }
  std::cout << fmt::format("variant {} of run {} is now in {}; the diff is in {}\n", key, id, app_dir.string(),
                           (fs::path(st.run_dir(id)) / variant->value("dir", "") / "diff.patch").string());
}

} // namespace

void add_runs_command(CLI::App& app) {
  auto root = std::make_shared<std::string>("runs");
  auto as_json = std::make_shared<bool>(false);
  auto id = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("runs", "List and inspect stored runs");
  cmd->require_subcommand(1);
  auto* list = cmd->add_subcommand("list", "The runs in the store, newest first");
  add_root_option(list, *root);
  list->add_flag("--json", *as_json, "Print JSON");
  list->callback([=] { list_runs(*root, *as_json); });
  auto* show = cmd->add_subcommand("show", "One run: its variants, verdicts and artifacts");
  add_root_option(show, *root);
  show->add_option("id", *id, "Run id or unique prefix")->required();
  show->add_flag("--json", *as_json, "Print run.json");
  show->callback([=] { show_run(*root, *id, *as_json); });
  auto* reindex = cmd->add_subcommand("reindex", "Rebuild index.sqlite from the run folders");
  add_root_option(reindex, *root);
  reindex->callback([=] {
    store::RunStore st(*root);
    std::cout << fmt::format("{} run(s) indexed in {}\n", st.reindex(), st.index_path());
  });
}

void add_apply_command(CLI::App& app) {
  auto a = std::make_shared<ApplyArgs>();
  auto* cmd = app.add_subcommand("apply", "Copy a run's accepted variant into the application's sources");
  add_root_option(cmd, a->root);
  cmd->add_option("id", a->id, "Run id or unique prefix")->required();
  cmd->add_option("--variant", a->variant, "Variant key (default: the run's best)");
  cmd->add_flag("--force", a->force, "Apply a variant that was not accepted, or over changed files");
  cmd->callback([a] { apply_run(*a); });
}

void add_corpus_command(CLI::App& app) {
  auto root = std::make_shared<std::string>("runs");
  auto out = std::make_shared<std::string>("-");
  auto opts = std::make_shared<store::CorpusOptions>();
  auto* cmd = app.add_subcommand("corpus", "The optimization corpus (docs/corpus.md)");
  cmd->require_subcommand(1);
  auto* ex = cmd->add_subcommand("export", "Write one JSON line per run, variant and input configuration");
  add_root_option(ex, *root);
  ex->add_option("runs", opts->runs, "Run ids or prefixes (default: every run)");
  ex->add_option("-o,--out", *out, "Output file (- for stdout)")->capture_default_str();
  ex->add_flag("--all-variants", opts->all_variants, "Every measured variant, not only each run's best");
  ex->callback([=] {
    store::RunStore st(*root);
    if (*out == "-") {
      auto n = store::export_corpus(st, *opts, std::cout);
      log::info("{} record(s)", n);
      return;
    }
    std::string tmp = *out + ".tmp";
    std::ofstream f(tmp);
    if (!f) throw Error(*out + ": cannot write");
    auto n = store::export_corpus(st, *opts, f);
    f.close();
    if (!f) throw Error(*out + ": write failed");
    fs::rename(tmp, *out);
    std::cout << fmt::format("{} record(s) in {}\n", n, *out);
  });
}

} // namespace optimas::cli
