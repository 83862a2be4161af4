#include "loop/run_loop.hpp"

#include "analysis/diagnostics.hpp"
#include "analysis/json.hpp"
#include "cuda/source.hpp"
#include "evaluate/acceptance.hpp"
#include "evaluate/ear.hpp"
#include "evaluate/sandbox.hpp"
#include "evaluate/stats.hpp"
#include "evaluate/tree_guard.hpp"
#include "evaluate/validate.hpp"
#include "llm/backend.hpp"
#include "llm/cache.hpp"
#include "loop/propose.hpp"
#include "loop/settings.hpp"
#include "profile/importer.hpp"
#include "profile/ncu_agent.hpp"
#include "prompt/builder.hpp"
#include "store/run_store.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace optimas::loop {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// ---------------------------------------------------------------------------------------------
// Small file helpers

json read_json(const std::string& path) {
  try {
    return json::parse(util::read_file(path));
  } catch (const json::exception& e) { // parse_error, and out_of_range for a number like 1e400
    throw Error(fmt::format("{}: not valid JSON ({}); delete it to redo that step", path, e.what()));
  }
}

void append_line(const std::string& path, const json& doc) {
  std::ofstream out(path, std::ios::app);
  out << util::json_text(doc, -1) << "\n";
  out.flush();
  if (!out) throw Error(path + ": cannot append");
}

// Lines of a JSONL journal; a last line cut short by a kill is dropped.
std::vector<json> read_journal(const std::string& path) {
  std::vector<json> out;
  if (!fs::exists(path)) return out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      out.push_back(json::parse(line));
    } catch (const json::exception&) {
      log::warn("{}: ignoring a truncated line", path);
    }
  }
  return out;
}

std::string tool_version(const std::vector<std::string>& argv, const std::string& marker) {
  if (!util::find_executable(argv[0])) return {};
  util::ProcessSpec spec;
  spec.argv = argv;
  spec.timeout_s = 30;
  auto r = util::run_process(spec);
  for (auto line : util::split(r.out + r.err, '\n'))
    if (util::contains(line, marker)) return std::string(util::trim(line));
  return {};
}

// ---------------------------------------------------------------------------------------------
// The loop

struct Variant {
  std::string key; // "i1a2"
  int iteration = 0, attempt = 0;
  fs::path dir;                      // artifacts: run/iterations/<i>/attempt-<a>
  fs::path work;                     // scratch: run/work/<key>
  json result;                       // result.json once final
  std::string previous_replies;      // of the attempt before: the same answer again is not retried
  std::set<std::string> left_behind; // files its runs left in its scratch copy (removed after each run)
};

constexpr const char* k_final_statuses[] = {"accepted",           "rejected",  "build_failed",  "build_stale",
                                            "guardrail_rejected", "no_edits",  "invalid_reply", "validation_failed",
                                            "not_measured",       "run_failed"};

// Outputs smaller than this get a warning: "PASS" alone validates almost nothing.
constexpr std::uintmax_t k_small_output = 256;

bool is_final(const json& result) {
  std::string s = result.value("status", "");
  for (const char* f : k_final_statuses)
    if (s == f) return true;
  return false;
}

class Loop {
public:
  explicit Loop(const RunOptions& options) : m_options(options) {}

  RunResult run();
  json plan();

private:
  void say(const std::string& step, const std::string& detail, bool done = true) {
    log::debug("{}: {}", step, detail);
    if (m_options.progress) m_options.progress({step, detail, done});
  }

  void configure();
  void open_run();
  void snapshot();
  void baseline();
  void obtain_profile();
  bool run_attempt(Variant& v, const std::string& feedback, std::string& next_feedback);
  std::vector<std::string> replies_for(Variant& v, const std::vector<prompt::Prompt>& prompts,
                                       const std::string& feedback);
  bool validate(Variant& v, json& result);
  bool measure(Variant& v, json& result);
  void reprofile(Variant& v);
  void finish_variant(Variant& v, json result);
  void write_run(const std::string& status);
  std::map<std::string, std::string> current_sources() const;
  config::AppConfig app_in(const fs::path& dir) const;
  fs::path parent_work() const;
  fs::path parent_sources() const;
  std::string parent_fingerprint() const;
  bool build_variant(Variant& v, json& result, const std::string& replies);
  std::set<std::string> used_configs() const;

  // Executes one configuration of the program built in `work`; the output goes to `output`.
  evaluate::Execution execute(const fs::path& work, const config::InputConfig& input, const fs::path& output,
                              const fs::path& log, const evaluate::Sandbox* sandbox = nullptr);
  // The same for the variant, watched: `tampered` says what it changed that it must not (a file
  // of the run outside its scratch copy, or its own build); what it added to its copy is removed.
  evaluate::Execution execute_variant(Variant& v, const config::InputConfig& input, const fs::path& output,
                                      const fs::path& log, std::string& tampered,
                                      const evaluate::Sandbox* sandbox = nullptr);
  void restore_after(const Variant& v, const evaluate::TreeChanges& outside);
  void rebuild_work(const std::string& key);

  RunOptions m_options;
  std::optional<store::RunStore> m_store; // opened by open_run (a dry run touches nothing)
  std::string m_id;
  fs::path m_dir;
  config::AppConfig m_app;
  Overrides m_overrides;
  Settings m_settings;
  llm::BackendConfig m_backend;
  evaluate::Sandbox m_sandbox;
  evaluate::Sandbox m_measure_sandbox; // m_sandbox, with the kernel tracer when timing by trace
  bool m_execute = false;
  bool m_can_profile = false;
  std::string m_no_execute_reason;
  json m_run;                          // run.json
  json m_baseline;                     // baseline/baseline.json
  evaluate::Snapshot m_snapshot;       // the application as it was when the run started (snapshot/)
  std::vector<std::string> m_warnings; // for the run summary
  profile::Profile m_profile;          // what the current iteration's prompt is built from
  analysis::Diagnostics m_diagnostics;
  std::string m_best; // key of the best accepted variant ("" = baseline)
  std::vector<json> m_variants;
  std::optional<evaluate::ChildRecord> m_children; // children.json: what a resume must end if we are killed
};

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

fs::path Loop::parent_work() const {
  return m_dir / "work" / (m_best.empty() ? "baseline" : m_best);
}

// The parent's sources: the snapshot's, or those of the best variant so far.
fs::path Loop::parent_sources() const {
  for (const auto& x : m_variants)
    if (!m_best.empty() && x.value("key", "") == m_best) return m_dir / x.value("source", "");
  return m_dir / "snapshot";
}

std::string Loop::parent_fingerprint() const {
  for (const auto& x : m_variants)
    if (!m_best.empty() && x.value("key", "") == m_best)
      return read_json((m_dir / x.value("dir", "") / "build.json").string()).value("fingerprint", "");
  return m_baseline.value("fingerprint", "");
}

std::map<std::string, std::string> Loop::current_sources() const {
  std::map<std::string, std::string> out;
  for (const auto& s : m_app.sources)
    out[fs::path(s).filename().string()] = util::read_file((parent_sources() / s).string());
  return out;
}

evaluate::Execution Loop::execute(const fs::path& work, const config::InputConfig& input, const fs::path& output,
                                  const fs::path& log, const evaluate::Sandbox* sandbox) {
  fs::create_directories(output.parent_path());
  fs::create_directories(log.parent_path());
  return evaluate::execute_in(m_app, work.string(), input, fs::absolute(output).string(), log.string(),
                              sandbox ? *sandbox : m_sandbox);
}

