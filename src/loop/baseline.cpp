// The baseline: built once from a copy of the snapshot, then one run of each configuration that
// validation or measurement will use. Its outputs' hashes are the reference the baseline itself
// must reproduce later; baseline/baseline.json records them as they are taken.
#include "evaluate/probe.hpp"
#include "evaluate/snapshot.hpp"
#include "loop/run_state.hpp"

#include "store/journal.hpp"
#include "util/error.hpp"
#include "util/names.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <regex>

namespace optimas::loop {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// What the build command names through "../" that exists outside the application's folder, as
// seen from it (cuda-samples' -I../Common): the copy a build runs in holds that folder alone.
std::vector<std::string> outside_paths(const config::AppConfig& app) {
  static const std::regex k_up(R"((\.\./)+[^\s'";:,]*)");
  std::vector<std::string> out;
  const fs::path dir = fs::weakly_canonical(app.dir);
  for (std::sregex_iterator m(app.build_command.begin(), app.build_command.end(), k_up), end; m != end; ++m) {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(dir / m->str(), ec);
    if (ec || !fs::exists(p, ec) || *fs::relative(p, dir).begin() != "..") continue;
    if (std::find(out.begin(), out.end(), m->str()) == out.end()) out.push_back(m->str());
  }
  return out;
}

} // namespace

evaluate::BuildResult Loop::build_copy(const fs::path& sources, const fs::path& work, const fs::path& log,
                                       const std::map<std::string, std::string>& env, int lane) {
  const fs::path building = m_dir / "work" / "building";
  // Lane 0 builds in work/building itself, one build at a time; another lane in a folder of its
  // own that its build alone sees at work/building (loop/pipeline.hpp).
  std::unique_lock<std::mutex> lock(m_building_mutex, std::defer_lock);
  const fs::path folder = lane > 0 ? m_dir / "lanes" / std::to_string(lane) : building;
  if (lane == 0) lock.lock();
  fs::remove_all(folder);
  fs::remove_all(work);
  try {
    evaluate::copy_tree((m_dir / "snapshot").string(), folder.string());
    if (!sources.empty()) evaluate::copy_tree(sources.string(), folder.string());
  } catch (const Error& e) {
    // The copy is the one for `work` (work/building is only where it is built): say so.
    std::string why = e.what();
    for (auto at = why.find(folder.string()); at != std::string::npos; at = why.find(folder.string(), at))
      why.replace(at, folder.string().size(), work.string());
    throw Error(why);
  }
  // One modification time for every file: nvcc -lineinfo records each source's mtime in the line
  // table it embeds, so copies made at other times would build other bytes. No object file is in
  // the copy, so make still compiles everything.
  const auto k_fixed =
      std::filesystem::file_time_type::clock::from_sys(std::chrono::sys_seconds{std::chrono::seconds{946684800}});
  for (const auto& f : fs::recursive_directory_iterator(folder))
    if (f.is_regular_file() && !f.is_symlink()) fs::last_write_time(f.path(), k_fixed);
  const evaluate::SeenAs seen{building.string()};
  auto b = evaluate::build_in(m_app, folder.string(), log.string(), m_sandbox, env, lane > 0 ? &seen : nullptr);
  fs::create_directories(work.parent_path());
  fs::rename(folder, work);
  if (lane > 0) return b; // work/building still leads to lane 0's last build
  // The line table names work/building's files, and ncu reads them from there when it profiles
  // this build (--import-source): until the next build, work/building leads to this one. Without
  // it, every PC line of an H200 profile came back as "<Unable to open source file>". A link that
  // cannot be made (a full disk) costs the profile its code lines, not the build.
  std::error_code ec;
  if (work.parent_path() == building.parent_path()) fs::create_directory_symlink(work.filename(), building, ec);
  return b;
}

void Loop::build_baseline(const fs::path& work, const fs::path& record) {
  say("baseline", "building: " + m_app.build_command, false);
  auto b = build_copy({}, work, record.parent_path() / "build.log");
  if (!b.ok && without_walls("build", b.result,
                             [&] { return (b = build_copy({}, work, record.parent_path() / "build.log")).ok; }))
    b.ok = true;
  if (!b.ok) {
    std::string why = fmt::format("the baseline does not build ({}):\n{}", b.result, b.tail());
    if (auto outside = outside_paths(m_app); !outside.empty())
      why += fmt::format("\nThe build runs in a copy of {} alone, and its command names {}, outside that folder: "
                         "name such paths absolutely, or put optimas.yml in a folder that holds them",
                         m_app.dir, util::join(outside, ", "));
    throw Error(why);
  }
  say("baseline", fmt::format("built in {:.1f} s", b.wall_s));
  if (!fs::exists(record))
    m_baseline = {{"compile", m_app.build_command}, {"build_s", b.wall_s}, {"configs", json::object()}};
  m_baseline["fingerprint"] = evaluate::build_fingerprint(m_app, work.string(), m_snapshot);
}

