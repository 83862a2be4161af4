// The state of one `optimas run`, shared by the loop's step files (private to src/loop/). The
// steps, in the order a run takes them, and the file of each:
//   run_loop.cpp   open or resume the run, its settings, the source snapshot, the iterations and
//                  the summary; plan() for --dry-run
//   baseline.cpp   build the baseline from the snapshot and run each configuration once; probe
//                  that validation sees the hot kernels' results (evaluate/probe.hpp)
//   profiling.cpp  profile the baseline (or import a recorded profile), re-profile a variant
//   attempt.cpp    one attempt: prompt, replies, proposal, build, validate, then measure
//   measure.cpp    interleaved measured rounds and the acceptance rule's decision
//   execute.cpp    every program run of the run, a variant's watched for tampering
//   tune.cpp       the tuning stage: the points of tune:, each built, validated and measured as
//                  a variant is (tune/ holds the space, the search and the cache)
//   ahead.cpp      builds made ahead while variants are measured (loop/pipeline.hpp)
//   slots.cpp      several GPUs measuring the tuning stage's points at once (--gpus)
// What decides a variant's status is evaluate/verdict.hpp's; the files of the run folder are
// store/journal.hpp's.
#pragma once

#include "analysis/diagnostics.hpp"
#include "config/app_config.hpp"
#include "evaluate/child_record.hpp"
#include "evaluate/probe.hpp"
#include "evaluate/sandbox.hpp"
#include "evaluate/snapshot.hpp"
#include "evaluate/tree_guard.hpp"
#include "evaluate/validate.hpp"
#include "evaluate/verdict.hpp"
#include "llm/backend.hpp"
#include "loop/pipeline.hpp"
#include "loop/run_loop.hpp"
#include "loop/settings.hpp"
#include "profile/ncu_agent.hpp"
#include "profile/profile.hpp"
#include "prompt/builder.hpp"
#include "propose/propose.hpp"
#include "store/memory.hpp"
#include "store/run_store.hpp"
#include "tune/cache.hpp"
#include "tune/search.hpp"
#include "tune/space.hpp"
#include "util/error.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace optimas::loop {

// The proposal step (propose/propose.hpp), as the loop's steps name it.
using optimas::propose::ask_backend;
using optimas::propose::AskSettings;
using optimas::propose::hot_kernel_names;
using optimas::propose::make_proposal;
using optimas::propose::Proposal;
using optimas::propose::with_feedback;

// Seconds since `start`, to the millisecond: the steps' times in run.json ("times") and in each
// variant's result ("times"), which the dashboard's Steps table shows.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::round(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1000) / 1000;
}

// One GPU of several measuring the tuning stage's points at once (loop/slots.cpp): the id its runs
// see (CUDA_VISIBLE_DEVICES) and its own copies of the baseline's and the parent's scratch
// builds, whose runs beside its points give their ratios.
struct Slot {
  int index = 0;
  std::string gpu;
  std::filesystem::path baseline; // run/work/slot-<index>/baseline
  std::filesystem::path parent;   // the parent's copy (`baseline` where the parent is the baseline)
};

// One attempt of one candidate of one round (an "iteration" in the run folder's names).
struct Variant {
  std::string key; // "i1a2"; "i1c2a1" for the second candidate of round 1
  int iteration = 0, candidate = 1, attempt = 0;
  std::filesystem::path dir;                    // artifacts: run/iterations/<i>[/candidate-<c>]/attempt-<a>
  std::filesystem::path work;                   // scratch: run/work/<key>
  nlohmann::json result;                        // result.json once final
  std::string previous_replies;                 // of the attempt before: the same answer again is not retried
  std::set<std::string> left_behind;            // files its runs left in its scratch copy (removed after each run)
  std::map<std::string, std::string> build_env; // a tuning point's: NVCC_APPEND_FLAGS, OPTIMAS_TUNE_FLAGS
  std::string build_note;                       // what its build step says it builds
  std::vector<std::string> echoes;              // a tuning point's: stdout lines reporting a knob, not compared
  // Its edits act on the application's evidence (an AP item: host code, copies): judged by the
  // process's wall time, which such an edit changes, and not by the kernels' (Loop::measure).
  bool by_wall = false;
  // The GPU it is measured on where several measure at once; none: the run's own folders and GPUs.
  const Slot* slot = nullptr;
};

