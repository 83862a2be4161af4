// The driver of the loop (the step files are listed in run_state.hpp): open or resume a run,
// settle its settings, snapshot the application, then baseline, profile and analyze, the
// iterations of attempts, and the summary.
#include "loop/run_loop.hpp"
#include "evaluate/child_record.hpp"
#include "evaluate/snapshot.hpp"

#include "analysis/json.hpp"
#include "config/options.hpp"
#include "loop/run_state.hpp"
#include "profile/importer.hpp"
#include "propose/prepare.hpp"
#include "store/journal.hpp"
#include "store/run_inputs.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/log.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace optimas::loop {

namespace fs = std::filesystem;
using nlohmann::json;
using store::read_json;

void Loop::say(const std::string& step, const std::string& detail, bool done) const {
  std::lock_guard<std::mutex> lock(m_say_mutex);
  log::debug("{}: {}", step, detail);
  if (m_options.progress) m_options.progress({step, detail, done});
}

config::AppConfig Loop::app_in(const fs::path& dir) const {
  config::AppConfig a = m_app;
  a.dir = dir.string();
  return a;
}

// The configurations validation or measurement will run (the baseline runs only those).
std::set<std::string> Loop::used_configs() const {
  std::set<std::string> used;
  for (const auto& c : evaluate::validation_checks(m_app, "")) used.insert(c.config);
  if (m_app.measure.configs.empty())
    for (const auto& c : m_app.configs) used.insert(c.name);
  for (const auto& n : m_app.measure.configs) used.insert(n);
  return used;
}

// The record of variant `key` in run.json, or nullptr (also for "", the baseline).
const json* Loop::variant_record(const std::string& key) const {
  const json* found = nullptr;
  for (const auto& x : m_variants)
    if (!key.empty() && x.value("key", "") == key) found = &x;
  return found;
}

fs::path Loop::parent_work() const {
  return m_dir / "work" / (m_best.empty() ? "baseline" : m_best);
}

// The parent's sources: the snapshot's, or those of the best variant so far.
fs::path Loop::parent_sources() const {
  const json* best = variant_record(m_best);
  return best ? m_dir / best->value("source", "") : m_dir / "snapshot";
}

std::string Loop::parent_fingerprint() const {
  const json* best = variant_record(m_best);
  if (!best) return m_baseline.value("fingerprint", "");
  return read_json((m_dir / best->value("dir", "") / "build.json").string()).value("fingerprint", "");
}

std::map<std::string, std::string> Loop::current_sources() const {
  std::map<std::string, std::string> out;
  for (const auto& s : m_app.sources)
    out[fs::path(s).filename().string()] = util::read_file((parent_sources() / s).string());
  return out;
}

const std::map<std::string, std::string>& Loop::host_sources() const {
  if (!m_host_sources) m_host_sources = propose::read_host_sources(m_app, m_dir / "snapshot");
  return *m_host_sources;
}

void Loop::record_isolation() {
  m_run["sandbox"] = {{"level", evaluate::isolation_name(m_sandbox.isolation)},
                      {"summary", evaluate::isolation_summary(m_sandbox.isolation)}};
}

