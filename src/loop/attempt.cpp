// One attempt of an iteration: the prompt, the backend's replies (asked once, kept in
// replies.json), the proposal (edits applied to copies, guardrails), the variant's build in a
// fresh copy of the snapshot, its validation against the baseline, then its measurement
// (measure.cpp). Every step leaves its artifact in the attempt's folder, and result.json holds
// the attempt's last word once it is final, so a resumed run goes on where this one stopped.
#include "evaluate/snapshot.hpp"
#include "loop/run_state.hpp"

#include "analysis/json.hpp"
#include "evaluate/ear.hpp"
#include "evaluate/end_after.hpp"
#include "llm/cache.hpp"
#include "profile/importer.hpp"
#include "propose/prepare.hpp"
#include "store/journal.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <cmath>
#include <set>

namespace optimas::loop {

namespace fs = std::filesystem;
using nlohmann::json;
using store::read_json;

namespace {

// EAR inputs from the edits alone; the profiles before and after join once measured.
evaluate::EarInputs ear_inputs(const Proposal& proposal, const analysis::Diagnostics& diagnostics) {
  evaluate::EarInputs in;
  in.diagnostics = &diagnostics;
  in.reply = &proposal.reply;
  in.application = &proposal.application;
  in.config = diagnostics.config;
  return in;
}

// What the edits did, for result.json: counts, the applied edits with their evidence, and the
// suggestions not applied or withheld with the reason.
void record_edits(const Proposal& proposal, json& result) {
  const auto& app = proposal.application;
  result["edits"] = proposal.reply.edits.size();
  result["applied"] = app.applied();
  result["not_applied"] = app.not_applied();
  result["withheld"] = proposal.reply.withheld.size();
  json applied = json::array(), ignored = json::array();
  for (const auto& o : app.outcomes) {
    const auto& e = proposal.reply.edits[o.index];
    if (o.applied)
      applied.push_back({{"kernel", e.kernel},
                         {"evidence", e.evidence},
                         {"rationale", e.rationale},
                         {"rule", e.rule.empty() ? json(nullptr) : json(e.rule)}});
    else
      ignored.push_back({{"suggestion", util::first_sentence(e.rationale)}, {"reason", "not applied: " + o.reason}});
  }
  for (const auto& w : proposal.reply.withheld) ignored.push_back({{"suggestion", w.suggestion}, {"reason", w.reason}});
  result["applied_edits"] = applied;
  result["ignored"] = ignored;
  // Where the time is that the edits act on (issue #50): runs show and the run page say it.
  result["coverage"] = optimas::propose::to_json(proposal.coverage);
}

} // namespace

// The attempt as recorded before an interruption, when it was final: whether it ends the
// iteration (nothing when it must be done).
std::optional<bool> Loop::recorded_attempt(Variant& v, std::string& next_feedback) {
  if (!fs::exists(v.dir / "result.json")) return std::nullopt;
  json r = read_json((v.dir / "result.json").string());
  if (!evaluate::is_final_status(r.value("status", ""))) return std::nullopt;
  v.result = r;
  next_feedback = r.value("feedback", "");
  say(v.key, fmt::format("{} (recorded before the interruption)", r.value("status", "")));
  if (r.value("ear_pending", false) && fs::exists(v.dir / "replies.json")) {
    // Measured, its re-profile not yet taken: its proposal again from the recorded replies.
    std::vector<std::string> replies;
    const json recorded = read_json((v.dir / "replies.json").string());
    for (const auto& f : recorded["files"]) replies.push_back(util::read_file((v.dir / f.get<std::string>()).string()));
    json scratch = r;
    m_pending_ear.push_back({v, propose(v, replies, current_sources(), scratch)});
  }
  return !r.value("retry", false);
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
  bool cacheable = !m_settings.no_cache && llm::caches_answers(m_backend);
  if (cacheable) cache.emplace(m_settings.cache_dir);
  say(v.key + " ask", fmt::format("{} ({} prompt(s){})", backend->name(), prompts.size(),
                                  feedback.empty() ? "" : ", with the last attempt's errors"));
  AskSettings how;
  how.seed = m_settings.seed; // a campaign's repeat; only providers whose API takes a seed send it
  // A later candidate of a round samples with a seed of its own, where the provider takes one.
  if (v.candidate > 1) how.seed = m_settings.seed.value_or(0) + v.candidate - 1;
  auto asked = ask_backend(
      prompts, feedback,
      [&] {
        auto context =
            propose::structured_context(m_diagnostics, current_sources(), host_sources(), m_app.optimize.scope);
        context["candidate"] = v.candidate;
        return context;
      }(),
      *backend, m_backend, cache ? &*cache : nullptr, how);
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

// The replies as a proposal on `sources`, its artifacts (reply, outcomes, diff, guardrails) in
// the attempt's folder and its edits and EAR metrics in `result`.
Proposal Loop::propose(Variant& v, const std::vector<std::string>& replies,
                       const std::map<std::string, std::string>& sources, json& result) {
  std::map<std::string, std::string> paths;
  for (const auto& s : m_app.sources) paths[fs::path(s).filename().string()] = s;
  Proposal proposal =
      make_proposal(replies, m_diagnostics, sources, paths, edit::parse_scope(m_app.optimize.scope),
                    analysis::parse_diagnostics(m_app.optimize.diagnostics).code_only, m_backend.provider == "builtin");
  store::write_json_atomic((v.dir / "reply.json").string(), prompt::to_json(proposal.reply));
  store::write_json_atomic((v.dir / "outcomes.json").string(), optimas::propose::to_json(proposal));
  util::write_file((v.dir / "diff.patch").string(), proposal.diff);
  store::write_json_atomic((v.dir / "guardrails.json").string(), edit::to_json(proposal.violations));
  record_edits(proposal, result);
  // EAR metrics from the edits alone; directional consistency joins after the re-profile.
  result["ear"] = evaluate::to_json(evaluate::compute_ear(ear_inputs(proposal, m_diagnostics)));
  return proposal;
}

// An earlier variant of the run (any round: a later round may propose again what an earlier one
// measured, as the builtin did on digits' unchanged best) whose sources `sources` are (file name
// -> text), or "". A variant that never built is not one: its twin may build after a fix.
std::string Loop::same_code_as(const Variant& v, const std::map<std::string, std::string>& sources) const {
  for (const auto& x : m_variants) {
    if (x.value("key", "") == v.key || !x.contains("source")) continue;
    const std::string status = x.value("status", "");
    if (status == "build_failed" || status == "guardrail_rejected" || status == "invalid_reply" ||
        status == "no_edits" || status == "duplicate" || status == "build_stale")
      continue;
    const fs::path dir = m_dir / x.value("source", "");
    if (!fs::is_directory(dir)) continue;
    bool same = true;
    for (const auto& s : m_app.sources) {
      const fs::path f = dir / s;
      auto mine = sources.find(fs::path(s).filename().string());
      same = same && fs::exists(f) && mine != sources.end() && util::read_file(f.string()) == mine->second;
    }
    if (same) return x.value("key", "");
  }
  return "";
}

// Ends the attempt with `outcome`; its feedback is what a retry tells the backend. Returns
// whether the attempt ends the iteration.
bool Loop::end_attempt(Variant& v, json& result, const evaluate::Outcome& outcome, std::string& next_feedback) {
  result["status"] = outcome.status;
  result["reason"] = outcome.reason;
  result["retry"] = outcome.retry;
  result["feedback"] = next_feedback = outcome.feedback;
  finish_variant(v, result);
  return !outcome.retry;
}

// One attempt: ask, apply, check, build, validate, measure. Returns true when the attempt is
// final for this iteration (no retry); `next_feedback` says why a retry is worth it.
bool Loop::run_attempt(Variant& v, const std::string& feedback, std::string& next_feedback) {
  fs::create_directories(v.dir);
  if (auto recorded = recorded_attempt(v, next_feedback)) return *recorded;
  json result = {{"key", v.key},
                 {"iteration", v.iteration},
                 {"candidate", v.candidate},
                 {"attempt", v.attempt},
                 {"dir", fs::relative(v.dir, m_dir).string()},
                 {"parent", m_best.empty() ? "baseline" : m_best},
                 {"prompt", (fs::relative(v.dir, m_dir) / "prompt.md").string()},
                 {"source", (fs::relative(v.dir, m_dir) / "src").string()}};

  // The variant's sources: the parent's with the backend's edits, or unchanged for an A/A run.
  std::map<std::string, std::string> edited = current_sources();
  std::optional<Proposal> proposal;
  std::string replies_text;
  if (m_settings.aa) {
    result["aa"] = true;
    result["prompt"] = nullptr;
  } else {
    prompt::PromptOptions po;
    const auto diagnostics = analysis::parse_diagnostics(m_app.optimize.diagnostics);
    po.sources = diagnostics.sources;
    po.code_only = diagnostics.code_only;
    po.token_budget = m_settings.token_budget;
    if (!m_settings.template_path.empty()) po.template_text = util::read_file(m_settings.template_path);
    if (!m_run.value("profile_gpu", "").empty()) po.gpu = m_run["profile_gpu"];
    auto asked = std::chrono::steady_clock::now();
    auto prompts = prompt::build_prompts(app_in(parent_sources()), m_diagnostics, po);
    if (std::string notes = search_notes(v); !notes.empty())
      for (auto& p : prompts) p.user += notes;
    auto replies = replies_for(v, prompts, feedback);
    replies_text = util::join(replies, "\n");
    const bool same = replies_text == v.previous_replies;
    proposal = propose(v, replies, edited, result);
    result["times"]["ask_s"] = seconds_since(asked);
    if (!proposal->usable()) {
      std::string why = proposal->feedback();
      auto outcome = evaluate::unusable_proposal(!proposal->parse_errors.empty(), !proposal->violations.empty(),
                                                 !proposal->reply.edits.empty(), same, why);
      result["errors"] = why;
      auto lines = util::split(why, '\n');
      say(v.key, fmt::format("{}: {}", outcome.status, lines.empty() ? "" : std::string(lines[0])));
      return end_attempt(v, result, outcome, next_feedback);
    }
    if (!evaluate::edits_change_code(edited, proposal->application.result)) {
      auto outcome = evaluate::unchanged_code(same);
      say(v.key, "build_stale: " + outcome.reason);
      return end_attempt(v, result, outcome, next_feedback);
    }
    if (std::string twin = same_code_as(v, proposal->application.result); !twin.empty()) {
      auto outcome = evaluate::duplicate_candidate(twin, same);
      say(v.key, "duplicate: " + outcome.reason);
      return end_attempt(v, result, outcome, next_feedback);
    }
    edited = proposal->application.result;
    v.by_wall = optimas::propose::acts_on_application(*proposal);
  }

  std::map<std::string, std::string> files; // edited is by file name, the variant's folder by path
  for (const auto& s : m_app.sources) files[s] = edited.at(fs::path(s).filename().string());
  evaluate::write_tree((v.dir / "src").string(), files);
  auto built = std::chrono::steady_clock::now();
  // Built ahead with these very sources (a round's builtin candidates, loop/ahead.cpp)?
  if (m_ahead && v.attempt == 1) {
    const std::string key = content_key(files, {});
    if (auto made = m_ahead->take(key)) adopt_ahead_build(v, key, *made, result["times"]);
  }
  auto build_outcome = build_variant(v, result, replies_text);
  if (!result["times"].contains("waited_s")) result["times"]["build_s"] = seconds_since(built);
  if (build_outcome) return end_attempt(v, result, *build_outcome, next_feedback);

  if (!m_execute) {
    say(v.key, "built; not validated or measured: " + m_no_execute_reason);
    return end_attempt(v, result, {"not_measured", "built, not run: " + m_no_execute_reason, false, ""}, next_feedback);
  }
  // Each phase's wall time, for the dashboard; the re-profile is the EAR step's.
  auto timed = [&result](const char* name, auto&& phase) {
    auto start = std::chrono::steady_clock::now();
    bool ok = phase();
    result["times"][name] = seconds_since(start);
    return ok;
  };
  bool ear_later = false;
  if (timed("validate_s", [&] { return validate(v, result); }) &&
      timed("measure_s", [&] { return measure(v, result); }) && proposal) {
    if ((ear_later = ear_after_round(v)))
      result["ear_pending"] = true;
    else
      timed("ear_s", [&] {
        record_ear(v, *proposal, result);
        return true;
      });
  }
  finish_variant(v, result);
  if (ear_later) m_pending_ear.push_back({v, std::move(*proposal)});
  return true;
}

// Only where the tuning stage may build points ahead and follows this candidate, the last of the
// last round, with nothing else to measure between them.
bool Loop::ear_after_round(const Variant& v) const {
  return m_can_profile && m_app.tune.enabled && !m_settings.aa && v.iteration == m_app.optimize.rounds &&
         v.candidate == m_app.optimize.candidates && build_lanes(m_settings.build_jobs) > 0;
}

// The re-profiles ear_after_round left for later, each variant's result completed with its EAR.
// Returns the seconds they took.
double Loop::record_pending_ear() {
  const auto began = std::chrono::steady_clock::now();
  std::vector<PendingEar> pending;
  pending.swap(m_pending_ear);
  for (auto& [v, proposal] : pending) {
    json result = v.result;
    result.erase("ear_pending");
    const auto start = std::chrono::steady_clock::now();
    record_ear(v, proposal, result);
    result["times"]["ear_s"] = seconds_since(start);
    finish_variant(v, result);
  }
  return pending.empty() ? 0.0 : seconds_since(began);
}

// How close each hot kernel ran to its roofline before the variant (the profile the loop
// analysed) and after (the variant's re-profile): {kernel: {before, after, limit_before,
// limit_after, share}}, fractions in [0, 1], share the kernel's part of the GPU time before
// (issue #30).
json Loop::speed_of_light_record(const profile::Profile& after) const {
  std::vector<std::string> kernels;
  for (const auto& k : m_diagnostics.kernels)
    if (k.roofline) kernels.push_back(k.time.kernel);
  const auto now = analysis::speeds_of_light(after, m_diagnostics.config, kernels, m_diagnostics.options.tau_sat);
  auto fraction = [](double f) { return std::isfinite(f) ? json(f) : json(nullptr); };
  json out = json::object();
  for (const auto& k : m_diagnostics.kernels) {
    if (!k.roofline) continue;
    json e = {{"before", fraction(k.roofline->sol.fraction)},
              {"limit_before", k.roofline->sol.limit},
              {"share", k.time.share}};
    if (auto it = now.find(k.time.kernel); it != now.end()) {
      e["after"] = fraction(it->second.fraction);
      e["limit_after"] = it->second.limit;
    }
    out[k.time.kernel] = e;
  }
  return out;
}

// The EAR metrics of a measured variant: with its re-profile where one can be taken, the
// directional consistency of the edits' expected effects joins.
void Loop::record_ear(Variant& v, const Proposal& proposal, json& result) {
  if (m_can_profile) {
    reprofile(v);
    profile::ImportOptions io;
    io.ncu = m_settings.ncu;
    auto after = profile::import_profile((v.dir / "profile").string(), io);
    auto in = ear_inputs(proposal, m_diagnostics);
    in.before = &m_profile;
    in.after = &after;
    in.correct = true;
    result["ear"] = evaluate::to_json(evaluate::compute_ear(in));
    result["speed_of_light"] = speed_of_light_record(after);
  } else {
    result["ear"]["correct"] = true;
  }
  store::write_json_atomic((v.dir / "ear.json").string(), result["ear"]);
}

// The variant is built in a fresh copy of the run's snapshot with its sources written in: no
// object file of another build is there for make to find up to date. A build whose product is
// byte-identical to the parent's did not compile the edits and is never measured. Returns how
// the attempt ends when it ends here.
std::optional<evaluate::Outcome> Loop::build_variant(Variant& v, json& result, const std::string& replies) {
  fs::path build_record = v.dir / "build.json";
  json record = fs::exists(build_record) ? read_json(build_record.string()) : json::object();
  bool built = record.value("ok", false) && (m_app.binary.empty() || fs::exists(v.work / m_app.binary));
  if (!built && record.value("ahead", false) && !record.value("ok", true)) {
    // Built ahead (loop/pipeline.hpp), and it failed: known before its turn, not built again.
    result["errors"] = record.value("tail", "");
    say(v.key + " build", "FAILED: " + record.value("result", ""));
    return evaluate::failed_build(record.value("result", ""), record.value("tail", ""), replies == v.previous_replies);
  }
  if (!built) {
    say(v.key + " build",
        !v.build_note.empty() ? v.build_note
        : m_settings.aa       ? "A/A: the parent unchanged; building"
                              : fmt::format("{} edit(s) applied; building", result.value("applied", 0)),
        false);
    auto b = build_copy(v.dir / "src", v.work, v.dir / "build.log", v.build_env);
    record = {{"ok", b.ok}, {"result", b.result}, {"wall_s", b.wall_s}};
    for (const auto& [k, val] : v.build_env) record["env"][k] = val;
    if (b.ok) record["fingerprint"] = evaluate::build_fingerprint(m_app, v.work.string(), m_snapshot);
    store::write_json_atomic(build_record.string(), record);
    if (!b.ok) {
      result["errors"] = b.tail();
      say(v.key + " build", "FAILED: " + b.result);
      return evaluate::failed_build(b.result, b.tail(), replies == v.previous_replies);
    }
    say(v.key + " build", fmt::format("ok in {:.1f} s", b.wall_s));
  }
  auto stale =
      evaluate::stale_build(record.value("fingerprint", ""), parent_fingerprint(), m_app.binary, m_settings.aa);
  if (stale) say(v.key + " build", "STALE: " + stale->reason);
  return stale;
}

// One validation check: the variant first, the baseline after it on the same input, so no
// reference output for that input exists anywhere while the variant runs; both outputs are
// deleted once compared.
json Loop::validation_check(Variant& v, const evaluate::Check& check, std::size_t index) {
  const fs::path base_work = v.slot ? v.slot->baseline : m_dir / "work" / "baseline";
  const std::string stem = fmt::format("check-{}", index);
  json rec = {{"label", check.label}, {"config", check.config}, {"held_out", check.held_out}};
  std::string tampered;
  const auto traced = validation_sandbox();
  const evaluate::Sandbox* sandbox = traced ? &*traced : nullptr;
  auto ve = execute_variant(v, check.input, v.work / "out" / (stem + ".out"), v.dir / "runs" / (stem + ".log"),
                            tampered, sandbox);
  if (!tampered.empty()) {
    rec["passed"] = false;
    rec["tampered"] = true;
    rec["detail"] = tampered;
  } else if (!ve.ok) {
    rec["passed"] = false;
    rec["run_failed"] = true; // a crash, a hang: no output to compare (loop/tune.cpp reads it)
    rec["detail"] = "the variant failed: " + ve.failure;
  } else {
    auto be = execute(base_work, check.input, base_work / "out" / (stem + ".out"),
                      v.dir / "runs" / (stem + ".baseline.log"), sandbox, v.slot);
    if (!be.ok) throw Error(fmt::format("the baseline failed on {}: {}", check.label, be.failure));
    note_baseline_run(be);
    std::string declared = m_baseline["configs"][check.config].value("output_sha256", "");
    if (auto drift = evaluate::baseline_drift(check.label, check.config, evaluate::outputs_sha256(be), declared))
      throw Error(*drift);
    drop_echoes(v, be);
    drop_echoes(v, ve);
    auto cmp =
        evaluate::compare_output_sets(be.outputs, ve.outputs, m_app.outputs, evaluate::tolerance_from(m_app.validate));
    rec["passed"] = cmp.equal;
    rec["detail"] = cmp.detail;
    rec["output_sha256"] = evaluate::outputs_sha256(ve);
    if (traced) rec["trace"] = {{"variant", evaluate::trace_summary(ve)}, {"baseline", evaluate::trace_summary(be)}};
    evaluate::remove_outputs(be);
  }
  evaluate::remove_outputs(ve);
  return rec;
}

void Loop::drop_echoes(const Variant& v, const evaluate::Execution& e) const {
  if (!v.echoes.empty() && evaluate::compares_stdout(m_app) && !e.ended_early && !e.outputs.empty())
    evaluate::drop_whole_lines(e.outputs.front(), v.echoes);
}

// Validation runs are traced where measurement runs may end after their kernels, whose traces
// decide where that is fair (evaluate/end_after.hpp), and for the sequential rule, whose first
// rounds they are (loop/measure.cpp). A missing trace fails no validation.
std::optional<evaluate::Sandbox> Loop::validation_sandbox() const {
  if ((m_app.measure.end_after_kernels != "auto" && m_app.measure.verdict != "sequential") ||
      m_measure_sandbox.tracer.empty())
    return std::nullopt;
  evaluate::Sandbox s = m_measure_sandbox;
  s.hot_kernels = hot_kernel_names(m_diagnostics);
  if (s.hot_kernels.empty()) return std::nullopt;
  s.trace_optional = true;
  s.end_after = {};
  return s;
}

// Every check of validation.jsonl not journaled yet, until one fails.
bool Loop::validate(Variant& v, json& result) {
  auto tolerance = evaluate::tolerance_from(m_app.validate);
  auto checks = evaluate::validation_checks(m_app, m_id + "/" + v.key);
  fs::path journal = v.dir / "validation.jsonl";
  std::map<std::string, json> done;
  for (auto& j : store::read_journal(journal.string())) done[j.value("label", "")] = j;
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
      rec = validation_check(v, check, index);
      store::append_line(journal.string(), rec);
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
    result["reason"] = evaluate::validation_failure(bad.value("label", ""), bad.value("held_out", false),
                                                    bad.value("tampered", false), bad.value("detail", ""));
    result["errors"] = result["reason"];
    return false;
  }
  say(v.key + " validate", fmt::format("{} check(s) passed ({})", records.size(), evaluate::describe(tolerance)));
  return true;
}

// What the evidence a measured variant's edits cite said could be gained at most, beside what was
// measured (the GPA check, docs/analysis.md): {gain, evidence: {id: gain}, measured, ratio}.
json Loop::gain_estimate(const json& result) const {
  const json& speedup = util::member(util::member(result, "measurement"), "speedup");
  if (!speedup.is_number()) return nullptr;
  std::set<std::string> cited;
  for (const auto& e : util::member(result, "applied_edits"))
    for (const auto& id : util::member(e, "evidence"))
      if (id.is_string()) cited.insert(id.get<std::string>());
  std::vector<const analysis::Evidence*> items;
  json gains = json::object();
  for (const auto& e : m_diagnostics.evidence)
    if (cited.count(e.id)) {
      items.push_back(&e);
      gains[e.id] = std::isfinite(e.gain) ? json(e.gain) : json(nullptr);
    }
  // A wall-time gain where AP items are cited (analysis::combined_gain).
  const double gain = analysis::combined_gain(items, m_diagnostics);
  if (!std::isfinite(gain)) return nullptr;
  return {{"gain", gain}, {"evidence", gains}, {"measured", speedup}, {"ratio", speedup.get<double>() / gain}};
}

void Loop::finish_variant(Variant& v, json result) {
  if (json estimate = gain_estimate(result); !estimate.is_null()) result["estimate"] = estimate;
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

} // namespace optimas::loop
