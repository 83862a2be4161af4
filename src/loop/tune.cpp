// The tuning stage (docs/tuning.md): after the edit step, on the best accepted variant's sources
// (or the original's), or alone with --tune-only. Each point of tune: is a variant whose sources
// are its parent's and whose build gets the point's -D macros and flags through NVCC_APPEND_FLAGS
// and OPTIMAS_TUNE_FLAGS. It is built in a fresh copy of the snapshot (so no object of another
// build can be taken for up to date), must build a product other than the parent's, and is
// validated and measured by the steps every variant takes (attempt.cpp, measure.cpp). Results
// are cached by (sources and settings, point) under <cache_dir>/tune.
#include "loop/run_state.hpp"

#include "loop/pipeline.hpp"

#include "cuda/macros.hpp"
#include "evaluate/tree_guard.hpp"
#include "store/journal.hpp"
#include "tune/discover.hpp"
#include "tune/search.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string_view>

namespace optimas::loop {

namespace fs = std::filesystem;
using nlohmann::json;
using store::read_json;

namespace {

// Results that say something lasting about the point; a failed run (a timeout on a busy
// machine) is measured again next time.
bool cacheable(const std::string& status) {
  return status == "accepted" || status == "rejected" || status == "validation_failed" || status == "build_failed" ||
         status == "build_stale";
}

std::string inherited_nvcc_flags() {
  const char* v = std::getenv("NVCC_APPEND_FLAGS");
  return v ? v : "";
}

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "";
}

// A point's line in run.json's tune.points; its whole record is tune/<key>/result.json.
json point_summary(const json& r) {
  json s = {{"key", r.value("key", "")},
            {"point", r.value("point", "")},
            {"values", r.value("values", json::object())},
            {"flags", r.value("flags", "")},
            {"built", r.value("built", false)},
            {"valid", r.contains("valid") ? r["valid"] : json(nullptr)},
            {"speedup", nullptr},
            {"ci", nullptr},
            {"accepted", r.value("status", "") == "accepted"},
            {"status", r.value("status", "")},
            {"reason", r.value("reason", "")},
            {"cached", r.value("cached", false)}};
  if (r.contains("gpu")) s["gpu"] = r["gpu"];
  if (r.contains("measurement")) {
    s["speedup"] = r["measurement"]["speedup"];
    s["ci"] = r["measurement"]["ci"];
  }
  return s;
}

// The allowed point --tune-point names (as Space::label writes it); none without the option. A
// name that is no allowed point is a UsageError that shows how the points are named.
std::optional<tune::Point> given_point(const tune::Space& space, const std::string& name) {
  if (name.empty()) return std::nullopt;
  const auto& allowed = space.allowed_points();
  for (const auto& p : allowed)
    if (space.label(p) == name) return p;
  std::vector<std::string> some;
  for (std::size_t i = 0; i < allowed.size() && i < 4; ++i) some.push_back("\"" + space.label(allowed[i]) + "\"");
  throw UsageError(fmt::format("--tune-point \"{}\" is not a point of the tuning space ({} allowed; they are named "
                               "like {})",
                               name, allowed.size(), util::join(some, ", ")));
}

// A point whose validation failed because its run did (a crash, a hang), not on its output.
bool crashed_run(const json& r) {
  if (r.value("status", "") != "validation_failed") return false;
  const json& checks = util::member(util::member(r, "validation"), "checks");
  if (!checks.is_array() || checks.empty()) return false;
  return checks.back().value("run_failed", false);
}

// Whether two points give a macro parameter different values (flags aside).
bool differs_in_macros(const tune::Space& space, const tune::Point& a, const tune::Point& b) {
  for (std::size_t d = 0; d < space.dimensions(); ++d)
    if (space.settings().params[d].kind == config::TuneParam::Kind::macro && a[d] != b[d]) return true;
  return false;
}

} // namespace