void Loop::configure() {
  apply_overrides(m_app, m_overrides);
  m_settings = settings_from(m_app, m_overrides);
  m_backend = backend_config(m_app, m_settings, m_overrides);
  m_sandbox = evaluate::sandbox_for(m_app);
  bool automatic = false;
  m_sandbox.isolation = evaluate::parse_isolation(m_settings.sandbox, automatic).value_or(evaluate::Isolation::watch);
  if (!evaluate::allows(m_sandbox.isolation))
    throw UsageError(fmt::format("--sandbox {}: this machine does not allow it (the strongest it allows is {}; "
                                 "docs/sandbox.md)",
                                 m_settings.sandbox, evaluate::isolation_name(evaluate::strongest_isolation())));
  // Timing by trace: the traced GPU time of every kernel, so that a program that prints no
  // time, an odd one or a false one is measured alike. auto takes it for CUDA programs where
  // the tracer exists.
  m_measure_sandbox = m_sandbox;
  if (m_app.measure.timing == "trace" || (m_app.measure.timing == "auto" && m_app.needs_gpu)) {
    m_measure_sandbox.tracer = profile::resolve_tracer(m_settings.tracer);
    if (m_measure_sandbox.tracer.empty() && m_app.measure.timing == "trace")
      throw UsageError("--timing trace needs the kernel tracer (liboptimas-trace.so, built where CUDA's CUPTI is "
                       "found), and there is none beside optimas; pass --tracer PATH");
  }
  evaluate::shield_self(); // before any program of ours starts
  // A rule that can never accept is worth knowing before anything runs. The fixed rule's rank test
  // on whole runs has a floor on its p-value that depends on the runs; the sequential rule's test
  // on traced launches (Yuen's, evaluate/stats.hpp) has none, so with a trace there is nothing to
  // warn of (as a warning it said "no variant can be accepted" of runs that accepted some).
  const bool sequential_traced = m_app.measure.verdict == "sequential" && !m_measure_sandbox.tracer.empty();
  if (auto w = sequential_traced
                   ? std::nullopt
                   : evaluate::unreachable_significance(m_app.measure.runs, acceptance_rule(m_app),
                                                        measured_configs(m_app).size(), tests_per_config(m_app)))
    m_warnings.push_back(*w +
                         (m_app.tune.runs() ? " (each tuning point the budget allows counts as an iteration)" : ""));
  if (std::string w = config::fp_reassociation_caveat(m_app); !w.empty()) m_warnings.push_back(w);
  // Execution needs a GPU for CUDA programs; profiling needs ncu too.
  bool gpu = !m_app.needs_gpu || evaluate::gpu_present();
  if (m_settings.execute == "yes")
    m_execute = true;
  else if (m_settings.execute == "no")
    m_execute = false, m_no_execute_reason = "--execute no";
  else
    m_execute = gpu;
  if (!m_execute && m_no_execute_reason.empty()) m_no_execute_reason = "no GPU on this machine (nvidia-smi lists none)";
  // A host program is profiled only with an explicitly named profiler (a stand-in, in tests).
  m_can_profile = m_execute && (m_app.needs_gpu || m_overrides.contains("ncu")) &&
                  util::find_executable(m_settings.ncu).has_value();
}

// A resumed run keeps the settings it started with (options.json) and refuses an optimas.yml
// that changed since.
void Loop::resume_run() {
  m_store.emplace(m_options.runs_root);
  m_id = m_store->resolve(m_options.resume);
  m_dir = m_store->run_dir(m_id);
  m_run = m_store->load_run(m_id);
  if (m_run.value("status", "") == "finished")
    throw UsageError(fmt::format("run {} has finished; there is nothing to resume (optimas runs show {})", m_id, m_id));
  // Before anything is read through the folder or written into it: no link out of it, no path
  // run.json names outside it, the optimas.yml and the snapshot the run recorded.
  const std::string config_path = store::check_run_folder(m_dir, m_id, m_run);
  m_overrides = read_json((m_dir / "options.json").string());
  for (const auto& v : m_run.value("variants", json::array())) m_variants.push_back(v);
  m_app = config::load_app_config(config_path);
  configure();
  say("resume", fmt::format("run {} ({}), from {}", m_id, m_app.name, m_dir.string()));
}

namespace {

// The settings that name a file or folder, made absolute before options.json records them: the
// programs of a run work in folders of their own, and a resumed run may start from another one.
// The manual backend's folder and the response cache are pinned from their relative defaults too.
void pin_paths(json& overrides) {
  for (std::string key : {"import", "template", "tracer", "work_dir", "cache_dir"}) {
    std::string v;
    if (overrides.contains(key))
      v = overrides[key].get<std::string>();
    else if (key == "work_dir" || key == "cache_dir")
      v = config::default_of<std::string>(key.c_str());
    if (v.empty() || v == "auto" || v == "none") continue;
    overrides[key] = fs::absolute(v).lexically_normal().string();
  }
}

} // namespace

