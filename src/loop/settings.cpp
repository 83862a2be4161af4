#include "loop/settings.hpp"

#include "analysis/diagnostics.hpp"
#include "store/memory.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace optimas::loop {

using nlohmann::json;

std::vector<std::string> string_list(const json& v) {
  std::vector<std::string> out;
  if (v.is_string()) {
    for (auto part : util::split(v.get<std::string>(), ','))
      if (!util::trim(part).empty()) out.emplace_back(util::trim(part));
  } else if (v.is_array()) {
    for (const auto& x : v) out.push_back(x.get<std::string>());
  }
  return out;
}

namespace {

// The override `name`, or the option table's default.
template <typename T> T given_or_default(const Overrides& o, const char* name) {
  return o.contains(name) ? o[name].get<T>() : config::default_of<T>(name);
}

} // namespace

Settings settings_from(const config::AppConfig& app, const Overrides& o) {
  Settings s;
  s.model = o.value("model", app.optimize.backend);
  s.base_url = o.value("base_url", std::string());
  s.import = o.value("import", std::string());
  s.ncu = given_or_default<std::string>(o, "ncu");
  s.tracer = given_or_default<std::string>(o, "tracer");
  s.full_profile = given_or_default<bool>(o, "full_profile");
  s.execute = given_or_default<std::string>(o, "execute");
  s.template_path = o.value("template", std::string());
  s.token_budget = given_or_default<std::size_t>(o, "token_budget");
  s.cache_dir = given_or_default<std::string>(o, "cache_dir");
  s.no_cache = given_or_default<bool>(o, "no_cache");
  s.keep_work = given_or_default<bool>(o, "keep_work");
  config::check_or_throw("build_jobs", given_or_default<std::string>(o, "build_jobs"));
  if (const std::string jobs = given_or_default<std::string>(o, "build_jobs"); jobs != "auto")
    s.build_jobs = std::stoi(jobs);
  config::check_or_throw("gpus", given_or_default<std::string>(o, "gpus"));
  s.gpus = given_or_default<std::string>(o, "gpus");
  config::check_or_throw("sandbox", given_or_default<std::string>(o, "sandbox"));
  s.sandbox = given_or_default<std::string>(o, "sandbox");
  s.aa = given_or_default<bool>(o, "aa");
  s.alpha = given_or_default<double>(o, "alpha");
  s.campaign = o.value("campaign", std::string());
  s.cell = o.value("cell", std::string());
  if (o.contains("seed")) s.seed = o["seed"].get<std::int64_t>();
  if (o.contains("budget_usd")) s.budget_usd = o["budget_usd"].get<double>();
  if (o.contains("budget_minutes")) s.budget_minutes = o["budget_minutes"].get<double>();
  if (o.contains("budget_verdicts")) s.budget_verdicts = o["budget_verdicts"].get<int>();
  if (o.contains("memory_file")) {
    s.memory_file = std::filesystem::absolute(o["memory_file"].get<std::string>()).lexically_normal().string();
    if (!std::filesystem::is_regular_file(s.memory_file))
      throw UsageError(fmt::format("--memory-file {}: no such file (optimas corpus export writes one)", s.memory_file));
    store::corpus_memories(s.memory_file); // a broken file is named (file:line) before anything runs
  }
  if (s.campaign.empty() != s.cell.empty())
    throw UsageError("--campaign and --cell go together (optimas campaign passes both)");
  config::check_or_throw("execute", s.execute);
  return s;
}

std::vector<const config::InputConfig*> measured_configs(const config::AppConfig& app) {
  std::vector<const config::InputConfig*> out;
  if (app.measure.configs.empty())
    for (const auto& c : app.configs) out.push_back(&c);
  else
    for (const auto& n : app.measure.configs) out.push_back(app.find(n));
  return out;
}

int tests_per_config(const config::AppConfig& app) {
  const auto& t = app.tune;
  // Every candidate of every round is a test.
  int edits = t.runs() && t.only ? 0 : app.optimize.rounds * app.optimize.candidates;
  if (!t.runs()) return edits;
  std::uint64_t points = std::min<std::uint64_t>(static_cast<std::uint64_t>(t.budget), t.grid_size());
  return edits + static_cast<int>(points);
}

// Every measured configuration of every iteration is a test of its own: the significance is
// corrected for all of them (Bonferroni).
evaluate::AcceptanceRule acceptance_rule(const config::AppConfig& app) {
  evaluate::AcceptanceRule rule;
  rule.significance = app.measure.significance;
  rule.confidence = app.measure.confidence;
  rule.min_speedup = app.measure.min_speedup;
  rule.confirm = app.measure.confirm;
  rule.comparisons = static_cast<int>(measured_configs(app).size()) * tests_per_config(app);
  return rule;
}