// Whatever shapes a point's result besides the point: the files its build starts from, the
// commands, the configurations, the measure and validate settings, and the machine.
json Loop::tune_context() const {
  std::map<std::string, std::string> files = m_snapshot.files;
  files.erase(fs::path(m_app.path).filename().string()); // its settings are listed below, one by one
  const fs::path src = parent_sources();
  if (src != m_dir / "snapshot")
    for (const auto& s : m_app.sources)
      files[fs::path(s).lexically_normal().string()] = util::sha256_file((src / s).string());
  json configs = json::object();
  for (const auto& c : m_app.configs) configs[c.name] = {{"params", c.params}, {"held_out", c.held_out}};
  const auto& ms = m_app.measure;
  const auto& vs = m_app.validate;
  const auto rule = acceptance_rule(m_app);
  return {{"files", files},
          {"build", {m_app.build_command, m_app.clean_command, m_app.build_dir, m_app.binary}},
          {"run", {m_app.run_command, m_app.outputs, m_app.kernel_time.pattern, m_app.seed_param}},
          {"configs", configs},
          {"measure",
           {ms.runs, ms.warmup, ms.timing, ms.configs, ms.confidence, ms.min_speedup, ms.confirm,
            rule.corrected_significance(), !m_measure_sandbox.tracer.empty(), ms.verdict, ms.end_after_kernels}},
          {"validate", {vs.tolerance, vs.tolerance_value, vs.fresh_seeds, vs.configs, vs.ignore}},
          {"nvcc_append_flags", inherited_nvcc_flags()},
          {"machine", {{"host", host_name()}, {"gpu", m_app.needs_gpu ? evaluate::gpu_name() : ""}}}};
}

// A point's sources: the parent's (made tunable where knobs were found, which changes nothing
// without the point's -D), so that a point differs only in what its build is told. A header the
// knob search made tunable goes over the snapshot's copy too.
std::map<std::string, std::string> Loop::point_files() const {
  std::map<std::string, std::string> files = m_tune_edits;
  for (const auto& s : m_app.sources)
    files.emplace(fs::path(s).lexically_normal().string(), util::read_file((parent_sources() / s).string()));
  return files;
}

// Submits the builds of `points` (the order the search will take them) that will need one: not
// the parent's own values, not cached, not recorded by an interrupted run of this folder.
void Loop::build_points_ahead(BuildAhead& ahead, const tune::Space& space, const std::vector<tune::Point>& points,
                              const tune::PointCache* cache, const json& context,
                              const std::optional<tune::Point>& as_it_is) {
  std::set<std::string> recorded;
  if (fs::exists(m_dir / "tune"))
    for (const auto& d : fs::directory_iterator(m_dir / "tune"))
      if (fs::exists(d.path() / "result.json") && fs::exists(d.path() / "point.json"))
        recorded.insert(read_json((d.path() / "point.json").string()).value("point", ""));
  const std::map<std::string, std::string> files = point_files();
  for (const auto& p : points) {
    const std::string label = space.label(p);
    if ((as_it_is && p == *as_it_is) || recorded.count(label) ||
        (cache && cache->get(tune::PointCache::key(context, label), label)))
      continue;
    submit_ahead(ahead, label, files, space.build_env(p, inherited_nvcc_flags()));
  }
}