void Loop::start_run() {
  fs::path p(m_options.config_path);
  if (fs::is_directory(p)) p /= "optimas.yml";
  m_app = config::load_app_config(p.string());
  m_overrides = m_options.overrides;
  pin_paths(m_overrides);
  configure(); // bad settings fail before a run folder exists
  check_tune_point(false);
  if (m_settings.import.empty() && !m_can_profile && !m_app.tune.only) throw cannot_profile();
  m_store.emplace(m_options.runs_root);
  m_id = store::new_run_id();
  m_dir = m_store->create_run(m_id);
  m_run = {
      {"schema", store::k_run_schema},      {"id", m_id},          {"app", m_app.name},   {"config_path", m_app.path},
      {"started", util::utc_now_iso8601()}, {"finished", nullptr}, {"status", "running"}, {"variants", json::array()}};
  store::write_json_atomic((m_dir / "options.json").string(), m_overrides);
  say("run", fmt::format("{} ({}), artifacts in {}", m_id, m_app.name, m_dir.string()));
}

void Loop::open_run() {
  if (!m_options.resume.empty())
    resume_run();
  else
    start_run();
  // Before anything reuses the scratch folders: what a killed earlier process left running in
  // them ends, and from now on our own children are recorded for a later resume.
  if (int ended = evaluate::end_recorded_children((m_dir / "children.json").string(), m_id))
    say("resume", fmt::format("ended {} program(s) an earlier optimas left running", ended));
  m_children.emplace((m_dir / "children.json").string(), m_id);
  m_run["pid"] = static_cast<long>(::getpid());
  m_run["status"] = "running";
  m_run["backend"] = m_backend.provider;
  m_run["model"] = m_backend.model.empty() ? m_backend.provider : m_backend.provider + "/" + m_backend.model;
  m_run["diagnostics"] = analysis::parse_diagnostics(m_app.optimize.diagnostics).label();
  m_run["execute"] = m_execute;
  // A resumed run keeps the level its baseline ran at (lowered to watch where the walls stopped it).
  if (bool automatic = false; m_run.contains("sandbox") && m_run["sandbox"].is_object())
    if (auto level = evaluate::parse_isolation(m_run["sandbox"].value("level", ""), automatic))
      m_sandbox.isolation = m_measure_sandbox.isolation = *level;
  record_isolation();
  if (m_execute) say("run", "sandbox: " + evaluate::isolation_summary(m_sandbox.isolation));
  const json seed = m_settings.seed ? json(*m_settings.seed) : json(nullptr);
  if (!m_settings.campaign.empty())
    m_run["campaign"] = {{"id", m_settings.campaign}, {"cell", m_settings.cell}, {"seed", seed}};
  else if (m_settings.seed)
    m_run["seed"] = seed;
  if (m_settings.aa) m_run["aa"] = true;
  for (const auto& w : m_warnings) say("run", "warning: " + w);
  // A resumed run keeps what its earlier processes warned of (a sandbox lowered to watch), first.
  std::vector<std::string> warnings;
  for (const auto& w : m_run.value("warnings", json::array()))
    if (w.is_string()) warnings.push_back(w.get<std::string>());
  for (auto& w : m_warnings)
    if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(std::move(w));
  m_warnings = std::move(warnings);
  m_run["warnings"] = m_warnings;
  if (!m_execute) m_run["not_executed_because"] = m_no_execute_reason;
  write_run("running");
}

