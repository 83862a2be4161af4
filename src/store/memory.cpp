#include "store/memory.hpp"

#include "store/journal.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace optimas::store {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::size_t k_diff_lines = 40;

std::string without_prefix(std::string s) {
  return s.rfind("stall_", 0) == 0 ? s.substr(6) : s;
}

double number(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : -1;
}

std::string first_lines(const std::string& text, std::size_t n) {
  std::istringstream in(text);
  std::string out, line;
  std::size_t k = 0;
  while (std::getline(in, line)) {
    if (k++ == n) return out + "... (cut)\n";
    out += line + "\n";
  }
  return out;
}

std::string base_name(const std::string& kernel) {
  return kernel.substr(0, kernel.find('<'));
}

} // namespace

std::vector<std::string> kernel_features(const json& kernel) {
  std::set<std::string> f;
  const json& roofline = util::member(kernel, "roofline");
  if (roofline.contains("class") && roofline["class"].is_string())
    f.insert("class:" + roofline["class"].get<std::string>());
  const json& stalls = util::member(kernel, "stalls");
  std::string top;
  double most = 0;
  for (const auto& [name, count] : util::member(stalls, "kernel_stalls").items())
    if (count.is_number() && count.get<double>() > most) {
      most = count.get<double>();
      top = name;
    }
  if (!top.empty()) f.insert("stall:" + without_prefix(top));
  for (const auto& line : util::member(stalls, "lines"))
    if (line.is_object() && line.contains("stall") && line["stall"].is_string())
      f.insert("line:" + without_prefix(line["stall"].get<std::string>()));
  const json& access = util::member(roofline, "access");
  if (number(access, "global_load_sectors_per_request") > 4) f.insert("access:uncoalesced_loads");
  if (number(access, "global_store_sectors_per_request") > 4) f.insert("access:uncoalesced_stores");
  if (number(access, "local_load_requests") > 0 || number(access, "local_store_requests") > 0)
    f.insert("access:local_memory");
  if (number(access, "shared_bank_conflicts") > 0) f.insert("access:bank_conflicts");
  return {f.begin(), f.end()};
}

namespace {

// The memories of one run (its accepted variants' edited kernels), appended to `out`.
void memories_of(const RunStore& store, const std::string& id, std::vector<Memory>& out) {
  const json run = store.load_run(id);
  if (!run.is_object() || run.value("aa", false) || !run["variants"].is_array()) return;
  const fs::path dir = store.run_dir(id);
  json diagnostics;
  for (const auto& v : run["variants"]) {
    if (!v.is_object() || v.value("status", "") != "accepted" || !v["measurement"].is_object()) continue;
    if (diagnostics.is_null()) {
      const fs::path d = dir / "diagnostics.json";
      diagnostics = fs::exists(d) ? read_json(d.string()) : json::object();
    }
    // The kernels its applied edits touched, each with its features where the analysis has it.
    std::map<std::string, std::vector<std::string>> edits;
    for (const auto& e : util::member(v, "applied_edits")) {
      if (!e.is_object()) continue;
      std::string what = fmt::format("{} citing {}", e.value("kernel", "?"),
                                     util::join(e.value("evidence", std::vector<std::string>{}), ", "));
      if (e.contains("rule") && e["rule"].is_string()) what += " (rule " + e["rule"].get<std::string>() + ")";
      edits[base_name(e.value("kernel", ""))].push_back(what + ": " + util::first_sentence(e.value("rationale", "")));
    }
    const json& m = v["measurement"];
    const fs::path diff = dir / v.value("dir", "") / "diff.patch";
    for (const auto& [kernel, lines] : edits) {
      Memory mem;
      for (const auto& k : util::member(diagnostics, "kernels"))
        if (k.is_object() && base_name(k.value("kernel", "")) == kernel) mem.features = kernel_features(k);
      if (mem.features.empty()) continue; // nothing to compare it by
      mem.run_id = id;
      mem.app = run.value("app", "");
      mem.variant = v.value("key", "");
      mem.kernel = kernel;
      mem.speedup = m.value("speedup", 0.0);
      if (m.contains("ci") && m["ci"].is_array() && m["ci"].size() == 2 && m["ci"][0].is_number() &&
          m["ci"][1].is_number()) {
        mem.ci_low = m["ci"][0];
        mem.ci_high = m["ci"][1];
      }
      mem.edits = lines;
      if (fs::exists(diff)) mem.diff = first_lines(util::read_file(diff.string()), k_diff_lines);
      out.push_back(std::move(mem));
    }
  }
}

} // namespace

