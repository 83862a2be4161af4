#include "config/app_config.hpp"

#include "util/error.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <regex>
#include <set>

namespace optimas::config {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_top_keys[] = {"name",    "description", "sources", "build",   "run",
                                      "configs", "optimize",    "measure", "validate"};
constexpr const char* k_optimize_keys[] = {"backend", "options", "diagnostics", "scope", "iterations", "retries"};
constexpr const char* k_measure_keys[] = {"runs", "warmup", "timing", "configs", "confidence", "significance"};
constexpr const char* k_validate_keys[] = {"tolerance", "fresh_seeds", "configs"};
constexpr const char* k_build_keys[] = {"command", "binary"};
constexpr const char* k_run_keys[] = {"command", "output", "kernel_time", "timeout_s", "seed", "needs_gpu"};

class Reader {
public:
  explicit Reader(std::string path) : m_path(std::move(path)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& msg) const {
    throw ParseError(m_path, at.IsDefined() ? static_cast<std::size_t>(at.Mark().line + 1) : 0, msg);
  }

  template <std::size_t N>
  void check_keys(const YAML::Node& map, const char* const (&allowed)[N], const char* where) const {
    if (!map.IsMap()) fail(map, fmt::format("{} must be a mapping", where));
    for (const auto& kv : map) {
      std::string key = kv.first.as<std::string>();
      bool ok = false;
      for (const char* a : allowed) ok = ok || key == a;
      if (!ok) {
        std::string known;
        for (const char* a : allowed) known += std::string(known.empty() ? "" : ", ") + a;
        fail(kv.first, fmt::format("unknown key \"{}\" in {} (known: {})", key, where, known));
      }
    }
  }

  std::string string(const YAML::Node& map, const char* key, bool required, const char* where) const {
    YAML::Node n = map[key];
    if (!n) {
      if (required) fail(map, fmt::format("{} needs \"{}\"", where, key));
      return {};
    }
    if (!n.IsScalar()) fail(n, fmt::format("\"{}\" must be a string", key));
    return n.as<std::string>();
  }

  template <typename T> T scalar(const YAML::Node& n, const char* what) const {
    if (!n.IsScalar()) fail(n, fmt::format("\"{}\" must be a single value", what));
    try {
      return n.as<T>();
    } catch (const YAML::Exception&) {
      fail(n, fmt::format("\"{}\" has the wrong type (\"{}\")", what, n.Scalar()));
    }
  }

  int count(const YAML::Node& n, const char* what, int min) const {
    int v = scalar<int>(n, what);
    if (v < min) fail(n, fmt::format("\"{}\" must be at least {}", what, min));
    return v;
  }

  std::vector<std::string> names(const YAML::Node& n, const char* what) const {
    if (!n.IsSequence()) fail(n, fmt::format("\"{}\" must be a list", what));
    std::vector<std::string> out;
    for (const auto& x : n) out.push_back(scalar<std::string>(x, what));
    return out;
  }

private:
  std::string m_path;
};

std::set<std::string> placeholders(const std::string& command) {
  std::set<std::string> out;
  static const std::regex k_re(R"(\{([A-Za-z_][A-Za-z0-9_]*)\})");
  for (auto it = std::sregex_iterator(command.begin(), command.end(), k_re); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1].str());
  return out;
}

} // namespace

const InputConfig& AppConfig::default_config() const {
  for (const auto& c : configs)
    if (c.is_default) return c;
  return configs.front();
}

const InputConfig* AppConfig::find(const std::string& wanted) const {
  for (const auto& c : configs)
    if (c.name == wanted) return &c;
  return nullptr;
}

std::string AppConfig::command_for(const InputConfig& c, const std::string& output_path) const {
  std::string out;
  for (std::size_t i = 0; i < run_command.size();) {
    if (run_command[i] == '{') {
      std::size_t close = run_command.find('}', i);
      if (close != std::string::npos) {
        std::string key = run_command.substr(i + 1, close - i - 1);
        if (key == "output") {
          out += output_path;
          i = close + 1;
          continue;
        }
        if (auto it = c.params.find(key); it != c.params.end()) {
          out += it->second;
          i = close + 1;
          continue;
        }
      }
    }
    out += run_command[i++];
  }
  return out;
}

