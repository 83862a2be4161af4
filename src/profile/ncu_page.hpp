// Recognising Nsight Compute CSV pages, and helpers the page readers share.
#pragma once

#include "util/csv.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace optimas::profile {

enum class PageKind { details, raw, source, session, summary, unknown };

std::string_view page_kind_name(PageKind kind);

// Looks at the first records of a file and says which page it is. Text a live ncu run prints
// before its CSV (==PROF== lines, the program's own output) is skipped.
PageKind sniff_page(const std::string& path);

// Column positions by header name; the first occurrence wins for repeated names.
class Columns {
public:
  Columns() = default;
  explicit Columns(const std::vector<std::string_view>& header);
  // Index of a column, or -1.
  int find(std::string_view name) const;
  // Index of a column the page must have; throws ParseError naming the file and line.
  std::size_t require(const util::CsvReader& reader, std::string_view name, std::string_view page) const;
  const std::vector<std::string>& names() const { return m_names; }

private:
  std::vector<std::string> m_names;
  std::unordered_map<std::string, int> m_index;
};

// Whether a record looks like live ncu output rather than CSV ("==PROF== ...", "==WARNING== ...").
bool is_ncu_chatter(const util::CsvReader& reader);

} // namespace optimas::profile
