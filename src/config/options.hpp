// The option table: every setting that more than one place reads (optimas.yml, the command line
// of several subcommands, the loop's settings) is one row here, with its name, help, environment
// variable, default, check and yml key. The yml loader and every subcommand read the row, so a
// setting has one default and one check wherever it is given (docs/options.md).
#pragma once

#include "util/option_spec.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace optimas::config {

// A setting's kind: text, integer, real, flag, list or names (util/option_spec.hpp), shared with
// the options backends and launchers declare.
using Kind = util::OptionKind;

// The smallest and largest value of an integer setting (docs/options.md lists them): every whole
// number is bounded, so none wraps where it is used as an int (warmup 2147483648 ran -2147483648
// warm-ups).
struct Range {
  long long min = 0;
  long long max = 0;
};

struct Option {
  std::string name;  // the key in loop::Overrides and in messages
  std::string flags; // the command line's names as CLI11 spells them ("-m,--model"); empty: yml only
  std::string help;
  std::string env; // the environment variable that stands in for the flag; empty: none
  Kind kind = Kind::text;
  nlohmann::json default_value; // null: none (unset unless given)
  std::string yml;              // "measure.runs"; empty: not in optimas.yml
  // Why `value` is not good, or empty when it is; the same words wherever the value comes from.
  std::string (*check)(const nlohmann::json& value) = nullptr;
  Range range; // Kind::integer: the values accepted, checked before `check`
};

// Every row, in the order of docs/options.md.
const std::vector<Option>& options();

// The row named `name`; std::logic_error on a name the table does not hold (a typo in our code).
const Option& option(std::string_view name);

// The row whose yml key is `yml`, or null.
const Option* option_for_yml(std::string_view yml);

// How messages name an option: its yml key and its flag, "measure.runs (--runs)".
std::string label(const Option& o);

// The default of `name` as T (its row must have one).
template <typename T> T default_of(std::string_view name) {
  return option(name).default_value.get<T>();
}

// Why `value` is not good for `name` ("measure.runs (--runs) must be at least 2, got 1"), or empty:
// an integer row's value must be a whole number within its range, then pass the row's check.
std::string check(std::string_view name, const nlohmann::json& value);

// check(), as a UsageError.
void check_or_throw(std::string_view name, const nlohmann::json& value);

// validate.tolerance as the command line writes it: exact, abs=X, rel=X or ulp=N.
struct Tolerance {
  std::string mode = "exact";
  double value = 0;
};
// UsageError with check("tolerance")'s message on a bad one.
Tolerance parse_tolerance(const std::string& text);

} // namespace optimas::config
