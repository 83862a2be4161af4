#include "config/app_config.hpp"

#include "config/yaml_reader.hpp"

#include "util/error.hpp"
#include "util/names.hpp"
#include "util/paths.hpp"
#include "util/regex.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <type_traits>

namespace optimas::config {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_top_keys[] = {"name",    "description", "sources", "build",    "run",
                                      "configs", "optimize",    "measure", "validate", "tune"};
constexpr const char* k_optimize_keys[] = {"backend", "options",          "diagnostics", "scope",      "iterations",
                                           "retries", "fp_reassociation", "rounds",      "candidates", "memory"};
constexpr const char* k_measure_keys[] = {"runs",         "warmup",      "timing",  "configs", "confidence",
                                          "significance", "min_speedup", "confirm", "verdict", "end_after_kernels"};
constexpr const char* k_validate_keys[] = {"tolerance", "fresh_seeds", "configs", "ignore"};
constexpr const char* k_build_keys[] = {"command", "binary", "clean", "dir"};
constexpr const char* k_kernel_time_keys[] = {"pattern", "unit", "per", "calls"};
constexpr const char* k_run_keys[] = {"command", "output", "kernel_time", "timeout_s", "seed", "needs_gpu"};

class Reader : public YamlReader {
public:
  using YamlReader::YamlReader;

