// The loop's side of the variant pipeline (loop/pipeline.hpp, docs/pipeline.md): the builds a
// stage knows it will need, made ahead under a key while earlier variants are measured, and
// taken by the variant whose turn comes. The tuning stage submits its points (tune.cpp,
// keyed by the point's label); a round of the builtin's candidates submits each candidate's
// sources as the builtin will propose them (keyed by their content: a candidate whose sources
// turn out otherwise finds no build and builds at its turn).
#include "loop/run_state.hpp"
#include "util/error.hpp"

#include "evaluate/tree_guard.hpp"
#include "llm/backend.hpp"
#include "propose/prepare.hpp"
#include "util/hash.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <cmath>

namespace optimas::loop {

namespace fs = std::filesystem;
using nlohmann::json;
using store::read_json;

namespace {

// Where the build under `key` is made ahead: its folder (sources, log) and its scratch build,
// until the variant's turn moves them to its own.
fs::path ahead_dir(const fs::path& run, const std::string& label) {
  return run / "ahead" / util::sha256_hex(label).substr(0, 16);
}
fs::path ahead_work(const fs::path& run, const std::string& label) {
  return run / "work" / ("ahead-" + util::sha256_hex(label).substr(0, 16));
}

// Every entry of a build folder with its stamps (evaluate::tree_state), hashed: what a build
// made ahead is when it finishes and must still be when its turn comes.
std::string tree_digest(const fs::path& dir) {
  std::string all;
  for (const auto& [rel, s] : evaluate::tree_state(dir.string()))
    all += fmt::format("{}\t{} {} {} {} {}\n", rel, s.inode, s.size, s.mtime_ns, s.ctime_ns, s.mode);
  return util::sha256_hex(all);
}

} // namespace

// The run folder's paths the builds made ahead write while a variant runs (left out of what its
// runs are watched on, evaluate/tree_guard.hpp; a build of them checks itself instead).
std::set<std::string> Loop::ahead_paths() const {
  if (!m_ahead) return {};
  std::set<std::string> paths = {"ahead", "lanes", "work/building"};
  for (const auto& label : m_ahead_labels) paths.insert(fs::relative(ahead_work(m_dir, label), m_dir).string());
  return paths;
}

// A build of `files` over the snapshot, with `env`, made ahead under `key` (a point's label, a
// candidate's content_key); the record says whether it built, its product's fingerprint, and
// what its sources and its folder were when it finished (checked when it is taken).
void Loop::submit_ahead(BuildAhead& ahead, const std::string& key, const std::map<std::string, std::string>& files,
                        const std::map<std::string, std::string>& env) {
  m_ahead_labels.insert(key);
  ahead.submit(key, [this, files, env, key](int lane) {
    const fs::path dir = ahead_dir(m_dir, key), work = ahead_work(m_dir, key);
    fs::remove_all(dir);
    evaluate::write_tree((dir / "src").string(), files);
    auto b = build_copy(dir / "src", work, dir / "build.log", env, lane);
    json r = {{"ok", b.ok}, {"result", b.result}, {"wall_s", b.wall_s}, {"ahead", true}};
    for (const auto& [k, val] : env) r["env"][k] = val;
    // The sources it built from must be the ones given: a variant running meanwhile could have
    // written them (its runs are not watched on these folders).
    for (const auto& [rel, hash] : m_snapshot.files) {
      auto given = files.find(rel);
      const std::string want = given != files.end() ? util::sha256_hex(given->second) : hash;
      if (!fs::is_regular_file(work / rel) || util::sha256_file((work / rel).string()) != want)
        r["untrusted"] = fmt::format("{} is not the source it was given", rel);
    }
    if (b.ok)
      r["fingerprint"] = evaluate::build_fingerprint(m_app, work.string(), m_snapshot);
    else
      r["tail"] = b.tail();
    r["tree"] = tree_digest(work);
    return r;
  });
}

// A build made ahead under `label` moved to `work` (its log to `log`): false, with nothing moved,
// where it changed after it was built or was built from other sources (`who` builds again, now).
bool Loop::move_ahead_build(const std::string& label, const json& built, const fs::path& work, const fs::path& log,
                            const std::string& who) {
  const fs::path dir = ahead_dir(m_dir, label), made = ahead_work(m_dir, label);
  std::error_code ec;
  std::string distrust = built.value("untrusted", "");
  if (distrust.empty() && (!fs::exists(made) || tree_digest(made) != built.value("tree", "")))
    distrust = "its folder changed after it was built";
  if (!distrust.empty()) {
    say(who + " build", fmt::format("the build made ahead is not used ({}); building again", distrust));
    fs::remove_all(made, ec);
    fs::remove_all(dir, ec);
    return false;
  }
  fs::remove_all(work);
  fs::create_directories(work.parent_path());
  fs::rename(made, work);
  fs::create_directories(log.parent_path());
  fs::copy_file(dir / "build.log", log, fs::copy_options::overwrite_existing, ec);
  fs::remove_all(dir, ec);
  say(who + " build",
      fmt::format("{} in {:.1f} s, made ahead in lane {} (waited {:.1f} s)", built.value("ok", false) ? "ok" : "FAILED",
                  built.value("build_s", 0.0), built.value("lane", 0), built.value("waited_s", 0.0)));
  return true;
}

// The variant's build, made ahead, becomes its own: the scratch build moves to v.work and the
// record to build.json, where build_variant finds it (a failed build included: it is not built
// again). `times` gets the build's seconds, those the stage waited for it, and its lane.
void Loop::adopt_ahead_build(Variant& v, const std::string& label, const json& built, json& times) {
  std::error_code ec;
  if (!move_ahead_build(label, built, v.work, v.dir / "build.log", v.key)) {
    fs::remove(v.dir / "build.json", ec);
    return;
  }
  json record = built;
  for (const char* k : {"build_s", "waited_s", "lane", "tree", "untrusted"}) record.erase(k);
  store::write_json_atomic((v.dir / "build.json").string(), record);
  times["build_s"] = built.value("build_s", 0.0);
  times["waited_s"] = built.value("waited_s", 0.0);
  times["lane"] = built.value("lane", 0);
}

// The builds made ahead during a stage: m_ahead while it lasts; at its end the builds still
// queued never start, those running finish, and what they left is removed.
Loop::AheadScope::AheadScope(Loop& loop, int lanes) : m_loop(loop) {
  if (lanes <= 0) return;
  m_builds.emplace(lanes);
  m_loop.m_ahead = &*m_builds;
}

Loop::AheadScope::~AheadScope() {
  if (!m_builds) return;
  m_loop.m_ahead = nullptr;
  m_builds.reset();
  std::error_code ec;
  for (const auto& label : m_loop.m_ahead_labels) fs::remove_all(ahead_work(m_loop.m_dir, label), ec);
  fs::remove_all(m_loop.m_dir / "ahead", ec);
  fs::remove_all(m_loop.m_dir / "lanes", ec);
  m_loop.m_ahead_labels.clear();
}

// The key of a variant's build by content: its files (path and text) and its build's environment.
std::string Loop::content_key(const std::map<std::string, std::string>& files,
                              const std::map<std::string, std::string>& env) {
  std::string all;
  for (const auto& [path, text] : files) all += path + '\0' + util::sha256_hex(text) + '\n';
  for (const auto& [k, v] : env) all += k + '=' + v + '\n';
  return "sources-" + util::sha256_hex(all).substr(0, 16);
}

// Whether a round's candidates are known before they are asked (the builtin's), and so built
// ahead while the first ones are measured; the first round's, even one alone, while the probe runs.
bool Loop::round_built_ahead(bool first) const {
  return m_backend.provider == "builtin" && (first || m_app.optimize.candidates > 1) && !m_settings.aa &&
         !m_settings.budget_verdicts && !m_settings.budget_minutes;
}

// The first round's builds start before the probe: the probe's own first, then the candidates',
// so that these build while the probe runs (baseline.cpp) and the first candidate's turn finds
// its build made. The round takes the scope over (iteration).
void Loop::open_first_round() {
  if (m_app.tune.only || !round_built_ahead(true)) return;
  const int lanes = build_lanes(m_settings.build_jobs);
  if (lanes <= 0) return;
  m_first_round = std::make_unique<AheadScope>(*this, lanes);
  if (probe_pending())
    if (auto probe = probe_sources(); !probe.kernels.empty())
      submit_ahead(m_first_round->builds(), k_probe_key, probe.sources, {});
  build_candidates_ahead(m_first_round->builds());
}

// A round's candidates under the builtin, whose answers are known before they are asked: each
// candidate's first attempt proposed now, as run_attempt will ask it (the same context), applied
// to the parent's sources, and its build made ahead. A reply that edits nothing or breaks a
// guardrail is not built (its attempt ends before a build).
void Loop::build_candidates_ahead(BuildAhead& ahead) try {
  auto backend = llm::make_backend(m_backend);
  std::map<std::string, std::string> paths;
  for (const auto& s : m_app.sources) paths[fs::path(s).filename().string()] = s;
  const auto sources = current_sources();
  for (int c = 1; c <= m_app.optimize.candidates; ++c) {
    llm::Request request;
    request.context =
        optimas::propose::structured_context(m_diagnostics, sources, host_sources(), m_app.optimize.scope);
    request.context["candidate"] = c;
    auto answer = backend->complete(request);
    const auto* response = std::get_if<llm::Response>(&answer);
    if (!response) continue;
    Proposal p = make_proposal({response->text}, m_diagnostics, sources, paths, edit::parse_scope(m_app.optimize.scope),
                               analysis::parse_diagnostics(m_app.optimize.diagnostics).code_only, true);
    if (!p.usable() || !evaluate::edits_change_code(sources, p.application.result)) continue;
    std::map<std::string, std::string> files;
    for (const auto& s : m_app.sources) files[s] = p.application.result.at(fs::path(s).filename().string());
    submit_ahead(ahead, content_key(files, {}), files, {});
  }
} catch (const std::exception& e) {
  // Building ahead saves time; it never costs the run: each candidate builds at its turn.
  log::warn("the round's candidates are not built ahead: {}", plain_message(e));
}

// What building ahead saved: the points' steps (build, validate, measure) summed against the
// stage's wall time, in run.json's tune.overlap and the progress. `ear_s`: a candidate's
// re-profile taken in the stage while its points built (Loop::ear_after_round), not in wall_s.
void Loop::record_overlap(json& rec, double wall_s, double ear_s) {
  double steps = 0;
  int built = 0;
  for (const auto& d : rec["points"]) {
    const json r =
        read_json((m_dir / d.value("dir", std::string("tune/") + d.value("key", "")) / "result.json").string());
    const json& t = util::member(r, "times");
    if (!t.is_object() || r.value("cached", false)) continue;
    ++built;
    for (const char* k : {"build_s", "validate_s", "measure_s"}) steps += t.value(k, 0.0);
  }
  if (built == 0) return;
  const int lanes = rec.value("build_lanes", 0);
  rec["overlap"] = {{"steps_s", std::round(steps * 1000) / 1000},
                    {"wall_s", wall_s},
                    {"saved_s", std::round((steps - wall_s) * 1000) / 1000},
                    {"lanes", lanes}};
  if (ear_s > 0) rec["overlap"]["ear_s"] = std::round(ear_s * 1000) / 1000;
  // Several GPUs measuring at once (loop/slots.cpp) save time too.
  const std::string gpus =
      rec.contains("gpus") ? fmt::format(" and measuring on {} GPUs at once", rec["gpus"].size()) : "";
  say("tune", lanes == 0
                  ? fmt::format("{} point(s) in {:.1f} s, built one at a time{} (their steps: {:.1f} s)", built, wall_s,
                                gpus, steps)
                  : fmt::format("{} point(s) in {:.1f} s; their steps add up to {:.1f} s: building ahead on "
                                "{} lane(s){} saved {:.1f} s",
                                built, wall_s, steps, lanes, gpus, steps - wall_s) +
                        (ear_s > 0 ? fmt::format(" (after a candidate's {:.1f} s re-profile, while they built)", ear_s)
                                   : std::string()));
}

} // namespace optimas::loop