class Loop {
public:
  explicit Loop(const RunOptions& options) : m_options(options) {}

  RunResult run();
  nlohmann::json plan();

private:
  using path = std::filesystem::path;
  using json = nlohmann::json;

  // Called from the slots' threads too (loop/slots.cpp): one line at a time.
  void say(const std::string& step, const std::string& detail, bool done = true) const;

  // run_loop.cpp
  void configure();
  void open_run();
  void resume_run();
  void start_run();
  void write_run(const std::string& status);
  std::string resume_command() const; // one line a user can paste
  void snapshot();
  void analyze();
  void iterate();
  void free_candidates(); // the builtin's alternatives as a round's later candidates
  bool iteration(int it); // true when a variant of it was accepted
  // One candidate's attempts; its final variant's result (empty when none was final).
  json candidate(int it, int c);
  void next_iteration(int it);
  // What the prompts of variant v add (search.cpp): what earlier candidates measured, and for a
  // later candidate of a round, the approaches it should differ from.
  std::string search_notes(const Variant& v) const;
  // attempt.cpp: the key of an earlier candidate of v's round with the same sources, or "".
  std::string same_code_as(const Variant& v, const std::map<std::string, std::string>& sources) const;
  // run.json's search tree: every final variant with its parent, round, candidate and result.
  json search_tree() const;
  // Why no further candidate may be asked (a budget spent), or "": search.cpp.
  std::string budget_spent() const;
  // The budgets' use so far, for the progress line ("$0.12 of $1.00, 3 of 10 verdicts").
  std::string budget_use() const;
  // The worked examples of round `it` from the store (optimize.memory), said and in run.json.
  void recall_memories(int it);
  RunResult summary();
  config::AppConfig app_in(const path& dir) const;
  path parent_work() const;
  path parent_sources() const;
  std::string parent_fingerprint() const;
  std::map<std::string, std::string> current_sources() const;
  std::set<std::string> used_configs() const;
  const json* variant_record(const std::string& key) const;

  // baseline.cpp
  // Builds a fresh copy of the snapshot with `sources` (a folder, or empty) written over it, and
  // leaves it in `work`. The build itself runs in one folder for the whole run, work/building,
  // with one modification time on every file: nvcc -lineinfo writes the build folder's path and
  // each source's mtime into the binary, so two builds of the same code would differ and a
  // stale build would pass for a new one.
  // `lane`: the variant pipeline's (loop/pipeline.hpp); lane 0 is work/building, under
  // m_building_mutex.
  evaluate::BuildResult build_copy(const path& sources, const path& work, const path& log,
                                   const std::map<std::string, std::string>& env = {}, int lane = 0);
  void baseline();
  void build_baseline(const path& work, const path& record);
  // The baseline failed behind the sandbox's walls (`failure`): true, the run going on at the
  // watch level, where `again` (the same step without walls) works.
  // `failure` is a copy: `again` overwrites the result it came from.
  bool without_walls(const std::string& step, std::string failure, const std::function<bool()>& again);
  // run.json's `sandbox`: the level its programs run at and what that stops.
  void record_isolation();
  void run_baseline(const path& work, const path& record);
  // One traced run behind the walls before measurement relies on it; lowers the walls or drops
  // the tracer where the two do not go together (baseline.json's tracer_check).
  void check_tracer(const path& work, const path& record);
  void warn_small_outputs();
  void probe_validation();
  evaluate::EmptiedKernels probe_sources() const;
  bool probe_pending() const;

  // profiling.cpp
  UsageError cannot_profile() const; // neither --import nor a profiler to run
  profile::NcuOptions ncu_options() const;
  void obtain_profile();
  void record_hardware();
  void reprofile(Variant& v);