  // A path the configuration names (a source, an output, the binary, the build folder): relative,
  // and inside the application folder once resolved, so that nothing Optimas writes through it
  // can land in your tree or outside it.
  std::string inside(const YAML::Node& at, const std::string& path, const std::string& dir, const char* what) const {
    if (!util::resolve_inside(dir, path))
      fail(at, fmt::format("{} \"{}\" is not inside the application folder {}: name it relative to that folder "
                           "(Optimas edits and builds copies, never your files)",
                           what, path, dir));
    return fs::path(path).lexically_normal().string();
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
    // Whole numbers in decimal, as the command line takes them: YAML's 0x10, 0o20 and 1_000 read
    // as numbers the command line refuses.
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const std::string& t = n.Scalar();
      const std::size_t digits = !t.empty() && (t[0] == '-' || t[0] == '+') ? 1 : 0;
      if (t.size() == digits || t.find_first_not_of("0123456789", digits) != std::string::npos)
        fail(n, fmt::format("\"{}\" must be a whole number in decimal, not \"{}\"", what, t));
    }
    try {
      return n.as<T>();
    } catch (const YAML::Exception&) {
      if constexpr (std::is_same_v<T, bool>)
        fail(n, fmt::format("\"{}\" must be true or false, not \"{}\"", what, n.Scalar()));
      else if constexpr (std::is_arithmetic_v<T>)
        fail(n, fmt::format("\"{}\" must be a number, not \"{}\"", what, n.Scalar()));
      else
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

  // A setting of the option table (section.key): read as the row's kind and checked by the row's
  // check, so a bad value reads the same here as on the command line.
  nlohmann::json setting(const YAML::Node& section, const std::string& yml) const {
    const Option* row = option_for_yml(yml);
    if (!row) throw std::logic_error(yml + " is not in the option table");
    std::string key = yml.substr(yml.find('.') + 1);
    const YAML::Node n = section[key];
    nlohmann::json v;
    switch (row->kind) {
    case Kind::integer:
      v = scalar<long long>(n, key.c_str());
      break;
    case Kind::real:
      v = scalar<double>(n, key.c_str());
      break;
    case Kind::flag:
      v = scalar<bool>(n, key.c_str());
      break;
    case Kind::list:
    case Kind::names:
      v = names(n, key.c_str());
      break;
    case Kind::text:
      v = scalar<std::string>(n, key.c_str());
      break;
    }
    if (std::string why = check(row->name, v); !why.empty()) fail(n, why);
    return v;
  }
};

// `text` with each {placeholder} of `c` (and {output}) replaced; unknown ones stay as written.
std::string fill(const std::string& text, const InputConfig& c, const std::string& output_path) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '{') {
      std::size_t close = text.find('}', i);
      if (close != std::string::npos) {
        std::string key = text.substr(i + 1, close - i - 1);
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
    out += text[i++];
  }
  return out;
}

void check_regex(const Reader& rd, const YAML::Node& at, const std::string& re, const char* what, unsigned groups) {
  try {
    if (util::compile_regex(re).mark_count() < groups)
      rd.fail(at, fmt::format("\"{}\" needs a capture group around the number", what));
  } catch (const util::BadRegex& e) {
    rd.fail(at, fmt::format("\"{}\" is not a valid regex (\"{}\"): {}", what, re, e.what()));
  }
}

// run.kernel_time: a regex (the figure in milliseconds for the whole run), or a mapping
// {pattern, unit: ms|us|ns|s, per: run|call, calls: N or {placeholder}}.
KernelTime read_kernel_time(const Reader& rd, const YAML::Node& n) {
  KernelTime k;
  if (n.IsScalar()) {
    k.pattern = n.as<std::string>();
  } else {
    rd.check_keys(n, k_kernel_time_keys, "run.kernel_time");
    k.pattern = rd.string(n, "pattern", true, "run.kernel_time");
    if (n["unit"]) k.unit = rd.scalar<std::string>(n["unit"], "unit");
    if (std::string per = n["per"] ? rd.scalar<std::string>(n["per"], "per") : "run"; per == "call")
      k.per_call = true;
    else if (per != "run")
      rd.fail(
          n["per"],
          fmt::format("\"per\" is run (the figure covers the whole run) or call (one call's time), got \"{}\"", per));
    if (n["calls"]) k.calls = rd.scalar<std::string>(n["calls"], "calls");
    if (k.per_call && k.calls.empty())
      rd.fail(n, "per: call needs \"calls\": how many calls one run makes (a number or a {placeholder}), so the "
                 "printed time can be checked against the process's wall time");
    if (!k.per_call && !k.calls.empty()) rd.fail(n["calls"], "\"calls\" goes with per: call");
  }
  if (k.pattern.empty()) rd.fail(n, "\"kernel_time\" needs a pattern");
  static const std::map<std::string, double> k_units = {{"ms", 1.0}, {"us", 1e-3}, {"ns", 1e-6}, {"s", 1e3}};
  auto unit = k_units.find(k.unit);
  if (unit == k_units.end()) rd.fail(n["unit"], fmt::format("unknown unit \"{}\" (ms, us, ns or s)", k.unit));
  k.unit_ms = unit->second;
  check_regex(rd, n.IsScalar() ? n : n["pattern"], k.pattern, "kernel_time", 1);
  return k;
}

std::set<std::string> placeholders(const std::string& command) {
  std::set<std::string> out;
  static const std::regex k_re(R"(\{([A-Za-z_][A-Za-z0-9_]*)\})");
  for (auto it = std::sregex_iterator(command.begin(), command.end(), k_re); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1].str());
  return out;
}

// optimize:, measure: and validate:, each value read and checked by its row of the option table.
void read_optimize(const Reader& rd, const YAML::Node& o, OptimizeSettings& s) {
  rd.check_keys(o, k_optimize_keys, "optimize");
  if (o["backend"]) s.backend = rd.setting(o, "optimize.backend").get<std::string>();
  if (YAML::Node opts = o["options"]) {
    if (!opts.IsMap()) rd.fail(opts, "\"options\" must be a mapping of backend options");
    for (const auto& kv : opts) s.options[kv.first.as<std::string>()] = rd.scalar<std::string>(kv.second, "options");
  }
  if (o["diagnostics"]) s.diagnostics = rd.setting(o, "optimize.diagnostics").get<std::string>();
  if (o["scope"]) s.scope = rd.setting(o, "optimize.scope").get<std::string>();
  if (o["fp_reassociation"]) s.fp_reassociation = rd.setting(o, "optimize.fp_reassociation").get<std::string>();
  if (o["rounds"] && o["iterations"]) rd.fail(o["iterations"], "rounds and iterations are one setting: give one");
  if (o["rounds"]) s.rounds = rd.setting(o, "optimize.rounds").get<int>();
  if (o["iterations"]) s.rounds = rd.setting(o, "optimize.iterations").get<int>();
  if (o["candidates"]) s.candidates = rd.setting(o, "optimize.candidates").get<int>(), s.candidates_given = true;
  if (o["memory"]) s.memory = rd.setting(o, "optimize.memory").get<std::string>();
  if (o["retries"]) s.retries = rd.setting(o, "optimize.retries").get<int>();
}

