// The heavy pass in rounds (heavy_pass.hpp): run_round runs one ncu process and exports its pages;
// heavy_pass plans the rounds from the time left and records what each kept or why it was cut.
#include "profile/heavy_pass.hpp"

#include "profile/heavy_rounds.hpp"
#include "profile/importer.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace optimas::profile {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_budget_ended = "budget ended";

// One round: ncu over `launches` (none: the hot kernels' every launch, or every kernel's), its
// pages exported. On success the round's record (pages included) is returned in `round`.
util::ProcessResult run_round(const RoundContext& c, int k, const std::vector<std::string>& hot,
                              const std::vector<PlannedLaunch>& launches, double limit_s, nlohmann::json& round) {
  NcuOptions o = c.o;
  auto picks = round_picks(launches);
  // The queue is already cut to --launch-count; -c keeps a round to its own launches where the
  // united invocation numbers of several functions would match more (docs/profiling-cost.md).
  if (!picks.empty() && o.launch_count > 0) o.launch_count = static_cast<int>(launches.size());
  std::string report = (c.run_dir / fmt::format("report.r{}", k)).string();
  auto cmd = heavy_command(o, report, hot, picks, c.app_argv);
  std::string log_path = (c.run_dir / fmt::format("ncu.r{}.log", k)).string();
  round = {{"round", k}, {"ncu_command", util::shell_join(cmd)}, {"log", fs::relative(log_path, c.out_abs).string()}};
  nlohmann::json asked = nlohmann::json::array();
  for (const auto& p : picks) asked.push_back({{"function", p.function}, {"invocations", p.invocations}});
  round["launches"] = asked;
  auto r = run_logged(cmd, c.cwd, log_path, limit_s);
  round["exit"] = r.exit_code;
  round["wall_s"] = r.wall_s;
  std::error_code ec;
  if (!r.ok()) {
    fs::remove(report + ".ncu-rep", ec); // what a killed ncu leaves is no report
    return r;
  }
  // ncu exits 0 without a report when its filter matched no launch ("No kernels were profiled").
  if (!fs::exists(report + ".ncu-rep", ec))
    throw Error(
        fmt::format("{}: ncu wrote no report in profiling round {}: no launch matched its kernel filter\n{}\n{}",
                    c.run_dir.filename().string(), k, round["ncu_command"].get<std::string>(), log_tail(log_path)));
  RunPages pages =
      export_pages(o.ncu, report + ".ncu-rep", c.run_dir.string(), fmt::format("r{}_", k), PageSet::all, o.timeout_s);
  round["pages"] = nlohmann::json::object();
  for (auto [key, path] :
       {std::pair{"details", pages.details}, {"raw", pages.raw}, {"source", pages.source}, {"session", pages.session}})
    if (!path.empty()) round["pages"][key] = fs::relative(path, c.out_abs).string();
  round["report"] = fs::relative(report + ".ncu-rep", c.out_abs).string();
  return r;
}

// The first round profiles one launch of each hot kernel: without it there is no profile, and
// the error says why, with the command and its log.
[[noreturn]] void first_round_failed(const RoundContext& c, const std::string& run_name, const util::ProcessResult& r,
                                     const std::string& failure, bool budget_binds, const nlohmann::json& round) {
  std::string hint = !r.timed_out ? ""
                     : budget_binds
                         ? fmt::format("; the budget ended before one launch of each hot kernel was profiled (the "
                                       "round had run {:.0f} s): raise --budget or profile fewer configurations (-i)",
                                       r.wall_s)
                         : "; one launch of each hot kernel takes longer than --timeout: raise --timeout";
  throw Error(fmt::format("{}: profiling failed ({}){}\n{}\n{}", run_name, failure, hint,
                          round["ncu_command"].get<std::string>(), log_tail((c.run_dir / "ncu.r1.log").string())));
}

} // namespace