  // attempt.cpp
  bool run_attempt(Variant& v, const std::string& feedback, std::string& next_feedback);
  std::optional<bool> recorded_attempt(Variant& v, std::string& next_feedback);
  std::vector<std::string> replies_for(Variant& v, const std::vector<prompt::Prompt>& prompts,
                                       const std::string& feedback);
  Proposal propose(Variant& v, const std::vector<std::string>& replies,
                   const std::map<std::string, std::string>& sources, json& result);
  bool end_attempt(Variant& v, json& result, const evaluate::Outcome& outcome, std::string& next_feedback);
  std::optional<evaluate::Outcome> build_variant(Variant& v, json& result, const std::string& replies);
  bool validate(Variant& v, json& result);
  json validation_check(Variant& v, const evaluate::Check& check, std::size_t index);
  // A tuning point's outputs less the lines reporting its knobs (Variant::echoes), before compared.
  void drop_echoes(const Variant& v, const evaluate::Execution& e) const;
  std::optional<evaluate::Sandbox> validation_sandbox() const;
  void record_ear(Variant& v, const Proposal& proposal, json& result);
  // The round's last candidate's re-profile waits for the tuning stage's builds to be submitted
  // (record_pending_ear), so that they build while it runs: the stage's parent is known once the
  // candidate is measured.
  bool ear_after_round(const Variant& v) const;
  double record_pending_ear();
  json speed_of_light_record(const profile::Profile& after) const;
  json gain_estimate(const json& result) const;
  void finish_variant(Variant& v, json result);

  // measure.cpp
  class Rounds; // the measured rounds of one variant
  bool measure(Variant& v, json& result);
  bool measure_fixed(Variant& v, json& result, Rounds& rounds, const std::string& note);
  // measure.verdict sequential; nothing when a run gave no hot-kernel time (`note` says why).
  std::optional<bool> measure_sequential(Variant& v, json& result, Rounds& rounds, const std::vector<json>& checks,
                                         std::string& note);
  bool run_failed(Variant& v, json& result, const std::string& why);

  // tune.cpp
  void tune_stage();
  json tune_point(const tune::Space& space, const tune::Point& p, int index, const tune::PointCache* cache,
                  const json& context, const Slot* slot = nullptr);
  // What the search of one tuning stage works with (tune_stage sets it up).
  struct TuneSearch {
    tune::Method method = tune::Method::exhaustive;
    std::optional<tune::Point> given, as_it_is; // --tune-point's; found knobs' parent point
    const tune::PointCache* cache = nullptr;
    json context;
    bool discover = false;
    std::size_t most = 0; // points measured at most
    int budget = 0;
  };
  void search_points(const tune::Space& space, const TuneSearch& ts, json& rec);
  // slots.cpp: several GPUs measuring an exhaustive search's points at once (--gpus).
  // The slots for a stage of `points` points: none where one GPU measures (one is found or
  // given, the walls are down, or one point is measured).
  std::vector<Slot> open_slots(std::size_t points, json& rec);
  void close_slots(const std::vector<Slot>& slots);
  // The exhaustive search's points, in its order, each on the first slot free; `done` sees each
  // result in that order (as the serial search's objective would), `known_bad` passes a point
  // over, `spent` stops the search (true: no further point starts; returned when it did).
  bool measure_on_slots(const tune::Space& space, const TuneSearch& ts, const std::vector<Slot>& slots, int& index,
                        const std::function<bool(const tune::Point&)>& known_bad,
                        const std::function<void(const tune::Point&, const json&, int)>& done,
                        const std::function<bool()>& spent);
  void announce_tune_best(json& rec, const std::string& parent);
  // The stage's builds made ahead (loop/pipeline.hpp): m_ahead while it lives (none for lanes 0).
  class AheadScope {
  public:
    AheadScope(Loop& loop, int lanes);
    ~AheadScope();
    BuildAhead& builds() { return *m_builds; }

  private:
    Loop& m_loop;
    std::optional<BuildAhead> m_builds;
  };
  std::map<std::string, std::string> point_files() const;
  void build_points_ahead(BuildAhead& ahead, const tune::Space& space, const std::vector<tune::Point>& points,
                          const tune::PointCache* cache, const json& context,
                          const std::optional<tune::Point>& as_it_is);
  // ahead.cpp: builds made ahead (loop/pipeline.hpp)
  void submit_ahead(BuildAhead& ahead, const std::string& key, const std::map<std::string, std::string>& files,
                    const std::map<std::string, std::string>& env);
  bool move_ahead_build(const std::string& label, const json& built, const path& work, const path& log,
                        const std::string& who);
  void adopt_ahead_build(Variant& v, const std::string& key, const json& built, json& times);
  bool round_built_ahead(bool first = false) const;
  void open_first_round();
  static constexpr const char* k_probe_key = "probe"; // the probe's build made ahead
  static std::string content_key(const std::map<std::string, std::string>& files,
                                 const std::map<std::string, std::string>& env);
  void build_candidates_ahead(BuildAhead& ahead);
  void record_overlap(json& rec, double wall_s, double ear_s = 0);
  std::set<std::string> ahead_paths() const;
  // Without a tune: block, the knobs found in the parent's sources (tune/discover.hpp); recorded
  // in run.json's tune.discovered. Empty settings when there are none.
  config::TuneSettings discovered_knobs(json& rec, std::optional<tune::Point>& as_it_is);
  std::map<std::string, std::string> knob_sources() const;
  // The application's files that launch or declare kernels (propose::read_host_sources), read
  // from the snapshot once: it does not change during a run, and a variant's folder holds only
  // its sources.
  const std::map<std::string, std::string>& host_sources() const;
  json tune_context() const;
  json tune_plan() const;
  // --tune-point checked before the run's work: a point of the tune: block (at once), or, for
  // knobs found in the sources, a name whose parameters are knobs the search can find there
  // (after the snapshot; the point itself exists only once the evidence has chosen the knobs).
  void check_tune_point(bool snapshot_taken) const;

