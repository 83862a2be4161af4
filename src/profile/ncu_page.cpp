#include "profile/ncu_page.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

namespace optimas::profile {

std::string_view page_kind_name(PageKind kind) {
  switch (kind) {
  case PageKind::details:
    return "details";
  case PageKind::raw:
    return "raw";
  case PageKind::source:
    return "source";
  case PageKind::session:
    return "session";
  case PageKind::summary:
    return "summary";
  case PageKind::unknown:
    break;
  }
  return "unknown";
}

Columns::Columns(const std::vector<std::string_view>& header) {
  m_names.reserve(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) {
    m_names.emplace_back(header[i]);
    m_index.emplace(m_names.back(), static_cast<int>(i));
  }
}

int Columns::find(std::string_view name) const {
  auto it = m_index.find(std::string(name));
  return it == m_index.end() ? -1 : it->second;
}

std::size_t Columns::require(const util::CsvReader& reader, std::string_view name, std::string_view page) const {
  int i = find(name);
  if (i < 0) reader.fail(fmt::format("not an ncu {} page: the header has no \"{}\" column", page, name));
  return static_cast<std::size_t>(i);
}

bool is_ncu_chatter(const util::CsvReader& reader) {
  if (reader.size() == 0) return true;
  std::string_view first = reader[0];
  return first.substr(0, 2) == "==";
}

PageKind sniff_page(const std::string& path) {
  util::CsvReader reader(path);
  try {
    for (int records = 0; records < 64 && reader.next(); ++records) {
      if (reader.size() == 0 || is_ncu_chatter(reader)) continue;
      std::string_view first = reader[0];
      // The session page opens with ncu's banner; its tables are what identify it.
      if (first == "Launch Attribute" || first == "Session Attribute" || first == "Device Attribute")
        return PageKind::session;
      if (first == "File Path" || first == "Function Name" || first == "Kernel Name" || first == "Line No" ||
          first == "Address")
        return PageKind::source;
      bool has_metric_name = false, has_invocations = false;
      for (auto f : reader.fields()) {
        has_metric_name = has_metric_name || f == "Metric Name";
        has_invocations = has_invocations || f == "Invocations";
      }
      if (has_invocations && has_metric_name) return PageKind::summary;
      if (first == "ID" && has_metric_name) return PageKind::details;
      if (first == "ID" && reader.size() > 11) return PageKind::raw;
    }
  } catch (const ParseError&) {
    return PageKind::unknown;
  }
  return PageKind::unknown;
}

} // namespace optimas::profile
