#include "config/yaml_reader.hpp"

#include "util/error.hpp"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>

#include <set>

namespace optimas::config {

std::string parse_message(const YAML::Exception& e) {
  if (dynamic_cast<const YAML::DeepRecursion*>(&e))
    return "lists and mappings are nested too deep here (YAML allows about 500 levels in our files)";
  return e.msg;
}

void YamlReader::fail(const YAML::Node& at, const std::string& message) const {
  throw ConfigError(m_path, at.IsDefined() ? static_cast<std::size_t>(at.Mark().line + 1) : 0, message);
}

void YamlReader::check_keys(const YAML::Node& map, const std::vector<std::string_view>& known,
                            const std::string& where) const {
  if (!map.IsMap()) fail(map, fmt::format("{} must be a mapping", where));
  no_duplicate_keys(map, where);
  for (const auto& kv : map) {
    const std::string& key = kv.first.Scalar();
    bool ok = false;
    for (auto k : known) ok = ok || key == k;
    if (!ok) fail(kv.first, fmt::format("unknown key \"{}\" in {} (known: {})", key, where, fmt::join(known, ", ")));
  }
}

void YamlReader::no_duplicate_keys(const YAML::Node& map, const std::string& where) const {
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) fail(kv.first, fmt::format("a key in {} must be a name", where));
    if (!seen.insert(kv.first.Scalar()).second)
      fail(kv.first, fmt::format("\"{}\" is given twice in {}", kv.first.Scalar(), where));
  }
}

} // namespace optimas::config