// One point: recorded before an interruption, cached by an earlier run, or built, validated and
// measured now. Returns its result (as tune/<key>/result.json holds it).
json Loop::tune_point(const tune::Space& space, const tune::Point& p, int index, const tune::PointCache* cache,
                      const json& context, const Slot* slot) {
  const std::string label = space.label(p);
  Variant v;
  v.slot = slot;
  v.key = fmt::format("t{}", index);
  v.dir = m_dir / "tune" / v.key;
  v.work = m_dir / "work" / v.key;
  v.build_env = space.build_env(p, inherited_nvcc_flags());
  v.build_note = label + "; building";
  v.echoes = m_tune_echoes;
  const fs::path record = v.dir / "result.json";
  if (fs::exists(record)) {
    json r = read_json(record.string());
    if (r.value("point", "") == label && evaluate::is_final_status(r.value("status", ""))) {
      say(v.key, fmt::format("{}: {} (recorded before the interruption)", label, r.value("status", "")));
      return r;
    }
  }
  // A folder of another point (or of one cut short before its build was recorded) starts over.
  if (fs::exists(v.dir / "point.json") && read_json((v.dir / "point.json").string()).value("point", "") != label)
    fs::remove_all(v.dir);
  const std::string key = tune::PointCache::key(context, label);
  if (cache) {
    if (auto hit = cache->get(key, label)) {
      json r = *hit;
      r["key"] = v.key;
      r["dir"] = fs::relative(v.dir, m_dir).string();
      r["cached"] = true;
      fs::create_directories(v.dir);
      store::write_json_atomic(record.string(), r);
      say(v.key, fmt::format("{}: {} (cached: {})", label, r.value("status", ""), cache->path_for(key).string()));
      return r;
    }
  }
  fs::create_directories(v.dir);
  store::write_json_atomic((v.dir / "point.json").string(), {{"point", label}, {"env", v.build_env}});
  json result = {{"key", v.key},
                 {"point", label},
                 {"values", space.values_json(p)},
                 {"flags", space.flags(p)},
                 {"dir", fs::relative(v.dir, m_dir).string()},
                 {"parent", m_best.empty() ? "baseline" : m_best},
                 {"cached", false}};
  if (slot) result["gpu"] = slot->gpu; // the GPU that judged it, where several measure at once
  evaluate::write_tree((v.dir / "src").string(), point_files());
  result["built"] = false;
  // Built ahead (loop/pipeline.hpp): waits for that build where it is not done yet.
  const auto started = std::chrono::steady_clock::now();
  json& times = result["times"];
  if (m_ahead)
    if (auto built = m_ahead->take(label)) adopt_ahead_build(v, label, *built, times);
  auto outcome = build_variant(v, result, "");
  if (!times.contains("build_s")) times["build_s"] = times["waited_s"] = seconds_since(started);
  if (outcome) {
    result["status"] = outcome->status;
    result["reason"] = outcome->status == "build_stale"
                           ? "its build is byte-identical to the parent's (the point's values are the parent's "
                             "defaults, or its flags change nothing the compiler emits): nothing new to measure"
                           : outcome->reason;
  } else {
    result["built"] = true;
    auto step = std::chrono::steady_clock::now();
    const bool valid = validate(v, result);
    times["validate_s"] = seconds_since(step);
    result.erase("ear"); // the edit step's metrics: a point has no edits
    result.erase("coverage");
    if (valid) {
      result["valid"] = true;
      step = std::chrono::steady_clock::now();
      measure(v, result);
      times["measure_s"] = seconds_since(step);
    } else {
      result["valid"] = false;
    }
  }
  if (!v.left_behind.empty())
    result["left_behind"] = std::vector<std::string>(v.left_behind.begin(), v.left_behind.end());
  store::write_json_atomic(record.string(), result);
  if (cache && cacheable(result.value("status", "")))
    if (auto why = cache->put(key, label, result)) log::warn("the tuning cache was not written ({})", *why);
  std::error_code ec;
  if (!m_settings.keep_work) fs::remove_all(v.work, ec);
  return result;
}

// The sources the knob search reads: the application's (the parent's text), its other files that
// launch kernels (the launches' block sizes: Rodinia's nw launches from needle.cu), and the
// headers of its folder these include with #include "..." (block sizes often live there), from
// the snapshot, three includes deep at most. Paths relative to the application folder.
std::map<std::string, std::string> Loop::knob_sources() const {
  std::map<std::string, std::string> files;
  std::vector<std::string> todo;
  for (const auto& s : m_app.sources) {
    const std::string rel = fs::path(s).lexically_normal().string();
    files[rel] = util::read_file((parent_sources() / s).string());
    todo.push_back(rel);
  }
  for (const auto& [rel, text] : host_sources())
    if (files.emplace(rel, text).second) todo.push_back(rel);
  // `#include "name"` at the start of a line (read by hand: a source line can be megabytes long).
  auto included = [](std::string_view line) -> std::string {
    auto skip = [&](std::size_t i) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      return i;
    };
    std::size_t i = skip(0);
    if (i >= line.size() || line[i] != '#') return "";
    i = skip(i + 1);
    if (line.substr(i, 7) != "include") return "";
    i = skip(i + 7);
    if (i >= line.size() || line[i] != '"') return "";
    std::size_t end = line.find('"', i + 1);
    return end == std::string_view::npos ? "" : std::string(line.substr(i + 1, end - i - 1));
  };
  for (int depth = 0; depth < 3 && !todo.empty(); ++depth) {
    std::vector<std::string> next;
    for (const auto& file : todo) {
      std::istringstream lines(files[file]);
      for (std::string line; std::getline(lines, line);) {
        const std::string name = included(line);
        if (name.empty()) continue;
        const fs::path rel = (fs::path(file).parent_path() / name).lexically_normal();
        const fs::path at = m_dir / "snapshot" / rel;
        if (rel.empty() || rel.is_absolute() || *rel.begin() == ".." || files.count(rel.string()) ||
            !fs::is_regular_file(at))
          continue;
        files[rel.string()] = util::read_file(at.string());
        next.push_back(rel.string());
      }
    }
    todo = std::move(next);
  }
  return files;
}

