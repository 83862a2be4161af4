#include "cli/common.hpp"

#include "profile/importer.hpp"
#include "util/error.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace optimas::cli {

namespace fs = std::filesystem;

void add_profile_input_options(CLI::App* cmd, ProfileInput& in) {
  cmd->add_option("profile", in.profile, "A profile directory, a folder of ncu CSV pages, or a .ncu-rep")->capture_default_str();
  cmd->add_option("--app", in.app, "The application's optimas.yml or its folder (default: the one the profile names)");
  cmd->add_option("--config", in.config, "Input configuration whose run is analysed (default: \"default\" or the first)");
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
      throw UsageError(fmt::format("{}: which application is this? Pass --app with its optimas.yml or folder{}", in.profile,
                                   recorded.empty() ? "" : fmt::format(" (the profile names {}, which is not here)", recorded)));
    app = recorded;
  }
  fs::path p(app);
  if (fs::is_directory(p)) p /= "optimas.yml";
  l.app = config::load_app_config(p.string());
  l.analysis.config = in.config;
  return l;
}

} // namespace optimas::cli
