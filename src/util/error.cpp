#include "util/error.hpp"

#include <fmt/format.h>

namespace optimas {

ParseError::ParseError(std::string file, std::size_t line, const std::string& what)
    : Error(line > 0 ? fmt::format("{}:{}: {}", file, line, what) : fmt::format("{}: {}", file, what)),
      m_file(std::move(file)), m_line(line), m_reason(what) {}

} // namespace optimas