  // execute.cpp
  // Executes one configuration of the program built in `work`; the output goes to `output`.
  // On `slot`'s GPU where one is given.
  evaluate::Execution execute(const path& work, const config::InputConfig& input, const path& output, const path& log,
                              const evaluate::Sandbox* sandbox = nullptr, const Slot* slot = nullptr);
  // The same for the variant, watched: `tampered` says what it changed that it must not (a file
  // of the run outside its scratch copy, or its own build); what it added to its copy is removed.
  evaluate::Execution execute_variant(Variant& v, const config::InputConfig& input, const path& output, const path& log,
                                      std::string& tampered, const evaluate::Sandbox* sandbox = nullptr);
  // A baseline run: whether it left processes running when it exited is remembered, so that a
  // variant is faulted for doing so only where the baseline does not (m_baseline_left_running).
  void note_baseline_run(const evaluate::Execution& e);
  void restore_after(const Variant& v, const evaluate::TreeChanges& outside);
  void rebuild_work(const std::string& key, const std::string& why = "after a variant changed it");
  // The parent's scratch build, built again from its sources where it is gone (a resumed run:
  // an interruption removes the scratch copies; a run folder carried to another machine).
  void build_parent_if_gone();

  RunOptions m_options;
  std::optional<store::RunStore> m_store; // opened by open_run (a dry run touches nothing)
  std::string m_id;
  path m_dir;
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
  analysis::AnalysisOptions m_analysis;  // as the first iteration analyzed the profile
  std::vector<store::Recall> m_recalled; // the round's worked examples (optimize.memory)
  std::string m_search_stopped;          // the budget that ended the search early, if one did
  std::chrono::steady_clock::time_point m_started = std::chrono::steady_clock::now();
  std::string m_best;                              // key of the best accepted variant ("" = baseline)
  std::map<std::string, std::string> m_tune_edits; // source -> its text made tunable (found knobs)
  std::vector<std::string> m_tune_echoes;          // the found knobs' printed lines (tune/config_echo.hpp)
  mutable std::optional<std::map<std::string, std::string>> m_host_sources; // host_sources(), once read
  std::vector<json> m_variants;
  struct PendingEar {
    Variant v;
    Proposal proposal;
  };
  std::vector<PendingEar> m_pending_ear;           // measured, re-profile to come (ear_after_round)
  std::optional<evaluate::ChildRecord> m_children; // children.json: what a resume must end if we are killed
  std::mutex m_building_mutex;                     // work/building: one build (or profile reading it) at a time
  BuildAhead* m_ahead = nullptr;                   // the tuning stage's builds made ahead, while it runs
  std::set<std::string> m_ahead_labels;            // the points submitted to m_ahead
  // While slots measure at once (loop/slots.cpp): their folders and run.json change under every
  // variant's watch, which leaves them out and takes its stamps under this lock, which
  // write_run holds (no half-written run.json is seen).
  bool m_slots_running = false;
  std::atomic<bool> m_baseline_left_running{false}; // also baseline.json's configs' left_running, on resume
  mutable std::mutex m_run_file_mutex;
  mutable std::mutex m_say_mutex;
  // The first round's builds, opened before the probe (open_first_round) and taken over by the
  // round. Last: it ends first, while what its builds use still exists.
  std::unique_ptr<AheadScope> m_first_round;
};

} // namespace optimas::loop
