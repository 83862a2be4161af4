#include "store/memory.hpp"

#include "store/journal.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
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

// The memories of run `id`, whose run.json is `run`: its accepted variants' edited kernels.
std::vector<Memory> memories_of(const RunStore& store, const std::string& id, const json& run) {
  std::vector<Memory> out;
  if (!run.is_object() || run.value("aa", false) || !run["variants"].is_array()) return out;
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
    // Another run's record names its folder: a diff is read only from inside that run.
    const auto diff = util::resolve_inside(dir, fs::path(util::member_string(v, "dir")) / "diff.patch");
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
      if (diff && fs::is_regular_file(*diff)) mem.diff = first_lines(util::read_file(diff->string()), k_diff_lines);
      out.push_back(std::move(mem));
    }
  }
  return out;
}

} // namespace

std::vector<Memory> run_memories(const RunStore& store, const std::string& id) {
  return memories_of(store, id, store.load_run(id));
}

std::vector<Memory> collect_memories(const RunStore& store, const std::string& except, const std::string& campaign) {
  std::vector<Memory> out;
  for (const auto& id : store.run_ids()) {
    if (id == except) continue;
    // Memory never fails a run: a run folder that cannot be read (broken, or being written by a
    // run of its own) is left out, and runs list names the broken ones.
    try {
      const json run = store.load_run(id);
      if (!campaign.empty() && util::member_string(util::member(run, "campaign"), "id") == campaign) continue;
      add_memories(out, memories_of(store, id, run));
    } catch (const std::exception& e) {
      log::debug("memory: run {} left out: {}", id, plain_message(e));
    }
  }
  return out;
}

nlohmann::ordered_json memory_to_json(const Memory& m) {
  return {{"kernel", m.kernel},          {"features", m.features}, {"speedup", m.speedup},
          {"ci", {m.ci_low, m.ci_high}}, {"edits", m.edits},       {"diff", m.diff},
          {"run_id", m.run_id},          {"app", m.app},           {"variant", m.variant}};
}

Memory memory_from_json(const json& j) {
  if (!j.is_object()) throw Error("a memory is an object");
  auto text = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_string()) throw Error(fmt::format("a memory has no \"{}\" text", key));
    return j[key].get<std::string>();
  };
  auto texts = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_array()) throw Error(fmt::format("a memory has no \"{}\" list", key));
    std::vector<std::string> out;
    for (const auto& x : j[key]) {
      if (!x.is_string()) throw Error(fmt::format("a memory's \"{}\" holds a value that is not text", key));
      out.push_back(x.get<std::string>());
    }
    return out;
  };
  Memory m;
  m.kernel = text("kernel");
  m.run_id = text("run_id");
  m.app = text("app");
  m.variant = text("variant");
  m.diff = text("diff");
  m.features = texts("features");
  std::sort(m.features.begin(), m.features.end());
  m.edits = texts("edits");
  if (!j.contains("speedup") || !j["speedup"].is_number() || !(j["speedup"].get<double>() > 0))
    throw Error("a memory has no positive \"speedup\"");
  m.speedup = j["speedup"];
  const json& ci = util::member(j, "ci");
  if (ci.is_array() && ci.size() == 2 && ci[0].is_number() && ci[1].is_number()) {
    m.ci_low = ci[0];
    m.ci_high = ci[1];
  }
  if (m.features.empty()) throw Error("a memory has no features to be recalled by");
  return m;
}

std::vector<Memory> corpus_memories(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot read the corpus");
  std::vector<Memory> out;
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (util::trim(line).empty()) continue;
    json record = json::parse(line, nullptr, false);
    if (!record.is_object()) throw Error(fmt::format("{}:{}: not a corpus record (a JSON object per line)", path, n));
    const json& memory = util::member(record, "memory");
    if (memory.is_null()) continue;
    if (!memory.is_array()) throw Error(fmt::format("{}:{}: \"memory\" is not a list", path, n));
    std::vector<Memory> mine;
    for (const auto& m : memory) {
      try {
        mine.push_back(memory_from_json(m));
      } catch (const Error& e) {
        throw Error(fmt::format("{}:{}: {}", path, n, e.what()));
      }
    }
    add_memories(out, mine);
  }
  return out;
}

void add_memories(std::vector<Memory>& memories, const std::vector<Memory>& more) {
  for (const auto& m : more) {
    bool known = std::any_of(memories.begin(), memories.end(), [&](const Memory& x) {
      return x.run_id == m.run_id && x.variant == m.variant && x.kernel == m.kernel;
    });
    if (!known) memories.push_back(m);
  }
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
