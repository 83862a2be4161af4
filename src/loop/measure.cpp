// Measurement: a warm-up, then rounds of baseline and variant interleaved (ABBA order) so drift
// in clocks or temperature hits both alike; every sample is journaled (measurements.jsonl) as it
// is taken, so a resumed run keeps them. The acceptance rule (evaluate/acceptance.hpp) screens
// every measured configuration, then asks a round of fresh runs of the primary one to confirm;
// with measure.verdict sequential (evaluate/sequential.hpp) the primary configuration's rounds are
// taken in looks on each run's time in the hot kernels until the decision is clear. With
// measure.end_after_kernels auto (evaluate/end_after.hpp), traced runs end after their kernels
// where the validation runs' traces show that to be fair.
#include "loop/run_state.hpp"

#include "evaluate/end_after.hpp"
#include "evaluate/sequential.hpp"
#include "evaluate/stats.hpp"
#include "store/journal.hpp"
#include "util/log.hpp"
#include "util/names.hpp"

#include <fmt/format.h>

#include <utility>

namespace optimas::loop {

namespace fs = std::filesystem;
using nlohmann::json;

// The measured rounds of one variant against its parent: the samples taken so far (from the
// journal on a resume), the output hashes of each round, and the runs that take what is missing.
class Loop::Rounds {
public:
  Rounds(Loop& loop, Variant& v);

  // Rounds [from, to) of one configuration, those not journaled yet; a warm-up first if asked.
  // Returns why the measurement failed, if it did.
  std::optional<std::string> take(const config::InputConfig& c, int from, int to, int warmup);
  // The acceptance rule's comparison of rounds [from, to) of `config`.
  evaluate::Judgement judged(const std::string& config, int from, int to) const;
  // A judgement as measurement.json records it.
  json record(const evaluate::Judgement& j) const;
  // Adds the samples of rounds [from, to) to `rec` ("base" and "variant").
  void with_samples(json& rec, const std::string& config, int from, int to) const;
  // Each run's time in the hot kernels (a run of one value for evaluate::compare_runs), rounds
  // [from, to); nothing when a run has none (no hot kernel launched: renamed, or not traced).
  std::optional<std::vector<std::vector<double>>> hot_runs(const std::string& config, const std::string& role, int from,
                                                           int to) const;

  // Runs of each configuration end after its kernels where the validation runs' traces allow it
  // (measure.end_after_kernels); says where they do and why not elsewhere, once.
  void plan_end_after(const std::vector<json>& checks);
  // measurement.json's end_after_kernels: per configuration, the plan and the runs that ended early.
  json end_after_record() const;

  // The sequential rule's first rounds of `config`, from its validation runs (validation.jsonl's
  // records): each check of it whose variant and baseline runs were both traced in the hot
  // kernels is a round already taken, the variant first (docs/loop.md, "What a verdict costs").
  // Their kernel time is that up to the last hot launch where the measured runs end there.
  // Returns how many rounds they give.
  int seed_from_validation(const std::vector<json>& checks, const std::string& config);
  // Forgets those rounds again (the fixed rule measures its own).
  void unseed();

  const bool traced;      // timed by the kernel tracer
  const bool kernel_time; // compared by kernel time, not wall time
  const evaluate::AcceptanceRule rule;

private:
  using Samples = std::map<int, json>; // round -> sample
  std::optional<std::string> run_one(const config::InputConfig& c, const std::string& role, int round);
  json sample(const std::string& config, const std::string& role, int round, const evaluate::Execution& e,
              const std::string& sha) const;
  const Samples& taken(const std::string& config, const std::string& role) const;
  std::vector<evaluate::Sample> samples(const std::string& config, const std::string& role, int from, int to) const;

