// A declared option of a pluggable part (a model backend, a launcher), written in that part's
// own file next to the code that reads it (Caliper-style spec): help text and validation of what
// a user wrote come from here. Its kind is the option table's (config::Kind is OptionKind), so a
// value is checked in the same words wherever it is given.
#pragma once

#include <map>
#include <string>

namespace optimas::util {

enum class OptionKind {
  text,    // a string
  integer, // a whole number
  real,    // a number
  flag,    // true or false (also 1 or 0); on the command line, true when given (!--no-x sets false)
  list,    // repeatable strings
  names,   // comma-separated strings (also repeatable)
};

struct OptionSpec {
  std::string name;
  std::string description;
  std::string default_value;
  // The value names an environment variable holding a key (api_key_env): it becomes a secret as
  // soon as it is set, before any build or program starts, so that none of them sees it.
  bool names_secret_variable = false;
  OptionKind kind = OptionKind::text;
  // Why a value of the right kind is still not good, or "" when it is.
  std::string (*check)(const std::string& value) = nullptr;
};

// Why `value` is not good for `option` (not of its kind, or refused by its check), or "": the
// words a user sees after "backend NAME option KEY" or "launcher NAME option KEY".
std::string option_problem(const OptionSpec& option, const std::string& value);

// The value a user gave for `option` in `options`, or its default when absent or empty.
inline std::string option_value(const std::map<std::string, std::string>& options, const OptionSpec& option) {
  auto it = options.find(option.name);
  return it == options.end() || it->second.empty() ? option.default_value : it->second;
}

// A flag option's value: true for "true" or "1".
inline bool option_flag(const std::map<std::string, std::string>& options, const OptionSpec& option) {
  const std::string v = option_value(options, option);
  return v == "true" || v == "1";
}

} // namespace optimas::util
