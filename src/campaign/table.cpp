#include "campaign/table.hpp"

#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace optimas::campaign {

using nlohmann::json;

namespace {

using util::member;

std::optional<double> number(const json& v) {
  return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
}

json median(std::vector<double> v) {
  if (v.empty()) return nullptr;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

json ratio(double num, double den) {
  return den > 0 ? json(num / den) : json(nullptr);
}

// One (subset, backend, rounds, candidates) row while it is summed.
struct Row {
  std::string diagnostics, backend;
  int rounds = 1, candidates = 1;
  int cells = 0, runs = 0, accepted_runs = 0;
  double seconds = 0, verdicts = 0; // the search's cost: its candidates' seconds, verdicts reached
  std::vector<double> sol;          // per run, its hottest kernel's fraction of the roofline reached
  int aa_runs = 0;                  // A/A runs: the baseline against itself, counted apart from every rate
  double proposed = 0, valid = 0;
  std::vector<double> log_speedups;
  std::map<std::string, std::pair<double, int>> ear; // metric -> (sum, count)
  double hallucinations = 0;
  double prompt_tokens = 0, completion_tokens = 0, cost = 0;
  bool cost_unknown = false;

  void add_run(const json& run) {
    ++runs;
    double best = 0;
    bool any = false;
    const json& variants = member(run, "variants");
    for (const auto& v : variants.is_array() ? variants : json::array()) add_variant(v, best, any);
    accepted_runs += any;
    if (auto f = sol_reached(variants)) sol.push_back(*f);
    const json& nodes = member(member(run, "search"), "nodes");
    for (const auto& n : nodes.is_array() ? nodes : json::array()) {
      seconds += number(member(n, "seconds")).value_or(0);
      verdicts += member(n, "verdict").is_string();
    }
    log_speedups.push_back(std::log(any ? best : 1.0));
  }

  // The hottest kernel's speed of light a run reached: after its fastest accepted variant, or
  // before any variant (the baseline's) when none was accepted; none without a re-profile.
  static std::optional<double> sol_reached(const json& variants) {
    if (!variants.is_array()) return std::nullopt;
    const json* best = nullptr;
    const json* any = nullptr;
    for (const auto& v : variants) { // pointers into `variants` itself, not into a copy
      if (!member(v, "speed_of_light").is_object() || member(v, "speed_of_light").empty()) continue;
      if (!any) any = &v;
      if (member(v, "status") == "accepted" &&
          (!best || number(member(member(v, "measurement"), "speedup")).value_or(0) >
                        number(member(member(*best, "measurement"), "speedup")).value_or(0)))
        best = &v;
    }
    const json* from = best ? best : any;
    if (!from) return std::nullopt;
    const json* hottest = nullptr;
    for (const auto& [kernel, e] : (*from)["speed_of_light"].items())
      if (!hottest || number(member(e, "share")).value_or(0) > number(member(*hottest, "share")).value_or(0))
        hottest = &e;
    return number(member(*hottest, best ? "after" : "before"));
  }

  void add_variant(const json& v, double& best, bool& any) {
    if (member(v, "aa").is_boolean() && v["aa"].get<bool>()) return; // a calibration, not a proposal
    if (number(member(v, "edits")).value_or(0) > 0) {
      ++proposed;
      const json& passed = member(member(v, "validation"), "passed");
      valid += passed.is_boolean() && passed.get<bool>();
    }
    if (member(v, "status") == "accepted")
      if (auto s = number(member(member(v, "measurement"), "speedup")); s && *s > 0) {
        best = any ? std::max(best, *s) : *s;
        any = true;
      }
    const json& ear_json = member(v, "ear");
    for (const char* k : {"evidence_coverage", "localization_agreement", "directional_consistency"})
      if (auto x = number(member(ear_json, k))) {
        ear[k].first += *x;
        ++ear[k].second;
      }
    hallucinations += number(member(ear_json, "hallucinations")).value_or(0);
    const json& usage = member(v, "usage");
    if (usage.is_object()) {
      prompt_tokens += number(member(usage, "input_tokens")).value_or(0);
      completion_tokens += number(member(usage, "output_tokens")).value_or(0);
      if (auto c = number(member(usage, "cost_usd")))
        cost += *c;
      else
        cost_unknown = true;
    }
  }

  json mean_of(const char* metric) const {
    auto it = ear.find(metric);
    return it == ear.end() ? json(nullptr) : json(it->second.first / it->second.second);
  }

  // The geometric mean and a t interval on the logs (deterministic: the local and the Slurm
  // table of one campaign agree to the digit).
  json speedup() const {
    const auto n = log_speedups.size();
    json out = {{"geomean", nullptr}, {"ci_low", nullptr}, {"ci_high", nullptr}, {"n", n}};
    if (n == 0) return out;
    double mean = 0;
    for (double x : log_speedups) mean += x / static_cast<double>(n);
    out["geomean"] = std::exp(mean);
    if (n < 2) return out;
    double ss = 0;
    for (double x : log_speedups) ss += (x - mean) * (x - mean);
    double half = t_quantile_975(static_cast<int>(n) - 1) * std::sqrt(ss / static_cast<double>(n - 1)) /
                  std::sqrt(static_cast<double>(n));
    out["ci_low"] = std::exp(mean - half);
    out["ci_high"] = std::exp(mean + half);
    return out;
  }

  json to_json() const {
    return {{"diagnostics", diagnostics},
            {"backend", backend},
            {"rounds", rounds},
            {"candidates", candidates},
            {"cells", cells},
            {"runs", runs},
            {"aa_runs", aa_runs},
            {"valid_edit_rate", ratio(valid, proposed)},
            {"accepted_rate", ratio(accepted_runs, runs)},
            {"speedup", speedup()},
            {"evidence_coverage", mean_of("evidence_coverage")},
            {"localisation", mean_of("localization_agreement")},
            {"directional_consistency", mean_of("directional_consistency")},
            {"hallucinations", runs ? json(static_cast<long long>(hallucinations)) : json(nullptr)},
            {"tokens",
             {{"prompt", static_cast<long long>(prompt_tokens)},
              {"completion", static_cast<long long>(completion_tokens)}}},
            {"cost_usd", cost_unknown ? json(nullptr) : json(cost)},
            {"seconds_per_run", ratio(seconds, runs)},
            {"verdicts_per_run", ratio(verdicts, runs)},
            {"sol_median", median(sol)}};
  }
};

std::string text(const json& v) {
  return v.is_string() ? v.get<std::string>() : "";
}

} // namespace

double t_quantile_975(int df) {
  static const double k_table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                   2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                   2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return NAN;
  if (df <= 30) return k_table[df - 1];
  // Beyond the table, the Cornish-Fisher expansion around the normal quantile (error < 1e-4).
  const double z = 1.959964, d = df;
  return z + (z * z * z + z) / (4 * d) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * d * d);
}

