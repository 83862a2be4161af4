// optimas run: the closed loop on one application (src/loop/run_loop.hpp). Progress goes to
// stderr, one line per step in batch jobs and a live line on a terminal; the result to stdout.
#include "cli/commands.hpp"

#include "cli/common.hpp"
#include "cli/options.hpp"

#include "evaluate/verdict.hpp"
#include "loop/run_loop.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/secrets.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <iostream>

namespace optimas::cli {

namespace {

// The command line of `optimas run`: the loop's options, whose overrides the option table's rows
// fill (only what is given), and what only this command has.
struct RunCommand {
  loop::RunOptions options;
  bool dry_run = false;
  bool json = false;
};

// One line per finished step; on a terminal, the step in progress is redrawn in place.
class ProgressView {
public:
  ProgressView() : m_live(::isatty(2) && log::level() <= log::Level::info) {}
  ~ProgressView() { clear(); }

  void operator()(const loop::Progress& p) {
    if (log::level() > log::Level::info) return;
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    std::string line = util::redact(fmt::format("[{:5.0f}s] {}: {}", t, p.step, p.detail));
    if (!p.done) {
      if (!m_live) return;
      clear();
      if (line.size() > 118) line = line.substr(0, 115) + "...";
      fmt::print(stderr, "\r{}", line);
      std::fflush(stderr);
      m_pending = true;
      return;
    }
    clear();
    fmt::print(stderr, "{}\n", line);
  }

private:
  void clear() {
    if (!m_pending) return;
    fmt::print(stderr, "\r\033[K");
    m_pending = false;
  }
  bool m_live;
  bool m_pending = false;
  std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
};

void print_summary(const nlohmann::json& run) {
  std::cout << fmt::format("run {} ({}): {}\n", run.value("id", ""), run.value("app", ""), run.value("outcome", ""));
  for (const auto& v : run.value("variants", nlohmann::json::array())) {
    std::cout << fmt::format("  {}: {} - {}\n", v.value("key", ""), v.value("status", ""), v.value("reason", ""));
    if (v.value("applied", 0) > 0)
      std::cout << fmt::format("      diff: {}/{}/{}/diff.patch\n", run.value("runs_root", "runs"), run.value("id", ""),
                               v.value("dir", ""));
    if (v.contains("measurement")) {
      for (const auto& [name, m] : v["measurement"]["configs"].items())
        std::cout << fmt::format("      {:<12} {:<22} {:.3f}x [{:.3f}, {:.3f}] p={:.3g}  {:.4g} -> {:.4g} ms{}\n", name,
                                 evaluate::config_verdict(v["measurement"], name), m.value("speedup", 0.0),
                                 m["ci"][0].get<double>(), m["ci"][1].get<double>(), m.value("p_value", 1.0),
                                 m.value("base_ms", 0.0), m.value("variant_ms", 0.0),
                                 m.value("held_out", false) ? "  (held out)" : "");
    }
    if (v.contains("coverage") && v["coverage"].is_object() && v["coverage"].contains("text"))
      std::cout << "      " << v["coverage"]["text"].get<std::string>() << "\n";
    if (v.contains("ear")) {
      const auto& e = v["ear"];
      auto pct = [&](const char* k) {
        return e.contains(k) && e[k].is_number() ? fmt::format("{:.0f}%", 100 * e[k].get<double>())
                                                 : std::string("n/a");
      };
      std::cout << fmt::format("      EAR: coverage {}, localisation {}, direction {}, implemented {}, withheld {}, "
                               "hallucinations {}\n",
                               pct("evidence_coverage"), pct("localization_agreement"), pct("directional_consistency"),
                               e.value("implemented", 0), e.value("withheld", 0), e.value("hallucinations", 0));
    }
  }
  print_builds_ahead(run);
  print_tune(run);
  for (const auto& w : run.value("warnings", nlohmann::json::array()))
    std::cout << "  warning: " << w.get<std::string>() << "\n";
  if (run.contains("not_executed_because"))
    std::cout << "  not run: " << run["not_executed_because"].get<std::string>()
              << "; the variant was built but nothing was measured\n";
  std::cout << fmt::format("  artifacts: {}/{}\n", run.value("runs_root", "runs"), run.value("id", ""));
}

void run_run(RunCommand& c) {
  loop::RunOptions& o = c.options;
  if (o.resume.empty() && o.config_path.empty()) throw UsageError("optimas run needs --app FILE (or --resume RUN_ID)");
  if (!o.resume.empty() && !o.overrides.empty())
    throw UsageError("--resume continues a run with its own settings; leave the other options out");
  if (!o.resume.empty() && !o.config_path.empty())
    throw UsageError("--resume continues a run with the application it recorded; leave --app out");
  if (o.overrides.value("aa", false))
    for (const char* n : {"rounds", "iterations", "candidates"})
      if (o.overrides.contains(n))
        throw UsageError(fmt::format("--aa measures the unchanged program once, in one round of one candidate: "
                                     "leave --{} out",
                                     n));
  if (c.dry_run) {
    auto plan = loop::plan(o);
    if (c.json) {
      std::cout << util::json_text(plan) << "\n";
      return;
    }
    std::cout << fmt::format("would run {} ({}) into {}/<new id>\n", plan["app"].get<std::string>(),
                             plan["config"].get<std::string>(), o.runs_root);
    if (!plan["execute"].get<bool>()) std::cout << "  no GPU here: would build and edit but not run or measure\n";
    for (const auto& s : plan["steps"]) {
      std::string what;
      for (const auto& [k, v] : s.items())
        if (k != "step" && k != "labels" && k != "points")
          what += fmt::format(" {}={}", k, v.is_string() ? v.get<std::string>() : v.dump());
      std::cout << fmt::format("  {:<9}{}\n", s["step"].get<std::string>(), what);
      for (const auto& p : s.value("points", nlohmann::json::array()))
        std::cout << fmt::format("    point  {}\n", p.get<std::string>());
    }
    for (const auto& [name, cmd] : plan["commands"].items())
      std::cout << fmt::format("  run {:<10} {}\n", name, cmd.get<std::string>());
    return;
  }
  ProgressView view;
  o.progress = [&view](const loop::Progress& p) { view(p); };
  auto r = loop::run(o);
  r.summary["runs_root"] = o.runs_root;
  if (c.json)
    std::cout << util::json_text(r.summary) << "\n";
  else
    print_summary(r.summary);
  command_exit_code() = r.exit_code;
}

} // namespace

// Every setting of optimas.yml and of the loop that `run` may change: rows of the option table.
// clang-format off
constexpr const char* k_run_overrides[] = {
    "model", "base_url", "options", "diagnostics", "scope", "fp_reassociation", "rounds", "iterations", "candidates", "memory", "memory_file", "budget_usd", "budget_minutes",
    "budget_verdicts", "retries", "runs",
    "warmup", "timing", "min_speedup", "confirm", "verdict", "end_after_kernels", "aa", "measure_configs", "validate_configs", "fresh_seeds",
    "tolerance", "import", "ncu", "tracer", "full_profile", "execute", "template", "token_budget", "cache_dir",
    "no_cache", "keep_work", "build_jobs", "gpus", "sandbox", "alpha", "tune", "tune_discover", "tune_only", "tune_point", "tune_search", "tune_budget", "work_dir", "campaign",
    "cell", "seed"};
// clang-format on

void add_run_command(CLI::App& app) {
  auto c = std::make_shared<RunCommand>();
  auto& o = c->options;
  auto* cmd =
      app.add_subcommand("run", "The closed loop: profile, analyze, ask, edit, build, validate, measure, store");
  add_option(cmd, "app", o.config_path);
  add_deprecated_alias(cmd, "-c,--config", "app", o.config_path);
  add_option(cmd, "runs_dir", o.runs_root);
  cmd->add_option("--resume", o.resume, "Continue an interrupted run (id or unique prefix)");
  cmd->add_flag("--dry-run", c->dry_run, "Show what would run, and run nothing");
  cmd->add_flag("--json", c->json, "Print the run's summary (run.json) as JSON");
  for (const char* name : k_run_overrides) add_override(cmd, name, o.overrides);
  cmd->callback([c, cmd] {
    if (cmd->count("--app") > 0 && cmd->count("--config") > 0)
      throw UsageError("--app and --config (its old name) both name the application: give --app alone");
    run_run(*c);
  });
}

} // namespace optimas::cli
