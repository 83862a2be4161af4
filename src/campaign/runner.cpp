#include "campaign/runner.hpp"

#include "store/journal.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/names.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

namespace optimas::campaign {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string text(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

std::string this_executable() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("optimas") : exe.string();
}

// A launcher state after which a cell is worth submitting again.
bool requeueable(launch::State s) {
  using launch::State;
  return s == State::failed || s == State::cancelled || s == State::preempted || s == State::timed_out ||
         s == State::lost;
}

class Runner {
public:
  Runner(const CampaignFile& file, const RunnerOptions& o)
      : m_file(file), m_options(o), m_dir(campaign_dir(file)), m_cells(expand_cells(file)), m_store(file.runs_dir) {
    m_optimas = o.optimas.empty() ? this_executable() : o.optimas;
  }

  CampaignResult run() {
    open_state();
    auto launcher = launch::make_launcher(m_file.launcher, *m_options.launchers);
    std::vector<launch::Task> first;
    for (const auto& c : m_cells)
      if (auto t = next_task(c)) first.push_back(*t);
    say(fmt::format("{} cell(s), {} to run, with the {} launcher", m_cells.size(), first.size(), launcher->name()));
    submit(*launcher, first);
    follow(*launcher);
    write_state();
    CampaignResult r;
    for (const auto& [id, s] : m_state) {
      std::string state = text(s, "state");
      r.done += state == "done";
      r.failed += state == "failed";
      r.waiting += state == "waiting";
    }
    r.table = write_table();
    say(fmt::format("finished: {} done, {} failed, {} waiting for a manual reply; table in {}", r.done, r.failed,
                    r.waiting, (fs::path(m_dir) / "table.json").string()));
    return r;
  }

private:
  void say(const std::string& line) const {
    if (m_options.progress) m_options.progress(fmt::format("[campaign {}] {}", m_file.id, line));
  }

  // The state of every cell of the file: what an earlier driver recorded (resume), else pending.
  void open_state() {
    fs::path state = fs::path(m_dir) / "state.json";
    if (fs::exists(state) && !m_options.resume)
      throw UsageError(fmt::format("campaign {} has started before ({}): continue it with --resume, or remove that "
                                   "folder to start again",
                                   m_file.id, m_dir));
    json before = fs::exists(state) ? store::read_json(state.string()) : json::object();
    std::map<std::string, json> old;
    for (const auto& c : before.value("cells", json::array())) old[text(c, "id")] = c;
    fs::create_directories(fs::path(m_dir) / "logs");
    fs::copy_file(m_file.path, fs::path(m_dir) / "campaign.yml", fs::copy_options::overwrite_existing);
    for (const auto& c : m_cells) {
      json s = {{"id", c.id},
                {"app", c.app->name},
                {"diagnostics", c.diagnostics->label},
                {"backend", c.backend->name},
                {"rounds", c.rounds},
                {"candidates", c.candidates},
                {"seed", c.seed},
                {"state", "pending"},
                {"job", nullptr},
                {"attempts", 0},
                {"run_id", nullptr},
                {"runs", json::array()}};
      if (auto it = old.find(c.id); it != old.end())
        for (const char* k : {"state", "job", "attempts", "run_id", "runs", "detail"})
          if (it->second.contains(k)) s[k] = it->second[k];
      m_state[c.id] = s;
    }
    write_state();
  }

  // What the cell needs next: nothing when its run finished, `run --resume` when its run waits
  // for a manual reply, else a fresh run.
  std::optional<launch::Task> next_task(const Cell& c) {
    json& s = m_state[c.id];
    // Only a resumed campaign takes runs from the store as its own: a campaign started again
    // under the same id starts from nothing.
    if (auto run = m_options.resume ? finished_run(c) : std::nullopt) {
      s["state"] = "done";
      s["run_id"] = *run;
      return std::nullopt;
    }
    std::vector<std::string> args;
    std::string waiting = text(s, "run_id");
    json run = waiting.empty() ? json() : load_run(waiting);
    if (text(run, "status") == "waiting")
      args = {"run", "--resume", waiting, "--runs-dir", m_file.runs_dir};
    else
      args = run_arguments(m_file, c);
    launch::Task t;
    t.id = c.id;
    t.argv = {m_optimas};
    t.argv.insert(t.argv.end(), args.begin(), args.end());
    t.workdir = m_dir;
    t.log = util::path_in(fs::path(m_dir) / "logs", c.id + ".log");
    t.gpus = m_file.gpus;
    t.time_limit_s = m_file.time_limit_s;
    return t;
  }

