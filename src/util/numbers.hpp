// Numbers as profilers print them: "1,234.5", "n/a", "(256, 1, 1)", values with unit prefixes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace optimas::util {

// Parses a number printed by ncu in any locale it has been seen in: thousands separators ","
// are dropped, "." is the decimal point. Returns nullopt for "", "n/a", "-", "N/A" and text.
// "nan" and "inf" parse to the IEEE values, since ncu prints them for undefined ratios.
std::optional<double> parse_number(std::string_view text);

// Parses a whole number as parse_number does ("1,024"). Nullopt for fractions, text, inf, nan
// and magnitudes of 2^53 or more, which a double does not hold exactly (and past 2^63 cannot
// be converted at all).
std::optional<std::int64_t> parse_integer(std::string_view text);

// Parses "(256, 1, 1)" or "256"; nullopt when it is neither.
std::optional<std::array<std::int64_t, 3>> parse_dim3(std::string_view text);

// A value converted to the base unit of its dimension (ns, byte, byte/second, hz, ...).
struct BaseValue {
  double value;
  std::string unit;
};

// Converts a value with a (possibly prefixed) ncu unit to its base unit: "usecond" -> ns,
// "Gbyte/second" -> byte/second, "Mhz" -> hz. Units it does not know are kept unchanged.
BaseValue to_base_unit(double value, std::string_view unit);

} // namespace optimas::util