std::vector<Memory> collect_memories(const RunStore& store, const std::string& except) {
  std::vector<Memory> out;
  for (const auto& id : store.run_ids()) {
    if (id == except) continue;
    // Memory never fails a run: a run folder that cannot be read (broken, or being written by a
    // run of its own) is left out, and runs list names the broken ones.
    try {
      memories_of(store, id, out);
    } catch (const std::exception& e) {
      log::debug("memory: run {} left out: {}", id, e.what());
    }
  }
  return out;
}

std::vector<Recall> recall(const std::vector<Memory>& memories, const json& diagnostics, std::size_t n) {
  std::vector<Recall> best; // one per memory: the kernel it resembles most
  for (const auto& mem : memories) {
    std::optional<Recall> top;
    for (const auto& k : util::member(diagnostics, "kernels")) {
      if (!k.is_object()) continue;
      auto mine = kernel_features(k);
      std::vector<std::string> shared, all;
      std::set_intersection(mine.begin(), mine.end(), mem.features.begin(), mem.features.end(),
                            std::back_inserter(shared));
      std::set_union(mine.begin(), mine.end(), mem.features.begin(), mem.features.end(), std::back_inserter(all));
      bool anchored = std::any_of(shared.begin(), shared.end(), [](const std::string& f) {
        return f.rfind("class:", 0) == 0 || f.rfind("stall:", 0) == 0;
      });
      if (!anchored || all.empty()) continue;
      double score = static_cast<double>(shared.size()) / static_cast<double>(all.size());
      if (!top || score > top->score) top = Recall{mem, base_name(k.value("kernel", "")), shared, score};
    }
    if (top) best.push_back(*top);
  }
  std::sort(best.begin(), best.end(), [](const Recall& a, const Recall& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.memory.speedup != b.memory.speedup) return a.memory.speedup > b.memory.speedup;
    if (a.memory.run_id != b.memory.run_id) return a.memory.run_id < b.memory.run_id;
    return a.memory.variant + a.memory.kernel < b.memory.variant + b.memory.kernel;
  });
  if (best.size() > n) best.resize(n);
  return best;
}

std::string render_recall(const std::vector<Recall>& recalled) {
  if (recalled.empty()) return "";
  std::string out = "\n\n## Worked examples from earlier runs\n\n"
                    "Accepted edits of earlier runs on kernels whose evidence resembles a kernel here, with what they "
                    "measured. They are examples of what worked, not edits to copy: this code differs.\n\n";
  for (const auto& r : recalled) {
    const auto& m = r.memory;
    std::vector<std::string> reasons;
    for (const auto& f : r.shared)
      reasons.push_back(f.substr(f.find(':') + 1) + (f.rfind("line:", 0) == 0 ? " on a line" : ""));
    out += fmt::format("### {} in {} (run {}, variant {}): {:.3f}x [{:.3f}, {:.3f}]\n\n", m.kernel, m.app,
                       m.run_id.substr(0, 8), m.variant, m.speedup, m.ci_low, m.ci_high);
    out += fmt::format("Shown because: {} (as {} here).\n\n", util::join(reasons, ", "), r.for_kernel);
    for (const auto& e : m.edits) out += "- " + e + "\n";
    if (!m.diff.empty()) out += "\n```diff\n" + m.diff + "```\n";
    out += "\n";
  }
  return out;
}

} // namespace optimas::store
