#include "propose/prepare.hpp"

#include "analysis/json.hpp"
#include "evaluate/snapshot.hpp"
#include "profile/importer.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

namespace optimas::propose {

namespace fs = std::filesystem;

std::string profile_dir(const std::string& path, const std::string& app) {
  std::error_code ec;
  if (!fs::is_directory(path, ec) || fs::exists(fs::path(path) / "manifest.json", ec)) return path;
  std::vector<std::string> profiles;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    std::string ext = e.path().extension().string();
    if (ext == ".csv" || ext == ".gz" || ext == ".ncu-rep") return path; // a folder of pages or reports
    if (e.is_directory(ec) && fs::exists(e.path() / "manifest.json", ec)) profiles.push_back(e.path().string());
  }
  if (profiles.empty()) return path; // the importer says what is missing
  std::sort(profiles.begin(), profiles.end());
  if (!app.empty()) {
    if (fs::exists(fs::path(path) / app / "manifest.json", ec)) return (fs::path(path) / app).string();
    throw UsageError(fmt::format("{} holds no profile of {} (it holds {}); profile it, or name the profile folder",
                                 path, app, fmt::join(profiles, ", ")));
  }
  if (profiles.size() == 1) return profiles[0];
  throw UsageError(fmt::format("{} holds the profiles of {} applications; name one: {}", path, profiles.size(),
                               fmt::join(profiles, ", ")));
}

Loaded load_profile_and_app(const ProfileInput& in) {
  Loaded l;
  profile::ImportOptions io;
  io.ncu = in.ncu;
  std::string app = in.app;
  std::string name; // the application's, to find its profile under optimas-profile/
  if (!app.empty()) {
    fs::path p(app);
    if (fs::is_directory(p)) p /= "optimas.yml";
    l.app = config::load_app_config(p.string());
    name = l.app.name;
  }
  l.profile = profile::import_profile(profile_dir(in.profile, name), io);
  if (app.empty()) {
    // The profile directory remembers where the application was; it may have moved since.
    std::string recorded = l.profile.manifest.value("app", nlohmann::json::object()).value("config_file", "");
    if (recorded.empty() || !fs::exists(recorded))
      throw UsageError(
          fmt::format("{}: which application is this? Pass --app with its optimas.yml or folder{}", in.profile,
                      recorded.empty() ? "" : fmt::format(" (the profile names {}, which is not here)", recorded)));
    fs::path p(recorded);
    if (fs::is_directory(p)) p /= "optimas.yml";
    l.app = config::load_app_config(p.string());
  }
  l.analysis.config = in.config;
  l.analysis.alpha = in.alpha;
  return l;
}

std::map<std::string, std::string> read_sources(const config::AppConfig& app) {
  std::map<std::string, std::string> sources;
  for (const auto& s : app.sources)
    sources[fs::path(s).filename().string()] = util::read_file((fs::path(app.dir) / s).string());
  return sources;
}

std::map<std::string, std::string> read_host_sources(const config::AppConfig& app, const fs::path& root) {
  static const std::set<std::string> k_code = {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh"};
  constexpr std::uintmax_t k_file_limit = 1u << 20, k_total_limit = 8u << 20;
  std::set<std::string> editable;
  for (const auto& s : app.sources) editable.insert(fs::path(s).lexically_normal().generic_string());
  std::map<std::string, std::string> out;
  std::uintmax_t total = 0;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_directory(ec)) {
      // Build trees, Optimas' folders and hidden ones hold copies, not the application's code.
      if (it.depth() >= 2 || name.rfind('.', 0) == 0 || name.rfind("build", 0) == 0 || name == "CMakeFiles" ||
          evaluate::optimas_folder(name))
        it.disable_recursion_pending();
      continue;
    }
    const std::string rel = it->path().lexically_relative(root).generic_string();
    if (!k_code.count(it->path().extension().string()) || editable.count(rel)) continue;
    const std::uintmax_t size = it->file_size(ec);
    if (ec || size > k_file_limit || total + size > k_total_limit) continue;
    std::string text = util::read_file(it->path().string());
    if (text.find("<<<") == std::string::npos && text.find("__global__") == std::string::npos) continue;
    total += size;
    out.emplace(rel, std::move(text));
  }
  return out;
}

nlohmann::json structured_context(const analysis::Diagnostics& d, const std::map<std::string, std::string>& sources,
                                  const std::map<std::string, std::string>& host_sources, const std::string& scope) {
  nlohmann::json context = {{"diagnostics", analysis::to_json(d)}, {"sources", sources}, {"scope", scope}};
  if (!host_sources.empty()) context["host_sources"] = host_sources;
  return context;
}

Prepared prepare_prompts(const ProfileInput& input, const PromptChoice& c) {
  Prepared p;
  p.loaded = load_profile_and_app(input);
  if (!c.scope.empty()) p.loaded.app.optimize.scope = c.scope;
  if (std::string w = config::fp_reassociation_caveat(p.loaded.app); !w.empty()) log::warn("{}", w);
  const auto diagnostics = analysis::parse_diagnostics(c.diagnostics);
  p.options.code_only = c.code_only || diagnostics.code_only;
  p.options.sources = diagnostics.code_only ? analysis::k_all_sources : diagnostics.sources;
  p.options.token_budget = c.token_budget;
  if (!c.template_path.empty()) p.options.template_text = util::read_file(c.template_path);
  p.diagnostics = analysis::analyze(p.loaded.profile, p.loaded.analysis);
  p.prompts = prompt::build_prompts(p.loaded.app, p.diagnostics, p.options);
  return p;
}

} // namespace optimas::propose
