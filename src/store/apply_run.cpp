#include "store/apply_run.hpp"

#include "config/app_config.hpp"
#include "store/run_inputs.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <set>

namespace optimas::store {

namespace fs = std::filesystem;
using nlohmann::json;

AppliedVariant apply_variant(const RunStore& st, const std::string& wanted, const std::string& variant_key,
                             bool force) {
  std::string id = st.resolve(wanted);
  json run = st.load_run(id);
  // The folder first: what its files name decides where apply reads and writes.
  const std::string config_path = check_run_folder(st.run_dir(id), id, run);
  std::string key = variant_key;
  if (key.empty() && run.contains("best") && run["best"].is_string()) key = run["best"].get<std::string>();
  if (key.empty())
    throw Error(
        fmt::format("run {} has no accepted variant; name one with --variant KEY (see optimas runs show {})", id, id));
  const json* variant = nullptr;
  const json variants = run.value("variants", json::array());
  for (const auto& v : variants)
    if (v.value("key", "") == key) variant = &v;
  if (!variant) throw UsageError(fmt::format("run {} has no variant {}", id, key));
  if (variant->value("status", "") != "accepted" && !force)
    throw Error(fmt::format("variant {} of run {} was not accepted ({}: {}); --force applies it anyway", key, id,
                            variant->value("status", ""), variant->value("reason", "")));
  // Only the sources its optimas.yml names (each inside its folder) are written.
  const config::AppConfig app = config::load_app_config(config_path);
  const std::set<std::string> sources(app.sources.begin(), app.sources.end());
  fs::path app_dir = app.dir;
  fs::path src = path_in_run(st.run_dir(id), id, variant->value("source", ""),
                             fmt::format("run.json's source of variant {}", key));
  if (!fs::is_directory(src)) throw Error(fmt::format("{}: the variant's sources are missing", src.string()));
  const json& inputs = run.value("inputs", json::object());
  std::vector<std::pair<fs::path, fs::path>> copies;
  for (auto it = fs::recursive_directory_iterator(src); it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_regular_file()) continue;
    std::string rel = fs::relative(it->path(), src).string();
    fs::path target = app_dir / rel;
    if (!inputs.contains(rel) || !sources.count(fs::path(rel).lexically_normal().string()))
      throw Error(fmt::format("{}: not one of the run's sources", rel));
    if (fs::exists(target) && util::sha256_file(target.string()) != inputs[rel].get<std::string>() && !force)
      throw Error(fmt::format("{} changed since run {} started; apply would overwrite those changes (--force to "
                              "do it anyway)",
                              target.string(), id));
    copies.emplace_back(it->path(), target);
  }
  AppliedVariant applied{
      id, key, app_dir.string(), (fs::path(st.run_dir(id)) / variant->value("dir", "") / "diff.patch").string(), {}};
  for (const auto& [from, to] : copies) {
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    applied.copies.emplace_back(from.string(), to.string());
  }
  return applied;
}

} // namespace optimas::store