json compute_table(const std::string& campaign, const std::vector<json>& cells, const RunReader& read_run) {
  std::vector<Row> rows;
  json counts = {{"total", cells.size()}, {"done", 0}, {"failed", 0}, {"pending", 0}};
  for (const auto& c : cells) {
    std::string state = text(member(c, "state"));
    std::string bucket = state == "done" || state == "failed" ? state : "pending";
    counts[bucket] = counts[bucket].get<int>() + 1;
    std::string diagnostics = text(member(c, "diagnostics")), backend = text(member(c, "backend"));
    // A campaign begun before the search's axes has one round and one candidate a cell.
    const int rounds = static_cast<int>(number(member(c, "rounds")).value_or(1));
    const int candidates = static_cast<int>(number(member(c, "candidates")).value_or(1));
    Row* row = nullptr;
    for (auto& r : rows)
      if (r.diagnostics == diagnostics && r.backend == backend && r.rounds == rounds && r.candidates == candidates)
        row = &r;
    if (!row) {
      rows.push_back({});
      row = &rows.back();
      row->diagnostics = diagnostics;
      row->backend = backend;
      row->rounds = rounds;
      row->candidates = candidates;
    }
    ++row->cells;
    if (state != "done" || text(member(c, "run_id")).empty()) continue;
    auto run = read_run(text(member(c, "run_id")));
    if (!run || member(*run, "status") != "finished") continue;
    // An A/A run's "no significant change" is the calibration working, not a backend failing:
    // counted as a run it would pull the accepted rate and the speedup towards 1.
    if (member(*run, "aa") == true)
      ++row->aa_runs;
    else
      row->add_run(*run);
  }
  json out_rows = json::array();
  for (const auto& r : rows) out_rows.push_back(r.to_json());
  return {{"schema", k_table_schema},
          {"campaign", campaign},
          {"generated", util::utc_now_iso8601()},
          {"cells", counts},
          {"rows", out_rows}};
}

