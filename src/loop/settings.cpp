#include "loop/settings.hpp"

#include "analysis/diagnostics.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

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

Settings settings_from(const config::AppConfig& app, const Overrides& o) {
  Settings s;
  s.model = o.value("model", app.optimize.backend);
  s.base_url = o.value("base_url", std::string());
  s.import = o.value("import", std::string());
  s.ncu = o.value("ncu", std::string("ncu"));
  s.tracer = o.value("tracer", std::string("auto"));
  s.full_profile = o.value("full_profile", false);
  s.execute = o.value("execute", std::string("auto"));
  s.template_path = o.value("template", std::string());
  s.token_budget = o.value("token_budget", std::size_t{32000});
  s.cache_dir = o.value("cache_dir", std::string(".optimas/cache"));
  s.no_cache = o.value("no_cache", false);
  s.keep_work = o.value("keep_work", false);
  s.aa = o.value("aa", false);
  if (s.execute != "auto" && s.execute != "yes" && s.execute != "no")
    throw UsageError("--execute is auto, yes or no, got \"" + s.execute + "\"");
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

// Every measured configuration of every iteration is a test of its own: the significance is
// corrected for all of them (Bonferroni).
evaluate::AcceptanceRule acceptance_rule(const config::AppConfig& app) {
  evaluate::AcceptanceRule rule;
  rule.significance = app.measure.significance;
  rule.confidence = app.measure.confidence;
  rule.min_speedup = app.measure.min_speedup;
  rule.confirm = app.measure.confirm;
  rule.comparisons = static_cast<int>(measured_configs(app).size()) * app.optimize.iterations;
  return rule;
}

llm::BackendConfig backend_config(const config::AppConfig& app, const Settings& s, const Overrides& o) {
  // The command line's --option values override the optimas.yml's, key by key.
  std::map<std::string, std::string> options = app.optimize.options;
  for (const auto& kv : string_list(o.value("options", json::array()))) {
    auto [key, value] = llm::split_option(kv);
    options[key] = value;
  }
  llm::BackendConfig c = llm::backend_from(s.model, s.base_url, options);
  c.work_dir = o.value("work_dir", std::string("optimas-manual"));
  return c;
}

void apply_overrides(config::AppConfig& app, const Overrides& o) {
  auto& opt = app.optimize;
  if (o.contains("model")) opt.backend = o["model"].get<std::string>();
  if (o.contains("diagnostics")) opt.diagnostics = o["diagnostics"].get<std::string>();
  if (o.contains("scope")) opt.scope = o["scope"].get<std::string>();
  if (o.contains("iterations")) opt.iterations = o["iterations"].get<int>();
  if (o.contains("retries")) opt.retries = o["retries"].get<int>();
  if (opt.iterations < 1) throw UsageError("--iterations must be at least 1");
  if (opt.retries < 0) throw UsageError("--retries must not be negative");
  if (opt.scope != "kernel" && opt.scope != "file") throw UsageError("--scope is kernel or file");
  analysis::parse_sources(opt.diagnostics); // throws on a typo
  auto& ms = app.measure;
  if (o.contains("runs")) ms.runs = o["runs"].get<int>();
  if (o.contains("warmup")) ms.warmup = o["warmup"].get<int>();
  if (o.contains("timing")) ms.timing = o["timing"].get<std::string>();
  if (o.contains("measure_configs")) ms.configs = string_list(o["measure_configs"]);
  if (ms.runs < 2) throw UsageError("--runs must be at least 2 (a comparison needs more than one sample)");
  if (ms.warmup < 0) throw UsageError("--warmup must not be negative");
  if (ms.timing != "auto" && ms.timing != "wall" && ms.timing != "kernel_time" && ms.timing != "trace")
    throw UsageError("--timing is auto, trace, kernel_time or wall");
  if (ms.timing == "kernel_time" && app.kernel_time.empty())
    throw UsageError("--timing kernel_time needs run.kernel_time in " + app.path);
  if (o.contains("min_speedup")) ms.min_speedup = o["min_speedup"].get<double>();
  if (o.contains("confirm")) ms.confirm = o["confirm"].get<bool>();
  if (!(ms.min_speedup >= 1 && ms.min_speedup < 10))
    throw UsageError(fmt::format("--min-speedup is a ratio such as 1.01 (at least 1), got {}", ms.min_speedup));
  auto& vs = app.validate;
  if (o.contains("validate_configs")) vs.configs = string_list(o["validate_configs"]);
  if (o.contains("fresh_seeds")) vs.fresh_seeds = o["fresh_seeds"].get<int>();
  if (vs.fresh_seeds < 0) throw UsageError("--fresh-seeds must not be negative");
  if (o.contains("tolerance")) {
    std::string t = o["tolerance"].get<std::string>();
    auto eq = t.find('=');
    vs.tolerance = t.substr(0, eq);
    vs.tolerance_value = 0;
    if (eq != std::string::npos) {
      try {
        vs.tolerance_value = std::stod(t.substr(eq + 1));
      } catch (const std::exception&) {
        throw UsageError("--tolerance takes exact, abs=X, rel=X or ulp=N, got \"" + t + "\"");
      }
    }
    if (vs.tolerance != "exact" && vs.tolerance != "abs" && vs.tolerance != "rel" && vs.tolerance != "ulp")
      throw UsageError("--tolerance takes exact, abs=X, rel=X or ulp=N, got \"" + t + "\"");
  }
  for (const auto& list : {ms.configs, vs.configs})
    for (const auto& n : list)
      if (!app.find(n)) throw UsageError(fmt::format("no config named \"{}\" in {}", n, app.path));
}

} // namespace optimas::loop
