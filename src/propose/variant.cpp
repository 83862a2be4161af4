#include "propose/variant.hpp"
#include "evaluate/snapshot.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

namespace optimas::propose {

namespace fs = std::filesystem;

namespace {

bool lies_inside(const fs::path& path, const fs::path& root) {
  std::error_code ec;
  auto rel = fs::weakly_canonical(path, ec).lexically_relative(fs::weakly_canonical(root, ec));
  return !ec && !rel.empty() && *rel.begin() != "..";
}

} // namespace

void write_variant(const config::AppConfig& app, const std::map<std::string, std::string>& edited,
                   const std::string& dir) {
  fs::remove_all(dir);
  if (lies_inside(dir, app.dir)) {
    // A copy into a folder of the application would copy itself: copy through a folder outside.
    std::string tmpl = (fs::temp_directory_path() / "optimas-variant-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw Error(fmt::format("{}: cannot make a temporary folder", tmpl));
    evaluate::ScratchFolder scratch(tmpl);
    std::string copy = (fs::path(tmpl) / "variant").string();
    evaluate::snapshot_application(app, copy);
    evaluate::copy_tree(copy, dir);
  } else {
    evaluate::snapshot_application(app, dir);
  }
  for (const auto& [path, text] : edited) {
    fs::path p = fs::path(path).lexically_normal();
    // The paths are optimas.yml's sources, checked to lie inside the application when it was read.
    if (p.is_absolute() || p.empty() || *p.begin() == "..")
      throw Error(fmt::format("{}: not a path inside the application folder", path));
    util::write_file((fs::path(dir) / p).string(), text);
  }
}

evaluate::BuildResult build_variant(const config::AppConfig& app, const std::string& dir, const std::string& log_path) {
  evaluate::Sandbox sandbox = evaluate::sandbox_for(app);
  sandbox.isolation = evaluate::strongest_isolation();
  return evaluate::build_in(app, dir, log_path, sandbox);
}

} // namespace optimas::propose
