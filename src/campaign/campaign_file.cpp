#include "campaign/campaign_file.hpp"

#include "analysis/diagnostics.hpp"
#include "campaign/cells.hpp"
#include "config/options.hpp"
#include "config/yaml_reader.hpp"
#include "llm/backend.hpp"
#include "util/error.hpp"
#include "util/names.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

namespace optimas::campaign {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_keys[] = {"campaign", "applications", "diagnostics", "backends",    "repeats",
                                  "rounds",   "iterations",   "candidates",  "run_options", "runs_dir",
                                  "gpus",     "time_limit",   "requeue",     "launcher"};
constexpr const char* k_app_keys[] = {"path", "configs"};
// The bounds of the file's whole numbers (rounds and candidates are the option table's rows).
constexpr config::Range k_repeats{1, 100}, k_gpus{0, 1024}, k_requeue{0, 100};
constexpr const char* k_backend_keys[] = {"model", "options", "name"};
constexpr const char* k_launcher_keys[] = {"name", "options"};
// What the campaign passes to every cell's `optimas run` itself (cells.cpp).
constexpr const char* k_cell_flags[] = {"--app",        "-c",         "--config", "--runs-dir",   "--diagnostics",
                                        "-m",           "--model",    "--option", "--iterations", "--rounds",
                                        "--candidates", "--campaign", "--cell",   "--seed",       "--measure-configs",
                                        "--resume",     "--work-dir"};

// Reads one campaign file; every failure names the node's line.
class Reader : public config::YamlReader {
public:
  using YamlReader::YamlReader;

  std::string text(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar()) fail(n, what + " must be a single value");
    return n.Scalar();
  }

  // A whole number within `r` (docs/campaigns.md lists each key's bounds).
  int count(const YAML::Node& n, const std::string& what, config::Range r) const {
    std::string t = text(n, what);
    char* end = nullptr;
    long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || v < r.min || v > r.max)
      fail(n, fmt::format("{} must be a whole number from {} to {}, got \"{}\"", what, r.min, r.max, t));
    return static_cast<int>(v);
  }

  // A name that becomes part of a cell's id or a file name, checked at its own line.
  std::string name(const YAML::Node& n, const std::string& what) const {
    std::string t = text(n, what);
    if (std::string why = util::name_problem(t); !why.empty()) fail(n, what + " " + why);
    return t;
  }

  // An axis of the campaign: one whole number, or a list of different ones.
  std::vector<int> axis(const YAML::Node& n, const std::string& what, config::Range r) const {
    if (!n.IsSequence()) return {count(n, what, r)};
    std::vector<int> out;
    for (const auto& x : n) {
      int v = count(x, what, r);
      if (std::find(out.begin(), out.end(), v) != out.end()) fail(x, fmt::format("{} lists {} twice", what, v));
      out.push_back(v);
    }
    if (out.empty()) fail(n, what + " lists no value");
    return out;
  }

  std::vector<YAML::Node> list(const YAML::Node& n, const std::string& what) const {
    if (!n.IsSequence()) fail(n, what + " must be a list");
    return {n.begin(), n.end()};
  }

  std::map<std::string, std::string> options(const YAML::Node& n, const std::string& what) const {
    if (!n.IsMap()) fail(n, what + " must be a mapping of option names to values");
    std::map<std::string, std::string> out;
    for (const auto& kv : n) {
      std::string key = text(kv.first, what + " key");
      if (!out.emplace(key, text(kv.second, fmt::format("{} {}", what, key))).second)
        fail(kv.first, fmt::format("\"{}\" is given twice in {}", key, what));
    }
    return out;
  }

  // A usage error from a check we call (launcher_from, backend_from, ...) at the node it is about.
  template <typename F> auto at(const YAML::Node& n, F&& f) const {
    try {
      return f();
    } catch (const ConfigError&) {
      throw;
    } catch (const UsageError& e) {
      fail(n, e.what());
    }
  }
};