void Loop::write_run(const std::string& status) {
  m_run["status"] = status;
  m_run["variants"] = m_variants;
  // The tree follows the variants: a run stopped mid-round, or in the tuning stage after its last
  // round, shows every variant measured so far.
  if (!m_variants.empty()) m_run["search"] = search_tree();
  m_run["best"] = m_best.empty() ? json(nullptr) : json(m_best);
  {
    std::lock_guard<std::mutex> lock(m_run_file_mutex);
    store::write_json_atomic((m_dir / "run.json").string(), m_run);
  }
  try {
    m_store->index_run(m_run);
  } catch (const Error& e) {
    // The folder is the record; a locked or broken index is rebuilt by `optimas runs reindex`.
    log::warn("run {}: the index was not updated ({})", m_id, e.what());
  }
}

std::string Loop::resume_command() const {
  std::string cmd = "optimas run --resume " + m_id.substr(0, 8);
  // The store as optimas found it, absolute: the command works from any folder.
  if (m_options.runs_root != "runs") cmd += " --runs-dir " + util::shell_quote(m_store->root());
  return cmd;
}

// The inputs of the run, hashed: the configuration and every source, so a result can be
// matched with exactly the code it came from. The whole folder is copied once, without build
// outputs; every build of the run starts from a copy of that snapshot.
void Loop::snapshot() {
  fs::create_directories(m_dir / "config");
  if (!fs::exists(m_dir / "config" / "optimas.yml"))
    fs::copy_file(m_app.path, m_dir / "config" / "optimas.yml", fs::copy_options::overwrite_existing);
  fs::path record = m_dir / "snapshot.json";
  if (fs::exists(record)) {
    json r = read_json(record.string());
    m_snapshot.files = r.at("files").get<std::map<std::string, std::string>>();
    m_snapshot.left_out = r.at("left_out").get<std::vector<std::string>>();
  } else {
    fs::remove_all(m_dir / "snapshot");
    m_snapshot = evaluate::snapshot_application(m_app, (m_dir / "snapshot").string());
    store::write_json_atomic(record.string(), {{"files", m_snapshot.files}, {"left_out", m_snapshot.left_out}});
    std::string left;
    for (std::size_t i = 0; i < m_snapshot.left_out.size() && i < 5; ++i)
      left += (i ? ", " : "") + m_snapshot.left_out[i];
    if (m_snapshot.left_out.size() > 5) left += ", ...";
    say("snapshot", fmt::format("{} file(s){}", m_snapshot.files.size(),
                                left.empty() ? "" : fmt::format("; build outputs left out: {}", left)));
  }
  json inputs = {{"optimas.yml", util::sha256_file(m_app.path)}};
  for (const auto& s : m_app.sources) {
    std::string path = (fs::path(m_app.dir) / s).string();
    inputs[s] = util::sha256_file(path);
    auto in_snapshot = m_snapshot.files.find(fs::path(s).lexically_normal().string());
    if (in_snapshot == m_snapshot.files.end())
      throw Error(
          fmt::format("{}: a source the snapshot left out (it lies in build.dir or looks like a build output)", path));
    if (in_snapshot->second != inputs[s].get<std::string>())
      throw Error(fmt::format("{} changed since run {} started; resuming would evaluate other code", path, m_id));
  }
  m_run["inputs"] = inputs;
  m_run["sha256"] = util::sha256_hex(inputs.dump());
  write_run("running");
}

void Loop::analyze() {
  m_analysis = {};
  // Code-only distils nothing: the hot kernels are found, and no evidence reaches the prompt or
  // the builtin backend (whose rules then withhold).
  m_analysis.sources = analysis::parse_diagnostics(m_app.optimize.diagnostics).sources;
  m_analysis.alpha = m_settings.alpha;
  m_diagnostics = analysis::analyze(m_profile, m_analysis);
  store::write_json_atomic((m_dir / "diagnostics.json").string(), analysis::to_json(m_diagnostics));
  util::write_file((m_dir / "diagnostics.txt").string(), analysis::to_text(m_diagnostics));
  if (m_diagnostics.kernels.empty()) throw Error("the profile has no hot kernel to optimize");
  say("analyze", fmt::format("{} hot kernel(s), {} evidence item(s)", m_diagnostics.kernels.size(),
                             m_diagnostics.evidence.size()));
}