  Loop& m_loop;
  Variant& m_v;
  const fs::path m_journal;
  const fs::path m_parent; // the parent's scratch copy: the baseline, or the best variant so far
  std::map<std::string, std::map<std::string, Samples>> m_taken; // config -> role -> round -> sample
  std::map<std::string, int> m_seeded; // config -> its first rounds, from validation runs (variant first)
  // (config, round) -> role -> output hash. Only hashes are kept: no reference output exists
  // while the variant runs.
  std::map<std::pair<std::string, int>, std::map<std::string, std::string>> m_hashes;
  std::map<std::string, evaluate::EndAfterPlan> m_end_after; // config -> plan
  std::map<std::string, evaluate::Sandbox> m_sandboxes;      // config -> its runs' sandbox, where they end early
};

Loop::Rounds::Rounds(Loop& loop, Variant& v)
    : traced(!loop.m_measure_sandbox.tracer.empty()),
      kernel_time(!v.by_wall && (traced || loop.m_app.measure.timing == "kernel_time" ||
                                 (loop.m_app.measure.timing == "auto" && !loop.m_app.kernel_time.empty()))),
      rule(acceptance_rule(loop.m_app)), m_loop(loop), m_v(v), m_journal(v.dir / "measurements.jsonl"),
      m_parent(v.slot ? v.slot->parent : loop.parent_work()) {
  for (auto& j : store::read_journal(m_journal.string())) {
    if (!j["config"].is_string() || !j["role"].is_string()) {
      log::warn("{}: ignoring a sample without config and role", m_journal.string());
      continue;
    }
    m_taken[j["config"]][j["role"]][j.value("round", 0)] = j;
  }
  for (const auto& [config, roles] : m_taken)
    for (const auto& [role, rounds] : roles)
      for (const auto& [round, s] : rounds)
        if (s.contains("output_sha256")) m_hashes[{config, round}][role] = s["output_sha256"];
}

const Loop::Rounds::Samples& Loop::Rounds::taken(const std::string& config, const std::string& role) const {
  static const Samples k_none;
  auto c = m_taken.find(config);
  if (c == m_taken.end()) return k_none;
  auto r = c->second.find(role);
  return r == c->second.end() ? k_none : r->second;
}

void Loop::Rounds::plan_end_after(const std::vector<json>& checks) {
  // Judged by the wall time, a run must run to its end: the host work after the kernels counts.
  if (!traced || m_v.by_wall || m_loop.m_app.measure.end_after_kernels != "auto") return;
  for (const auto* c : measured_configs(m_loop.m_app)) {
    auto plan = evaluate::plan_end_after(checks, c->name);
    if (plan.end) {
      m_sandboxes[c->name] = m_loop.m_measure_sandbox;
      m_sandboxes[c->name].end_after = *plan.end;
    }
    m_loop.say(m_v.key + " measure", plan.reason + " (measure.end_after_kernels auto)");
    m_end_after[c->name] = std::move(plan);
  }
}

json Loop::Rounds::end_after_record() const {
  json out = json::object();
  for (const auto& [config, plan] : m_end_after) {
    json rec = {{"reason", plan.reason}};
    if (plan.end) {
      int ended = 0, runs = 0;
      for (const char* role : {"baseline", "variant"})
        for (const auto& [round, s] : taken(config, role)) {
          if (s.contains("validation")) continue;
          ++runs;
          ended += s.value("ended_early", false) ? 1 : 0;
        }
      rec["launches"] = plan.end->launches;
      rec["kernels"] = plan.end->symbols;
      rec["ended_early"] = ended;
      rec["runs"] = runs;
    }
    out[config] = rec;
  }
  return out;
}

// A timed sample as the journal keeps it: with the tracer, its traced time and a printed one beside.
json Loop::Rounds::sample(const std::string& config, const std::string& role, int round, const evaluate::Execution& e,
                          const std::string& sha) const {
  json s = {{"config", config}, {"role", role}, {"round", round}, {"wall_s", e.wall_s}};
  if (e.ended_early)
    s["ended_early"] = true;
  else
    s["output_sha256"] = sha;
  if (traced) {
    s["kernel_ms"] = e.traced_ms.value_or(0);
    s["launches"] = e.traced_launches;
    if (e.kernel_ms) s["printed_ms"] = *e.kernel_ms;
    if (e.hot_ms) {
      s["hot_ms"] = *e.hot_ms;
      s["hot_launches"] = e.hot_launches;
    }
  } else if (e.kernel_ms) {
    s["kernel_ms"] = *e.kernel_ms;
  }
  return s;
}

// Each round (and warm-up, round < 0) runs both on an input of its own: a fresh seed where the
// program takes one, so no cache of an earlier run can answer it, and the variant's output must
// be the baseline's on that input.
std::optional<std::string> Loop::Rounds::run_one(const config::InputConfig& c, const std::string& role, int round) {
  const auto& app = m_loop.m_app;
  const fs::path& work = role == "baseline" ? m_parent : m_v.work;
  std::string stem = fmt::format("measure-{}-{}-{}", c.name, role, round);
  const auto input =
      evaluate::with_fresh_seed(app, c, fmt::format("{}/{}/measure/{}/{}", m_loop.m_id, m_v.key, c.name, round));
  const fs::path out = util::path_in(work / "out", stem + ".out"), log = util::path_in(m_v.dir / "runs", stem + ".log");
  std::string tampered;
  auto own = m_sandboxes.find(c.name);
  const auto* sandbox = own == m_sandboxes.end() ? &m_loop.m_measure_sandbox : &own->second;
  auto e = role == "baseline" ? m_loop.execute(work, input, out, log, sandbox, m_v.slot)
                              : m_loop.execute_variant(m_v, input, out, log, tampered, sandbox);
  if (!tampered.empty()) {
    evaluate::remove_outputs(e);
    return fmt::format("while being measured on {}, {}", c.name, tampered);
  }
  if (!e.ok && role == "baseline") {
    // The parent built, validated and ran before, so its failure is not the variant's doing (a
    // lost build, a GPU fault, a full disk): recording the variant as failed would lose it and
    // every later one the same way. The run stops, resumable, with what it measured.
    const std::string parent = m_loop.m_best.empty() ? "the baseline" : m_loop.m_best;
    throw Error(fmt::format("{} failed while being measured on {} beside {}: {}. It ran before, so this is not {}'s "
                            "fault: the run stops here rather than record {} as failed; fix the cause and continue "
                            "with `{}`",
                            parent, c.name, m_v.key, e.failure, m_v.key, m_v.key, m_loop.resume_command()));
  }
  if (!e.ok) return fmt::format("the {} failed while being measured on {}: {}", role, c.name, e.failure);
  if (role == "baseline") m_loop.note_baseline_run(e);
  m_loop.drop_echoes(m_v, e);
  // A run that ended after its kernels wrote no outputs: its validation runs checked them.
  std::string sha = e.ended_early ? std::string() : evaluate::outputs_sha256(e);
  evaluate::remove_outputs(e);
  auto& pair = m_hashes[{c.name, round}];
  if (!e.ended_early) pair[role] = sha;
  if (pair.size() == 2)
    if (auto differs = evaluate::measured_output_differs(app.validate.tolerance, c.name, round,
                                                         app.seed_param.empty() ? "" : input.params.at(app.seed_param),
                                                         pair["baseline"], pair["variant"]))
      return differs;
  if (round >= 0) {
    json s = sample(c.name, role, round, e, sha);
    store::append_line(m_journal.string(), s);
    m_taken[c.name][role][round] = s;
  }
  return std::nullopt;
}

int Loop::Rounds::seed_from_validation(const std::vector<json>& checks, const std::string& config) {
  auto plan = m_end_after.find(config);
  const bool ends = plan != m_end_after.end() && plan->second.end;
  int round = 0;
  for (const auto& c : checks) {
    if (c.value("config", "") != config || !c.value("passed", false) || !c.contains("trace")) continue;
    const json& t = c["trace"];
    auto usable = [&](const char* role) {
      return t.contains(role) && t[role].is_object() && t[role].value("hot_ms", 0.0) > 0 &&
             t[role].contains("kernel_ms") &&
             (!ends || (t[role].contains("kernel_ms_to_hot_end") &&
                        t[role].value("hot_launches", std::uint64_t{0}) == plan->second.end->launches));
    };
    if (!usable("variant") || !usable("baseline")) continue;
    for (const char* role : {"baseline", "variant"}) {
      const json& r = t[role];
      m_taken[config][role][round] = {{"config", config},
                                      {"role", role},
                                      {"round", round},
                                      {"validation", c.value("label", "")},
                                      {"wall_s", r.value("wall_s", 0.0)},
                                      {"kernel_ms", r[ends ? "kernel_ms_to_hot_end" : "kernel_ms"]},
                                      {"launches", r.value("launches", std::uint64_t{0})},
                                      {"hot_ms", r["hot_ms"]},
                                      {"hot_launches", r.value("hot_launches", std::uint64_t{0})}};
    }
    ++round;
  }
  if (round > 0) m_seeded[config] = round;
  return round;
}

void Loop::Rounds::unseed() {
  for (const auto& [config, n] : m_seeded)
    for (auto& [role, rounds] : m_taken[config])
      for (int round = 0; round < n; ++round)
        if (auto it = rounds.find(round); it != rounds.end() && it->second.contains("validation")) rounds.erase(it);
  m_seeded.clear();
}

namespace {

// Whether round `round` runs the baseline first, when rounds [0, seeded) ran the variant first:
// each round takes the order the rounds before it had less of, and the other order than the round
// before on a tie, so that with nothing seeded the orders alternate (ABBA) from the baseline.
bool baseline_first(int seeded, int round) {
  int variant_first = seeded, base_first = 0;
  bool last_base = false;
  for (int r = seeded; r <= round; ++r) {
    last_base = variant_first == base_first ? (r == 0 || !last_base) : variant_first > base_first;
    ++(last_base ? base_first : variant_first);
  }
  return last_base;
}

} // namespace

std::optional<std::string> Loop::Rounds::take(const config::InputConfig& c, int from, int to, int warmup) {
  bool missing = false;
  for (int round = from; round < to; ++round)
    missing = missing || !taken(c.name, "baseline").count(round) || !taken(c.name, "variant").count(round);
  if (!missing) return std::nullopt;
  const std::string step = m_v.key + " measure";
  for (int w = 0; w < warmup; ++w) {
    m_loop.say(step, fmt::format("{}: warm-up", c.name), false);
    for (const char* role : {"baseline", "variant"})
      if (auto f = run_one(c, role, -1 - w - from)) return f;
  }
  for (int round = from; round < to; ++round) {
    const char* order[2] = {"baseline", "variant"};
    auto seeded = m_seeded.find(c.name);
    if (!baseline_first(seeded == m_seeded.end() ? 0 : seeded->second, round)) std::swap(order[0], order[1]);
    for (const char* role : order) {
      if (taken(c.name, role).count(round)) continue;
      m_loop.say(step, fmt::format("{}: round {}/{} {}", c.name, round + 1, to, role), false);
      if (auto f = run_one(c, role, round)) return f;
    }
  }
  return std::nullopt;
}

std::vector<evaluate::Sample> Loop::Rounds::samples(const std::string& config, const std::string& role, int from,
                                                    int to) const {
  std::vector<evaluate::Sample> out;
  for (const auto& [round, s] : taken(config, role))
    if (round >= from && round < to) {
      evaluate::Sample x{s.value("wall_s", 0.0) * 1000.0, std::nullopt, std::nullopt};
      if (s.contains("kernel_ms")) x.kernel_ms = s["kernel_ms"].get<double>();
      if (s.contains("printed_ms")) x.printed_ms = s["printed_ms"].get<double>();
      out.push_back(x);
    }
  return out;
}

std::optional<std::vector<std::vector<double>>>
Loop::Rounds::hot_runs(const std::string& config, const std::string& role, int from, int to) const {
  std::vector<std::vector<double>> out;
  for (const auto& [round, s] : taken(config, role))
    if (round >= from && round < to) {
      if (!(s.value("hot_ms", 0.0) > 0)) return std::nullopt;
      out.push_back({s["hot_ms"].get<double>()});
    }
  return out;
}

evaluate::Judgement Loop::Rounds::judged(const std::string& config, int from, int to) const {
  return evaluate::judge(samples(config, "baseline", from, to), samples(config, "variant", from, to), kernel_time,
                         rule);
}

json Loop::Rounds::record(const evaluate::Judgement& j) const {
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
}

void Loop::Rounds::with_samples(json& rec, const std::string& config, int from, int to) const {
  for (const auto& [role, key] : {std::pair{"baseline", "base"}, {"variant", "variant"}}) {
    rec[key] = json::array();
    for (const auto& [round, s] : taken(config, role))
      if (round >= from && round < to) rec[key].push_back(s);
  }
}

bool Loop::run_failed(Variant& v, json& result, const std::string& why) {
  result["status"] = "run_failed";
  result["reason"] = why;
  result["errors"] = why;
  say(v.key + " measure", "FAILED: " + why);
  return false;
}

bool Loop::measure(Variant& v, json& result) {
  std::string note;
  const bool sequential = m_app.measure.verdict == "sequential" && !v.by_wall;
  if (v.by_wall) {
    note = "its edits act on the application's evidence (AP), host code whose effect is on the wall time: judged by "
           "the wall time of whole runs, by the fixed rule";
    result["judged_by"] = "wall";
  }
  // Per-launch times need the trace and the hot kernels of the profile the variant was made from.
  m_measure_sandbox.hot_kernels = sequential ? hot_kernel_names(m_diagnostics) : std::vector<std::string>{};
  Rounds rounds(*this, v);
  const auto checks = store::read_journal((v.dir / "validation.jsonl").string());
  rounds.plan_end_after(checks);
  // Without a trace (a program timed by wall clock or its printed times) the fixed rule measures,
  // as measurement.json's note says, without a word on the progress line: it is the default.
  bool quiet = false;
  if (sequential && !rounds.traced) {
    note = "measure.verdict sequential needs the kernels' traced launches (measure.timing trace): measured by the "
           "fixed rule";
    quiet = true;
  } else if (sequential && m_measure_sandbox.hot_kernels.empty())
    note = "measure.verdict sequential needs the profile's hot kernels, and there are none here: measured by the "
           "fixed rule";
  else if (sequential)
    if (auto done = measure_sequential(v, result, rounds, checks, note)) return *done;
  if (!note.empty() && !quiet) say(v.key + " measure", note);
  return measure_fixed(v, result, rounds, note);
}

bool Loop::measure_fixed(Variant& v, json& result, Rounds& rounds, const std::string& note) {
  const auto& ms = m_app.measure;
  const auto& rule = rounds.rule;

  // Screening: every measured configuration.
  json per_config = json::object();
  std::vector<evaluate::ConfigJudgement> screening;
  std::vector<double> speedups;
  for (const auto* c : measured_configs(m_app)) {
    if (auto f = rounds.take(*c, 0, ms.runs, ms.warmup)) return run_failed(v, result, *f);
    auto j = rounds.judged(c->name, 0, ms.runs);
    json rec = rounds.record(j);
    rec["held_out"] = c->held_out;
    rounds.with_samples(rec, c->name, 0, ms.runs);
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
  json m = {{"timing", !rounds.kernel_time ? "wall"
                       : rounds.traced     ? "trace"
                                           : "kernel_time"},
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

  // Confirmation: fresh runs of the primary configuration.
  if (decision.stage == evaluate::Stage::confirm) {
    say(v.key + " measure", decision.reason);
    // Its cost of its own in the variant's times (measure_s includes it): run.json, runs show, the dashboard.
    const auto confirming = std::chrono::steady_clock::now();
    if (auto f = rounds.take(*m_app.find(primary), ms.runs, 2 * ms.runs, 0)) return run_failed(v, result, *f);
    auto fresh = rounds.judged(primary, ms.runs, 2 * ms.runs);
    auto pooled = rounds.judged(primary, 0, 2 * ms.runs);
    decision = evaluate::confirm(fresh, pooled, primary, rule);
    m["confirmation"] = {{"fresh", rounds.record(fresh)}, {"all", rounds.record(pooled)}};
    rounds.with_samples(m["confirmation"]["fresh"], primary, ms.runs, 2 * ms.runs);
    // The reported speedup is that of every run of the primary configuration.
    headline = rounds.record(pooled);
    result["times"]["confirm_s"] = seconds_since(confirming);
  }
  for (const char* key : {"verdict", "speedup", "ci", "p_value", "base_ms", "variant_ms"}) m[key] = headline[key];
  m["decision"] = decision.reason;
  if (!note.empty()) m["note"] = note;
  if (auto ends = rounds.end_after_record(); !ends.empty()) m["end_after_kernels"] = ends;
  store::write_json_atomic((v.dir / "measurement.json").string(), m);
  result["measurement"] = m;
  result["status"] = evaluate::measured_status(decision.stage);
  result["reason"] = decision.reason;
  say(v.key + " measure", fmt::format("{}: {}", result["status"].get<std::string>(), decision.reason));
  return true;
}

namespace {

// One look of the sequential rule, as measurement.json's looks hold it.
json look_record(const evaluate::LookResult& look, int runs) {
  const auto& c = look.comparison;
  return {{"runs", runs},
          {"call", evaluate::call_name(look.call)},
          {"speedup", c.speedup},
          {"ci", {c.ci_low, c.ci_high}},
          {"p_value", c.p_value},
          {"significance", look.significance},
          {"futility_high", look.futility_high}};
}

// The sequential rule's settings, as measurement.json's rule holds them.
json rule_record(const evaluate::AcceptanceRule& rule, const evaluate::SequentialPlan& plan) {
  return {{"significance", rule.corrected_significance()},
          {"comparisons", rule.comparisons},
          {"min_speedup", rule.min_speedup},
          {"target_speedup", plan.target_speedup},
          {"futility", plan.futility},
          {"looks", plan.looks}};
}

} // namespace

std::optional<bool> Loop::measure_sequential(Variant& v, json& result, Rounds& rounds, const std::vector<json>& checks,
                                             std::string& note) {
  const auto& ms = m_app.measure;
  const auto& rule = rounds.rule;
  const std::string step = v.key + " measure";
  // The primary configuration as the fixed rule picks it: the default one if measured, else the
  // first measured by name.
  std::set<std::string> measured;
  for (const auto* c : measured_configs(m_app)) measured.insert(c->name);
  const std::string primary =
      measured.count(m_app.default_config().name) ? m_app.default_config().name : *measured.begin();
  // As many runs at most as the fixed rule takes with its confirmation, at the same significance.
  evaluate::SequentialPlan plan;
  plan.looks = evaluate::default_looks(3, ms.confirm ? 2 * ms.runs : ms.runs);
  plan.significance = rule.corrected_significance();
  plan.min_speedup = rule.min_speedup;
  json looks = json::array();
  // The validation runs of the primary configuration are its first rounds; having run both
  // programs, they are its warm-up too.
  const int seeded = rounds.seed_from_validation(checks, primary);
  if (seeded > 0)
    say(step, fmt::format("{}: the {} validation run(s) a side count as the first round(s)", primary, seeded));
  evaluate::LookResult look;
  int n = 0;
  for (std::size_t k = 0; k < plan.looks.size(); ++k) {
    n = plan.looks[k];
    if (auto f =
            rounds.take(*m_app.find(primary), k == 0 ? 0 : plan.looks[k - 1], n, k == 0 && seeded == 0 ? ms.warmup : 0))
      return run_failed(v, result, *f);
    auto base = rounds.hot_runs(primary, "baseline", 0, n), variant = rounds.hot_runs(primary, "variant", 0, n);
    if (!base || !variant) {
      note = fmt::format("a measured run of {} launched none of the hot kernels ({}): measured by the fixed rule",
                         primary, fmt::join(m_measure_sandbox.hot_kernels, ", "));
      rounds.unseed();
      return std::nullopt;
    }
    look = evaluate::judge_look(*base, *variant, plan, k, primary);
    looks.push_back(look_record(look, n));
    say(step, fmt::format("{}: look {}/{}: {}", primary, k + 1, plan.looks.size(), look.reason),
        look.call != evaluate::Call::more);
    if (look.call != evaluate::Call::more) break;
  }

  // The whole runs: the primary configuration's on the same rounds; the others screened as the
  // fixed rule screens them, only for a variant that is faster where it counts.
  json per_config = json::object();
  std::vector<evaluate::ConfigJudgement> whole;
  auto judge_whole = [&](const config::InputConfig& c, int to) {
    auto j = rounds.judged(c.name, 0, to);
    json rec = rounds.record(j);
    rec["held_out"] = c.held_out;
    rounds.with_samples(rec, c.name, 0, to);
    per_config[c.name] = rec;
    whole.push_back({c.name, j});
  };
  judge_whole(*m_app.find(primary), n);
  if (look.call == evaluate::Call::faster)
    for (const auto* c : measured_configs(m_app)) {
      if (c->name == primary) continue;
      if (auto f = rounds.take(*c, 0, ms.runs, ms.warmup)) return run_failed(v, result, *f);
      judge_whole(*c, ms.runs);
    }
  auto decision = evaluate::sequential_decision(look, whole, primary, rule.min_speedup);
  const auto& c = look.comparison;
  json m = {{"timing", "trace"},
            {"verdict_rule", "sequential"},
            {"runs", n},
            {"from_validation", seeded},
            {"warmup", seeded > 0 ? 0 : ms.warmup},
            {"primary", primary},
            {"hot_kernels", m_measure_sandbox.hot_kernels},
            {"rule", rule_record(rule, plan)},
            {"looks", looks},
            {"configs", per_config},
            {"verdict", evaluate::verdict_name(c.verdict)},
            {"speedup", c.speedup},
            {"ci", {c.ci_low, c.ci_high}},
            {"p_value", c.p_value},
            {"base_ms", c.base_median},
            {"variant_ms", c.variant_median},
            {"decision", decision.reason}};
  if (auto ends = rounds.end_after_record(); !ends.empty()) m["end_after_kernels"] = ends;
  store::write_json_atomic((v.dir / "measurement.json").string(), m);
  result["measurement"] = m;
  result["status"] = evaluate::measured_status(decision.stage);
  result["reason"] = decision.reason;
  say(step, fmt::format("{}: {}", result["status"].get<std::string>(), decision.reason));
  return true;
}

} // namespace optimas::loop