// One run of each configuration: it works, and its output is the reference the baseline itself
// must reproduce later (a nondeterministic baseline cannot validate anything).
void Loop::run_baseline(const fs::path& work, const fs::path& record) {
  json& configs = m_baseline["configs"];
  const auto used = used_configs();
  for (const auto& [name, rec] : configs.items()) // a resumed run's records
    if (rec.value("left_running", 0) > 0) m_baseline_left_running = true;
  for (const auto& c : m_app.configs) {
    json& rec = configs[c.name];
    if (rec.contains("output_sha256") || !used.count(c.name)) continue;
    say("baseline", "running " + c.name, false);
    fs::path out = util::path_in(work / "out", c.name + ".out");
    const fs::path log = util::path_in(record.parent_path() / "runs", c.name + ".log");
    auto e = execute(work, c, out, log);
    if (!e.ok)
      without_walls("run on config \"" + c.name + "\"", e.failure, [&] { return (e = execute(work, c, out, log)).ok; });
    if (!e.ok) throw Error(fmt::format("the baseline fails on config \"{}\": {}", c.name, e.failure));
    note_baseline_run(e);
    if (e.left_running > 0) rec["left_running"] = e.left_running;
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

bool Loop::without_walls(const std::string& step, std::string failure, const std::function<bool()>& again) {
  const auto walls = m_sandbox.isolation;
  if (walls == evaluate::Isolation::watch) return false;
  m_sandbox.isolation = m_measure_sandbox.isolation = evaluate::Isolation::watch;
  if (!again()) {
    m_sandbox.isolation = m_measure_sandbox.isolation = walls;
    return false;
  }
  m_warnings.push_back(fmt::format(
      "the baseline's {} fails behind the {} sandbox's walls ({}) and works without them "
      "(it writes outside its folder, reads or writes under /tmp, or uses the network): every program of this run "
      "runs watched instead (--sandbox watch; docs/sandbox.md)",
      step, evaluate::isolation_name(walls), failure));
  say("baseline", "warning: " + m_warnings.back());
  // At once: a run killed before its next record would resume behind the walls, where its
  // baseline, already built, may still run while every variant's build fails.
  record_isolation();
  m_run["warnings"] = m_warnings;
  write_run("running");
  return true;
}

// The kernel tracer behind the sandbox's walls, before any variant is measured by it: one traced
// run of the quickest configuration. On the H100 (session 32) every traced run behind the unshare
// walls left no trace while the programs themselves ran, so measurement stopped at the first
// baseline round; the check catches any such machine. Where the walls stop the trace and
// `--timing` is auto, the walls stay and runs are timed without the tracer (the program's
// printed time, or the wall clock); where `--timing trace` was asked for, an automatic sandbox
// lowers its walls instead (--sandbox watch), an explicit one is an error. A tracer that writes
// nothing even without walls is dropped (auto) or an error (trace). baseline.json's
// tracer_check keeps the decision for a resume.
void Loop::check_tracer(const fs::path& work, const fs::path& record) {
  if (m_measure_sandbox.tracer.empty()) return;
  json& rec = m_baseline["tracer_check"];
  const bool asked = m_app.measure.timing == "trace";
  auto decide = [&](const std::string& outcome) {
    if (outcome == "untraced") m_measure_sandbox.tracer.clear();
    if (outcome == "watch") {
      m_sandbox.isolation = m_measure_sandbox.isolation = evaluate::Isolation::watch;
      record_isolation();
    }
  };
  if (rec.is_object() && rec.contains("outcome")) return decide(rec["outcome"].get<std::string>());
  const config::InputConfig* quickest = nullptr;
  double best = 0;
  for (const auto& c : m_app.configs) {
    const json& b = m_baseline["configs"][c.name];
    if (!b.contains("wall_s")) continue;
    if (!quickest || b["wall_s"].get<double>() < best) quickest = &c, best = b["wall_s"].get<double>();
  }
  if (!quickest) return;
  auto traced_run = [&](const evaluate::Sandbox& sandbox, const char* name) {
    const fs::path out = util::path_in(work / "out", std::string("tracer-") + name + ".out");
    auto e = execute(work, *quickest, out,
                     util::path_in(record.parent_path() / "runs", std::string("tracer-") + name + ".log"), &sandbox);
    evaluate::remove_outputs(e);
    return e;
  };
  say("baseline", fmt::format("checking the kernel tracer on {}", quickest->name), false);
  auto e = traced_run(m_measure_sandbox, "walls");
  std::string outcome = "traced", why;
  if (!e.ok || !e.traced_ms) {
    why = e.ok ? "its run left no kernel time" : e.failure;
    const bool walls = m_sandbox.isolation != evaluate::Isolation::watch;
    evaluate::Sandbox bare = m_measure_sandbox;
    bare.isolation = evaluate::Isolation::watch;
    const bool works_bare = walls && [&] {
      auto again = traced_run(bare, "watch");
      return again.ok && again.traced_ms.has_value();
    }();
    const std::string level = evaluate::isolation_name(m_sandbox.isolation);
    if (works_bare && !asked) {
      outcome = "untraced";
      m_warnings.push_back(fmt::format(
          "the kernel tracer writes no trace behind the {} sandbox's walls ({}) and does without them: the walls stay, "
          "and runs are timed without it ({}; --sandbox watch times them by trace; docs/sandbox.md)",
          level, why, m_app.kernel_time.empty() ? "by the wall clock" : "by the time the program prints"));
    } else if (works_bare && m_settings.sandbox == "auto") {
      outcome = "watch";
      m_warnings.push_back(fmt::format("the kernel tracer writes no trace behind the {} sandbox's walls ({}) and "
                                       "--timing trace asks for it: every program of this run runs watched instead "
                                       "(--sandbox watch; docs/sandbox.md)",
                                       level, why));
    } else if (asked) {
      throw UsageError(fmt::format("--timing trace: the kernel tracer writes no trace {}({}); {}",
                                   works_bare ? "behind the " + level + " sandbox's walls " : "", why,
                                   works_bare ? "run with --sandbox watch, or --timing auto" : "pass --timing auto"));
    } else {
      outcome = "untraced";
      m_warnings.push_back(fmt::format("the kernel tracer {} writes no trace here ({}): runs are timed without it",
                                       m_measure_sandbox.tracer, why));
    }
    say("baseline", "warning: " + m_warnings.back());
  }
  rec = {{"config", quickest->name}, {"outcome", outcome}};
  if (!why.empty()) rec["why"] = why;
  decide(outcome);
  if (outcome == "traced")
    say("baseline", fmt::format("the kernel tracer works ({})", evaluate::isolation_name(m_sandbox.isolation)));
}

// A few bytes of output ("PASS") prove little: say so where the user reads the result.
void Loop::warn_small_outputs() {
  for (const auto& [name, rec] : m_baseline["configs"].items())
    if (rec.contains("output_bytes"))
      if (auto w = evaluate::small_output(rec["output_bytes"].get<std::uintmax_t>(), name)) {
        m_warnings.push_back(*w);
        say("baseline", "warning: " + m_warnings.back());
      }
}

void Loop::baseline() {
  fs::path dir = m_dir / "baseline";
  fs::path work = m_dir / "work" / "baseline";
  fs::path record = dir / "baseline.json";
  fs::create_directories(dir);
  bool built = fs::exists(record) && (m_app.binary.empty() || fs::exists(work / m_app.binary));
  if (fs::exists(record)) m_baseline = store::read_json(record.string());
  if (!built) build_baseline(work, record);
  json& configs = m_baseline["configs"];
  for (const auto& c : m_app.configs) {
    if (!configs.contains(c.name))
      configs[c.name] = {{"command", m_app.command_for(c, "{output}")}, {"held_out", c.held_out}};
  }
  if (m_execute) run_baseline(work, record);
  if (m_execute) check_tracer(work, record);
  store::write_json_atomic(record.string(), m_baseline);
  m_run["baseline"] = m_baseline;
  warn_small_outputs();
  m_run["warnings"] = m_warnings;
  write_run("running");
}

// The probe's sources: the snapshot's with the hot kernels emptied (every kernel when no profile
// named them); `kernels` is empty where the sources define none of them.
evaluate::EmptiedKernels Loop::probe_sources() const {
  std::map<std::string, std::string> sources;
  for (const auto& s : m_app.sources) sources[s] = util::read_file((m_dir / "snapshot" / s).string());
  return evaluate::empty_kernels(sources, hot_kernel_names(m_diagnostics));
}

// Whether the probe has yet to be built and run: it is built ahead then (open_first_round).
bool Loop::probe_pending() const {
  const json* rec = m_baseline.contains("probe") ? &m_baseline["probe"] : nullptr;
  return m_execute && !(rec && rec->is_object()) && !evaluate::validation_checks(m_app, "").empty();
}

// Validation that cannot fail proves nothing (evaluate/probe.hpp): the hot kernels (every kernel
// of the sources when no profile named them) emptied in a copy, built, and run on the first
// validation check's input. When the compared output is the baseline's, the run stops before any
// variant is judged. Once per run: baseline.json's "probe" holds the result for a resume.
void Loop::probe_validation() {
  if (!m_execute) return;
  const auto checks = evaluate::validation_checks(m_app, "");
  if (checks.empty()) return;
  const auto& check = checks.front();
  const fs::path dir = m_dir / "baseline" / "probe";
  json& rec = m_baseline["probe"];
  if (!rec.is_object()) {
    const auto emptied = probe_sources();
    rec = {{"config", check.config}, {"kernels", emptied.kernels}};
    if (emptied.kernels.empty()) {
      rec["result"] = "skipped: no hot kernel is defined in the sources";
    } else {
      say("probe", fmt::format("{} emptied; building", util::join(emptied.kernels, ", ")), false);
      fs::create_directories(dir);
      const fs::path src = m_dir / "work" / "probe-src", work = m_dir / "work" / "probe";
      fs::remove_all(src);
      // Built ahead with the first round's candidates (open_first_round), or now.
      evaluate::BuildResult b;
      std::optional<json> made = m_ahead ? m_ahead->take(k_probe_key) : std::nullopt;
      if (made && move_ahead_build(k_probe_key, *made, work, dir / "build.log", "probe")) {
        b.ok = made->value("ok", false);
        b.result = made->value("result", "");
      } else {
        evaluate::write_tree(src.string(), emptied.sources);
        b = build_copy(src, work, dir / "build.log");
      }
      const auto stale = b.ok ? evaluate::stale_build(evaluate::build_fingerprint(m_app, work.string(), m_snapshot),
                                                      m_baseline.value("fingerprint", ""), m_app.binary, false)
                              : std::nullopt;
      if (!b.ok) {
        rec["result"] = "skipped: the probe does not build (" + b.result + ")";
      } else if (stale) {
        // Its output would be the baseline's for that reason alone; the variants' builds meet
        // the same check (build_stale).
        rec["result"] = "skipped: the probe's build is the baseline's (" + stale->reason + ")";
      } else {
        say("probe", "running " + check.label, false);
        auto e = execute(work, check.input, util::path_in(work / "out", "probe.out"), dir / "run.log");
        if (!e.ok) {
          rec["result"] = "seen: the probe's run failed (" + e.failure + ")";
        } else {
          rec["output_sha256"] = evaluate::outputs_sha256(e);
          const bool same =
              rec["output_sha256"] == m_baseline["configs"][check.config].value("output_sha256", std::string("-"));
          rec["result"] = same ? "blind" : "seen: the compared output changed";
          // What the user compares with their baseline when told validation is blind.
          for (std::size_t i = 0; same && i < e.outputs.size(); ++i)
            fs::copy_file(e.outputs[i], dir / fmt::format("output-{}", i + 1), fs::copy_options::overwrite_existing);
        }
        evaluate::remove_outputs(e);
      }
      fs::remove_all(work);
      fs::remove_all(src);
      // work/building leads to the baseline's build again, as after the baseline was built. Under
      // the building lock: lane 0 may be building a candidate there meanwhile (open_first_round).
      std::lock_guard<std::mutex> lock(m_building_mutex);
      const fs::path building = m_dir / "work" / "building";
      std::error_code ec;
      if (fs::is_symlink(building)) fs::remove(building, ec);
      fs::create_directory_symlink("baseline", building, ec);
    }
    store::write_json_atomic((m_dir / "baseline" / "baseline.json").string(), m_baseline);
    m_run["baseline"] = m_baseline;
    write_run("running");
  }
  const std::string result = rec.value("result", "");
  if (result == "blind")
    throw Error(
        evaluate::blind_validation(check.config, rec.value("kernels", std::vector<std::string>{}), dir.string()));
  say("probe", result == "seen: the compared output changed" ? "validation sees the hot kernels' results" : result);
}

} // namespace optimas::loop