Application read_application(const Reader& rd, const YAML::Node& n, const fs::path& base) {
  Application a;
  if (n.IsMap()) {
    rd.check_keys(n, k_app_keys, "an application");
    if (!n["path"]) rd.fail(n, "an application needs path: (the folder holding its optimas.yml)");
  }
  // Constructed, not assigned: assigning a yaml-cpp node overwrites the node it refers to.
  const YAML::Node path = n.IsMap() ? n["path"] : n;
  if (n.IsMap()) {
    if (n["configs"])
      for (const auto& c : rd.list(n["configs"], "configs")) a.configs.push_back(rd.name(c, "a configuration"));
  }
  std::string given = rd.text(path, "an application (its folder)");
  fs::path dir = fs::path(given).is_absolute() ? fs::path(given) : base / given;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) rd.fail(path, fmt::format("application folder {} does not exist", dir.string()));
  if (!fs::is_regular_file(dir / "optimas.yml", ec))
    rd.fail(path, fmt::format("application folder {} has no optimas.yml", dir.string()));
  a.path = fs::weakly_canonical(dir, ec).string();
  a.name = filename_safe(fs::path(a.path).filename().string());
  return a;
}

Subset read_subset(const Reader& rd, const YAML::Node& n) {
  std::string given = rd.text(n, "a diagnostic subset");
  auto choice = rd.at(n, [&] { return analysis::parse_diagnostics(given); });
  Subset s;
  s.label = choice.label();
  if (choice.code_only) {
    s.setting = s.id = analysis::k_code_only;
    return s;
  }
  std::vector<std::string> parts;
  for (auto [bit, name] : {std::pair{analysis::k_pc, "pc"}, {analysis::k_ia, "ia"}, {analysis::k_roofline, "roofline"}})
    if (choice.sources & bit) parts.push_back(name);
  s.setting = util::join(parts, ",");
  s.id = util::join(parts, "_");
  return s;
}

BackendEntry read_backend(const Reader& rd, const YAML::Node& n) {
  BackendEntry b;
  if (n.IsMap()) {
    rd.check_keys(n, k_backend_keys, "a backend");
    if (!n["model"]) rd.fail(n, "a backend needs model: (as optimas run --model takes it)");
    b.model = rd.text(n["model"], "model");
    if (n["options"]) b.options = rd.options(n["options"], "the backend's options");
    if (n["name"]) b.name = rd.name(n["name"], "name");
  } else {
    b.model = rd.text(n, "a backend (its model)");
  }
  rd.at(n, [&] { return llm::backend_from(b.model, "", b.options); });
  if (b.name.empty()) b.name = filename_safe(b.model);
  return b;
}

launch::LauncherConfig read_launcher(const Reader& rd, const YAML::Node& n, const launch::Registry& launchers) {
  std::string name;
  std::map<std::string, std::string> options;
  if (n.IsMap()) {
    rd.check_keys(n, k_launcher_keys, "launcher");
    if (!n["name"]) rd.fail(n, "launcher needs name: (see optimas launchers)");
    name = rd.text(n["name"], "launcher name");
    if (n["options"]) options = rd.options(n["options"], "the launcher's options");
  } else {
    name = rd.text(n, "launcher");
  }
  return rd.at(n, [&] { return launch::launcher_from(name, options, launchers); });
}

// Two entries that would give cells the same id are a mistake to show, not to number.
template <typename T, typename Id>
void unique_ids(const Reader& rd, const std::vector<YAML::Node>& nodes, const std::vector<T>& items, Id id,
                const char* what) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < items.size(); ++i)
    if (!seen.insert(id(items[i])).second)
      rd.fail(nodes[i], fmt::format("two {} give cells the id part \"{}\"{}", what, id(items[i]),
                                    std::string(what) == "backends" ? "; give one a name:" : ""));
}

} // namespace

std::vector<std::string> default_subsets() {
  return {"pc", "ia", "roofline", "pc+ia", "pc+roofline", "ia+roofline", "pc+ia+roofline", analysis::k_code_only};
}

double parse_time_limit(std::string_view text) {
  std::string t(util::trim(text));
  double scale = 1;
  if (!t.empty() && (t.back() == 's' || t.back() == 'm' || t.back() == 'h')) {
    scale = t.back() == 's' ? 1 : t.back() == 'm' ? 60 : 3600;
    t.pop_back();
  }
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || !std::isfinite(v) || v <= 0)
    throw UsageError(fmt::format("time_limit takes a duration such as 90s, 60m or 2h, got \"{}\"", text));
  return v * scale;
}

std::string filename_safe(std::string_view name) {
  std::string out(name);
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  if (!out.empty() && (out[0] == '.' || out[0] == '-')) out[0] = '_'; // never hidden, never an option
  return out;
}