// A variant runs as our user and could write anywhere we can: into the baseline's copy (a slower
// baseline, or one that agrees with it), the run's journals (samples it never ran), its own
// binary (a replay), or a cache in its folder for its next run. Nothing of the run outside its
// copy may change while it runs, nor its build; what it adds to its copy is removed.
evaluate::Execution Loop::execute_variant(Variant& v, const config::InputConfig& input, const fs::path& output,
                                          const fs::path& log, std::string& tampered,
                                          const evaluate::Sandbox* sandbox) {
  fs::create_directories(output.parent_path());
  fs::create_directories(log.parent_path());
  const std::string own = fs::relative(v.work, m_dir).string();
  std::string stderr_log = log.string();
  if (stderr_log.size() > 4 && stderr_log.compare(stderr_log.size() - 4, 4, ".log") == 0)
    stderr_log.resize(stderr_log.size() - 4);
  stderr_log += ".stderr.log";
  // Ours to write while it runs: its logs and the record of running programs.
  const std::set<std::string> ours = {own, fs::relative(log, m_dir).string(), fs::relative(stderr_log, m_dir).string(),
                                      fs::relative(log, m_dir).string() + ".trace",
                                      "children.json", fmt::format("children.json.tmp.{}", ::getpid())};
  std::set<std::string> outputs = {fs::relative(output, v.work).string()};
  for (std::size_t k = 1; k < m_app.outputs.size(); ++k)
    outputs.insert(fs::relative(output, v.work).string() + "." + std::to_string(k));
  for (const auto& o : m_app.outputs) outputs.insert(fs::path(o).lexically_normal().string());
  const auto outside_before = evaluate::tree_state(m_dir.string(), ours);
  const auto own_before = evaluate::tree_state(v.work.string(), outputs);
  auto e = execute(v.work, input, output, log, sandbox);
  auto outside = evaluate::tree_changes(outside_before, evaluate::tree_state(m_dir.string(), ours));
  auto mine = evaluate::tree_changes(own_before, evaluate::tree_state(v.work.string(), outputs));
  std::error_code ec;
  for (const auto& p : mine.added) {
    v.left_behind.insert(p);
    fs::remove_all(v.work / p, ec);
  }
  tampered.clear();
  if (!outside.empty()) {
    tampered = "it changed files of the run outside its scratch copy: " + outside.describe();
    restore_after(v, outside);
  } else if (!mine.changed.empty() || !mine.removed.empty()) {
    mine.added.clear();
    tampered = "it changed its own build in its scratch copy: " + mine.describe();
  }
  return e;
}

// After a variant changed files of the run: a snapshot file comes back from the application
// folder while that still has the recorded hash (else the run stops: nothing is left to build
// from), and a scratch build it touched (the baseline's, say) is built again from its sources
// and must give the product it gave before.
void Loop::restore_after(const Variant& v, const evaluate::TreeChanges& outside) {
  std::set<std::string> works;
  std::error_code ec;
  for (const auto* list : {&outside.added, &outside.changed, &outside.removed})
    for (const auto& p : *list) {
      auto parts = util::split(p, '/');
      if (parts.size() > 2 && parts[0] == "work") works.insert(std::string(parts[1]));
      if (!parts.empty() && parts[0] != "work" && parts[0] != "snapshot" && list == &outside.added)
        fs::remove_all(m_dir / p, ec); // a planted file (fake journal lines are in one the run reads back)
      if (parts.empty() || parts[0] != "snapshot" || parts.size() < 2) continue;
      const std::string rel = fs::path(p).lexically_relative("snapshot").string();
      const fs::path copy = m_dir / p, original = fs::path(m_app.dir) / rel;
      auto recorded = m_snapshot.files.find(rel);
      if (recorded == m_snapshot.files.end()) {
        if (!fs::is_directory(copy)) fs::remove_all(copy, ec); // added by the variant
        continue;
      }
      if (!fs::is_regular_file(original) || util::sha256_file(original.string()) != recorded->second)
        throw Error(fmt::format("variant {} changed the run's source snapshot ({}) and {} is no longer as recorded; "
                                "nothing is left to build from: start a new run",
                                v.key, outside.describe(), original.string()));
      fs::remove_all(copy, ec);
      fs::copy_file(original, copy);
    }
  for (const auto& key : works) rebuild_work(key);
}

void Loop::rebuild_work(const std::string& key) {
  fs::path work = m_dir / "work" / key;
  fs::path sources = m_dir / "snapshot", log = m_dir / "baseline" / "rebuild.log";
  std::string fingerprint = m_baseline.value("fingerprint", "");
  if (key != "baseline") {
    const json* found = nullptr;
    for (const auto& x : m_variants)
      if (x.value("key", "") == key) found = &x;
    if (!found) {
      fs::remove_all(work); // a failed variant's copy: nothing measures it again
      return;
    }
    sources = m_dir / found->value("source", "");
    log = m_dir / found->value("dir", "") / "rebuild.log";
    fingerprint = read_json((m_dir / found->value("dir", "") / "build.json").string()).value("fingerprint", "");
  }
  say("restore", fmt::format("rebuilding {} after a variant changed it", key), false);
  fs::remove_all(work);
  evaluate::copy_tree((m_dir / "snapshot").string(), work.string());
  if (key != "baseline") evaluate::copy_tree(sources.string(), work.string());
  auto b = evaluate::build_in(m_app, work.string(), log.string(), m_sandbox);
  if (!b.ok || evaluate::build_fingerprint(m_app, work.string(), m_snapshot) != fingerprint)
    throw Error(fmt::format("{} was changed by a variant and does not build again as it was ({}); start a new run",
                            work.string(), b.ok ? "another product" : b.result));
  say("restore", fmt::format("{} rebuilt, identical to its first build", key));
}