// The attempts of iteration `it`: a build failure or a guardrail rejection goes back to the
// backend with its errors, up to optimize.retries times.
// One candidate of round `it`: its attempts until one is final (retries feed the errors back).
json Loop::candidate(int it, int c) {
  std::string feedback, previous;
  json final_result;
  for (int at = 1; at <= 1 + m_app.optimize.retries; ++at) {
    Variant v;
    v.iteration = it;
    v.candidate = c;
    v.attempt = at;
    v.key = c == 1 ? fmt::format("i{}a{}", it, at) : fmt::format("i{}c{}a{}", it, c, at);
    fs::path round = m_dir / "iterations" / std::to_string(it);
    v.dir = (c == 1 ? round : round / fmt::format("candidate-{}", c)) / fmt::format("attempt-{}", at);
    v.work = m_dir / "work" / v.key;
    v.previous_replies = previous;
    std::string next;
    bool final = run_attempt(v, feedback, next);
    if (fs::exists(v.dir / "replies.json")) {
      previous.clear();
      const json recorded = read_json((v.dir / "replies.json").string());
      for (const auto& f : recorded["files"])
        previous += (previous.empty() ? "" : "\n") + util::read_file((v.dir / f.get<std::string>()).string());
    }
    final_result = v.result;
    if (final) break;
    if (at <= m_app.optimize.retries) say(v.key, "retrying with the errors as feedback");
    feedback = next;
  }
  return final_result;
}

// A round: its candidates, all from the same parent (the best variant so far); the fastest one
// accepted becomes the parent of the next round.
bool Loop::iteration(int it) {
  recall_memories(it);
  std::string best;
  double best_speedup = 0;
  // The builtin's candidates are known before they are asked: built ahead while the first ones
  // are measured (loop/pipeline.hpp).
  // The first round's were started before the probe (open_first_round).
  std::unique_ptr<AheadScope> ahead = std::move(m_first_round);
  if (!ahead) {
    ahead = std::make_unique<AheadScope>(*this, round_built_ahead() ? build_lanes(m_settings.build_jobs) : 0);
    if (m_ahead) build_candidates_ahead(ahead->builds());
  }
  for (int c = 1; c <= m_app.optimize.candidates; ++c) {
    if (std::string spent = budget_spent(); !spent.empty()) {
      say(fmt::format("round {}", it), fmt::format("no further candidate: {}", spent));
      m_search_stopped = spent;
      break;
    }
    if (std::string use = budget_use(); !use.empty())
      say(fmt::format("round {}", it), fmt::format("candidate {} ({})", c, use));
    json r = candidate(it, c);
    if (r.value("status", "") != "accepted") continue;
    double s = r.contains("measurement") ? r["measurement"].value("speedup", 0.0) : 0.0;
    if (best.empty() || s > best_speedup) {
      best = r.value("key", "");
      best_speedup = s;
    }
  }
  if (best.empty()) return false;
  if (m_app.optimize.candidates > 1)
    say("round " + std::to_string(it),
        fmt::format("{} is the fastest accepted candidate ({:.3f}x)", best, best_speedup));
  m_best = best;
  return true;
}

// The next iteration starts from the best variant, with its own fresh profile.
void Loop::next_iteration(int it) {
  profile::ImportOptions io;
  io.ncu = m_settings.ncu;
  fs::path best_dir = m_dir / "iterations" / std::to_string(it);
  if (const json* best = variant_record(m_best)) best_dir = m_dir / best->value("dir", "");
  m_profile = profile::import_profile((best_dir / "profile").string(), io);
  analysis::AnalysisOptions next = m_analysis;
  next.config = m_diagnostics.config;
  m_diagnostics = analysis::analyze(m_profile, next);
  say("iteration", fmt::format("{} improved; iteration {} starts from it", m_best, it + 1));
  build_parent_if_gone(); // its candidates are measured against it
}