config::TuneSettings Loop::discovered_knobs(json& rec, std::optional<tune::Point>& as_it_is) {
  const std::map<std::string, std::string> sources = knob_sources();
  tune::Discovery found = tune::discover(sources, m_diagnostics, m_app.tune.budget);
  rec["discovered"] = {{"knobs", found.knobs}, {"passed", found.passed}, {"edited", json::array()}};
  for (const auto& [file, text] : found.edited) rec["discovered"]["edited"].push_back(file);
  if (found.empty()) {
    say("tune", "no tune: block, and no knob in the sources where the evidence points" +
                    (found.passed.empty() ? std::string() : ": " + util::join(found.passed, "; ")));
    return {};
  }
  say("tune", fmt::format("no tune: block; {} knob(s) found where the evidence points (--no-tune-discover skips "
                          "them):",
                          found.settings.params.size()));
  for (const auto& k : found.knobs) say("tune", "  " + k);
  m_tune_edits = found.edited;
  m_tune_echoes.clear();
  rec["discovered"]["echoes"] = json::array();
  for (const auto& e : found.echoes) {
    say("tune", fmt::format("  {}:{} prints {} (the program reporting its configuration): validation of a point drops "
                            "the line(s) {}",
                            e.file, e.line, util::join(e.knobs, ", "), util::join(e.patterns, " ")));
    rec["discovered"]["echoes"].push_back(
        {{"file", e.file}, {"line", e.line}, {"knobs", e.knobs}, {"patterns", e.patterns}});
    m_tune_echoes.insert(m_tune_echoes.end(), e.patterns.begin(), e.patterns.end());
  }
  tune::Point p;
  for (const auto& param : found.settings.params) {
    auto v = std::find(param.values.begin(), param.values.end(), found.defaults[param.name]);
    p.push_back(static_cast<std::size_t>(v - param.values.begin()));
  }
  as_it_is = p;
  config::TuneSettings t = found.settings;
  t.search = m_app.tune.search; // --tune-search
  t.point = m_app.tune.point;   // --tune-point
  t.line = 0;
  return t;
}