void Loop::configure() {
  apply_overrides(m_app, m_overrides);
  m_settings = settings_from(m_app, m_overrides);
  m_backend = backend_config(m_app, m_settings, m_overrides);
  m_sandbox = evaluate::sandbox_for(m_app);
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
  // A rule that can never accept is worth knowing before anything runs.
  auto rule = acceptance_rule(m_app);
  if (evaluate::smallest_p_value(m_app.measure.runs) >= rule.corrected_significance()) {
    int need = m_app.measure.runs;
    while (evaluate::smallest_p_value(need) >= rule.corrected_significance()) ++need;
    m_warnings.push_back(fmt::format(
        "with {} runs the rank test cannot reach p < {:.3g} ({} measured configuration(s) x {} iteration(s) share the "
        "significance {:g}), so no variant can be accepted: set measure.runs (--runs) to at least {}",
        m_app.measure.runs, rule.corrected_significance(), measured_configs(m_app).size(), m_app.optimize.iterations,
        m_app.measure.significance, need));
  }
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

void Loop::open_run() {
  if (!m_options.resume.empty()) {
    m_store.emplace(m_options.runs_root);
    m_id = m_store->resolve(m_options.resume);
    m_dir = m_store->run_dir(m_id);
    m_run = m_store->load_run(m_id);
    if (m_run.value("status", "") == "finished")
      throw UsageError(
          fmt::format("run {} has finished; there is nothing to resume (optimas runs show {})", m_id, m_id));
    m_overrides = read_json((m_dir / "options.json").string());
    for (const auto& v : m_run.value("variants", json::array())) m_variants.push_back(v);
    std::string config_path = m_run.value("config_path", "");
    m_app = config::load_app_config(config_path);
    std::string recorded = util::sha256_file((m_dir / "config" / "optimas.yml").string());
    if (util::sha256_file(config_path) != recorded)
      throw Error(
          fmt::format("{} changed since run {} started; resuming would mix two configurations", config_path, m_id));
    configure();
    say("resume", fmt::format("run {} ({}), from {}", m_id, m_app.name, m_dir.string()));
  } else {
    fs::path p(m_options.config_path);
    if (fs::is_directory(p)) p /= "optimas.yml";
    m_app = config::load_app_config(p.string());
    m_overrides = m_options.overrides;
    configure(); // bad settings fail before a run folder exists
    if (m_settings.import.empty() && !m_can_profile)
      throw UsageError(fmt::format("cannot profile {}: {}{}. Pass --import with a recorded profile (a folder "
                                   "written by `optimas profile`, ncu CSV pages or a .ncu-rep)",
                                   m_app.name, m_execute ? "ncu was not found" : m_no_execute_reason,
                                   m_execute ? fmt::format(" (--ncu {})", m_settings.ncu) : ""));
    m_store.emplace(m_options.runs_root);
    m_id = store::new_run_id();
    m_dir = m_store->create_run(m_id);
    m_run = {{"schema", store::k_run_schema},
             {"id", m_id},
             {"app", m_app.name},
             {"config_path", m_app.path},
             {"started", util::utc_now_iso8601()},
             {"finished", nullptr},
             {"status", "running"},
             {"variants", json::array()}};
    store::write_json_atomic((m_dir / "options.json").string(), m_overrides);
    say("run", fmt::format("{} ({}), artifacts in {}", m_id, m_app.name, m_dir.string()));
  }
  // Before anything reuses the scratch folders: what a killed earlier process left running in
  // them ends, and from now on our own children are recorded for a later resume.
  if (int ended = evaluate::end_recorded_children((m_dir / "children.json").string(), m_id))
    say("resume", fmt::format("ended {} program(s) an earlier optimas left running", ended));
  m_children.emplace((m_dir / "children.json").string(), m_id);
  m_run["pid"] = static_cast<long>(::getpid());
  m_run["status"] = "running";
  m_run["backend"] = m_backend.provider;
  m_run["model"] = m_backend.model.empty() ? m_backend.provider : m_backend.provider + "/" + m_backend.model;
  m_run["diagnostics"] = analysis::sources_label(analysis::parse_sources(m_app.optimize.diagnostics));
  m_run["execute"] = m_execute;
  if (m_settings.aa) m_run["aa"] = true;
  m_run["warnings"] = m_warnings;
  for (const auto& w : m_warnings) say("run", "warning: " + w);
  if (!m_execute) m_run["not_executed_because"] = m_no_execute_reason;
  write_run("running");
}

void Loop::write_run(const std::string& status) {
  m_run["status"] = status;
  m_run["variants"] = m_variants;
  m_run["best"] = m_best.empty() ? json(nullptr) : json(m_best);
  store::write_json_atomic((m_dir / "run.json").string(), m_run);
  try {
    m_store->index_run(m_run);
  } catch (const Error& e) {
    // The folder is the record; a locked or broken index is rebuilt by `optimas runs reindex`.
    log::warn("run {}: the index was not updated ({})", m_id, e.what());
  }
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

void Loop::baseline() {
  fs::path dir = m_dir / "baseline";
  fs::path work = m_dir / "work" / "baseline";
  fs::path record = dir / "baseline.json";
  fs::create_directories(dir);
  bool built = fs::exists(record) && (m_app.binary.empty() || fs::exists(work / m_app.binary));
  if (fs::exists(record)) m_baseline = read_json(record.string());
  if (!built) {
    fs::remove_all(work);
    evaluate::copy_tree((m_dir / "snapshot").string(), work.string());
    say("baseline", "building: " + m_app.build_command, false);
    auto b = evaluate::build_in(m_app, work.string(), (dir / "build.log").string(), m_sandbox);
    if (!b.ok) throw Error(fmt::format("the baseline does not build ({}):\n{}", b.result, b.tail()));
    say("baseline", fmt::format("built in {:.1f} s", b.wall_s));
    if (!fs::exists(record))
      m_baseline = {{"compile", m_app.build_command}, {"build_s", b.wall_s}, {"configs", json::object()}};
    m_baseline["fingerprint"] = evaluate::build_fingerprint(m_app, work.string(), m_snapshot);
  }
  json& configs = m_baseline["configs"];
  for (const auto& c : m_app.configs) {
    if (!configs.contains(c.name))
      configs[c.name] = {{"command", m_app.command_for(c, "{output}")}, {"held_out", c.held_out}};
  }
  if (m_execute) {
    // One run of each configuration: it works, and its output is the reference the baseline
    // itself must reproduce later (a nondeterministic baseline cannot validate anything).
    for (const auto& c : m_app.configs) {
      json& rec = configs[c.name];
      if (rec.contains("output_sha256") || !used_configs().count(c.name)) continue;
      say("baseline", "running " + c.name, false);
      fs::path out = work / "out" / (c.name + ".out");
      auto e = execute(work, c, out, dir / "runs" / (c.name + ".log"));
      if (!e.ok) throw Error(fmt::format("the baseline fails on config \"{}\": {}", c.name, e.failure));
      rec["output_sha256"] = evaluate::outputs_sha256(e);
      rec["output_bytes"] = evaluate::outputs_bytes(e);
      rec["wall_s"] = e.wall_s;
      if (e.kernel_ms) rec["kernel_ms"] = *e.kernel_ms;
      evaluate::remove_outputs(e);
      store::write_json_atomic(record.string(), m_baseline);
      say("baseline", fmt::format("{}: ok in {:.2f} s{}", c.name, e.wall_s,
                                  e.kernel_ms ? fmt::format(", kernel {:.4g} ms", *e.kernel_ms) : ""));
    }
  }
  store::write_json_atomic(record.string(), m_baseline);
  m_run["baseline"] = m_baseline;
  // A few bytes of output ("PASS") prove little: say so where the user reads the result.
  for (const auto& [name, rec] : m_baseline["configs"].items())
    if (rec.contains("output_bytes") && rec["output_bytes"].get<std::uintmax_t>() < k_small_output) {
      m_warnings.push_back(fmt::format("validation compares {} bytes of output on {}: a wrong result may pass unseen; "
                                       "compare a result file (run.output) or more of what the program prints",
                                       rec["output_bytes"].get<std::uintmax_t>(), name));
      say("baseline", "warning: " + m_warnings.back());
    }
  m_run["warnings"] = m_warnings;
  write_run("running");
}

void Loop::obtain_profile() {
  fs::path dir = m_dir / "profile";
  fs::path done = dir / ".complete";
  if (!fs::exists(done)) {
    fs::remove_all(dir);
    if (!m_settings.import.empty()) {
      say("profile", "importing " + m_settings.import, false);
      fs::path from(m_settings.import);
      if (!fs::exists(from)) throw UsageError(m_settings.import + ": no such profile");
      fs::create_directories(dir);
      if (fs::is_directory(from))
        fs::copy(from, dir, fs::copy_options::recursive);
      else
        fs::copy_file(from, dir / from.filename());
    } else if (m_can_profile) {
      profile::NcuOptions o;
      o.ncu = m_settings.ncu;
      o.tracer = m_settings.tracer;
      o.mode = m_settings.full_profile ? profile::ProfileMode::full : profile::ProfileMode::two_pass;
      o.build = false;
      o.timeout_s = std::max(1800.0, m_app.timeout_s * 4);
      profile::profile_app(app_in(m_dir / "work" / "baseline"), o, dir.string(),
                           [&](const std::string& line) { say("profile", line, false); });
    } else {
      throw UsageError(fmt::format("cannot profile {}: {}{}. Pass --import with a recorded profile (a folder "
                                   "written by `optimas profile`, ncu CSV pages or a .ncu-rep)",
                                   m_app.name, m_execute ? "ncu was not found" : m_no_execute_reason,
                                   m_execute ? fmt::format(" (--ncu {})", m_settings.ncu) : ""));
    }
    util::write_file(done.string(), util::utc_now_iso8601() + "\n");
  }
  fs::path source = dir;
  if (!m_settings.import.empty() && !fs::is_directory(m_settings.import))
    source = dir / fs::path(m_settings.import).filename();
  profile::ImportOptions io;
  io.ncu = m_settings.ncu;
  m_profile = profile::import_profile(source.string(), io);
  const auto& gpu = m_profile.manifest.value("gpu", json::object());
  // HW names where variants run; a profile imported from elsewhere says only where it came from.
  std::string here = m_app.needs_gpu ? evaluate::gpu_name() : "host CPU (needs_gpu: false)";
  std::string profiled = gpu.value("name", "");
  m_run["profile_gpu"] = profiled;
  if (!m_execute) here = "none here";
  m_run["hw"] = here.empty() ? profiled : here;
  if (!profiled.empty() && profiled != here)
    m_run["hw"] = fmt::format("{} (profile from {})", m_run["hw"].get<std::string>(), profiled);
  std::vector<std::string> sw;
  std::string nvcc = tool_version({"nvcc", "--version"}, "release");
  if (!nvcc.empty()) sw.push_back("nvcc " + nvcc.substr(nvcc.find("release") + 8));
  if (auto v = m_profile.manifest.value("ncu", json::object()).value("version", ""); !v.empty())
    sw.push_back("ncu " + v);
  if (auto d = gpu.value("driver", ""); !d.empty()) sw.push_back("driver " + d);
  m_run["sw"] = util::join(sw, ", ");
  say("profile", fmt::format("{} run(s) from {}", m_profile.runs.size(), dir.string()));
}

std::vector<std::string> Loop::replies_for(Variant& v, const std::vector<prompt::Prompt>& prompts,
                                           const std::string& feedback) {
  fs::path index = v.dir / "replies.json";
  if (fs::exists(index)) {
    // Asked before the run was interrupted: never pay for the same answer twice.
    std::vector<std::string> replies;
    const json recorded = read_json(index.string());
    for (const auto& f : recorded["files"]) replies.push_back(util::read_file((v.dir / f.get<std::string>()).string()));
    return replies;
  }
  std::string text;
  for (const auto& p : prompts)
    text += fmt::format("<!-- prompt: {} -->\n# System\n\n{}\n\n# User\n\n{}\n\n", p.label, p.system,
                        with_feedback(p.user, feedback));
  util::write_file((v.dir / "prompt.md").string(), text);
  auto backend = llm::make_backend(m_backend);
  std::optional<llm::ResponseCache> cache;
  bool cacheable = !m_settings.no_cache && m_backend.provider != "manual" && m_backend.provider != "builtin";
  if (cacheable) cache.emplace(m_settings.cache_dir);
  say(v.key + " ask", fmt::format("{} ({} prompt(s){})", backend->name(), prompts.size(),
                                  feedback.empty() ? "" : ", with the last attempt's errors"));
  auto asked = ask_backend(prompts, feedback,
                           {{"diagnostics", analysis::to_json(m_diagnostics)}, {"sources", current_sources()}},
                           *backend, m_backend, cache ? &*cache : nullptr);
  json files = json::array();
  for (std::size_t i = 0; i < asked.replies.size(); ++i) {
    std::string name = fmt::format("reply-{}.txt", i + 1);
    util::write_file((v.dir / name).string(), asked.replies[i]);
    files.push_back(name);
  }
  store::write_json_atomic(index.string(),
                           {{"files", files},
                            {"model", asked.model},
                            {"input_tokens", asked.usage.input_tokens},
                            {"output_tokens", asked.usage.output_tokens},
                            {"cost_usd", asked.usage.cost_known ? json(asked.usage.cost_usd) : json(nullptr)}});
  return asked.replies;
}

// One attempt: ask, apply, check, build, validate, measure. Returns true when the attempt is
// final for this iteration (no retry); `next_feedback` says why a retry is worth it.
bool Loop::run_attempt(Variant& v, const std::string& feedback, std::string& next_feedback) {
  fs::create_directories(v.dir);
  if (fs::exists(v.dir / "result.json")) {
    json r = read_json((v.dir / "result.json").string());
    if (is_final(r)) {
      v.result = r;
      next_feedback = r.value("feedback", "");
      say(v.key, fmt::format("{} (recorded before the interruption)", r.value("status", "")));
      return !r.value("retry", false);
    }
  }
  json result = {{"key", v.key},
                 {"iteration", v.iteration},
                 {"attempt", v.attempt},
                 {"dir", fs::relative(v.dir, m_dir).string()},
                 {"parent", m_best.empty() ? "baseline" : m_best},
                 {"prompt", (fs::relative(v.dir, m_dir) / "prompt.md").string()},
                 {"source", (fs::relative(v.dir, m_dir) / "src").string()}};
  // Ends the attempt: `feedback` is what a retry tells the backend.
  auto finish = [&](const std::string& status, const std::string& reason, bool retry, const std::string& feedback) {
    result["status"] = status;
    result["reason"] = reason;
    result["retry"] = retry;
    result["feedback"] = next_feedback = feedback;
    finish_variant(v, result);
    return !retry;
  };

  // The variant's sources: the parent's with the backend's edits, or unchanged for an A/A run.
  std::map<std::string, std::string> edited = current_sources();
  std::optional<Proposal> proposal;
  evaluate::EarInputs ear_in;
  std::string replies_text;
  if (m_settings.aa) {
    result["aa"] = true;
    result["prompt"] = nullptr;
  } else {
    prompt::PromptOptions po;
    po.sources = analysis::parse_sources(m_app.optimize.diagnostics);
    po.token_budget = m_settings.token_budget;
    if (!m_settings.template_path.empty()) po.template_text = util::read_file(m_settings.template_path);
    if (!m_run.value("profile_gpu", "").empty()) po.gpu = m_run["profile_gpu"];
    auto prompts = prompt::build_prompts(app_in(parent_sources()), m_diagnostics, po);
    auto replies = replies_for(v, prompts, feedback);
    replies_text = util::join(replies, "\n");
    bool same = replies_text == v.previous_replies;

    std::map<std::string, std::string> paths;
    for (const auto& s : m_app.sources) paths[fs::path(s).filename().string()] = s;
    proposal = make_proposal(replies, m_diagnostics, edited, paths,
                             m_app.optimize.scope == "file" ? edit::Scope::file : edit::Scope::kernel);
    store::write_json_atomic((v.dir / "reply.json").string(), prompt::to_json(proposal->reply));
    store::write_json_atomic((v.dir / "outcomes.json").string(), outcomes_json(*proposal));
    util::write_file((v.dir / "diff.patch").string(), proposal->diff);
    json violations = json::array();
    for (const auto& x : proposal->violations)
      violations.push_back({{"rule", x.rule}, {"file", x.file}, {"message", x.message}});
    store::write_json_atomic((v.dir / "guardrails.json").string(), violations);

    const auto& app = proposal->application;
    result["edits"] = proposal->reply.edits.size();
    result["applied"] = app.applied();
    result["not_applied"] = app.not_applied();
    result["withheld"] = proposal->reply.withheld.size();
    json applied = json::array(), ignored = json::array();
    for (const auto& o : app.outcomes) {
      const auto& e = proposal->reply.edits[o.index];
      if (o.applied)
        applied.push_back({{"kernel", e.kernel}, {"evidence", e.evidence}, {"rationale", e.rationale}});
      else
        ignored.push_back({{"suggestion", util::first_sentence(e.rationale)}, {"reason", "not applied: " + o.reason}});
    }
    for (const auto& w : proposal->reply.withheld)
      ignored.push_back({{"suggestion", w.suggestion}, {"reason", w.reason}});
    result["applied_edits"] = applied;
    result["ignored"] = ignored;

    // EAR metrics from the edits alone; directional consistency joins after the re-profile.
    ear_in.diagnostics = &m_diagnostics;
    ear_in.reply = &proposal->reply;
    ear_in.application = &app;
    ear_in.config = m_diagnostics.config;
    result["ear"] = evaluate::to_json(evaluate::compute_ear(ear_in));

    if (!proposal->usable()) {
      std::string why = proposal->feedback();
      std::string status = !proposal->parse_errors.empty() ? "invalid_reply"
                           : !proposal->violations.empty() ? "guardrail_rejected"
                                                           : "no_edits";
      result["errors"] = why;
      say(v.key,
          fmt::format("{}: {}", status, util::split(why, '\n').empty() ? "" : std::string(util::split(why, '\n')[0])));
      // A reply without edits is an answer, not a mistake to correct.
      return finish(status,
                    status == "no_edits" && proposal->reply.edits.empty() ? "the backend proposed no edit" : why,
                    status != "no_edits" && !same, why);
    }
    // Edits that leave every token as it was (comments, layout) cannot change the program.
    bool changed = false;
    for (const auto& [name, text] : app.result)
      changed = changed || cuda::normalise(text) != cuda::normalise(edited.at(name));
    edited = app.result;
    if (!changed) {
      std::string why = "the edits change nothing the compiler sees (only comments or layout); nothing was built "
                        "or measured";
      say(v.key, "build_stale: " + why);
      return finish("build_stale", why, !same, why);
    }
  }

  fs::path src = v.dir / "src";
  for (const auto& s : m_app.sources) {
    fs::create_directories((src / s).parent_path());
    util::write_file((src / s).string(), edited.at(fs::path(s).filename().string()));
  }
  if (!build_variant(v, result, replies_text)) {
    next_feedback = result.value("feedback", "");
    return !result.value("retry", false);
  }

  if (!m_execute) {
    say(v.key, "built; not validated or measured: " + m_no_execute_reason);
    return finish("not_measured", "built, not run: " + m_no_execute_reason, false, "");
  }
  if (!validate(v, result) || !measure(v, result)) {
    finish_variant(v, result);
    return true;
  }
  if (proposal && m_can_profile) {
    reprofile(v);
    profile::ImportOptions io;
    io.ncu = m_settings.ncu;
    auto after = profile::import_profile((v.dir / "profile").string(), io);
    ear_in.before = &m_profile;
    ear_in.after = &after;
    ear_in.correct = true;
    result["ear"] = evaluate::to_json(evaluate::compute_ear(ear_in));
  } else if (proposal) {
    result["ear"]["correct"] = true;
  }
  if (proposal) store::write_json_atomic((v.dir / "ear.json").string(), result["ear"]);
  finish_variant(v, result);
  return true;
}

// The variant is built in a fresh copy of the run's snapshot with its sources written in: no
// object file of another build is there for make to find up to date. A build whose product is
// byte-identical to the parent's (nvcc's temporary names aside) did not compile the edits and
// is never measured. Returns false when the attempt ends here (result final).
bool Loop::build_variant(Variant& v, json& result, const std::string& replies) {
  fs::path build_record = v.dir / "build.json";
  json record = fs::exists(build_record) ? read_json(build_record.string()) : json::object();
  bool built = record.value("ok", false) && (m_app.binary.empty() || fs::exists(v.work / m_app.binary));
  if (!built) {
    fs::remove_all(v.work);
    evaluate::copy_tree((m_dir / "snapshot").string(), v.work.string());
    evaluate::copy_tree((v.dir / "src").string(), v.work.string());
    say(v.key + " build",
        m_settings.aa ? "A/A: the parent unchanged; building"
                      : fmt::format("{} edit(s) applied; building", result.value("applied", 0)),
        false);
    auto b = evaluate::build_in(m_app, v.work.string(), (v.dir / "build.log").string(), m_sandbox);
    record = {{"ok", b.ok}, {"result", b.result}, {"wall_s", b.wall_s}};
    if (b.ok) record["fingerprint"] = evaluate::build_fingerprint(m_app, v.work.string(), m_snapshot);
    store::write_json_atomic(build_record.string(), record);
    if (!b.ok) {
      std::string why = fmt::format("the variant does not build ({}):\n{}", b.result, b.tail());
      result["status"] = "build_failed";
      result["reason"] = b.result;
      result["errors"] = b.tail();
      result["retry"] = replies != v.previous_replies;
      result["feedback"] = why;
      say(v.key + " build", "FAILED: " + b.result);
      finish_variant(v, result);
      return false;
    }
    say(v.key + " build", fmt::format("ok in {:.1f} s", b.wall_s));
  }
  if (!m_settings.aa && record.value("fingerprint", "") == parent_fingerprint()) {
    result["status"] = "build_stale";
    result["reason"] = fmt::format(
        "the build did not pick up the edits: its {} is identical to the parent's. Check that build.command "
        "compiles the sources in its working folder (no absolute paths into your tree, no prebuilt objects)",
        m_app.binary.empty() ? "output" : m_app.binary);
    result["retry"] = false;
    say(v.key + " build", "STALE: " + result["reason"].get<std::string>());
    finish_variant(v, result);
    return false;
  }
  return true;
}

// Every check runs the variant first and the baseline after it, so no reference output for
// that input exists anywhere while the variant runs; both outputs are deleted once compared.
bool Loop::validate(Variant& v, json& result) {
  auto tolerance = evaluate::tolerance_from(m_app.validate);
  auto checks = evaluate::validation_checks(m_app, m_id + "/" + v.key);
  fs::path journal = v.dir / "validation.jsonl";
  std::map<std::string, json> done;
  for (auto& j : read_journal(journal.string())) done[j.value("label", "")] = j;
  fs::path base_work = m_dir / "work" / "baseline";
  json records = json::array();
  bool passed = true;
  std::size_t index = 0;
  for (const auto& check : checks) {
    ++index;
    json rec;
    if (auto it = done.find(check.label); it != done.end()) {
      rec = it->second;
    } else {
      say(v.key + " validate", fmt::format("[{}/{}] {}", index, checks.size(), check.label), false);
      std::string stem = fmt::format("check-{}", index);
      rec = {{"label", check.label}, {"config", check.config}, {"held_out", check.held_out}};
      std::string tampered;
      auto ve =
          execute_variant(v, check.input, v.work / "out" / (stem + ".out"), v.dir / "runs" / (stem + ".log"), tampered);
      if (!tampered.empty()) {
        rec["passed"] = false;
        rec["tampered"] = true;
        rec["detail"] = tampered;
      } else if (!ve.ok) {
        rec["passed"] = false;
        rec["detail"] = "the variant failed: " + ve.failure;
      } else {
        auto be = execute(base_work, check.input, base_work / "out" / (stem + ".out"),
                          v.dir / "runs" / (stem + ".baseline.log"));
        if (!be.ok) throw Error(fmt::format("run {}: the baseline failed on {}: {}", m_id, check.label, be.failure));
        std::string declared = m_baseline["configs"][check.config].value("output_sha256", "");
        if (check.label == check.config && evaluate::outputs_sha256(be) != declared)
          throw Error(fmt::format("run {}: the baseline's output for {} changed between two runs: it is not "
                                  "deterministic, so byte-for-byte validation cannot work (set validate.tolerance, "
                                  "or validate.ignore for the lines that vary)",
                                  m_id, check.config));
        auto cmp = evaluate::compare_output_sets(be.outputs, ve.outputs, m_app.outputs, tolerance);
        rec["passed"] = cmp.equal;
        rec["detail"] = cmp.detail;
        rec["output_sha256"] = evaluate::outputs_sha256(ve);
        evaluate::remove_outputs(be);
      }
      evaluate::remove_outputs(ve);
      append_line(journal.string(), rec);
    }
    if (!rec.value("passed", false)) {
      passed = false;
      say(v.key + " validate",
          fmt::format("FAILED on {}{}: {}", check.label, check.held_out ? " (held out)" : "", rec.value("detail", "")));
    }
    records.push_back(rec);
    if (!passed) break;
  }
  result["validation"] = {{"passed", passed}, {"tolerance", evaluate::describe(tolerance)}, {"checks", records}};
  result["ear"]["correct"] = passed;
  if (!passed) {
    const auto& bad = records.back();
    result["status"] = "validation_failed";
    result["reason"] =
        fmt::format("{} {}{}: {}", bad.value("tampered", false) ? "caught on" : "wrong output on",
                    bad.value("label", ""), bad.value("held_out", false) ? " (held out)" : "", bad.value("detail", ""));
    result["errors"] = result["reason"];
    return false;
  }
  say(v.key + " validate", fmt::format("{} check(s) passed ({})", records.size(), evaluate::describe(tolerance)));
  return true;
}

// Warm-up, then rounds of baseline and variant interleaved (ABBA order) so drift in clocks or
// temperature hits both alike; every sample is journaled as it is taken. The acceptance rule
// (evaluate/acceptance.hpp) screens every measured configuration, then asks a round of fresh
// runs of the primary one to confirm.
bool Loop::measure(Variant& v, json& result) {
  const auto& ms = m_app.measure;
  const bool traced = !m_measure_sandbox.tracer.empty();
  const bool kernel_time =
      traced || ms.timing == "kernel_time" || (ms.timing == "auto" && !m_app.kernel_time.empty());
  const auto rule = acceptance_rule(m_app);
  const auto configs = measured_configs(m_app);
  fs::path journal = v.dir / "measurements.jsonl";
  std::map<std::string, std::map<std::string, std::map<int, json>>> taken; // config -> role -> round -> sample
  for (auto& j : read_journal(journal.string())) taken[j["config"]][j["role"]][j.value("round", 0)] = j;
  const fs::path parent = parent_work();

  // Each round (and warm-up, round < 0) runs both on an input of its own: a fresh seed where the
  // program takes one, so no cache of an earlier run can answer it, and the variant's output must
  // be the baseline's on that input. Only hashes are kept: no reference output exists while the
  // variant runs.
  std::map<std::pair<std::string, int>, std::map<std::string, std::string>> hashes; // (config, round) -> role -> sha
  for (const auto& [config, roles] : taken)
    for (const auto& [role, rounds] : roles)
      for (const auto& [round, s] : rounds)
        if (s.contains("output_sha256")) hashes[{config, round}][role] = s["output_sha256"];
  auto run_one = [&](const config::InputConfig& c, const std::string& role, int round) -> std::optional<std::string> {
    const fs::path& work = role == "baseline" ? parent : v.work;
    std::string stem = fmt::format("measure-{}-{}-{}", c.name, role, round);
    const auto input =
        evaluate::with_fresh_seed(m_app, c, fmt::format("{}/{}/measure/{}/{}", m_id, v.key, c.name, round));
    std::string tampered;
    auto e = role == "baseline"
                 ? execute(work, input, work / "out" / (stem + ".out"), v.dir / "runs" / (stem + ".log"), &m_measure_sandbox)
                 : execute_variant(v, input, work / "out" / (stem + ".out"), v.dir / "runs" / (stem + ".log"), tampered,
                                   &m_measure_sandbox);
    if (!tampered.empty()) {
      evaluate::remove_outputs(e);
      return fmt::format("while being measured on {}, {}", c.name, tampered);
    }
    if (!e.ok) return fmt::format("the {} failed while being measured on {}: {}", role, c.name, e.failure);
    std::string sha = evaluate::outputs_sha256(e);
    evaluate::remove_outputs(e);
    auto& pair = hashes[{c.name, round}];
    pair[role] = sha;
    if (m_app.validate.tolerance == "exact" && pair.size() == 2 && pair["baseline"] != pair["variant"])
      return fmt::format("the variant's output on {} while measured (round {}{}) differs from the baseline's on the "
                         "same input: it computed something else when timed",
                         c.name, round < 0 ? "warm-up" : std::to_string(round + 1),
                         m_app.seed_param.empty() ? "" : ", seed " + input.params.at(m_app.seed_param));
    if (round >= 0) {
      json s = {{"config", c.name}, {"role", role}, {"round", round}, {"wall_s", e.wall_s}, {"output_sha256", sha}};
      if (traced) {
        s["kernel_ms"] = e.traced_ms.value_or(0);
        s["launches"] = e.traced_launches;
        if (e.kernel_ms) s["printed_ms"] = *e.kernel_ms;
      } else if (e.kernel_ms) {
        s["kernel_ms"] = *e.kernel_ms;
      }
      append_line(journal.string(), s);
      taken[c.name][role][round] = s;
    }
    return std::nullopt;
  };
  // Rounds [from, to) of one configuration, those not journaled yet; a warm-up first if asked.
  auto take = [&](const config::InputConfig& c, int from, int to, int warmup) -> std::optional<std::string> {
    bool missing = false;
    for (int round = from; round < to; ++round)
      missing = missing || !taken[c.name]["baseline"].count(round) || !taken[c.name]["variant"].count(round);
    if (!missing) return std::nullopt;
    for (int w = 0; w < warmup; ++w) {
      say(v.key + " measure", fmt::format("{}: warm-up", c.name), false);
      for (const char* role : {"baseline", "variant"})
        if (auto f = run_one(c, role, -1 - w - from)) return f;
    }
    for (int round = from; round < to; ++round) {
      const char* order[2] = {"baseline", "variant"};
      if (round % 2) std::swap(order[0], order[1]);
      for (const char* role : order) {
        if (taken[c.name][role].count(round)) continue;
        say(v.key + " measure", fmt::format("{}: round {}/{} {}", c.name, round + 1, to, role), false);
        if (auto f = run_one(c, role, round)) return f;
      }
    }
    return std::nullopt;
  };
  auto samples = [&](const std::string& config, const std::string& role, int from, int to) {
    std::vector<evaluate::Sample> out;
    for (const auto& [round, s] : taken[config][role])
      if (round >= from && round < to) {
        evaluate::Sample x{s.value("wall_s", 0.0) * 1000.0, std::nullopt, std::nullopt};
        if (s.contains("kernel_ms")) x.kernel_ms = s["kernel_ms"].get<double>();
        if (s.contains("printed_ms")) x.printed_ms = s["printed_ms"].get<double>();
        out.push_back(x);
      }
    return out;
  };
  auto judged = [&](const std::string& config, int from, int to) {
    return evaluate::judge(samples(config, "baseline", from, to), samples(config, "variant", from, to), kernel_time,
                           rule);
  };
  auto record = [&](const evaluate::Judgement& j) {
    const auto& c = j.comparison;
    json rec = {{"verdict", evaluate::verdict_name(c.verdict)},
                {"speedup", c.speedup},
                {"ci", {c.ci_low, c.ci_high}},
                {"p_value", c.p_value},
                {"base_ms", c.base_median},
                {"variant_ms", c.variant_median},
                {"runs", c.n_base}};
    if (kernel_time) rec["overhead_growth_ms"] = {j.overhead_growth.low, j.overhead_growth.high};
    if (j.suspicious) rec["suspicious"] = *j.suspicious;
    return rec;
  };
  auto with_samples = [&](json& rec, const std::string& config, int from, int to) {
    for (const auto& [role, key] : {std::pair{"baseline", "base"}, {"variant", "variant"}}) {
      rec[key] = json::array();
      for (const auto& [round, s] : taken[config][role])
        if (round >= from && round < to) rec[key].push_back(s);
    }
  };
  auto fail = [&](const std::string& why) {
    result["status"] = "run_failed";
    result["reason"] = why;
    result["errors"] = why;
    say(v.key + " measure", "FAILED: " + why);
    return false;
  };

  json per_config = json::object();
  std::vector<evaluate::ConfigJudgement> screening;
  std::vector<double> speedups;
  for (const auto* c : configs) {
    if (auto f = take(*c, 0, ms.runs, ms.warmup)) return fail(*f);
    auto j = judged(c->name, 0, ms.runs);
    json rec = record(j);
    rec["held_out"] = c->held_out;
    with_samples(rec, c->name, 0, ms.runs);
    const auto& cmp = j.comparison;
    say(v.key + " measure", fmt::format("{}: {} {:.3f}x [{:.3f}, {:.3f}], p = {:.3g} ({:.4g} -> {:.4g} ms)", c->name,
                                        rec["verdict"].get<std::string>(), cmp.speedup, cmp.ci_low, cmp.ci_high,
                                        cmp.p_value, cmp.base_median, cmp.variant_median));
    speedups.push_back(cmp.speedup);
    per_config[c->name] = rec;
    screening.push_back({c->name, j});
  }

  const std::string primary =
      per_config.contains(m_app.default_config().name) ? m_app.default_config().name : per_config.begin().key();
  auto decision = evaluate::screen(screening, primary, rule);
  json m = {{"timing", traced ? "trace" : kernel_time ? "kernel_time" : "wall"},
            {"runs", ms.runs},
            {"warmup", ms.warmup},
            {"primary", primary},
            {"rule",
             {{"significance", rule.corrected_significance()},
              {"comparisons", rule.comparisons},
              {"min_speedup", rule.min_speedup},
              {"confirm", rule.confirm}}},
            {"screening", decision.reason},
            {"geomean_speedup", evaluate::geometric_mean(speedups)},
            {"configs", per_config}};
  json headline = per_config[primary];
  if (decision.stage == evaluate::Stage::confirm) {
    say(v.key + " measure", decision.reason);
    const auto* c = m_app.find(primary);
    if (auto f = take(*c, ms.runs, 2 * ms.runs, 0)) return fail(*f);
    auto fresh = judged(primary, ms.runs, 2 * ms.runs);
    auto pooled = judged(primary, 0, 2 * ms.runs);
    decision = evaluate::confirm(fresh, pooled, primary, rule);
    m["confirmation"] = {{"fresh", record(fresh)}, {"all", record(pooled)}};
    with_samples(m["confirmation"]["fresh"], primary, ms.runs, 2 * ms.runs);
    // The reported speedup is that of every run of the primary configuration.
    headline = record(pooled);
  }
  for (const char* key : {"verdict", "speedup", "ci", "p_value", "base_ms", "variant_ms"}) m[key] = headline[key];
  m["decision"] = decision.reason;
  store::write_json_atomic((v.dir / "measurement.json").string(), m);
  result["measurement"] = m;
  result["status"] = decision.stage == evaluate::Stage::accepted ? "accepted" : "rejected";
  result["reason"] = decision.reason;
  say(v.key + " measure", fmt::format("{}: {}", result["status"].get<std::string>(), decision.reason));
  return true;
}

void Loop::reprofile(Variant& v) {
  fs::path dir = v.dir / "profile";
  if (fs::exists(dir / ".complete")) return;
  fs::remove_all(dir);
  profile::NcuOptions o;
  o.ncu = m_settings.ncu;
  o.tracer = m_settings.tracer;
  o.mode = m_settings.full_profile ? profile::ProfileMode::full : profile::ProfileMode::two_pass;
  o.build = false;
  o.configs = {m_diagnostics.config.empty() ? m_app.default_config().name : m_diagnostics.config};
  o.timeout_s = std::max(1800.0, m_app.timeout_s * 4);
  profile::profile_app(app_in(v.work), o, dir.string(),
                       [&](const std::string& line) { say(v.key + " re-profile", line, false); });
  util::write_file((dir / ".complete").string(), util::utc_now_iso8601() + "\n");
  say(v.key + " re-profile", "done");
}

void Loop::finish_variant(Variant& v, json result) {
  if (!v.left_behind.empty() && !result.contains("left_behind")) {
    // Each run starts from the copy as built: what one left there (a cache) was removed.
    std::vector<std::string> left(v.left_behind.begin(), v.left_behind.end());
    result["left_behind"] = left;
    std::string names;
    for (std::size_t i = 0; i < left.size() && i < 3; ++i) names += (i ? ", " : "") + left[i];
    if (left.size() > 3) names += ", ...";
    result["reason"] = result.value("reason", "") +
                       fmt::format("; its runs left {} file(s) in its scratch copy, removed before each next run: {}",
                                   left.size(), names);
  }
  store::write_json_atomic((v.dir / "result.json").string(), result);
  v.result = result;
  bool replaced = false;
  for (auto& x : m_variants)
    if (x.value("key", "") == v.key) x = result, replaced = true;
  if (!replaced) m_variants.push_back(result);
  write_run("running");
}

RunResult Loop::run() {
  open_run();
  try {
    snapshot();
    baseline();
    obtain_profile();
    analysis::AnalysisOptions ao;
    ao.sources = analysis::parse_sources(m_app.optimize.diagnostics);
    m_diagnostics = analysis::analyze(m_profile, ao);
    store::write_json_atomic((m_dir / "diagnostics.json").string(), analysis::to_json(m_diagnostics));
    util::write_file((m_dir / "diagnostics.txt").string(), analysis::to_text(m_diagnostics));
    if (m_diagnostics.kernels.empty()) throw Error("the profile has no hot kernel to optimize");
    say("analyze", fmt::format("{} hot kernel(s), {} evidence item(s)", m_diagnostics.kernels.size(),
                               m_diagnostics.evidence.size()));

    for (int it = 1; it <= m_app.optimize.iterations; ++it) {
      std::string feedback, previous;
      bool improved = false;
      for (int at = 1; at <= 1 + m_app.optimize.retries; ++at) {
        Variant v;
        v.iteration = it;
        v.attempt = at;
        v.key = fmt::format("i{}a{}", it, at);
        v.dir = m_dir / "iterations" / std::to_string(it) / fmt::format("attempt-{}", at);
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
        if (v.result.value("status", "") == "accepted") {
          m_best = v.key;
          improved = true;
        }
        if (final) break;
        if (at <= m_app.optimize.retries) say(v.key, "retrying with the errors as feedback");
        feedback = next;
      }
      if (!improved || it == m_app.optimize.iterations) break;
      if (!m_can_profile) break;
      // The next round starts from the best variant, with its own fresh profile.
      profile::ImportOptions io;
      io.ncu = m_settings.ncu;
      fs::path best_dir = m_dir / "iterations" / std::to_string(it);
      for (const auto& x : m_variants)
        if (x.value("key", "") == m_best) best_dir = m_dir / x.value("dir", "");
      m_profile = profile::import_profile((best_dir / "profile").string(), io);
      analysis::AnalysisOptions next_ao = ao;
      next_ao.config = m_diagnostics.config;
      m_diagnostics = analysis::analyze(m_profile, next_ao);
      say("iteration", fmt::format("{} improved; iteration {} starts from it", m_best, it + 1));
    }
  } catch (const PendingError& e) {
    write_run("waiting");
    throw PendingError(fmt::format("{}\nRun {} waits for it: continue with `optimas run --resume {}`{}", e.what(), m_id,
                                   m_id.substr(0, 8),
                                   m_options.runs_root == "runs" ? "" : " --runs-dir " + m_options.runs_root));
  } catch (const std::exception& e) {
    // Whatever stopped the run, run.json says so and keeps everything recorded before it. The
    // scratch copies go first: a full disk (the usual reason) gets its space back, and a
    // resumed run rebuilds what it needs.
    std::error_code ec;
    if (!m_settings.keep_work) fs::remove_all(m_dir / "work", ec);
    m_run["error"] = e.what();
    m_run["finished"] = util::utc_now_iso8601();
    m_run["outcome"] = "failed";
    write_run("failed");
    std::string message = fmt::format("run {}: {}", m_id, e.what());
    if (dynamic_cast<const UsageError*>(&e)) throw UsageError(message);
    throw Error(message);
  }

  // The summary: the best accepted variant, or why there is none.
  RunResult r;
  r.id = m_id;
  r.dir = m_dir.string();
  const json* best = nullptr;
  for (const auto& x : m_variants)
    if (x.value("key", "") == m_best) best = &x;
  if (best) {
    const auto& m = (*best)["measurement"];
    m_run["verdict"] = m["verdict"];
    m_run["speedup"] = m["speedup"];
    m_run["ci"] = m["ci"];
    m_run["p_value"] = m["p_value"];
    m_run["speedup_against"] = (*best).value("parent", "baseline"); // iteration K > 1: its parent variant
    m_run["outcome"] = "improved";
    r.exit_code = k_exit_ok;
    if (m_settings.aa)
      m_run["warnings"].push_back("the A/A variant (the unchanged baseline, built again) was accepted: noise or a "
                                  "build-to-build difference reaches measure.min_speedup here; raise "
                                  "measure.min_speedup or measure.runs");
  } else {
    bool measured = false;
    for (const auto& x : m_variants)
      if (x.contains("measurement")) {
        measured = true;
        m_run["verdict"] = x["measurement"]["verdict"];
        m_run["speedup"] = x["measurement"]["speedup"];
        m_run["ci"] = x["measurement"]["ci"];
        m_run["p_value"] = x["measurement"]["p_value"];
      }
    m_run["outcome"] = m_execute ? "no_improvement" : "not_measured";
    if (!measured && m_execute) m_run["verdict"] = nullptr;
    r.exit_code = k_exit_no_improvement;
  }
  m_run["finished"] = util::utc_now_iso8601();
  write_run("finished");
  if (!m_settings.keep_work) fs::remove_all(m_dir / "work");
  r.summary = m_run;
  return r;
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
  if (!m_settings.import.empty())
    steps.push_back({{"step", "profile"}, {"import", m_settings.import}});
  else
    steps.push_back(
        {{"step", "profile"}, {"ncu", m_settings.ncu}, {"mode", m_settings.full_profile ? "full" : "two-pass"}});
  steps.push_back({{"step", "analyze"}, {"diagnostics", m_app.optimize.diagnostics}});
  steps.push_back({{"step", "optimize"},
                   {"backend", m_backend.provider},
                   {"model", m_backend.model},
                   {"iterations", m_app.optimize.iterations},
                   {"retries", m_app.optimize.retries},
                   {"scope", m_app.optimize.scope}});
  json checks = json::array();
  for (const auto& c : evaluate::validation_checks(m_app, "dry-run")) checks.push_back(c.label);
  json commands = json::object();
  for (const auto& c : m_app.configs) commands[c.name] = m_app.command_for(c, "{output}");
  std::size_t measured = m_app.measure.configs.empty() ? m_app.configs.size() : m_app.measure.configs.size();
  if (execute) {
    steps.push_back(
        {{"step", "validate"}, {"checks", checks.size()}, {"tolerance", m_app.validate.tolerance}, {"labels", checks}});
    steps.push_back(
        {{"step", "measure"},
         {"configs", measured},
         {"runs", m_app.measure.runs},
         {"warmup", m_app.measure.warmup},
         {"min_speedup", m_app.measure.min_speedup},
         {"confirm", m_app.measure.confirm},
         {"program_runs", measured * 2 * static_cast<std::size_t>(m_app.measure.runs + m_app.measure.warmup)},
         {"confirmation_runs", m_app.measure.confirm ? 2 * m_app.measure.runs : 0}});
  }
  return {{"app", m_app.name},
          {"config", m_app.path},
          {"runs_root", m_options.runs_root},
          {"execute", execute},
          {"why_not", execute ? "" : m_no_execute_reason},
          {"commands", commands},
          {"steps", steps}};
}

} // namespace

RunResult run(const RunOptions& options) {
  Loop loop(options);
  return loop.run();
}

nlohmann::json plan(const RunOptions& options) {
  Loop loop(options);
  return loop.plan();
}

} // namespace optimas::loop