  // The finished run of a cell: the one state.json names, or one in the store an earlier
  // driver did not get to record.
  std::optional<std::string> finished_run(const Cell& c) {
    const json& s = m_state[c.id];
    std::vector<std::string> candidates;
    if (!text(s, "run_id").empty()) candidates.push_back(text(s, "run_id"));
    for (const auto& id : runs_of(c.id)) candidates.push_back(id);
    for (const auto& id : candidates)
      if (text(load_run(id), "status") == "finished") return id;
    return std::nullopt;
  }

  json load_run(const std::string& id) const {
    try {
      return m_store.load_run(id);
    } catch (const Error&) {
      return json::object(); // gone or broken: the cell runs again
    }
  }

  // The runs in the store that are cells `cell` of this campaign, newest first: from the index,
  // and, with `folders`, from the run folders when the index has none (an index write may have
  // failed; reading every folder is for when a run is expected, not for each submission).
  std::vector<std::string> runs_of(const std::string& cell, bool folders = true) {
    auto scan = [&](const std::vector<std::string>& ids) {
      for (const auto& id : ids) {
        if (m_run_cell.count(id)) continue;
        json run = load_run(id);
        if (!run.contains("id")) continue; // not written yet, or broken: asked again next time
        const json& tag = run.value("campaign", json::object());
        m_run_cell[id] = text(tag, "id") == m_file.id ? text(tag, "cell") : "";
        m_run_started[id] = text(run, "started");
      }
    };
    std::vector<std::string> indexed;
    try {
      for (const auto& r : m_store.list_runs(m_file.id)) indexed.push_back(r.value("id", ""));
    } catch (const Error& e) {
      log::warn("campaign {}: the run index cannot be read ({}); reading the run folders", m_file.id, e.what());
    }
    scan(indexed);
    auto mine = [&] {
      std::vector<std::string> out;
      for (const auto& [id, owner] : m_run_cell)
        if (owner == cell && !m_known[cell].count(id)) out.push_back(id);
      std::sort(out.begin(), out.end(),
                [&](const auto& a, const auto& b) { return m_run_started[a] > m_run_started[b]; });
      return out;
    };
    auto found = mine();
    if (found.empty() && folders) {
      scan(m_store.run_ids());
      found = mine();
    }
    return found;
  }

  void submit(launch::Launcher& launcher, const std::vector<launch::Task>& tasks) {
    if (tasks.empty()) return;
    for (const auto& t : tasks) {
      json& s = m_state[t.id];
      // The earlier attempt's log is kept beside the new one.
      std::error_code ec;
      if (fs::exists(t.log, ec) && s.value("attempts", 0) > 0)
        fs::rename(
            t.log,
            util::path_in(fs::path(m_dir) / "logs", fmt::format("{}.attempt-{}.log", t.id, s.value("attempts", 0))),
            ec);
      s["attempts"] = s.value("attempts", 0) + 1;
      s["state"] = "pending";
      s["job"] = nullptr;
      ++m_tries[t.id];
      m_resuming[t.id] = t.argv.size() > 2 && t.argv[2] == "--resume" ? text(s, "run_id") : "";
      // Runs already in the store are not this attempt's: the one that appears is.
      for (const auto& id : runs_of(t.id, false)) m_known[t.id].insert(id);
      for (const auto& id : s["runs"]) m_known[t.id].insert(id.get<std::string>());
      m_in_flight.insert(t.id);
    }
    launcher.submit(tasks);
    write_state();
  }

