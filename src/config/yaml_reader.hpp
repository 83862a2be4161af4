// What the readers of our YAML files (optimas.yml, its tune: block, a campaign file) share:
// errors that name the file and the node's line, and a mapping's keys checked against the known
// ones. Each reader derives its own class for the values it reads.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace optimas::config {

class YamlReader {
public:
  explicit YamlReader(std::string path) : m_path(std::move(path)) {}

  const std::string& path() const { return m_path; }

  // Throws ConfigError(path, the node's line or 0 when it is absent, message).
  [[noreturn]] void fail(const YAML::Node& at, const std::string& message) const;

  // ConfigError unless `map` is a mapping whose keys are names, each given once,
  // each one of `known`; `where` names the mapping in the message ("run.kernel_time").
  void check_keys(const YAML::Node& map, const std::vector<std::string_view>& known, const std::string& where) const;
  template <std::size_t N>
  void check_keys(const YAML::Node& map, const char* const (&known)[N], const std::string& where) const {
    check_keys(map, std::vector<std::string_view>(std::begin(known), std::end(known)), where);
  }

  // yaml-cpp keeps the first of two equal keys and drops the second without a word; a setting
  // written twice is a mistake to show, not to guess at.
  void no_duplicate_keys(const YAML::Node& map, const std::string& where) const;

protected:
  std::string m_path;
};

// What yaml-cpp's parse error says, in words a user can act on: its depth limit reports itself
// as "bad file", which reads as a file that cannot be opened.
std::string parse_message(const YAML::Exception& e);

} // namespace optimas::config