void Loop::tune_stage() {
  // An A/A run calibrates the measurement of one unchanged program: nothing is tuned.
  if (!m_app.tune.enabled || m_settings.aa) return;
  const bool discover = m_app.tune.empty() && m_app.tune.discover && !m_app.tune.only && !m_diagnostics.kernels.empty();
  if (!m_app.tune.runs() && !discover) return;
  json& rec = m_run["tune"];
  if (!m_execute) {
    rec = {{"skipped", "not run: " + m_no_execute_reason}};
    say("tune", "skipped: every point must be run to be measured; " + m_no_execute_reason);
    write_run("running");
    return;
  }
  rec = json::object();
  TuneSearch ts;
  ts.discover = discover;
  const config::TuneSettings t = discover ? discovered_knobs(rec, ts.as_it_is) : m_app.tune;
  if (t.empty()) {
    write_run("running");
    return;
  }
  tune::Space space(t, m_app.path);
  const auto& allowed = space.allowed_points();
  if (allowed.empty())
    throw UsageError(fmt::format("{}:{}: no point of tune: satisfies its constraints", m_app.path, t.line));
  ts.method = tune::choose(t.search, allowed.size(), t.budget);
  ts.given = given_point(space, t.point);
  ts.budget = t.budget;
  const std::string parent = m_best.empty() ? "baseline" : m_best;
  build_parent_if_gone();
  std::optional<tune::PointCache> cache;
  if (!m_settings.no_cache) cache.emplace(fs::path(m_settings.cache_dir) / "tune");
  ts.cache = cache ? &*cache : nullptr;
  ts.context = tune_context();
  for (const auto& [file, text] : m_tune_edits) ts.context["tunable"][file] = util::sha256_hex(text);
  ts.most = ts.given ? 1 : std::min(allowed.size(), static_cast<std::size_t>(t.budget));
  rec.update({{"method", ts.given ? "point" : tune::method_name(ts.method)},
              {"grid", t.grid_size()},
              {"allowed", allowed.size()},
              {"budget", t.budget},
              {"parent", parent},
              {"cache", cache ? json(cache->dir().string()) : json(nullptr)},
              {"points", json::array()},
              {"best", nullptr}});
  if (ts.given)
    say("tune", fmt::format("the point {} alone (--tune-point), of {} allowed, on {}'s sources", t.point,
                            allowed.size(), parent));
  else
    say("tune", fmt::format("{} search over {} allowed point(s) of {} (at most {} measured), on {}'s sources",
                            tune::method_name(ts.method), allowed.size(), t.grid_size(), ts.most, parent));
  const auto started = std::chrono::steady_clock::now();
  double ear_s = 0; // a candidate's re-profile taken while the points build
  {
    // An exhaustive search's points are known: their builds are made ahead while others are
    // measured (loop/pipeline.hpp). NLopt picks each point from those measured: the points it is
    // likely to ask for next are built while one is measured (search_points).
    const int lanes = !ts.given ? build_lanes(m_settings.build_jobs) : 0;
    AheadScope ahead(*this, lanes);
    // A candidate's re-profile still to come reads sources through work/building, lane 0's folder:
    // lane 0 builds no point until it is done (the other lanes do).
    const bool hold = lanes > 1 && !m_pending_ear.empty();
    if (hold) ahead.builds().hold_lane0(true);
    if (lanes > 0) {
      if (ts.method == tune::Method::exhaustive)
        build_points_ahead(ahead.builds(), space, tune::exhaustive_order(space, t.budget), ts.cache, ts.context,
                           ts.as_it_is);
      rec["build_lanes"] = lanes;
    }
    ear_s = record_pending_ear(); // on the GPU while the points build
    if (hold) ahead.builds().hold_lane0(false);
    search_points(space, ts, rec);
  }
  record_overlap(rec, seconds_since(started) - ear_s, ear_s);
  announce_tune_best(rec, parent);
  write_run("running");
}

