#include "cli/common.hpp"

#include "analysis/json.hpp"
#include "profile/importer.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace optimas::cli {

namespace fs = std::filesystem;

void add_profile_input_options(CLI::App* cmd, ProfileInput& in) {
  cmd->add_option("profile", in.profile, "A profile directory, a folder of ncu CSV pages, or a .ncu-rep")
      ->capture_default_str();
  cmd->add_option("--app", in.app, "The application's optimas.yml or its folder (default: the one the profile names)");
  cmd->add_option("--config", in.config,
                  "Input configuration whose run is analysed (default: \"default\" or the first)");
  cmd->add_option("--ncu", in.ncu, "The ncu executable (for .ncu-rep input)")->envname("OPTIMAS_NCU");
}

Loaded load_profile_and_app(const ProfileInput& in) {
  Loaded l;
  profile::ImportOptions io;
  io.ncu = in.ncu;
  l.profile = profile::import_profile(in.profile, io);
  std::string app = in.app;
  if (app.empty()) {
    // The profile directory remembers where the application was; it may have moved since.
    std::string recorded = l.profile.manifest.value("app", nlohmann::json::object()).value("config_file", "");
    if (recorded.empty() || !fs::exists(recorded))
      throw UsageError(
          fmt::format("{}: which application is this? Pass --app with its optimas.yml or folder{}", in.profile,
                      recorded.empty() ? "" : fmt::format(" (the profile names {}, which is not here)", recorded)));
    app = recorded;
  }
  fs::path p(app);
  if (fs::is_directory(p)) p /= "optimas.yml";
  l.app = config::load_app_config(p.string());
  l.analysis.config = in.config;
  return l;
}

void add_model_options(CLI::App* cmd, BackendChoice& b) {
  cmd->add_option("-m,--model", b.model,
                  "provider/model (openai/gpt-5, ollama/llama3.1:70b), manual or builtin; see optimas backends")
      ->envname("OPTIMAS_MODEL")
      ->capture_default_str();
  cmd->add_option("--base-url", b.base_url, "Server URL (openai-compatible, ollama, or a proxy)")
      ->envname("OPTIMAS_BASE_URL");
  cmd->add_option("--option", b.options, "Backend option key=value (repeatable; see optimas backends)");
}

void add_backend_options(CLI::App* cmd, BackendChoice& b) {
  add_model_options(cmd, b);
  cmd->add_option("--cache-dir", b.cache_dir, "Response cache")->envname("OPTIMAS_CACHE_DIR")->capture_default_str();
  cmd->add_option("--work-dir", b.work_dir, "Manual backend: where prompt and reply files go")->capture_default_str();
  cmd->add_flag("--no-cache", b.no_cache, "Always call the backend");
}

llm::BackendConfig backend_config(const BackendChoice& b) {
  std::map<std::string, std::string> options;
  for (const auto& kv : b.options) {
    auto [key, value] = llm::split_option(kv);
    options[key] = value;
  }
  llm::BackendConfig c = llm::backend_from(b.model, b.base_url, options);
  c.work_dir = b.work_dir;
  return c;
}

std::map<std::string, std::string> read_sources(const config::AppConfig& app) {
  std::map<std::string, std::string> sources;
  for (const auto& s : app.sources)
    sources[fs::path(s).filename().string()] = util::read_file((fs::path(app.dir) / s).string());
  return sources;
}

nlohmann::json structured_context(const analysis::Diagnostics& d, const std::map<std::string, std::string>& sources) {
  return {{"diagnostics", analysis::to_json(d)}, {"sources", sources}};
}

void add_prompt_options(CLI::App* cmd, PromptChoice& c) {
  cmd->add_option("--diagnostics", c.diagnostics, "Evidence to include: any of pc, ia, roofline, or all")
      ->capture_default_str();
  cmd->add_flag("--code-only", c.code_only, "The baseline: the kernels without diagnostics");
  cmd->add_option("--template", c.template_path, "A prompt template file (default: the built-in one)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--token-budget", c.token_budget,
                  "Split prompts larger than this many tokens (about 4 characters each)")
      ->capture_default_str();
}

Prepared prepare_prompts(const ProfileInput& input, const PromptChoice& c) {
  Prepared p;
  p.loaded = load_profile_and_app(input);
  p.options.code_only = c.code_only;
  p.options.sources = analysis::parse_sources(c.diagnostics);
  p.options.token_budget = c.token_budget;
  if (!c.template_path.empty()) p.options.template_text = util::read_file(c.template_path);
  p.diagnostics = analysis::analyze(p.loaded.profile, p.loaded.analysis);
  p.prompts = prompt::build_prompts(p.loaded.app, p.diagnostics, p.options);
  return p;
}

bool cached(const BackendChoice& b, const llm::BackendConfig& c) {
  return !b.no_cache && llm::caches_answers(c);
}

} // namespace optimas::cli
