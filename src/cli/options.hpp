// Declares the option table's rows (src/config/options.hpp) on CLI11 subcommands: a row's flags,
// help, environment variable, default and check come from the table, so no subcommand repeats them.
#pragma once

#include "config/options.hpp"
#include "loop/settings.hpp"

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace optimas::cli {

// The row's option bound to `target`, which starts at the row's default where it has one.
CLI::Option* add_option(CLI::App* cmd, std::string_view name, std::string& target);
CLI::Option* add_option(CLI::App* cmd, std::string_view name, int& target);
CLI::Option* add_option(CLI::App* cmd, std::string_view name, double& target);
CLI::Option* add_option(CLI::App* cmd, std::string_view name, std::size_t& target);
CLI::Option* add_option(CLI::App* cmd, std::string_view name, std::vector<std::string>& target);
// A flag row: given, `target` becomes the opposite of the row's default (--no-confirm sets false).
CLI::Option* add_flag(CLI::App* cmd, std::string_view name, bool& target);

// The row's option writing overrides[name] only when it is given (on the command line or in its
// environment variable): the loop starts from optimas.yml and changes only what is given.
CLI::Option* add_override(CLI::App* cmd, std::string_view name, loop::Overrides& overrides);

// `old_flags` (such as "-c,--config") as a hidden alias of the row `name` that sets `target` and
// prints a one-line deprecation note on stderr.
CLI::Option* add_deprecated_alias(CLI::App* cmd, const std::string& old_flags, std::string_view name,
                                  std::string& target);

// The row's check as a CLI11 validator (what config::check says, for values given as text).
CLI::Validator validator(const config::Option& row);

} // namespace optimas::cli
