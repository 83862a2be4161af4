#include "store/corpus.hpp"

#include "store/memory.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/secrets.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <utility>

namespace optimas::store {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// Beyond this a run time in "{:.4g}" would switch to exponent notation, which reads poorly.
constexpr double k_plain_ms_limit = 1e4;

const json k_none; // a null to stand for what a failed run lacks

using util::member;

// Strings as they are, numbers as text, anything else null: run.json fields may be missing.
ordered_json text_or_null(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number() || j.is_boolean()) return j.dump();
  return nullptr;
}

ordered_json number_or_null(const json& j) {
  if (j.is_number()) return j.get<double>();
  return nullptr;
}

std::string string_or_empty(const json& j) {
  return j.is_string() ? j.get<std::string>() : std::string();
}

// "<id>/<relative path>" of a file the loop wrote inside the run folder.
ordered_json path_in_run(const std::string& id, const json* variant, const char* key) {
  if (!variant) return nullptr;
  std::string rel = string_or_empty(member(*variant, key));
  if (rel.empty()) return nullptr;
  return id + "/" + rel;
}

// "kernel: first sentence of rationale [PC1,RF2]"
std::string applied_line(const json& edit) {
  if (edit.is_string()) return edit.get<std::string>();
  std::string line = string_or_empty(member(edit, "kernel"));
  std::string rationale = util::first_sentence(string_or_empty(member(edit, "rationale")));
  // Rationales often start with the kernel's name already ("triad_kernel: ...").
  if (!line.empty() && rationale.rfind(line + ": ", 0) == 0) rationale.erase(0, line.size() + 2);
  if (!rationale.empty()) line += line.empty() ? rationale : ": " + rationale;
  const json& evidence = member(edit, "evidence");
  if (evidence.is_array() && !evidence.empty()) {
    std::vector<std::string> ids;
    for (const auto& e : evidence)
      if (e.is_string()) ids.push_back(e.get<std::string>());
    if (!ids.empty()) line += (line.empty() ? "[" : " [") + util::join(ids, ",") + "]";
  }
  return line;
}

// "suggestion (reason)"
std::string ignored_line(const json& item) {
  if (item.is_string()) return item.get<std::string>();
  std::string line = string_or_empty(member(item, "suggestion"));
  std::string reason = string_or_empty(member(item, "reason"));
  if (!reason.empty()) line += line.empty() ? reason : " (" + reason + ")";
  return line;
}

ordered_json lines_of(const json* variant, const char* key, std::string (*line)(const json&)) {
  ordered_json out = ordered_json::array();
  if (!variant) return out;
  const json& items = member(*variant, key);
  if (!items.is_array()) return out;
  for (const auto& item : items) {
    std::string s = line(item);
    if (!s.empty()) out.push_back(std::move(s));
  }
  return out;
}

std::string errors_text(const json* variant) {
  if (!variant) return {};
  const json& errors = member(*variant, "errors");
  if (errors.is_string()) return errors.get<std::string>();
  if (errors.is_array()) {
    std::vector<std::string> parts;
    for (const auto& e : errors)
      if (e.is_string()) parts.push_back(e.get<std::string>());
    return util::join(parts, "\n");
  }
  return {};
}

// Why a run has no measured variant to show: the run's error, then the last variant's status,
// reason and build or validation errors.
std::string failure_text(const json& run, const json* last) {
  std::vector<std::string> parts;
  std::string run_error = string_or_empty(member(run, "error"));
  if (!run_error.empty()) parts.push_back(run_error);
  if (last) {
    std::string key = string_or_empty(member(*last, "key"));
    std::string status = string_or_empty(member(*last, "status"));
    std::string reason = string_or_empty(member(*last, "reason"));
    std::string line = "variant " + (key.empty() ? std::string("(no key)") : key);
    if (!status.empty()) line += " " + status;
    if (!reason.empty()) line += ": " + reason;
    parts.push_back(line);
    std::string errors = errors_text(last);
    if (!errors.empty()) parts.push_back(errors);
  }
  if (parts.empty()) {
    std::string status = string_or_empty(member(run, "status"));
    parts.push_back("no variant was produced (run status: " + (status.empty() ? std::string("unknown") : status) + ")");
  }
  return util::join(parts, "\n");
}