// One section after the other, each checked where it is written.
CampaignFile load_campaign(const std::string& path, const launch::Registry& launchers) {
  Reader rd(path);
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw UsageError(fmt::format("{}: cannot read the campaign file", path));
  } catch (const YAML::Exception& e) {
    throw ConfigError(path, static_cast<std::size_t>(e.mark.line + 1), config::parse_message(e));
  }
  rd.check_keys(root, k_keys, "the campaign file");
  const fs::path base = fs::absolute(path).parent_path();
  CampaignFile c;
  c.path = path;
  if (!root["campaign"]) rd.fail(root, "the campaign file needs campaign: (its id, [A-Za-z0-9._-]+)");
  c.id = rd.text(root["campaign"], "campaign");
  if (std::string why = config::check("campaign", c.id); !why.empty()) rd.fail(root["campaign"], "campaign: " + why);

  if (!root["applications"]) rd.fail(root, "the campaign file needs applications: (folders holding optimas.yml)");
  auto apps = rd.list(root["applications"], "applications");
  if (apps.empty()) rd.fail(root["applications"], "applications: names no application");
  for (const auto& n : apps) c.applications.push_back(read_application(rd, n, base));
  unique_ids(
      rd, apps, c.applications, [](const Application& a) { return a.name; }, "applications");

  std::vector<YAML::Node> subsets;
  if (root["diagnostics"]) {
    subsets = rd.list(root["diagnostics"], "diagnostics");
    if (subsets.empty()) rd.fail(root["diagnostics"], "diagnostics: names no subset");
    for (const auto& n : subsets) c.diagnostics.push_back(read_subset(rd, n));
  } else {
    for (const auto& s : default_subsets()) {
      subsets.push_back(root);
      c.diagnostics.push_back(read_subset(rd, YAML::Node(s)));
    }
  }
  unique_ids(
      rd, subsets, c.diagnostics, [](const Subset& s) { return s.id; }, "diagnostic subsets");

  const std::vector<YAML::Node> backends =
      root["backends"] ? rd.list(root["backends"], "backends") : std::vector<YAML::Node>{YAML::Node("builtin")};
  if (backends.empty()) rd.fail(root["backends"], "backends: names no backend");
  for (const auto& n : backends) c.backends.push_back(read_backend(rd, n));
  unique_ids(
      rd, backends, c.backends, [](const BackendEntry& b) { return b.name; }, "backends");

  if (root["repeats"]) c.repeats = rd.count(root["repeats"], "repeats", k_repeats);
  // iterations: is the older name of rounds:, as in optimas.yml.
  if (root["rounds"] && root["iterations"])
    rd.fail(root["iterations"], "give rounds: or its older name iterations:, not both");
  for (const char* key : {"rounds", "iterations"})
    if (root[key]) c.rounds = rd.axis(root[key], key, config::option("rounds").range);
  if (root["candidates"]) c.candidates = rd.axis(root["candidates"], "candidates", config::option("candidates").range);
  if (root["gpus"]) c.gpus = rd.count(root["gpus"], "gpus", k_gpus);
  if (root["requeue"]) c.requeue = rd.count(root["requeue"], "requeue", k_requeue);
  if (root["time_limit"])
    c.time_limit_s =
        rd.at(root["time_limit"], [&] { return parse_time_limit(rd.text(root["time_limit"], "time_limit")); });
  if (root["run_options"])
    for (const auto& n : rd.list(root["run_options"], "run_options")) {
      std::string option = rd.text(n, "a run option");
      std::string flag = option.substr(0, option.find('='));
      for (const char* own : k_cell_flags)
        if (flag == own)
          rd.fail(
              n, fmt::format("run_options: {} is the campaign's to set for each cell (use the file's own keys)", flag));
      c.run_options.push_back(option);
    }
  std::string runs = root["runs_dir"] ? rd.text(root["runs_dir"], "runs_dir") : "runs";
  c.runs_dir = fs::weakly_canonical(fs::path(runs).is_absolute() ? fs::path(runs) : base / runs).string();
  if (root["launcher"])
    c.launcher = read_launcher(rd, root["launcher"], launchers);
  else
    c.launcher = launch::launcher_from("local", {}, launchers);
  // A cell's id names its log and is its run's --cell: long folder and backend names could make one
  // longer than a name may be.
  for (const auto& cell : expand_cells(c))
    if (std::string why = util::name_problem(cell.id); !why.empty()) rd.fail(root["applications"], "a cell id " + why);
  return c;
}

} // namespace optimas::campaign