  // Polls until no cell is in flight; a finished one is recorded, and submitted again while
  // its requeue budget lasts.
  void follow(launch::Launcher& launcher) {
    std::map<std::string, launch::State> seen;
    while (!m_in_flight.empty()) {
      auto states = launcher.poll();
      std::vector<launch::Task> again;
      for (const auto& id : std::vector<std::string>(m_in_flight.begin(), m_in_flight.end())) {
        auto it = states.find(id);
        if (it == states.end()) continue;
        const launch::Status& st = it->second;
        json& s = m_state[id];
        if (!launch::finished(st.state)) {
          if (seen.count(id) && seen[id] == st.state) continue;
          seen[id] = st.state;
          s["state"] = std::string(launch::state_name(st.state));
          s["job"] = st.job;
          say(fmt::format("{}: {} ({}{})", id, launch::state_name(st.state), st.job,
                          st.detail.empty() ? "" : ", " + st.detail));
          write_state();
          continue;
        }
        seen.erase(id);
        m_in_flight.erase(id);
        if (auto t = finish(id, st)) again.push_back(*t);
      }
      submit(launcher, again);
      if (!m_in_flight.empty()) launcher.wait(m_options.poll_s);
    }
  }

  // A cell's task has ended: its run decides (finished: done; waiting: a manual reply is
  // needed); anything else is requeued while the budget lasts.
  std::optional<launch::Task> finish(const std::string& id, const launch::Status& st) {
    json& s = m_state[id];
    s["job"] = st.job;
    std::string run_id = m_resuming[id];
    if (run_id.empty()) {
      auto runs = runs_of(id);
      if (!runs.empty()) run_id = runs.front();
    }
    json run = run_id.empty() ? json::object() : load_run(run_id);
    if (!run_id.empty()) {
      s["run_id"] = run_id;
      bool listed = false;
      for (const auto& r : s["runs"]) listed = listed || r == run_id;
      if (!listed) s["runs"].push_back(run_id);
    }
    std::string status = text(run, "status");
    std::string why =
        fmt::format("{}{}", launch::state_name(st.state), st.detail.empty() ? "" : " (" + st.detail + ")");
    std::optional<launch::Task> again;
    if (status == "finished") {
      s["state"] = "done";
      s["detail"] = text(run, "outcome");
      say(fmt::format("{}: done, run {} ({}){}", id, run_id.substr(0, 8), text(run, "outcome"), progress_count()));
    } else if (status == "waiting") {
      s["state"] = "waiting";
      s["detail"] = "waits for a manual reply (see its log); save it, then run the campaign again with --resume";
      say(fmt::format("{}: waiting for a manual reply, run {}; see {}", id, run_id.substr(0, 8),
                      (fs::path(m_dir) / "logs" / (id + ".log")).string()));
    } else if ((requeueable(st.state) || st.state == launch::State::done) && m_tries[id] <= m_file.requeue) {
      s["detail"] = why + (run_id.empty() ? "" : ", run " + run_id + " " + (status.empty() ? "missing" : status));
      say(fmt::format("{}: {}; requeued (attempt {} of {})", id, s["detail"].get<std::string>(), m_tries[id] + 1,
                      m_file.requeue + 1));
      for (const auto& c : m_cells)
        if (c.id == id) {
          s["run_id"] = nullptr; // a fresh run: the failed one stays in the store as it ended
          again = next_task(c);
        }
    } else {
      s["state"] = "failed";
      s["detail"] = why + (run_id.empty() ? ", no run recorded" : ", run " + run_id + " " + status);
      say(fmt::format("{}: failed for good after {} attempt(s): {}{}", id, m_tries[id], s["detail"].get<std::string>(),
                      progress_count()));
    }
    write_state();
    if (!again) write_table();
    return again;
  }

  std::string progress_count() const {
    int done = 0;
    for (const auto& [id, s] : m_state) done += text(s, "state") == "done";
    return fmt::format(" [{}/{} done]", done, m_cells.size());
  }

  std::vector<json> cell_list() const {
    std::vector<json> cells;
    for (const auto& c : m_cells) cells.push_back(m_state.at(c.id));
    return cells;
  }