// Every round runs, improved or not: a later one is told what the earlier ones measured. A round
// after an accepted variant starts from it, with its own profile; where none can be taken, the
// run stops there (the evidence would describe code that is gone).
void Loop::iterate() {
  for (int it = 1; it <= m_app.optimize.rounds; ++it) {
    bool improved = iteration(it);
    if (it == m_app.optimize.rounds || !m_search_stopped.empty()) break;
    if (improved && !m_can_profile) {
      say("round " + std::to_string(it + 1), "not started: the best variant cannot be profiled here");
      break;
    }
    record_pending_ear();
    if (improved) next_iteration(it);
  }
}

// The summary: the best accepted variant, or why there is none.
RunResult Loop::summary() {
  RunResult r;
  r.id = m_id;
  r.dir = m_dir.string();
  const json* best = variant_record(m_best);
  // The headline figures: the best variant's, else the best tuning point's, else those of the
  // last variant measured.
  const json* shown = best;
  json tuned;
  if (const json& t = m_run.value("tune", json::object()); t.contains("best") && t["best"].is_string())
    tuned = read_json((m_dir / "tune" / t["best"].get<std::string>() / "result.json").string());
  if (!shown && tuned.contains("measurement")) shown = &tuned;
  if (!shown)
    for (const auto& x : m_variants)
      if (x.contains("measurement")) shown = &x;
  if (shown) {
    const auto& m = (*shown)["measurement"];
    for (const char* key : {"verdict", "speedup", "ci", "p_value"}) m_run[key] = m[key];
  }
  const bool improved = best != nullptr || !tuned.empty();
  m_run["outcome"] = evaluate::run_outcome(improved, m_execute);
  if (improved) {
    // Iteration K > 1: its parent variant; a tuning point: the variant it tuned, or the baseline.
    m_run["speedup_against"] = best ? best->value("parent", "baseline") : tuned.value("parent", "baseline");
    r.exit_code = k_exit_ok;
    if (m_settings.aa)
      m_run["warnings"].push_back("the A/A variant (the unchanged baseline, built again) was accepted: noise or a "
                                  "build-to-build difference reaches measure.min_speedup here; raise "
                                  "measure.min_speedup or measure.runs");
  } else {
    if (!shown && m_execute) m_run["verdict"] = nullptr;
    r.exit_code = k_exit_no_improvement;
  }
  m_run["finished"] = util::utc_now_iso8601();
  write_run("finished");
  if (!m_settings.keep_work) fs::remove_all(m_dir / "work");
  r.summary = m_run;
  return r;
}

RunResult Loop::run() {
  open_run();
  try {
    // Each step's wall time goes into run.json's "times" (the dashboard's Steps table).
    auto step = [this](const char* name, auto&& run_step) {
      auto start = std::chrono::steady_clock::now();
      run_step();
      m_run["times"][name] = seconds_since(start);
    };
    step("snapshot_s", [&] { snapshot(); });
    check_tune_point(true);
    step("baseline_s", [&] { baseline(); });
    if (!m_app.tune.only) {
      step("profile_s", [&] { obtain_profile(); });
      step("analysis_s", [&] { analyze(); });
    }
    if (!m_app.tune.only) free_candidates();
    open_first_round();
    step("probe_s", [&] { probe_validation(); });
    if (!m_app.tune.only) step("iterations_s", [&] { iterate(); });
    m_first_round.reset(); // a run of no round
    step("tune_s", [&] { tune_stage(); });
    record_pending_ear(); // where the tuning stage had no point to build
  } catch (const PendingError& e) {
    m_first_round.reset();
    write_run("waiting");
    throw PendingError(fmt::format("{}\nRun {} waits for it: continue with `{}`", e.what(), m_id, resume_command()));
  } catch (const std::exception& e) {
    m_first_round.reset(); // builds running finish; those queued never start
    // Whatever stopped the run, run.json says so and keeps everything recorded before it. The
    // scratch copies go first: a full disk (the usual reason) gets its space back, and a
    // resumed run rebuilds what it needs.
    std::error_code ec;
    if (!m_settings.keep_work) fs::remove_all(m_dir / "work", ec);
    m_run["error"] = plain_message(e);
    m_run["finished"] = util::utc_now_iso8601();
    m_run["outcome"] = "failed";
    write_run("failed");
    std::string message = fmt::format("run {}: {}", m_id, plain_message(e));
    if (dynamic_cast<const UsageError*>(&e)) throw UsageError(message);
    throw Error(message);
  }
  return summary();
}