void read_measure(const Reader& rd, const YAML::Node& m, const AppConfig& app, MeasureSettings& s) {
  rd.check_keys(m, k_measure_keys, "measure");
  if (m["runs"]) s.runs = rd.setting(m, "measure.runs").get<int>();
  if (m["warmup"]) s.warmup = rd.setting(m, "measure.warmup").get<int>();
  if (m["timing"]) {
    s.timing = rd.setting(m, "measure.timing").get<std::string>();
    if (std::string why = timing_needs(app, s.timing); !why.empty()) rd.fail(m["timing"], why);
  }
  if (m["configs"]) s.configs = rd.setting(m, "measure.configs").get<std::vector<std::string>>();
  if (m["confidence"]) s.confidence = rd.setting(m, "measure.confidence").get<double>();
  if (m["min_speedup"]) s.min_speedup = rd.setting(m, "measure.min_speedup").get<double>();
  if (m["confirm"]) s.confirm = rd.setting(m, "measure.confirm").get<bool>();
  if (m["verdict"]) s.verdict = rd.setting(m, "measure.verdict").get<std::string>();
  if (m["end_after_kernels"]) s.end_after_kernels = rd.setting(m, "measure.end_after_kernels").get<std::string>();
  if (m["significance"]) s.significance = rd.setting(m, "measure.significance").get<double>();
}

void read_validate(const Reader& rd, const YAML::Node& v, ValidateSettings& s) {
  rd.check_keys(v, k_validate_keys, "validate");
  if (YAML::Node t = v["tolerance"]) {
    // The yml writes {rel: 1e-12} where the command line writes rel=1e-12; both are checked as the latter.
    std::string text;
    if (t.IsScalar())
      text = t.Scalar();
    else if (t.IsMap() && t.size() == 1 && t.begin()->second.IsScalar())
      text = t.begin()->first.as<std::string>() + "=" + t.begin()->second.Scalar();
    else
      rd.fail(t, "\"tolerance\" is exact or one of {abs: X}, {rel: X}, {ulp: N}");
    if (std::string why = check("tolerance", text); !why.empty()) rd.fail(t, why);
    auto parsed = parse_tolerance(text);
    s.tolerance = parsed.mode;
    s.tolerance_value = parsed.value;
  }
  if (v["fresh_seeds"]) s.fresh_seeds = rd.setting(v, "validate.fresh_seeds").get<int>();
  if (v["configs"]) s.configs = rd.setting(v, "validate.configs").get<std::vector<std::string>>();
  if (v["ignore"]) {
    s.ignore = rd.names(v["ignore"], "ignore");
    for (const auto& re : s.ignore) check_regex(rd, v["ignore"], re, "validate.ignore", 0);
  }
}

void read_run_settings(const Reader& rd, const YAML::Node& root, AppConfig& app) {
  if (YAML::Node o = root["optimize"]) read_optimize(rd, o, app.optimize);
  if (YAML::Node m = root["measure"]) read_measure(rd, m, app, app.measure);
  if (YAML::Node v = root["validate"]) read_validate(rd, v, app.validate);
  if (YAML::Node t = root["tune"]) app.tune = read_tune(t, rd.path());
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
  return fill(run_command, c, output_path);
}

