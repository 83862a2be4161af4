// A declared option of a pluggable part (a model backend, a launcher), written in that part's
// own file next to the code that reads it (Caliper-style spec): help text and validation of what
// a user wrote come from here.
#pragma once

#include <map>
#include <string>

namespace optimas::util {

struct OptionSpec {
  std::string name;
  std::string description;
  std::string default_value;
  // The value names an environment variable holding a key (api_key_env): it becomes a secret as
  // soon as it is set, before any build or program starts, so that none of them sees it.
  bool names_secret_variable = false;
};

// The value a user gave for `option` in `options`, or its default when absent or empty.
inline std::string option_value(const std::map<std::string, std::string>& options, const OptionSpec& option) {
  auto it = options.find(option.name);
  return it == options.end() || it->second.empty() ? option.default_value : it->second;
}

} // namespace optimas::util