json Loop::plan() {
  fs::path p(m_options.config_path);
  if (fs::is_directory(p)) p /= "optimas.yml";
  m_app = config::load_app_config(p.string());
  m_overrides = m_options.overrides;
  configure();
  const bool execute = m_execute;
  json steps = json::array();
  steps.push_back({{"step", "baseline"}, {"build", m_app.build_command}, {"runs", execute ? m_app.configs.size() : 0}});
  if (m_app.tune.only)
    ; // no profile, no edit step
  else if (!m_settings.import.empty())
    steps.push_back({{"step", "profile"}, {"import", m_settings.import}});
  else
    steps.push_back(
        {{"step", "profile"}, {"ncu", m_settings.ncu}, {"mode", m_settings.full_profile ? "full" : "two-pass"}});
  if (!m_app.tune.only) {
    steps.push_back({{"step", "analyze"}, {"diagnostics", m_app.optimize.diagnostics}});
    steps.push_back({{"step", "optimize"},
                     {"backend", m_backend.provider},
                     {"model", m_backend.model},
                     {"rounds", m_app.optimize.rounds},
                     {"candidates", m_app.optimize.candidates},
                     {"retries", m_app.optimize.retries},
                     {"scope", m_app.optimize.scope},
                     {"fp_reassociation", m_app.optimize.fp_reassociation}});
  }
  json checks = json::array();
  for (const auto& c : evaluate::validation_checks(m_app, "dry-run")) checks.push_back(c.label);
  json commands = json::object();
  for (const auto& c : m_app.configs) commands[c.name] = m_app.command_for(c, "{output}");
  std::size_t measured = m_app.measure.configs.empty() ? m_app.configs.size() : m_app.measure.configs.size();
  if (execute) {
    steps.push_back({{"step", "probe"},
                     {"kernels", m_app.tune.only ? "every kernel of the sources" : "the hot kernels"},
                     {"check", checks.empty() ? json(nullptr) : checks.front()}});
    steps.push_back(
        {{"step", "validate"}, {"checks", checks.size()}, {"tolerance", m_app.validate.tolerance}, {"labels", checks}});
    steps.push_back(
        {{"step", "measure"},
         {"configs", measured},
         {"runs", m_app.measure.runs},
         {"warmup", m_app.measure.warmup},
         {"min_speedup", m_app.measure.min_speedup},
         {"confirm", m_app.measure.confirm},
         {"verdict", m_app.measure.verdict},
         {"program_runs", measured * 2 * static_cast<std::size_t>(m_app.measure.runs + m_app.measure.warmup)},
         {"confirmation_runs", m_app.measure.confirm ? 2 * m_app.measure.runs : 0}});
  }
  const bool discover = m_app.tune.enabled && m_app.tune.empty() && m_app.tune.discover;
  if (!m_settings.aa && (m_app.tune.runs() || (discover && !m_app.tune.only))) {
    json t = tune_plan();
    if (!execute) t["skipped"] = "not run: " + m_no_execute_reason;
    steps.push_back(t);
  }
  return {{"app", m_app.name},
          {"config", m_app.path},
          {"runs_root", m_options.runs_root},
          {"execute", execute},
          {"why_not", execute ? "" : m_no_execute_reason},
          {"commands", commands},
          {"steps", steps}};
}

RunResult run(const RunOptions& options) {
  Loop loop(options);
  return loop.run();
}

nlohmann::json plan(const RunOptions& options) {
  Loop loop(options);
  return loop.plan();
}

} // namespace optimas::loop
