#include "store/run_inputs.hpp"

#include "store/journal.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/json_text.hpp"
#include "util/paths.hpp"

#include <fmt/format.h>

#include <set>

namespace optimas::store {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

UsageError refused(const std::string& id, const std::string& what) {
  return UsageError(fmt::format("run {}: {}", id, what));
}

// Links out of the folder: a scratch folder (work/) or a round's (iterations/) replaced by a
// link would have builds and artifacts written wherever it leads.
void check_links(const fs::path& dir, const std::string& id) {
  const auto out = util::links_out_of(dir);
  if (out.empty()) return;
  std::error_code ec;
  const fs::path target = fs::read_symlink(dir / out.front(), ec);
  throw refused(
      id, fmt::format("{} is a symbolic link to {}, outside the run folder {}{}: a run is read and written "
                      "only inside its folder; put what the link replaced back in its place",
                      (dir / out.front()).string(), ec ? "a path that cannot be read" : target.string(), dir.string(),
                      out.size() > 1 ? fmt::format(" (and {} more link(s) leading out)", out.size() - 1) : ""));
}

// The relative paths run.json names: each variant's folders and its tuning points'.
void check_named_paths(const fs::path& dir, const std::string& id, const json& run) {
  auto check = [&](const json& holder, const char* key, const std::string& what) {
    const json& value = util::member(holder, key);
    if (value.is_null()) return;
    if (!value.is_string()) throw refused(id, fmt::format("run.json's {} is not a string", what));
    path_in_run(dir.string(), id, value.get<std::string>(), "run.json's " + what);
  };
  const json& variants = util::member(run, "variants");
  if (!variants.is_null() && !variants.is_array()) throw refused(id, "run.json's variants is not a list");
  for (std::size_t i = 0; variants.is_array() && i < variants.size(); ++i)
    for (const char* key : {"source", "dir", "prompt"}) check(variants[i], key, fmt::format("variants[{}].{}", i, key));
  const json& tune = util::member(run, "tune");
  const json& points = util::member(tune, "points");
  for (std::size_t i = 0; points.is_array() && i < points.size(); ++i)
    check(points[i], "dir", fmt::format("tune.points[{}].dir", i));
  if (const json& best = util::member(tune, "best"); best.is_string())
    path_in_run(dir.string(), id, "tune/" + best.get<std::string>(), "run.json's tune.best");
}

// config_path against the run's records of its optimas.yml; returns it.
std::string check_config(const fs::path& dir, const std::string& id, const json& run, bool recorded) {
  const std::string path = util::member_string(run, "config_path");
  if (path.empty() || !fs::path(path).is_absolute())
    throw refused(id, fmt::format("run.json's config_path \"{}\" is not the absolute path of an optimas.yml", path));
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw refused(id, fmt::format("run.json's config_path {}: no such file; the run was made from it", path));
  const fs::path copy = dir / "config" / "optimas.yml";
  const std::string input = util::member_string(util::member(run, "inputs"), "optimas.yml");
  const bool has_copy = fs::exists(fs::symlink_status(copy, ec));
  if (!has_copy && input.empty() && recorded)
    throw refused(id, fmt::format("{} is missing: the run's copy of the optimas.yml it was made from, which "
                                  "run.json's config_path {} is checked against",
                                  copy.string(), path));
  if (has_copy && !fs::is_regular_file(copy, ec))
    throw refused(id, fmt::format("{} is not a file: the run's copy of its optimas.yml", copy.string()));
  const std::string now = util::sha256_file(path);
  if ((has_copy && util::sha256_file(copy.string()) != now) || (!input.empty() && input != now))
    throw refused(id, fmt::format("{} changed since run {} started, or run.json's config_path was edited: its "
                                  "SHA-256 is not that of {}, the copy the run recorded, or of run.json's inputs; "
                                  "restore it (it would mix two configurations, or name another application)",
                                  path, id, copy.string()));
  return path;
}

// The files every build of the run starts from, against snapshot.json's SHA-256 of each.
void check_snapshot(const fs::path& dir, const std::string& id, bool recorded) {
  const fs::path record = dir / "snapshot.json", snapshot = dir / "snapshot";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(record, ec))) {
    if (recorded)
      throw refused(id, fmt::format("{} is missing: the record of the snapshot every build of the run starts from",
                                    record.string()));
    return;
  }
  json files;
  try {
    files = util::member(read_json(record.string()), "files");
  } catch (const Error& e) {
    throw refused(id, e.what());
  }
  if (!files.is_object()) throw refused(id, fmt::format("{}: \"files\" is not an object", record.string()));
  for (const auto& [rel, sha] : files.items()) {
    const std::string what = fmt::format("snapshot/{} (recorded in {})", rel, record.string());
    if (!sha.is_string()) throw refused(id, fmt::format("{}: its SHA-256 is not a string", what));
    const fs::path file = path_in_run(snapshot.string(), id, rel, what);
    if (!fs::is_regular_file(fs::symlink_status(file, ec)))
      throw refused(id, fmt::format("{} is missing: start a new run", what));
    if (util::sha256_file(file.string()) != sha.get<std::string>())
      throw refused(id, fmt::format("{} is not as the run recorded it (its SHA-256 differs from snapshot.json's): "
                                    "every build of the run starts from the snapshot, and an edited one would be "
                                    "built and measured as the application; start a new run",
                                    (snapshot / rel).string()));
  }
  if (!fs::is_directory(fs::symlink_status(snapshot, ec))) return; // its files were named above
  for (auto it = fs::recursive_directory_iterator(snapshot, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code kind;
    if (it->is_directory(kind) && !it->is_symlink(kind)) continue;
    const std::string rel = it->path().lexically_relative(snapshot).string();
    if (!files.contains(rel))
      throw refused(id, fmt::format("{} is not in {}: a file added to the snapshot would be built with the "
                                    "application; remove it, or start a new run",
                                    it->path().string(), record.string()));
  }
}

} // namespace

fs::path path_in_run(const std::string& dir, const std::string& id, const std::string& rel, const std::string& what) {
  auto path = util::resolve_inside(dir, rel);
  if (!path)
    throw refused(
        id, fmt::format("{} \"{}\" leads out of {}: a run's files name only what lies in its folder", what, rel, dir));
  return *path;
}

std::string check_run_folder(const std::string& dir, const std::string& id, const json& run) {
  const fs::path d(dir);
  check_links(d, id);
  check_named_paths(d, id, run);
  const json& variants = util::member(run, "variants");
  const bool recorded = (variants.is_array() && !variants.empty()) || util::member(run, "inputs").is_object();
  std::error_code ec;
  std::string config = check_config(d, id, run, recorded || fs::exists(d / "snapshot.json", ec));
  check_snapshot(d, id, recorded);
  return config;
}

} // namespace optimas::store
