// Regular expressions that come from the user (optimas.yml's run.kernel_time and
// validate.ignore). libstdc++'s compiler has undefined behaviour on repeat counts past a
// long (the fuzzer found `x{7777777777777777777}`) and recurses on very long patterns, so a
// pattern is checked before it is compiled.
#pragma once

#include <regex>
#include <stdexcept>
#include <string>

namespace optimas::util {

constexpr std::size_t k_regex_max_length = 4096;
constexpr unsigned long k_regex_max_repeat = 1000;

struct BadRegex : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The compiled pattern (ECMAScript grammar), or BadRegex saying what is wrong with it.
std::regex compile_regex(const std::string& pattern);

// `text` escaped to match itself in an ECMAScript regex.
std::string regex_literal(const std::string& text);

} // namespace optimas::util