  void write_state() const {
    store::write_json_atomic((fs::path(m_dir) / "state.json").string(), {{"schema", k_state_schema},
                                                                         {"campaign", m_file.id},
                                                                         {"file", fs::absolute(m_file.path).string()},
                                                                         {"runs_dir", m_file.runs_dir},
                                                                         {"updated", util::utc_now_iso8601()},
                                                                         {"cells", cell_list()}});
  }

  json write_table() const {
    json table = compute_table(m_file.id, cell_list(), store_reader(m_store));
    store::write_json_atomic((fs::path(m_dir) / "table.json").string(), table);
    return table;
  }

  const CampaignFile& m_file;
  const RunnerOptions& m_options;
  std::string m_dir;
  std::vector<Cell> m_cells;
  store::RunStore m_store;
  std::string m_optimas;
  std::map<std::string, json> m_state;
  std::set<std::string> m_in_flight;
  std::map<std::string, int> m_tries;                   // submissions by this driver
  std::map<std::string, std::string> m_resuming;        // cell -> the run its task resumes
  std::map<std::string, std::set<std::string>> m_known; // runs of a cell from before its attempt
  std::map<std::string, std::string> m_run_cell;        // run id -> cell of this campaign ("": none)
  std::map<std::string, std::string> m_run_started;
};

} // namespace

CampaignResult run_campaign(const CampaignFile& file, const RunnerOptions& options) {
  Runner r(file, options);
  return r.run();
}

json plan_cells(const CampaignFile& file, const std::string& optimas) {
  json cells = json::array();
  for (const auto& c : expand_cells(file)) {
    std::vector<std::string> argv = {optimas};
    auto args = run_arguments(file, c);
    argv.insert(argv.end(), args.begin(), args.end());
    cells.push_back({{"id", c.id},
                     {"app", c.app->path},
                     {"diagnostics", c.diagnostics->label},
                     {"backend", c.backend->name},
                     {"rounds", c.rounds},
                     {"candidates", c.candidates},
                     {"seed", c.seed},
                     {"command", shell_line(argv)}});
  }
  return {{"campaign", file.id},
          {"runs_dir", file.runs_dir},
          {"launcher", {{"name", file.launcher.name}, {"options", file.launcher.options}}},
          {"gpus", file.gpus},
          {"time_limit_s", file.time_limit_s},
          {"requeue", file.requeue},
          {"cells", cells}};
}

json load_state(const std::string& runs_dir, const std::string& campaign) {
  fs::path state = fs::path(runs_dir) / "campaigns" / campaign / "state.json";
  if (!fs::exists(state))
    throw UsageError(fmt::format("no campaign {} in {} (no {})", campaign, runs_dir, state.string()));
  return store::read_json(state.string());
}

RunReader store_reader(const store::RunStore& store) {
  return [&store](const std::string& id) -> std::optional<json> {
    json run;
    try {
      run = store.load_run(id);
    } catch (const Error& e) {
      log::warn("the table leaves out run {}: {}", id, e.what());
      return std::nullopt;
    }
    for (auto& v : run["variants"]) {
      fs::path replies = fs::path(store.run_dir(id)) / text(v, "dir") / "replies.json";
      if (text(v, "dir").empty() || !fs::exists(replies)) continue;
      try {
        json r = store::read_json(replies.string());
        v["usage"] = {{"input_tokens", r.value("input_tokens", json(0))},
                      {"output_tokens", r.value("output_tokens", json(0))},
                      {"cost_usd", r.value("cost_usd", json(nullptr))}};
      } catch (const Error& e) {
        log::warn("the table leaves out the tokens of {}: {}", replies.string(), e.what());
      }
    }
    return run;
  };
}

json campaign_table(const std::string& runs_dir, const std::string& campaign) {
  json state = load_state(runs_dir, campaign);
  store::RunStore store(runs_dir);
  return compute_table(campaign, state.value("cells", json::array()).get<std::vector<json>>(), store_reader(store));
}

} // namespace optimas::campaign