AppConfig load_app_config(const std::string& path) {
  Reader rd(path);
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw Error(path + ": cannot open");
  } catch (const YAML::ParserException& e) {
    throw ParseError(path, static_cast<std::size_t>(e.mark.line + 1), e.msg);
  }
  if (!root || !root.IsMap()) throw ParseError(path, 1, "expected a mapping with name, build, run and configs");
  rd.check_keys(root, k_top_keys, "optimas.yml");

  AppConfig app;
  app.path = fs::absolute(path).lexically_normal().string();
  app.dir = fs::path(app.path).parent_path().string();
  app.name = rd.string(root, "name", true, "optimas.yml");
  app.description = rd.string(root, "description", false, "optimas.yml");
  if (YAML::Node s = root["sources"]) {
    if (!s.IsSequence()) rd.fail(s, "\"sources\" must be a list of files");
    for (const auto& f : s) {
      std::string file = f.as<std::string>();
      if (!fs::exists(fs::path(app.dir) / file))
        rd.fail(f, fmt::format("source \"{}\" does not exist in {}", file, app.dir));
      app.sources.push_back(file);
    }
  }
  YAML::Node build = root["build"];
  if (!build) rd.fail(root, "optimas.yml needs \"build\"");
  rd.check_keys(build, k_build_keys, "build");
  app.build_command = rd.string(build, "command", true, "build");
  app.binary = rd.string(build, "binary", false, "build");

  YAML::Node run = root["run"];
  if (!run) rd.fail(root, "optimas.yml needs \"run\"");
  rd.check_keys(run, k_run_keys, "run");
  app.run_command = rd.string(run, "command", true, "run");
  app.output = rd.string(run, "output", false, "run");
  app.kernel_time = rd.string(run, "kernel_time", false, "run");
  if (!app.kernel_time.empty()) {
    try {
      std::regex re(app.kernel_time);
      if (re.mark_count() < 1)
        rd.fail(run["kernel_time"], "\"kernel_time\" needs a capture group for the milliseconds");
    } catch (const std::regex_error& e) {
      rd.fail(run["kernel_time"], fmt::format("\"kernel_time\" is not a valid regex: {}", e.what()));
    }
  }
  if (YAML::Node t = run["timeout_s"]) {
    try {
      app.timeout_s = t.as<double>();
    } catch (const YAML::Exception&) {
      rd.fail(t, "\"timeout_s\" must be a number of seconds");
    }
    if (!(app.timeout_s > 0)) rd.fail(t, "\"timeout_s\" must be positive");
  }

  if (YAML::Node seed = run["seed"])
    app.seed_param = rd.scalar<std::string>(seed, "seed");
  else if (placeholders(app.run_command).count("seed"))
    app.seed_param = "seed";
  if (!app.seed_param.empty() && !placeholders(app.run_command).count(app.seed_param))
    rd.fail(run["seed"], fmt::format("run.command has no {{{}}} placeholder for the seed", app.seed_param));
  if (YAML::Node g = run["needs_gpu"]) app.needs_gpu = rd.scalar<bool>(g, "needs_gpu");

  if (YAML::Node o = root["optimize"]) {
    rd.check_keys(o, k_optimize_keys, "optimize");
    auto& s = app.optimize;
    if (o["backend"]) s.backend = rd.scalar<std::string>(o["backend"], "backend");
    if (YAML::Node opts = o["options"]) {
      if (!opts.IsMap()) rd.fail(opts, "\"options\" must be a mapping of backend options");
      for (const auto& kv : opts) s.options[kv.first.as<std::string>()] = rd.scalar<std::string>(kv.second, "options");
    }
    if (o["diagnostics"]) s.diagnostics = rd.scalar<std::string>(o["diagnostics"], "diagnostics");
    if (o["scope"]) {
      s.scope = rd.scalar<std::string>(o["scope"], "scope");
      if (s.scope != "kernel" && s.scope != "file") rd.fail(o["scope"], "\"scope\" is kernel or file");
    }
    if (o["iterations"]) s.iterations = rd.count(o["iterations"], "iterations", 1);
    if (o["retries"]) s.retries = rd.count(o["retries"], "retries", 0);
  }
  if (YAML::Node m = root["measure"]) {
    rd.check_keys(m, k_measure_keys, "measure");
    auto& s = app.measure;
    if (m["runs"]) s.runs = rd.count(m["runs"], "runs", 2);
    if (m["warmup"]) s.warmup = rd.count(m["warmup"], "warmup", 0);
    if (m["timing"]) {
      s.timing = rd.scalar<std::string>(m["timing"], "timing");
      if (s.timing != "auto" && s.timing != "kernel_time" && s.timing != "wall")
        rd.fail(m["timing"], "\"timing\" is auto, kernel_time or wall");
      if (s.timing == "kernel_time" && app.kernel_time.empty())
        rd.fail(m["timing"], "timing: kernel_time needs run.kernel_time (the pattern of the printed time)");
    }
    if (m["configs"]) s.configs = rd.names(m["configs"], "configs");
    if (m["confidence"]) s.confidence = rd.scalar<double>(m["confidence"], "confidence");
    if (m["significance"]) s.significance = rd.scalar<double>(m["significance"], "significance");
    if (!(s.confidence > 0 && s.confidence < 1)) rd.fail(m["confidence"], "\"confidence\" must lie between 0 and 1");
    if (!(s.significance > 0 && s.significance < 1))
      rd.fail(m["significance"], "\"significance\" must lie between 0 and 1");
  }
  if (YAML::Node v = root["validate"]) {
    rd.check_keys(v, k_validate_keys, "validate");
    auto& s = app.validate;
    if (YAML::Node t = v["tolerance"]) {
      if (t.IsScalar()) {
        s.tolerance = t.as<std::string>();
        if (s.tolerance != "exact") rd.fail(t, "\"tolerance\" is exact or a mapping such as {rel: 1e-12}");
      } else if (t.IsMap() && t.size() == 1) {
        s.tolerance = t.begin()->first.as<std::string>();
        if (s.tolerance != "abs" && s.tolerance != "rel" && s.tolerance != "ulp")
          rd.fail(t, fmt::format("unknown tolerance \"{}\" (abs, rel or ulp)", s.tolerance));
        s.tolerance_value = rd.scalar<double>(t.begin()->second, "tolerance");
        if (!(s.tolerance_value >= 0)) rd.fail(t, "the tolerance must not be negative");
      } else {
        rd.fail(t, "\"tolerance\" is exact or one of {abs: X}, {rel: X}, {ulp: N}");
      }
    }
    if (v["fresh_seeds"]) s.fresh_seeds = rd.count(v["fresh_seeds"], "fresh_seeds", 0);
    if (v["configs"]) s.configs = rd.names(v["configs"], "configs");
  }

  YAML::Node configs = root["configs"];
  if (!configs || !configs.IsSequence() || configs.size() == 0)
    rd.fail(configs ? configs : root, "optimas.yml needs \"configs\": a non-empty list of input configurations");
  std::set<std::string> wanted = placeholders(app.run_command);
  wanted.erase("output");
  std::set<std::string> names;
  int defaults = 0;
  for (const auto& c : configs) {
    if (!c.IsMap()) rd.fail(c, "each config must be a mapping such as {name: small, n: 1024}");
    InputConfig ic;
    ic.line = c.Mark().line + 1;
    for (const auto& kv : c) {
      std::string key = kv.first.as<std::string>();
      if (!kv.second.IsScalar()) rd.fail(kv.second, fmt::format("config value \"{}\" must be a scalar", key));
      std::string value = kv.second.as<std::string>();
      if (key == "name")
        ic.name = value;
      else if (key == "default")
        ic.is_default = kv.second.as<bool>();
      else if (key == "held_out")
        ic.held_out = kv.second.as<bool>();
      else
        ic.params[key] = value;
    }
    if (ic.name.empty()) rd.fail(c, "config needs a \"name\"");
    if (!names.insert(ic.name).second) rd.fail(c, fmt::format("config name \"{}\" is used twice", ic.name));
    for (const auto& w : wanted)
      if (!ic.params.count(w))
        rd.fail(c, fmt::format("config \"{}\" has no value for {{{}}} used in run.command", ic.name, w));
    for (const auto& [k, v] : ic.params)
      if (!wanted.count(k))
        rd.fail(c, fmt::format("config \"{}\" sets \"{}\", which run.command does not use (typo?)", ic.name, k));
    if (ic.is_default && ic.held_out)
      rd.fail(c, fmt::format("config \"{}\" cannot be both default and held_out", ic.name));
    defaults += ic.is_default;
    app.configs.push_back(std::move(ic));
  }
  if (defaults > 1) rd.fail(configs, "more than one config is marked default: true");
  if (defaults == 0) {
    for (auto& c : app.configs)
      if (!c.held_out) {
        c.is_default = true;
        break;
      }
  }
  bool any_visible = false;
  for (const auto& c : app.configs) any_visible = any_visible || !c.held_out;
  if (!any_visible) rd.fail(configs, "every config is held_out: at least one must be visible");
  auto check_names = [&](const std::vector<std::string>& list, const char* section) {
    for (const auto& n : list)
      if (!app.find(n))
        rd.fail(root[section]["configs"], fmt::format("{}.configs names \"{}\", which is not a config", section, n));
  };
  check_names(app.measure.configs, "measure");
  check_names(app.validate.configs, "validate");
  return app;
}

} // namespace optimas::config