double AppConfig::kernel_calls(const InputConfig& c) const {
  if (!kernel_time.per_call) return 1;
  std::string text = fill(kernel_time.calls, c, "");
  char* end = nullptr;
  double n = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(n >= 1) || !std::isfinite(n))
    throw Error(fmt::format("{}: run.kernel_time.calls is \"{}\" for config \"{}\", not a number of calls (at least 1)",
                            path, text, c.name));
  return n;
}

std::string timing_needs(const AppConfig& app, const std::string& timing) {
  if (timing == "kernel_time" && app.kernel_time.empty())
    return "timing kernel_time needs run.kernel_time (the pattern of the printed time) in " + app.path;
  return {};
}

std::string fp_reassociation_caveat(const AppConfig& app) {
  if (app.optimize.fp_reassociation != "allowed" || app.validate.tolerance != "exact") return {};
  std::string files;
  if (app.run_command.find("{output}") != std::string::npos)
    files = "the file the program writes to {output}";
  else if (!app.outputs.empty())
    files = fmt::format("the file(s) the program writes ({})", fmt::join(app.outputs, ", "));
  else
    return {};
  return fmt::format("{}: optimize.fp_reassociation is allowed, but validation compares {} byte for byte: a "
                     "reordered floating-point sum changes its low bits, so such a variant fails validation unless "
                     "the file holds only the program's own check. Set validate.tolerance (such as {{rel: 1e-12}}) "
                     "for floating-point data",
                     app.path, files);
}

std::string unknown_config(const AppConfig& app, const std::vector<std::string>& names, const char* section) {
  for (const auto& n : names)
    if (!app.find(n)) return fmt::format("{}.configs names \"{}\", which is not a config in {}", section, n, app.path);
  return {};
}

