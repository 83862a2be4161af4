// The tuning stage's results, cached by (the sources and settings they were measured with, the
// point): a re-run of the same application on the same machine measures no point twice. Kept in
// <cache_dir>/tune/<first two hex digits>/<key>.json, beside the model responses' cache
// (--cache-dir, .optimas/cache by default).
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace optimas::tune {

class PointCache {
public:
  explicit PointCache(std::filesystem::path dir); // <cache_dir>/tune
  const std::filesystem::path& dir() const { return m_dir; }

  // SHA-256 (hex) of `context` (whatever shapes a point's result: the sources' hash, the build
  // and run commands, the configurations, the measure and validate settings, the machine) and
  // the point's label.
  static std::string key(const nlohmann::json& context, const std::string& label);

  std::filesystem::path path_for(const std::string& key) const;

  // The stored result of `label` under `key`; nullopt when absent. A damaged entry, or one that
  // holds another point, is a miss with a warning: the point is simply measured again.
  std::optional<nlohmann::json> get(const std::string& key, const std::string& label) const;

  // Stores a result atomically. Returns what went wrong when it could not be written (a warning:
  // the run has the result anyway).
  std::optional<std::string> put(const std::string& key, const std::string& label, const nlohmann::json& result) const;

private:
  std::filesystem::path m_dir;
};

} // namespace optimas::tune
