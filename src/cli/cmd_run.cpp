// optimas run: the closed loop on one application (src/loop/run_loop.hpp). Progress goes to
// stderr, one line per step in batch jobs and a live line on a terminal; the result to stdout.
#include "cli/commands.hpp"

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

struct RunArgs {
  std::string config;
  std::string runs_root = "runs";
  std::string resume;
  bool dry_run = false;
  bool json = false;
  // Overrides of optimas.yml; empty or unset values leave the file's settings alone.
  std::string model, base_url, diagnostics, scope, timing, tolerance, import, ncu, tracer, execute, template_path,
      cache_dir;
  std::vector<std::string> options, measure_configs, validate_configs;
  int iterations = 0, retries = -1, runs = 0, warmup = -1, fresh_seeds = -1;
  std::size_t token_budget = 0;
  double min_speedup = 0;
  bool full_profile = false, no_cache = false, keep_work = false, no_confirm = false, aa = false;
};

loop::Overrides overrides_from(const RunArgs& a) {
  loop::Overrides o = loop::Overrides::object();
  auto text = [&](const char* key, const std::string& v) {
    if (!v.empty()) o[key] = v;
  };
  text("model", a.model);
  text("base_url", a.base_url);
  text("diagnostics", a.diagnostics);
  text("scope", a.scope);
  text("timing", a.timing);
  text("tolerance", a.tolerance);
  text("import", a.import);
  text("ncu", a.ncu);
  text("tracer", a.tracer);
  text("execute", a.execute);
  text("template", a.template_path);
  text("cache_dir", a.cache_dir);
  if (!a.options.empty()) o["options"] = a.options;
  if (!a.measure_configs.empty()) o["measure_configs"] = a.measure_configs;
  if (!a.validate_configs.empty()) o["validate_configs"] = a.validate_configs;
  if (a.iterations > 0) o["iterations"] = a.iterations;
  if (a.retries >= 0) o["retries"] = a.retries;
  if (a.runs > 0) o["runs"] = a.runs;
  if (a.warmup >= 0) o["warmup"] = a.warmup;
  if (a.fresh_seeds >= 0) o["fresh_seeds"] = a.fresh_seeds;
  if (a.token_budget > 0) o["token_budget"] = a.token_budget;
  if (a.full_profile) o["full_profile"] = true;
  if (a.no_cache) o["no_cache"] = true;
  if (a.keep_work) o["keep_work"] = true;
  if (a.min_speedup > 0) o["min_speedup"] = a.min_speedup;
  if (a.no_confirm) o["confirm"] = false;
  if (a.aa) o["aa"] = true;
  return o;
}

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
                                 m.value("verdict", ""), m.value("speedup", 0.0), m["ci"][0].get<double>(),
                                 m["ci"][1].get<double>(), m.value("p_value", 1.0), m.value("base_ms", 0.0),
                                 m.value("variant_ms", 0.0), m.value("held_out", false) ? "  (held out)" : "");
    }
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
  for (const auto& w : run.value("warnings", nlohmann::json::array()))
    std::cout << "  warning: " << w.get<std::string>() << "\n";
  if (run.contains("not_executed_because"))
    std::cout << "  not run: " << run["not_executed_because"].get<std::string>()
              << "; the variant was built but nothing was measured\n";
  std::cout << fmt::format("  artifacts: {}/{}\n", run.value("runs_root", "runs"), run.value("id", ""));
}

void run_run(const RunArgs& a) {
  loop::RunOptions o;
  o.config_path = a.config;
  o.runs_root = a.runs_root;
  o.resume = a.resume;
  o.overrides = overrides_from(a);
  if (a.resume.empty() && a.config.empty()) throw UsageError("optimas run needs --config FILE (or --resume RUN_ID)");
  if (!a.resume.empty() && !o.overrides.empty())
    throw UsageError("--resume continues a run with its own settings; leave the other options out");
  if (a.dry_run) {
    auto plan = loop::plan(o);
    if (a.json) {
      std::cout << util::json_text(plan) << "\n";
      return;
    }
    std::cout << fmt::format("would run {} ({}) into {}/<new id>\n", plan["app"].get<std::string>(),
                             plan["config"].get<std::string>(), a.runs_root);
    if (!plan["execute"].get<bool>()) std::cout << "  no GPU here: would build and edit but not run or measure\n";
    for (const auto& s : plan["steps"]) {
      std::string what;
      for (const auto& [k, v] : s.items())
        if (k != "step" && k != "labels")
          what += fmt::format(" {}={}", k, v.is_string() ? v.get<std::string>() : v.dump());
      std::cout << fmt::format("  {:<9}{}\n", s["step"].get<std::string>(), what);
    }
    for (const auto& [name, cmd] : plan["commands"].items())
      std::cout << fmt::format("  run {:<10} {}\n", name, cmd.get<std::string>());
    return;
  }
  ProgressView view;
  o.progress = [&view](const loop::Progress& p) { view(p); };
  auto r = loop::run(o);
  r.summary["runs_root"] = a.runs_root;
  if (a.json)
    std::cout << util::json_text(r.summary) << "\n";
  else
    print_summary(r.summary);
  command_exit_code() = r.exit_code;
}

} // namespace

