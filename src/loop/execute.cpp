// Every program run of a run: the baseline's in its scratch copy, a variant's watched. A variant
// runs as our user and could write anywhere we can: into the baseline's copy (a slower baseline,
// or one that agrees with it), the run's journals (samples it never ran), its own binary (a
// replay), or a cache in its folder for its next run. Nothing of the run outside its copy may
// change while it runs, nor its build; what it adds to its copy is removed; what it changed is
// put back before the run goes on.
#include "evaluate/snapshot.hpp"
#include "loop/run_state.hpp"

#include "store/journal.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <unistd.h>

namespace optimas::loop {

namespace fs = std::filesystem;
using nlohmann::json;

evaluate::Execution Loop::execute(const fs::path& work, const config::InputConfig& input, const fs::path& output,
                                  const fs::path& log, const evaluate::Sandbox* sandbox, const Slot* slot) {
  fs::create_directories(output.parent_path());
  fs::create_directories(log.parent_path());
  if (!slot)
    return evaluate::execute_in(m_app, work.string(), input, fs::absolute(output).string(), log.string(),
                                sandbox ? *sandbox : m_sandbox);
  evaluate::Sandbox on_gpu = sandbox ? *sandbox : m_sandbox;
  on_gpu.env["CUDA_VISIBLE_DEVICES"] = slot->gpu;
  return evaluate::execute_in(m_app, work.string(), input, fs::absolute(output).string(), log.string(), on_gpu);
}

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
  std::set<std::string> ours = {own,
                                fs::relative(log, m_dir).string(),
                                fs::relative(stderr_log, m_dir).string(),
                                fs::relative(log, m_dir).string() + ".trace",
                                "children.json",
                                fmt::format("children.json.tmp.{}", ::getpid())};
  // And the builds made ahead meanwhile (loop/pipeline.hpp), which check themselves.
  ours.merge(ahead_paths());
  // And, while several GPUs measure at once, the other slots' folders and run.json (only behind
  // the walls, which keep every variant out of them: loop/slots.cpp).
  if (m_slots_running) ours.merge(std::set<std::string>{"tune", "work", "run.json"});
  std::set<std::string> outputs = {fs::relative(output, v.work).string()};
  for (std::size_t k = 1; k < m_app.outputs.size(); ++k)
    outputs.insert(fs::relative(output, v.work).string() + "." + std::to_string(k));
  for (const auto& o : m_app.outputs) outputs.insert(fs::path(o).lexically_normal().string());
  std::unique_lock<std::mutex> run_file(m_run_file_mutex);
  const auto outside_before = evaluate::tree_state(m_dir.string(), ours);
  run_file.unlock();
  const auto own_before = evaluate::tree_state(v.work.string(), outputs);
  // Without the sandbox's walls, the application folder is watched too (less the run store,
  // watched above, where it lies inside).
  const bool walls = (sandbox ? *sandbox : m_sandbox).isolation != evaluate::Isolation::watch;
  std::set<std::string> store;
  if (const auto rel = fs::weakly_canonical(m_dir.parent_path()).lexically_relative(fs::weakly_canonical(m_app.dir));
      !rel.empty() && *rel.begin() != "..")
    store.insert(rel == "." ? m_dir.filename().string() : rel.string());
  const auto app_before = walls ? evaluate::TreeState{} : evaluate::tree_state(m_app.dir, store);
  auto e = execute(v.work, input, output, log, sandbox, v.slot);
  run_file.lock();
  auto outside = evaluate::tree_changes(outside_before, evaluate::tree_state(m_dir.string(), ours));
  run_file.unlock();
  auto mine = evaluate::tree_changes(own_before, evaluate::tree_state(v.work.string(), outputs));
  const auto app =
      walls ? evaluate::TreeChanges{} : evaluate::tree_changes(app_before, evaluate::tree_state(m_app.dir, store));
  std::error_code ec;
  for (const auto& p : mine.added) {
    v.left_behind.insert(p);
    fs::remove_all(v.work / p, ec);
  }
  tampered = evaluate::tampering(outside, mine);
  if (!app.empty()) {
    tampered = fmt::format("it changed the application folder {} (your files: see what changed before going on): {}",
                           m_app.dir, app.describe()) +
               (tampered.empty() ? "" : "; " + tampered);
    say("variant", fmt::format("warning: variant {} {}", v.key, tampered));
  }
  // A process it started that outlives it can write its output after the timed run has ended
  // (scenario loop_cheats_escapes' bg_edit won that race on a loaded machine): faulted, unless
  // the baseline leaves processes running too. A run that failed (a timeout, a crash) fails for
  // that, whatever it left.
  if (e.ok && e.left_running > 0 && !m_baseline_left_running) {
    std::string left = fmt::format("it left {} process(es) running when it exited (optimas ended them): what "
                                   "outlives a run can change its output after it was timed",
                                   e.left_running);
    tampered = tampered.empty() ? left : tampered + "; " + left;
  }
  if (!outside.empty()) restore_after(v, outside);
  return e;
}

void Loop::note_baseline_run(const evaluate::Execution& e) {
  if (!e.ok || e.left_running <= 0 || m_baseline_left_running.exchange(true)) return;
  say("baseline", fmt::format("warning: the baseline left {} process(es) running when it exited (ended by optimas); "
                              "a variant that does so too is not faulted for it",
                              e.left_running));
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

void Loop::rebuild_work(const std::string& key, const std::string& why) {
  fs::path work = m_dir / "work" / key;
  fs::path sources = m_dir / "snapshot", log = m_dir / "baseline" / "rebuild.log";
  std::string fingerprint = m_baseline.value("fingerprint", "");
  if (key != "baseline") {
    const json* found = variant_record(key);
    if (!found) {
      fs::remove_all(work); // a failed variant's copy: nothing measures it again
      return;
    }
    sources = m_dir / found->value("source", "");
    log = m_dir / found->value("dir", "") / "rebuild.log";
    fingerprint = store::read_json((m_dir / found->value("dir", "") / "build.json").string()).value("fingerprint", "");
  }
  say("restore", fmt::format("rebuilding {} {}", key, why), false);
  auto b = build_copy(key == "baseline" ? fs::path() : sources, work, log);
  if (!b.ok || evaluate::build_fingerprint(m_app, work.string(), m_snapshot) != fingerprint)
    throw Error(fmt::format("{} does not build again as it was ({}); start a new run", work.string(),
                            b.ok ? "another product" : b.result));
  say("restore", fmt::format("{} rebuilt, identical to its first build", key));
}

void Loop::build_parent_if_gone() {
  if (!fs::exists(parent_work() / m_app.binary))
    rebuild_work(m_best.empty() ? "baseline" : m_best, "(its scratch copy is gone)");
}

} // namespace optimas::loop