namespace {

std::string fixed(const json& v, const char* format) {
  return v.is_number() ? fmt::format(fmt::runtime(format), v.get<double>()) : std::string("-");
}

std::string percent(const json& v) {
  return v.is_number() ? fmt::format("{:.0f}%", 100 * v.get<double>()) : std::string("-");
}

std::string csv_number(const json& v) {
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  return v.is_number() ? fmt::format("{:.6g}", v.get<double>()) : std::string();
}

// A whole number of a table row ("1" where an older table has none).
std::string number_text(const json& v) {
  return v.is_number_integer() ? std::to_string(v.get<long long>()) : std::string("1");
}

// "4", or "4 + 1 A/A" when A/A runs were left out of the row's figures.
std::string runs_text(const json& row) {
  const json& aa = member(row, "aa_runs");
  std::string out = member(row, "runs").dump();
  if (aa.is_number_integer() && aa.get<long long>() > 0) out += fmt::format(" + {} A/A", aa.get<long long>());
  return out;
}

} // namespace

std::string table_markdown(const json& t) {
  std::string out =
      fmt::format("Campaign {}: {} cell(s), {} done, {} failed, {} pending\n\n", text(member(t, "campaign")),
                  member(t["cells"], "total").dump(), member(t["cells"], "done").dump(),
                  member(t["cells"], "failed").dump(), member(t["cells"], "pending").dump());
  out += "| diagnostics | backend | rounds | candidates | cells | runs | valid edits | accepted | speedup (geomean, "
         "95% CI) | evidence coverage | localisation | directional consistency | hallucinations | tokens "
         "(prompt/completion) | cost (USD) | search s/run | verdicts/run | speed of light (median) |\n";
  out +=
      "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
      "---: | ---: |\n";
  for (const auto& r : t["rows"]) {
    const json& s = r["speedup"];
    std::string speedup = fixed(s["geomean"], "{:.3f}x");
    if (s["ci_low"].is_number())
      speedup += fmt::format(" [{}, {}]", fixed(s["ci_low"], "{:.3f}"), fixed(s["ci_high"], "{:.3f}"));
    out += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {}/{} | {} | {} | {} | {} |\n",
        text(r["diagnostics"]), text(r["backend"]), number_text(member(r, "rounds")),
        number_text(member(r, "candidates")), r["cells"].dump(), runs_text(r), percent(r["valid_edit_rate"]),
        percent(r["accepted_rate"]), speedup, percent(r["evidence_coverage"]), percent(r["localisation"]),
        percent(r["directional_consistency"]), r["hallucinations"].is_null() ? "-" : r["hallucinations"].dump(),
        r["tokens"]["prompt"].dump(), r["tokens"]["completion"].dump(), fixed(r["cost_usd"], "{:.4f}"),
        fixed(member(r, "seconds_per_run"), "{:.1f}"), fixed(member(r, "verdicts_per_run"), "{:.1f}"),
        percent(member(r, "sol_median")));
  }
  return out;
}

std::string table_csv(const json& t) {
  std::string out = "diagnostics,backend,cells,runs,valid_edit_rate,accepted_rate,speedup_geomean,speedup_ci_low,"
                    "speedup_ci_high,speedup_n,evidence_coverage,localisation,directional_consistency,hallucinations,"
                    "prompt_tokens,completion_tokens,cost_usd,aa_runs,rounds,candidates,seconds_per_run,"
                    "verdicts_per_run,sol_median\n";
  for (const auto& r : t["rows"]) {
    const json& s = r["speedup"];
    std::vector<std::string> fields = {text(r["diagnostics"]),
                                       text(r["backend"]),
                                       csv_number(r["cells"]),
                                       csv_number(r["runs"]),
                                       csv_number(r["valid_edit_rate"]),
                                       csv_number(r["accepted_rate"]),
                                       csv_number(s["geomean"]),
                                       csv_number(s["ci_low"]),
                                       csv_number(s["ci_high"]),
                                       csv_number(s["n"]),
                                       csv_number(r["evidence_coverage"]),
                                       csv_number(r["localisation"]),
                                       csv_number(r["directional_consistency"]),
                                       csv_number(r["hallucinations"]),
                                       csv_number(r["tokens"]["prompt"]),
                                       csv_number(r["tokens"]["completion"]),
                                       csv_number(r["cost_usd"]),
                                       csv_number(member(r, "aa_runs")),
                                       number_text(member(r, "rounds")),
                                       number_text(member(r, "candidates")),
                                       csv_number(member(r, "seconds_per_run")),
                                       csv_number(member(r, "verdicts_per_run")),
                                       csv_number(member(r, "sol_median"))};
    out += util::join(fields, ",") + "\n";
  }
  return out;
}

} // namespace optimas::campaign