ordered_json runtime_or_null(const json& ms) {
  if (!ms.is_number()) return nullptr;
  return format_runtime_ms(ms.get<double>());
}

// One record. `config` empty with `failed` set: the record of a run without a measured variant.
ordered_json make_record(const std::string& id, const json& run, const json* variant, const std::string& config,
                         bool failed) {
  const json& baseline = member(run, "baseline");
  const json& base_config = failed ? k_none : member(member(baseline, "configs"), config);
  const json& measured =
      failed || !variant ? k_none : member(member(member(*variant, "measurement"), "configs"), config);
  // Per-configuration statistics for measured records; the run's overall ones for a failure.
  const json& stats = failed ? run : measured;
  const json& ci = member(stats, "ci");
  bool has_ci = ci.is_array() && ci.size() == 2;

  ordered_json r;
  // The paper's schema, in its order.
  r["App"] = text_or_null(member(run, "app"));
  r["Prompt"] = path_in_run(id, variant, "prompt");
  r["LLM"] = text_or_null(member(run, "model"));
  r["HW"] = text_or_null(member(run, "hw"));
  r["SW"] = text_or_null(member(run, "sw"));
  r["Compile"] = text_or_null(member(baseline, "compile"));
  r["Exec"] = text_or_null(member(base_config, "command"));
  r["Opt_Code"] = path_in_run(id, variant, "source");
  r["Applied"] = lines_of(variant, "applied_edits", applied_line);
  r["Ignored"] = lines_of(variant, "ignored", ignored_line);
  r["Errors"] = failed ? failure_text(run, variant) : errors_text(variant);
  r["Base_RT"] = runtime_or_null(member(measured, "base_ms"));
  r["Opt_RT"] = runtime_or_null(member(measured, "variant_ms"));
  // Ours.
  r["run_id"] = id;
  r["variant"] = variant ? text_or_null(member(*variant, "key")) : ordered_json(nullptr);
  r["config"] = failed ? ordered_json(nullptr) : ordered_json(config);
  const json& held_out = member(base_config, "held_out");
  r["held_out"] = held_out.is_boolean() ? ordered_json(held_out.get<bool>()) : ordered_json(nullptr);
  r["backend"] = text_or_null(member(run, "backend"));
  r["aa"] = member(run, "aa") == true;
  r["diagnostics"] = text_or_null(member(run, "diagnostics"));
  r["verdict"] = text_or_null(member(stats, "verdict"));
  r["speedup"] = number_or_null(member(stats, "speedup"));
  r["ci_low"] = has_ci ? number_or_null(ci[0]) : ordered_json(nullptr);
  r["ci_high"] = has_ci ? number_or_null(ci[1]) : ordered_json(nullptr);
  r["p_value"] = number_or_null(member(stats, "p_value"));
  r["status"] = text_or_null(variant ? member(*variant, "status") : member(run, "status"));
  const json& ear = variant ? member(*variant, "ear") : k_none;
  r["ear"] = ear.is_object() ? ordered_json(ear) : ordered_json(nullptr);
  const json& sol = variant ? member(*variant, "speed_of_light") : k_none;
  r["speed_of_light"] = sol.is_object() ? ordered_json(sol) : ordered_json(nullptr);
  r["sha256"] = text_or_null(member(run, "sha256"));
  return r;
}

bool is_measured(const json& variant) {
  const json& configs = member(member(variant, "measurement"), "configs");
  return configs.is_object() && !configs.empty();
}

} // namespace

std::string format_runtime_ms(double ms) {
  if (std::abs(ms) >= k_plain_ms_limit) return fmt::format("{:.0f}ms", ms);
  return fmt::format("{:.4g}ms", ms);
}