llm::BackendConfig make_backend_config(const std::string& model, const std::string& base_url,
                                       const std::string& work_dir,
                                       const std::map<std::string, std::string>& file_options,
                                       const std::vector<std::string>& given_options) {
  // The command line's --option values override the optimas.yml's, key by key.
  std::map<std::string, std::string> options = file_options;
  for (const auto& kv : given_options) {
    config::check_or_throw("options", kv);
    auto [key, value] = llm::split_option(kv);
    options[key] = value;
  }
  llm::BackendConfig c = llm::backend_from(model, base_url, options);
  c.work_dir = work_dir;
  return c;
}

llm::BackendConfig backend_config(const config::AppConfig& app, const Settings& s, const Overrides& o) {
  return make_backend_config(s.model, s.base_url, given_or_default<std::string>(o, "work_dir"), app.optimize.options,
                             string_list(o.value("options", json::array())));
}

// Every value is checked by its row of the option table first (the checks optimas.yml's values
// pass), then the checks that depend on the rest of the configuration.
void apply_overrides(config::AppConfig& app, const Overrides& o) {
  for (const auto& row : config::options())
    if (o.contains(row.name)) config::check_or_throw(row.name, o[row.name]);
  auto& opt = app.optimize;
  if (o.contains("model")) opt.backend = o["model"].get<std::string>();
  if (o.contains("diagnostics")) opt.diagnostics = o["diagnostics"].get<std::string>();
  if (o.contains("scope")) opt.scope = o["scope"].get<std::string>();
  if (o.contains("fp_reassociation")) opt.fp_reassociation = o["fp_reassociation"].get<std::string>();
  if (o.contains("rounds") && o.contains("iterations"))
    throw UsageError("--rounds and --iterations are one setting: give one");
  if (o.contains("rounds")) opt.rounds = o["rounds"].get<int>();
  if (o.contains("iterations")) opt.rounds = o["iterations"].get<int>();
  if (o.contains("candidates")) opt.candidates = o["candidates"].get<int>(), opt.candidates_given = true;
  if (o.contains("memory")) opt.memory = o["memory"].get<std::string>();
  if (o.contains("retries")) opt.retries = o["retries"].get<int>();
  analysis::parse_diagnostics(opt.diagnostics); // throws on a typo
  auto& ms = app.measure;
  if (o.contains("runs")) ms.runs = o["runs"].get<int>();
  if (o.contains("warmup")) ms.warmup = o["warmup"].get<int>();
  if (o.contains("timing")) ms.timing = o["timing"].get<std::string>();
  if (o.contains("measure_configs")) ms.configs = string_list(o["measure_configs"]);
  if (std::string why = config::timing_needs(app, ms.timing); !why.empty()) throw UsageError(why);
  if (o.contains("min_speedup")) ms.min_speedup = o["min_speedup"].get<double>();
  if (o.contains("confirm")) ms.confirm = o["confirm"].get<bool>();
  if (o.contains("verdict")) ms.verdict = o["verdict"].get<std::string>();
  if (o.contains("end_after_kernels")) ms.end_after_kernels = o["end_after_kernels"].get<std::string>();
  auto& vs = app.validate;
  if (o.contains("validate_configs")) vs.configs = string_list(o["validate_configs"]);
  if (o.contains("fresh_seeds")) vs.fresh_seeds = o["fresh_seeds"].get<int>();
  if (o.contains("tolerance")) {
    auto t = config::parse_tolerance(o["tolerance"].get<std::string>());
    vs.tolerance = t.mode;
    vs.tolerance_value = t.value;
  }
  auto& tune = app.tune;
  if (o.contains("tune")) tune.enabled = o["tune"].get<bool>();
  if (o.contains("tune_only")) tune.only = o["tune_only"].get<bool>();
  if (o.contains("tune_discover")) tune.discover = o["tune_discover"].get<bool>();
  if (o.contains("tune_search")) tune.search = o["tune_search"].get<std::string>();
  if (o.contains("tune_point")) tune.point = o["tune_point"].get<std::string>();
  if (o.contains("tune_budget")) tune.budget = o["tune_budget"].get<int>();
  if (tune.only && tune.empty())
    throw UsageError(fmt::format("--tune-only needs a tune: block (macros or flags to tune) in {}", app.path));
  if (tune.only && !tune.enabled) throw UsageError("--tune-only and --no-tune contradict each other");
  if (!tune.point.empty() && !tune.enabled) throw UsageError("--tune-point and --no-tune contradict each other");
  for (const auto& [list, section] : {std::pair{&ms.configs, "measure"}, std::pair{&vs.configs, "validate"}})
    if (std::string why = config::unknown_config(app, *list, section); !why.empty()) throw UsageError(why);
}

} // namespace optimas::loop