// The search itself: each point the search asks for is measured (tune_point) and scored by its
// speedup; found knobs' points whose macros crashed the program pass over their like. Where
// several GPUs measure (--gpus), an exhaustive search's points are measured on each at once
// (loop/slots.cpp) and seen here in the same order.
void Loop::search_points(const tune::Space& space, const TuneSearch& ts, json& rec) {
  int index = 0;
  std::vector<std::pair<tune::Point, std::string>> crashed; // found knobs' points whose runs failed, with keys
  struct Spent {}; // --budget-minutes is spent: the search stops with what it measured
  auto spent = [&] { return m_settings.budget_minutes && seconds_since(m_started) / 60 >= *m_settings.budget_minutes; };
  // A point measured: recorded, said, and scored.
  auto done = [&](const tune::Point& p, const json& r, int at) -> std::optional<double> {
    rec["points"].push_back(point_summary(r));
    write_run("running");
    const json& s = rec["points"].back();
    say("tune",
        fmt::format("[{}/{}] {}: {}{}{}", at, ts.most, space.label(p), s["status"].get<std::string>(),
                    s["speedup"].is_number() ? fmt::format(" {:.3f}x [{:.3f}, {:.3f}]", s["speedup"].get<double>(),
                                                           s["ci"][0].get<double>(), s["ci"][1].get<double>())
                                             : "",
                    s.contains("gpu") ? " on GPU " + s["gpu"].get<std::string>() : ""));
    if (s["status"] == "build_stale") return 1.0; // the parent's own build: its speed is the parent's
    if (s["speedup"].is_number()) return s["speedup"].get<double>();
    if (ts.discover && ts.as_it_is && crashed_run(r) && differs_in_macros(space, p, *ts.as_it_is))
      crashed.push_back({p, s["key"].get<std::string>()});
    return std::nullopt;
  };
  auto objective = [&](const tune::Point& p) -> std::optional<double> {
    if (ts.as_it_is && p == *ts.as_it_is) return 1.0; // the parent's own values: nothing to build
    if (spent()) throw Spent{};
    ++index;
    if (m_ahead && ts.method == tune::Method::nlopt) {
      // The point itself first (a build of it already made ahead is taken), then, while it is
      // validated and measured, those NLopt is likely to ask for next, where the budget leaves one.
      std::vector<tune::Point> builds = {p};
      if (static_cast<std::size_t>(index) < ts.most)
        for (auto& q : tune::likely_next(space, p)) builds.push_back(std::move(q));
      build_points_ahead(*m_ahead, space, builds, ts.cache, ts.context, ts.as_it_is);
    }
    say("tune", fmt::format("[{}/{}] {}", index, ts.most, space.label(p)), false);
    return done(p, tune_point(space, p, index, ts.cache, ts.context), index);
  };
  // Found knobs' flags are -dlcm's cache policies, which do not make a block size that crashed
  // the program work: a point whose macros are those of one that crashed is not built. A crash
  // at the program's own macro values is the flag's, and passes nothing over.
  auto known_bad = [&](const tune::Point& p) {
    for (const auto& [bad, key] : crashed) {
      if (differs_in_macros(space, p, bad)) continue;
      const std::string why =
          fmt::format("not built: {} crashed the program at {} with the same macro values", space.label(bad), key);
      rec["passed_over"].push_back({{"point", space.label(p)}, {"reason", why}});
      say("tune", fmt::format("{}: {}", space.label(p), why));
      return true;
    }
    return false;
  };
  std::vector<Slot> slots;
  if (!ts.given && ts.method == tune::Method::exhaustive) slots = open_slots(ts.most, rec);
  bool stopped = false;
  try {
    if (ts.given)
      objective(*ts.given);
    else if (!slots.empty())
      stopped = measure_on_slots(space, ts, slots, index, known_bad, done, spent);
    else
      tune::search(space, ts.method, ts.budget, objective, known_bad);
  } catch (const Spent&) {
    stopped = true;
  } catch (...) {
    close_slots(slots);
    throw;
  }
  close_slots(slots);
  if (stopped) {
    rec["stopped"] = fmt::format("the budget of {:.1f} min is spent", *m_settings.budget_minutes);
    say("tune", rec["stopped"].get<std::string>() + fmt::format(" after {} point(s)", index));
  }
}

void Loop::announce_tune_best(json& rec, const std::string& parent) {
  const json* best = nullptr;
  for (const auto& s : rec["points"])
    if (s["accepted"].get<bool>() && (!best || s["speedup"].get<double>() > (*best)["speedup"].get<double>()))
      best = &s;
  if (!best) {
    say("tune", "no point was shown to be faster than " + parent);
    return;
  }
  rec["best"] = (*best)["key"];
  std::string key = (*best)["key"].get<std::string>();
  say("tune", fmt::format("best: {} {} ({:.3f}x against {}); build with {}{}", key, (*best)["values"].dump(),
                          (*best)["speedup"].get<double>(), parent, (*best)["flags"].get<std::string>(),
                          m_tune_edits.empty() ? ""
                                               : fmt::format(" and the sources made tunable, in {}",
                                                             (m_dir / "tune" / key / "src").string())));
}