std::vector<ordered_json> corpus_records(const std::string& run_id, const json& run, bool all_variants) {
  std::vector<const json*> chosen;
  const json* last = nullptr;
  const json& variants = member(run, "variants");
  if (variants.is_array()) {
    const json& best = member(run, "best");
    for (const auto& v : variants) {
      if (!v.is_object()) continue;
      last = &v;
      if (!is_measured(v)) continue;
      if (all_variants || (best.is_string() && member(v, "key") == best)) chosen.push_back(&v);
    }
  }
  // A repeated key in run.json would otherwise give the best variant twice.
  if (!all_variants && chosen.size() > 1) chosen.erase(chosen.begin(), chosen.end() - 1);

  std::vector<ordered_json> records;
  for (const json* v : chosen)
    for (const auto& [config, unused] : member(member(*v, "measurement"), "configs").items())
      records.push_back(make_record(run_id, run, v, config, false));
  if (records.empty()) records.push_back(make_record(run_id, run, last, "", true));
  return records;
}

std::size_t export_corpus(const RunStore& store, const CorpusOptions& options, std::ostream& out) {
  std::vector<std::pair<std::string, json>> runs;
  if (options.runs.empty()) {
    std::vector<std::string> aa;
    for (const auto& id : store.run_ids()) {
      try {
        json run = store.load_run(id);
        // An A/A run's "no significant change" is a calibration, not an optimization attempt:
        // among the records it would skew every rate computed from the corpus.
        if (member(run, "aa") == true)
          aa.push_back(id);
        else
          runs.emplace_back(id, std::move(run));
      } catch (const Error& e) {
        log::warn("{}; run left out of the corpus", e.what());
      }
    }
    // A run folder whose run.json is gone (a copy cut short, a file deleted) is no run to export,
    // and says so rather than vanish from the corpus.
    for (const auto& id : store.lost_runs()) log::warn("{}; run left out of the corpus", store.lost_run_problem(id));
    if (!aa.empty())
      log::info("{} A/A run(s) left out of the corpus (name one with --run to export it, marked \"aa\": true): {}",
                aa.size(), util::join(aa, ", "));
    // Oldest first, so appending new runs to an exported corpus keeps the earlier lines in place.
    std::stable_sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) {
      std::string sa = string_or_empty(member(a.second, "started"));
      std::string sb = string_or_empty(member(b.second, "started"));
      return sa != sb ? sa < sb : a.first < b.first;
    });
  } else {
    std::set<std::string> seen;
    for (const auto& name : options.runs) {
      std::string id = store.resolve(name);
      if (seen.insert(id).second) runs.emplace_back(id, store.load_run(id));
    }
  }

  std::size_t written = 0;
  for (const auto& [id, run] : runs) {
    // An accepted variant's records carry its memories (store/memory.hpp), so that the corpus can
    // serve another machine's runs as worked examples (optimas run --memory-file).
    std::vector<Memory> memories;
    try {
      memories = run_memories(store, id);
    } catch (const std::exception& e) {
      log::warn("run {}: its accepted edits are exported without their memory: {}", id, plain_message(e));
    }
    for (auto record : corpus_records(id, run, options.all_variants)) {
      if (record["status"] == "accepted") {
        ordered_json mine = ordered_json::array();
        for (const auto& m : memories)
          if (record["variant"] == m.variant) mine.push_back(memory_to_json(m));
        if (!mine.empty()) record["memory"] = std::move(mine);
      }
      out << util::redact(record.dump(-1, ' ', false, ordered_json::error_handler_t::replace)) << '\n';
      ++written;
    }
  }
  out.flush();
  if (!out) throw Error(fmt::format("cannot write the corpus of {} (disk full or closed output?)", store.root()));
  return written;
}

std::size_t export_corpus_file(const RunStore& store, const CorpusOptions& options, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError(fmt::format("-o {}: is a folder; name the file to write (corpus.jsonl)", path));
  // Written beside the file and renamed over it; whatever fails on the way, nothing is left.
  std::string tmp = path + ".tmp";
  std::ofstream f(tmp);
  if (!f) throw Error(path + ": cannot write");
  std::size_t n = 0;
  try {
    n = export_corpus(store, options, f);
    f.close();
    if (!f) throw Error(path + ": write failed (disk full?)");
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw Error(fmt::format("{}: cannot replace it ({})", path, ec.message()));
  } catch (...) {
    std::filesystem::remove(tmp, ec);
    throw;
  }
  return n;
}

} // namespace optimas::store
