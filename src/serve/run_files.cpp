#include "serve/run_files.hpp"

#include "analysis/diagnostics.hpp"
#include "analysis/json.hpp"
#include "profile/importer.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace optimas::serve {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json read_json_file(const store::RunStore& store, const std::string& id, const std::string& relative,
                    std::vector<std::string>& problems) {
  auto text = read_run_file(store, id, relative);
  if (!text) return nullptr;
  try {
    return util::parse_json(*text);
  } catch (const json::exception& e) {
    problems.push_back(fmt::format("{}/{}: {}", id, relative, plain_message(e)));
    return nullptr;
  }
}

std::vector<json> read_jsonl(const store::RunStore& store, const std::string& id, const std::string& relative,
                             std::vector<std::string>& problems) {
  std::vector<json> out;
  auto text = read_run_file(store, id, relative);
  if (!text) return out;
  std::istringstream in(*text);
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    try {
      out.push_back(util::parse_json(line));
    } catch (const json::exception&) {
      problems.push_back(fmt::format("{}/{}:{}: not a JSON line, skipped", id, relative, n));
    }
  }
  return out;
}

// The variant's re-profile analysed like the baseline's, so its roofline point can be drawn
// beside the baseline's. Null when there is none; a broken one is a problem, not an error.
json analyse_reprofile(const store::RunStore& store, const std::string& id, const std::string& dir,
                       const json& diagnostics, std::vector<std::string>& problems) {
  auto complete = path_in_run(store, id, dir + "/profile/.complete");
  if (!complete || !fs::exists(*complete)) return nullptr;
  try {
    analysis::AnalysisOptions o;
    if (diagnostics.is_object()) {
      o.config = diagnostics.value("config", "");
      if (diagnostics.contains("options") && diagnostics["options"].is_object())
        o.alpha = diagnostics["options"].value("alpha", o.alpha);
    }
    auto profile = profile::import_profile(complete->parent_path().string());
    return analysis::to_json(analysis::analyze(profile, o));
  } catch (const Error& e) {
    problems.push_back(fmt::format("{}/{}/profile: {}", id, dir, e.what()));
    return nullptr;
  }
}

} // namespace

std::optional<fs::path> path_in_run(const store::RunStore& store, const std::string& id, const std::string& relative) {
  if (!store::is_valid_run_id(id) || relative.empty() || relative.find('\0') != std::string::npos) return std::nullopt;
  fs::path rel(relative);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) return std::nullopt;
  for (const auto& part : rel)
    if (part == ".." || part == ".") return std::nullopt;
  std::error_code ec;
  fs::path root = fs::canonical(store.root(), ec);
  if (ec) return std::nullopt;
  fs::path run = fs::canonical(store.run_dir(id), ec);
  if (ec || !util::lies_inside(root, run) || run == root) return std::nullopt;
  return util::resolve_inside(run, rel);
}

std::optional<std::string> read_run_file(const store::RunStore& store, const std::string& id,
                                         const std::string& relative) {
  auto path = path_in_run(store, id, relative);
  std::error_code ec;
  if (!path || !fs::is_regular_file(*path, ec)) return std::nullopt;
  std::ifstream in(*path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text(k_max_file_bytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (in.peek() != std::char_traits<char>::eof())
    text += fmt::format("\n[... cut at {} MiB]\n", k_max_file_bytes >> 20);
  return text;
}

RunData load_run_data(const store::RunStore& store, const std::string& id_or_prefix) {
  RunData d;
  d.id = store.resolve(id_or_prefix);
  d.run = store.load_run(d.id);
  d.diagnostics = read_json_file(store, d.id, "diagnostics.json", d.problems);
  // The profile names sources by the paths they were compiled from; the snapshot holds them by name.
  for (const auto& k : d.diagnostics.is_object() ? d.diagnostics.value("kernels", json::array()) : json::array()) {
    const json& stalls = k.is_object() && k.contains("stalls") ? k["stalls"] : json();
    for (const auto& l : stalls.is_object() ? stalls.value("lines", json::array()) : json::array()) {
      std::string name = fs::path(l.is_object() ? l.value("file", "") : "").filename().string();
      if (name.empty() || d.sources.count(name)) continue;
      if (auto text = read_run_file(store, d.id, "snapshot/" + name)) d.sources[name] = *text;
    }
  }
  const json& variants = d.run.contains("variants") && d.run["variants"].is_array() ? d.run["variants"] : json::array();
  for (const auto& v : variants) {
    VariantData vd;
    vd.result = v;
    std::string dir = v.is_object() && v.contains("dir") && v["dir"].is_string() ? v["dir"].get<std::string>() : "";
    if (!dir.empty() && path_in_run(store, d.id, dir)) {
      vd.reply = read_json_file(store, d.id, dir + "/reply.json", d.problems);
      vd.replies = read_json_file(store, d.id, dir + "/replies.json", d.problems);
      vd.build = read_json_file(store, d.id, dir + "/build.json", d.problems);
      vd.diff = read_run_file(store, d.id, dir + "/diff.patch").value_or("");
      vd.samples = read_jsonl(store, d.id, dir + "/measurements.jsonl", d.problems);
      vd.after = analyse_reprofile(store, d.id, dir, d.diagnostics, d.problems);
    } else if (!dir.empty()) {
      d.problems.push_back(fmt::format("{}: variant folder '{}' is outside the run, not read", d.id, dir));
    }
    d.variants.push_back(std::move(vd));
  }
  return d;
}

json to_json(const RunData& d) {
  json variants = json::array();
  for (const auto& v : d.variants)
    variants.push_back({{"result", v.result},
                        {"reply", v.reply},
                        {"replies", v.replies},
                        {"build", v.build},
                        {"diff", v.diff},
                        {"samples", v.samples},
                        {"after", v.after}});
  return {{"schema", "optimas.dashboard.run/1"},
          {"id", d.id},
          {"run", d.run},
          {"diagnostics", d.diagnostics},
          {"sources", d.sources},
          {"variants", variants},
          {"problems", d.problems}};
}

} // namespace optimas::serve
