#include "cli/common.hpp"

#include "cli/options.hpp"
#include "loop/settings.hpp"

#include <fmt/format.h>

#include <iostream>

namespace optimas::cli {

void add_profile_input_options(CLI::App* cmd, ProfileInput& in) {
  cmd->add_option("profile", in.profile, "A profile directory, a folder of ncu CSV pages, or a .ncu-rep")
      ->capture_default_str();
  add_option(cmd, "app", in.app);
  add_option(cmd, "input", in.config);
  add_deprecated_alias(cmd, "--config", "input", in.config);
  add_option(cmd, "ncu", in.ncu);
  add_option(cmd, "alpha", in.alpha);
}

void add_model_options(CLI::App* cmd, BackendChoice& b) {
  add_option(cmd, "model", b.model);
  add_option(cmd, "base_url", b.base_url);
  add_option(cmd, "options", b.options);
}

void add_backend_options(CLI::App* cmd, BackendChoice& b) {
  add_model_options(cmd, b);
  add_option(cmd, "cache_dir", b.cache_dir);
  add_option(cmd, "work_dir", b.work_dir);
  add_flag(cmd, "no_cache", b.no_cache);
}

llm::BackendConfig backend_config(const BackendChoice& b) {
  return loop::make_backend_config(b.model, b.base_url, b.work_dir, {}, b.options);
}

void add_prompt_options(CLI::App* cmd, PromptChoice& c) {
  add_option(cmd, "diagnostics", c.diagnostics);
  cmd->add_flag("--code-only", c.code_only, "The baseline: the kernels without diagnostics");
  add_option(cmd, "template", c.template_path);
  add_option(cmd, "token_budget", c.token_budget);
}

bool cached(const BackendChoice& b, const llm::BackendConfig& c) {
  return !b.no_cache && llm::caches_answers(c);
}

// The variants whose builds were made ahead (a round's builtin candidates, docs/pipeline.md): how
// long they built and how long the run waited for them.
void print_builds_ahead(const nlohmann::json& run) {
  int made = 0;
  double built = 0, waited = 0;
  for (const auto& v : run.value("variants", nlohmann::json::array())) {
    const auto& t = v.value("times", nlohmann::json::object());
    if (!t.contains("waited_s") || !t.contains("lane")) continue; // built at its turn
    ++made;
    built += t.value("build_s", 0.0);
    waited += t.value("waited_s", 0.0);
  }
  if (made > 0)
    std::cout << fmt::format("  builds made ahead: {} variant(s), {:.1f} s of building; the run waited {:.1f} s for "
                             "them: {:.1f} s saved\n",
                             made, built, waited, built - waited);
}

// The tuning stage's points, one line each, and the best one.
void print_tune(const nlohmann::json& run) {
  if (!run.contains("tune")) return;
  const auto& t = run["tune"];
  if (t.contains("skipped")) {
    std::cout << "  tune: " << t["skipped"].get<std::string>() << "\n";
    return;
  }
  const auto& found = t.value("discovered", nlohmann::json::object());
  if (!found.empty()) {
    std::cout << "  tune: no tune: block; knobs found where the evidence points:\n";
    for (const auto& k : found.value("knobs", nlohmann::json::array()))
      std::cout << "    " << k.get<std::string>() << "\n";
  }
  if (!t.contains("method")) return;
  std::cout << fmt::format("  tune: {} search, {} of {} allowed point(s) tried, on {}'s sources\n",
                           t.value("method", ""), t.value("points", nlohmann::json::array()).size(),
                           t.value("allowed", 0), t.value("parent", "baseline"));
  for (const auto& p : t.value("points", nlohmann::json::array())) {
    std::string speed = p["speedup"].is_number() ? fmt::format("{:.3f}x [{:.3f}, {:.3f}]", p["speedup"].get<double>(),
                                                               p["ci"][0].get<double>(), p["ci"][1].get<double>())
                                                 : "-";
    std::cout << fmt::format("    {:<4} {:<40} {:<18} {:<24}{}\n", p.value("key", ""), p.value("flags", ""),
                             p.value("status", ""), speed, p.value("cached", false) ? " (cached)" : "");
  }
  for (const auto& o : t.value("passed_over", nlohmann::json::array()))
    std::cout << fmt::format("    {}: {}\n", o.value("point", ""), o.value("reason", ""));
  if (t.contains("stopped")) std::cout << "    stopped: " << t["stopped"].get<std::string>() << "\n";
  if (t.contains("best") && t["best"].is_string())
    std::cout << fmt::format("    best: {}\n", t["best"].get<std::string>());
  // What building ahead saved (docs/pipeline.md).
  if (const auto& o = t.value("overlap", nlohmann::json::object()); o.contains("wall_s") && o.contains("steps_s")) {
    const int lanes = o.value("lanes", 0);
    std::cout << (lanes == 0
                      ? fmt::format("    {:.1f} s, built one at a time (the points' steps: {:.1f} s)\n",
                                    o.value("wall_s", 0.0), o.value("steps_s", 0.0))
                      : fmt::format("    {:.1f} s for the points' {:.1f} s of steps: building ahead on {} "
                                    "lane(s) saved {:.1f} s\n",
                                    o.value("wall_s", 0.0), o.value("steps_s", 0.0), lanes, o.value("saved_s", 0.0)));
    if (o.contains("ear_s"))
      std::cout << fmt::format("    (after {:.1f} s of a candidate's re-profile, while the points built)\n",
                               o.value("ear_s", 0.0));
  }
}

} // namespace optimas::cli