void heavy_pass(RoundContext& c, nlohmann::json& run, const std::vector<std::string>& hot,
                const std::vector<LaunchPick>& picks) {
  const std::string run_name = run["dir"];
  // --launch-cap 0 asks for every launch: one ncu process, no queue.
  bool in_rounds = !picks.empty() && c.o.launch_cap > 0;
  std::vector<PlannedLaunch> queue = in_rounds ? round_queue(picks, c.o.launch_count) : std::vector<PlannedLaunch>{};
  const double program_s = run.value("timing_wall_s", 0.0);
  std::vector<RoundTime> times;
  std::size_t done = 0;
  run["rounds"] = nlohmann::json::array();

  auto summarize = [&] {
    nlohmann::json profiled = nlohmann::json::array();
    for (const auto& p : picks) {
      auto of =
          std::count_if(queue.begin(), queue.end(), [&](const PlannedLaunch& l) { return l.function == p.function; });
      auto kept = std::count_if(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(done),
                                [&](const PlannedLaunch& l) { return l.function == p.function; });
      if (of > 0) profiled.push_back({{"function", p.function}, {"launches", kept}, {"of", of}});
    }
    run["profiled"] = profiled;
  };
  auto cut = [&](int k, const std::string& why, const std::string& detail) {
    summarize();
    run["cut"] = {{"why", why}, {"round", k}, {"detail", detail}};
    c.keep(run);
    c.progress(fmt::format("      {}; {} ({})", cut_text(run), why, detail));
  };

  for (int k = 1;; ++k) {
    std::vector<PlannedLaunch> these;
    double limit = 0;
    bool budget_binds = false;
    if (k == 1) {
      std::size_t first = std::min(queue.size(), picks.size()); // one of each kernel: the queue takes turns
      these.assign(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(first));
      limit = c.first_limit();
      budget_binds = c.budget_left() <= c.o.timeout_s;
    } else {
      if (done == queue.size()) break;
      int remaining = static_cast<int>(queue.size() - done);
      // Later runs keep what their own timing pass and first round need.
      double budget = c.budget_left() - c.runs_after * c.reserve_per_run;
      double left = std::min(c.o.timeout_s, budget);
      budget_binds = budget <= c.o.timeout_s;
      RoundCost cost = estimate_round_cost(program_s, times);
      int n = launches_that_fit(cost, remaining, left);
      if (n == 0) {
        cut(k, budget_binds ? k_budget_ended : "timeout",
            fmt::format("round {} would take about {:.0f} s for one more launch; {:.0f} s {}", k,
                        k_round_margin * (cost.base_s + cost.per_launch_s), std::max(0.0, left),
                        budget_binds ? "left" : "allowed by --timeout"));
        return;
      }
      these.assign(queue.begin() + static_cast<std::ptrdiff_t>(done),
                   queue.begin() + static_cast<std::ptrdiff_t>(done) + n);
      limit = std::min(c.o.timeout_s, c.budget_left());
      budget_binds = c.budget_left() <= c.o.timeout_s;
      c.progress(fmt::format("      {}: round {}, {} more launch{} (about {:.0f} s; {:.0f} s left)", run_name, k, n,
                             n == 1 ? "" : "es", cost.base_s + n * cost.per_launch_s, std::isinf(left) ? limit : left));
    }
    nlohmann::json round;
    const double started = profile_clock_s();
    util::ProcessResult r;
    std::string failure;
    try {
      r = run_round(c, k, hot, these, limit, round);
      if (!r.ok()) failure = r.describe();
    } catch (const Error& e) {
      // An export that fails loses this round only; the first round's failure is rethrown below.
      if (k == 1) throw;
      failure = e.what();
    }
    if (!failure.empty()) {
      if (k == 1) first_round_failed(c, run_name, r, failure, budget_binds, round);
      std::string why = r.timed_out ? (budget_binds ? k_budget_ended : "timeout") : "ncu failed";
      log::warn("{}: round {} of the heavy pass did not finish ({}); see {}", run_name, k, failure,
                round.value("log", std::string()));
      cut(k, why, fmt::format("round {} of {} launch{}: {}", k, these.size(), these.size() == 1 ? "" : "es", failure));
      return;
    }
    double wall = profile_clock_s() - started;
    round["round_s"] = wall; // ncu and the exports: what the next round's estimate uses
    round["elapsed_s"] = c.elapsed();
    run["rounds"].push_back(round);
    times.push_back({static_cast<int>(these.size()), wall});
    done += these.size();
    if (k == 1) c.reserve_per_run = program_s + wall;
    if (in_rounds) summarize();
    c.keep(run);
    if (!in_rounds) break;
  }
}

} // namespace optimas::profile