namespace {

// sources: files inside the application folder that exist.
void read_sources(const Reader& rd, const YAML::Node& root, AppConfig& app) {
  if (YAML::Node s = root["sources"]) {
    if (!s.IsSequence()) rd.fail(s, "\"sources\" must be a list of files");
    if (s.size() == 0) rd.fail(s, "\"sources\" is empty: name the files the edits may change (main.cu, ...)");
    for (const auto& f : s) {
      std::string file = rd.inside(f, rd.scalar<std::string>(f, "sources"), app.dir, "source");
      // The overload without an error code throws where the name cannot be looked up at all (a
      // name longer than the system allows): fuzz_app_config's crash-7405ba0b.
      std::error_code ec;
      if (!fs::exists(fs::path(app.dir) / file, ec))
        rd.fail(f, ec ? fmt::format("source \"{}\" cannot be looked up in {}: {}", file, app.dir, ec.message())
                      : fmt::format("source \"{}\" does not exist in {}", file, app.dir));
      app.sources.push_back(file);
    }
  }
}

// build: its command, binary, clean command and out-of-tree folder.
void read_build(const Reader& rd, const YAML::Node& root, AppConfig& app) {
  YAML::Node build = root["build"];
  if (!build) rd.fail(root, "optimas.yml needs \"build\"");
  rd.check_keys(build, k_build_keys, "build");
  app.build_command = rd.string(build, "command", true, "build");
  app.binary = rd.string(build, "binary", false, "build");
  if (!app.binary.empty()) app.binary = rd.inside(build["binary"], app.binary, app.dir, "build.binary");
  app.clean_command = rd.string(build, "clean", false, "build");
  app.build_dir = rd.string(build, "dir", false, "build");
  if (!app.build_dir.empty()) app.build_dir = rd.inside(build["dir"], app.build_dir, app.dir, "build.dir");
}

// run: its command, outputs, printed kernel time, timeout, seed placeholder and whether it needs a GPU.
void read_run(const Reader& rd, const YAML::Node& root, AppConfig& app) {
  YAML::Node run = root["run"];
  if (!run) rd.fail(root, "optimas.yml needs \"run\"");
  rd.check_keys(run, k_run_keys, "run");
  app.run_command = rd.string(run, "command", true, "run");
  if (YAML::Node o = run["output"])
    app.outputs = o.IsSequence() ? rd.names(o, "output") : std::vector{rd.string(run, "output", false, "run")};
  for (auto& o : app.outputs) {
    if (o.empty()) rd.fail(run["output"], "\"output\" names an empty file");
    o = rd.inside(run["output"], o, app.dir, "run.output");
  }
  if (YAML::Node k = run["kernel_time"]) app.kernel_time = read_kernel_time(rd, k);
  if (YAML::Node t = run["timeout_s"]) {
    try {
      app.timeout_s = t.as<double>();
    } catch (const YAML::Exception&) {
      rd.fail(t, "\"timeout_s\" must be a number of seconds");
    }
    if (!(app.timeout_s > 0) || !std::isfinite(app.timeout_s) || app.timeout_s > 7 * 24 * 3600.0)
      rd.fail(t,
              fmt::format("\"timeout_s\" must be a positive number of seconds, at most a week (got {})", t.Scalar()));
  }

  if (YAML::Node seed = run["seed"])
    app.seed_param = rd.scalar<std::string>(seed, "seed");
  else if (placeholders(app.run_command).count("seed"))
    app.seed_param = "seed";
  if (!app.seed_param.empty() && !placeholders(app.run_command).count(app.seed_param))
    rd.fail(run["seed"], fmt::format("run.command has no {{{}}} placeholder for the seed", app.seed_param));
  if (YAML::Node g = run["needs_gpu"]) app.needs_gpu = rd.scalar<bool>(g, "needs_gpu");
}

// One entry of configs: its name (not one of `names` already read), default and held_out, and a
// value for every placeholder of the run command (`wanted`) and none it does not use.
InputConfig read_config(const Reader& rd, const YAML::Node& c, const AppConfig& app,
                        const std::set<std::string>& wanted, std::set<std::string>& names) {
  if (!c.IsMap()) rd.fail(c, "each config must be a mapping such as {name: small, n: 1024}");
  InputConfig ic;
  ic.line = c.Mark().line + 1;
  rd.no_duplicate_keys(c, "a config");
  for (const auto& kv : c) {
    std::string key = kv.first.as<std::string>();
    if (!kv.second.IsScalar()) rd.fail(kv.second, fmt::format("config value \"{}\" must be a scalar", key));
    std::string value = kv.second.as<std::string>();
    if (key == "name") {
      // It names the configuration's files: runs/<id>/baseline/runs/<name>.log, measure-<name>-...
      if (std::string why = util::name_problem(value); !why.empty()) rd.fail(kv.second, "config name " + why);
      ic.name = value;
    } else if (key == "default")
      ic.is_default = rd.scalar<bool>(kv.second, "default");
    else if (key == "held_out")
      ic.held_out = rd.scalar<bool>(kv.second, "held_out");
    else {
      // The seed a config gives is the same kind of number as the fresh seeds validation and
      // measurement put in its place (`seed: abc` was passed on as it stood).
      if (key == app.seed_param) {
        const Option& seed = option("seed");
        char* end = nullptr;
        errno = 0;
        long long n = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || errno || n < seed.range.min || n > seed.range.max)
          rd.fail(kv.second,
                  fmt::format("\"{}\" is the program's seed (run.seed): a whole number from {} to {}, got \"{}\"", key,
                              seed.range.min, seed.range.max, value));
      }
      ic.params[key] = value;
    }
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
  return ic;
}

// configs: every input configuration, one default (the first visible one unless marked), at
// least one visible, and a number of calls for each where the kernel time is per call.
void read_configs(const Reader& rd, const YAML::Node& root, AppConfig& app) {
  YAML::Node configs = root["configs"];
  if (!configs || !configs.IsSequence() || configs.size() == 0)
    rd.fail(configs ? configs : root, "optimas.yml needs \"configs\": a non-empty list of input configurations");
  std::set<std::string> wanted = placeholders(app.run_command);
  wanted.merge(placeholders(app.kernel_time.calls));
  wanted.erase("output");
  std::set<std::string> names;
  int defaults = 0;
  for (const auto& c : configs) {
    InputConfig ic = read_config(rd, c, app, wanted, names);
    defaults += ic.is_default;
    app.configs.push_back(std::move(ic));
  }
  if (defaults > 1) rd.fail(configs, "more than one config is marked default: true");
  if (app.kernel_time.per_call) {
    for (const auto& c : app.configs) {
      try {
        app.kernel_calls(c);
      } catch (const Error&) {
        rd.fail(root["run"]["kernel_time"]["calls"],
                fmt::format("config \"{}\": calls is \"{}\", not a number of calls (at least 1)", c.name,
                            fill(app.kernel_time.calls, c, "")));
      }
    }
  }
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
}

} // namespace