void add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* cmd =
      app.add_subcommand("run", "The closed loop: profile, analyze, ask, edit, build, validate, measure, store");
  cmd->add_option("-c,--config", a->config, "The application's optimas.yml (or its folder)");
  cmd->add_option("--runs-dir", a->runs_root, "Where runs are stored")->envname("OPTIMAS_RUNS")->capture_default_str();
  cmd->add_option("--resume", a->resume, "Continue an interrupted run (id or unique prefix)");
  cmd->add_flag("--dry-run", a->dry_run, "Show what would run, and run nothing");
  cmd->add_flag("--json", a->json, "Print the run's summary (run.json) as JSON");
  cmd->add_option("-m,--model", a->model, "Backend: builtin (default), manual, provider/model")
      ->envname("OPTIMAS_MODEL");
  cmd->add_option("--base-url", a->base_url, "Server URL for the backend")->envname("OPTIMAS_BASE_URL");
  cmd->add_option("--option", a->options, "Backend option key=value (repeatable)");
  cmd->add_option("--diagnostics", a->diagnostics, "Evidence in prompts: any of pc, ia, roofline, or all");
  cmd->add_option("--scope", a->scope, "Where edits may go: kernel or file");
  cmd->add_option("--iterations", a->iterations, "Rounds, each from the best variant with a fresh profile");
  cmd->add_option("--retries", a->retries, "Further attempts after a build failure or guardrail rejection");
  cmd->add_option("--runs", a->runs, "Timed runs of baseline and variant each");
  cmd->add_option("--warmup", a->warmup, "Untimed runs of each first");
  cmd->add_option("--timing", a->timing,
                  "trace (the kernels' traced GPU time), kernel_time (the printed time), wall, or auto (trace for "
                  "CUDA programs where the tracer exists, else kernel_time when configured, else wall)");
  cmd->add_option("--min-speedup", a->min_speedup, "Accept only when the speedup's interval lies above this (1.01)");
  cmd->add_flag("--no-confirm", a->no_confirm, "Accept without a confirmation round of fresh runs");
  cmd->add_flag(
      "--aa", a->aa,
      "Calibration: measure a second build of the unchanged baseline against it (nothing is asked or edited)");
  cmd->add_option("--measure-configs", a->measure_configs, "Configurations to measure (default: all)")->delimiter(',');
  cmd->add_option("--validate-configs", a->validate_configs, "Configurations to validate on (default: all)")
      ->delimiter(',');
  cmd->add_option("--fresh-seeds", a->fresh_seeds, "Extra validation runs per configuration with new seeds");
  cmd->add_option("--tolerance", a->tolerance, "exact (default), abs=X, rel=X or ulp=N");
  cmd->add_option("--import", a->import, "Use this recorded profile instead of profiling");
  cmd->add_option("--ncu", a->ncu, "The ncu executable")->envname("OPTIMAS_NCU");
  cmd->add_option("--tracer", a->tracer, "Kernel tracer: auto (liboptimas-trace.so beside optimas), a path, or none")
      ->envname("OPTIMAS_TRACER");
  cmd->add_flag("--full", a->full_profile, "Profile with one --set full pass instead of two passes");
  cmd->add_option("--execute", a->execute, "Run programs: auto (when a GPU is present), yes, no");
  cmd->add_option("--template", a->template_path, "A prompt template file");
  cmd->add_option("--token-budget", a->token_budget, "Split prompts larger than this many tokens");
  cmd->add_option("--cache-dir", a->cache_dir, "Response cache")->envname("OPTIMAS_CACHE_DIR");
  cmd->add_flag("--no-cache", a->no_cache, "Always call the backend");
  cmd->add_flag("--keep-work", a->keep_work, "Keep the scratch builds (runs/<id>/work) after the run");
  cmd->callback([a] { run_run(*a); });
}

} // namespace optimas::cli
