#include "util/option_spec.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace optimas::util {

std::string option_problem(const OptionSpec& option, const std::string& value) {
  const char* begin = value.c_str();
  char* end = nullptr;
  errno = 0;
  switch (option.kind) {
  case OptionKind::integer:
    std::strtoll(begin, &end, 10);
    if (value.empty() || *end != '\0' || errno == ERANGE)
      return fmt::format("takes a whole number, got \"{}\"", value);
    break;
  case OptionKind::real: {
    double v = std::strtod(begin, &end);
    if (value.empty() || *end != '\0' || !std::isfinite(v)) return fmt::format("takes a number, got \"{}\"", value);
    break;
  }
  case OptionKind::flag:
    if (value != "true" && value != "false" && value != "1" && value != "0")
      return fmt::format("takes true or false, got \"{}\"", value);
    break;
  case OptionKind::text:
  case OptionKind::list:
  case OptionKind::names:
    break;
  }
  return option.check ? option.check(value) : std::string();
}

} // namespace optimas::util