namespace {

// The line of a second YAML document in the file, or 0: a document start (`---` at a line's
// start) after the first document's content, or content after a document end (`...`). Read as
// text: a marker at a line's start cannot be inside a scalar of the first document (YAML forbids
// it there), and parsing every document to count them would build what is then thrown away.
std::size_t second_document_line(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  bool content = false, ended = false;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto marker = [&](const char* m) {
      return line.compare(0, 3, m) == 0 && (line.size() == 3 || line[3] == ' ' || line[3] == '\t');
    };
    if (marker("---")) {
      if (content || ended) return n;
      content = line.find_first_not_of(" \t", 3) != std::string::npos && line[line.find_first_not_of(" \t", 3)] != '#';
      continue;
    }
    if (marker("...")) {
      ended = true;
      continue;
    }
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#' || (line[0] == '%' && !content)) continue;
    if (ended) return n;
    content = true;
  }
  return 0;
}

} // namespace

AppConfig load_app_config(const std::string& path) {
  Reader rd(path);
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw ConfigError(path, 0, "is a folder, not a file: name the optimas.yml in it");
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))
    throw ConfigError(path, 0, "is not a regular file (a FIFO or a device): name an optimas.yml");
  if (std::size_t line = second_document_line(path))
    throw ConfigError(path, line, "a second YAML document (after ---): optimas.yml holds one");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw ConfigError(path, 0, "cannot open it: name an application's optimas.yml or the folder that holds one");
  } catch (const YAML::ParserException& e) {
    throw ConfigError(path, static_cast<std::size_t>(e.mark.line + 1), config::parse_message(e));
  }
  if (!root || !root.IsMap()) throw ConfigError(path, 1, "expected a mapping with name, build, run and configs");
  rd.check_keys(root, k_top_keys, "optimas.yml");

  AppConfig app;
  app.path = fs::absolute(path).lexically_normal().string();
  app.dir = fs::path(app.path).parent_path().string();
  app.name = rd.string(root, "name", true, "optimas.yml");
  // The name becomes a folder name (optimas-profile/<name>).
  if (std::string why = util::name_problem(app.name); !why.empty()) rd.fail(root["name"], "name " + why);
  app.description = rd.string(root, "description", false, "optimas.yml");
  read_sources(rd, root, app);
  read_build(rd, root, app);
  read_run(rd, root, app);
  read_run_settings(rd, root, app);

  read_configs(rd, root, app);
  for (const char* section : {"measure", "validate"}) {
    const auto& list = std::string(section) == "measure" ? app.measure.configs : app.validate.configs;
    if (std::string why = unknown_config(app, list, section); !why.empty()) rd.fail(root[section]["configs"], why);
  }
  return app;
}

} // namespace optimas::config