void Loop::check_tune_point(bool snapshot_taken) const {
  const std::string& name = m_app.tune.point;
  if (name.empty() || !m_app.tune.enabled || m_settings.aa) return;
  if (!m_app.tune.empty()) {
    if (!snapshot_taken) given_point(tune::Space(m_app.tune, m_app.path), name); // throws when it is none
    return;
  }
  if (!snapshot_taken) return;
  // Space::label's form: "NAME=value NAME=value dlcm=-Xptxas -dlcm=ca"; a parameter starts at a
  // word that begins with a name and '=' (a flag's own words begin with '-').
  std::set<std::string> defined; // the knobs a search can find are object-like macros of these files
  for (const auto& [file, text] : knob_sources())
    for (const auto& m : cuda::object_macros(text)) defined.insert(m.name);
  std::vector<std::string> params, unknown;
  std::istringstream words(name);
  for (std::string w; words >> w;) {
    const auto eq = w.find('=');
    if (eq == std::string::npos || eq == 0 || !(std::isalpha(static_cast<unsigned char>(w[0])) || w[0] == '_'))
      continue;
    const std::string param = w.substr(0, eq);
    params.push_back(param);
    if (param != "dlcm" && param != tune::k_grid_knob && !param.starts_with(tune::k_min_blocks_prefix) &&
        !defined.count(param))
      unknown.push_back(param);
  }
  if (params.empty() || !unknown.empty())
    throw UsageError(fmt::format(
        "--tune-point \"{}\": {} (without a tune: block, a point names knobs found in the sources: macros they "
        "#define, OPTIMAS_MIN_BLOCKS_<kernel>, OPTIMAS_GRID_SCALE and dlcm, as in \"BLOCK_SIZE=128 "
        "dlcm=-Xptxas -dlcm=ca\"; the progress lines and tune.points[].point of an earlier run name them)",
        name, params.empty() ? "names no parameter" : "no macro of the sources is named " + util::join(unknown, ", ")));
}

// What the tuning stage would do, for --dry-run: the points of an exhaustive search, or where
// NLopt starts (it picks each next point from the ones measured).
json Loop::tune_plan() const {
  const auto& t = m_app.tune;
  if (t.empty())
    return {{"step", "tune"},
            {"discover", "after the analysis, the knobs found in the sources where the hot kernels' evidence points "
                         "(block-size macros, min blocks per SM, -dlcm)"},
            {"budget", std::min(t.budget, tune::k_discovered_budget)},
            {"env", "NVCC_APPEND_FLAGS, OPTIMAS_TUNE_FLAGS"}};
  tune::Space space(t, m_app.path);
  const auto& allowed = space.allowed_points();
  const auto method = tune::choose(t.search, allowed.size(), t.budget);
  json points = json::array();
  if (auto given = given_point(space, t.point))
    return {{"step", "tune"},
            {"method", "point"},
            {"grid", t.grid_size()},
            {"allowed", allowed.size()},
            {"env", "NVCC_APPEND_FLAGS, OPTIMAS_TUNE_FLAGS"},
            {"points", {space.label(*given) + "  [" + space.flags(*given) + "]"}}};
  if (method == tune::Method::exhaustive)
    for (const auto& p : tune::exhaustive_order(space, t.budget))
      points.push_back(space.label(p) + "  [" + space.flags(p) + "]");
  else if (!allowed.empty())
    points.push_back(space.label(tune::start_point(space)) + "  [" + space.flags(tune::start_point(space)) +
                     "] (start)");
  json step = {{"step", "tune"},        {"method", tune::method_name(method)},
               {"grid", t.grid_size()}, {"allowed", allowed.size()},
               {"budget", t.budget},    {"env", "NVCC_APPEND_FLAGS, OPTIMAS_TUNE_FLAGS"},
               {"points", points}};
  if (method == tune::Method::nlopt)
    step["note"] = fmt::format("NLopt (Sbplx) picks each next point from those measured: at most {} of the {} allowed",
                               std::min<std::size_t>(allowed.size(), t.budget), allowed.size());
  if (allowed.empty()) step["note"] = "no point satisfies the constraints";
  return step;
}

} // namespace optimas::loop
