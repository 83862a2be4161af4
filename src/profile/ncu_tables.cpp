// The launch tables: details page (one row per metric or rule finding), raw page (one row per
// launch, one column per metric) and the session page.
#include "profile/ncu_page.hpp"
#include "profile/ncu_readers.hpp"

#include "util/error.hpp"
#include "util/gzip.hpp"
#include "util/log.hpp"
#include "util/numbers.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <unordered_map>

namespace optimas::profile {

namespace {

// A session page is read whole: a few KB in practice, so this is room enough.
constexpr std::uintmax_t k_max_session_page_bytes = std::uintmax_t{16} << 20;

// The identifying columns the details and raw pages share (older ncu versions lack some).
struct IdColumns {
  int id, pid, process, kernel, context, stream, block, grid, device, cc;

  explicit IdColumns(const Columns& c)
      : id(c.find("ID")), pid(c.find("Process ID")), process(c.find("Process Name")), kernel(c.find("Kernel Name")),
        context(c.find("Context")), stream(c.find("Stream")), block(c.find("Block Size")), grid(c.find("Grid Size")),
        device(c.find("Device")), cc(c.find("CC")) {}

  int last() const { return std::max({id, pid, process, kernel, context, stream, block, grid, device, cc}); }
};

std::string_view field(const util::CsvReader& r, int index) {
  return index < 0 ? std::string_view() : r[static_cast<std::size_t>(index)];
}

std::int64_t integer_field(const util::CsvReader& r, int index, std::string_view what) {
  if (index < 0) return 0;
  auto v = util::parse_integer(r[static_cast<std::size_t>(index)]);
  if (!v) r.fail(fmt::format("{} is \"{}\", not an integer", what, r[static_cast<std::size_t>(index)]));
  return *v;
}

// Launches of one page, looked up by result ID; new IDs are appended in page order.
class LaunchTable {
public:
  explicit LaunchTable(std::vector<Launch>& launches) : m_launches(launches) {
    for (std::size_t i = 0; i < launches.size(); ++i) m_by_id.emplace(launches[i].id, i);
  }

  Launch& for_row(const util::CsvReader& r, const IdColumns& c) {
    int id = static_cast<int>(integer_field(r, c.id, "ID"));
    auto [it, inserted] = m_by_id.emplace(id, m_launches.size());
    if (!inserted) {
      Launch& l = m_launches[it->second];
      if (c.kernel >= 0 && !l.demangled.empty() && l.demangled != field(r, c.kernel))
        r.fail(fmt::format("result {} is kernel \"{}\" here but \"{}\" elsewhere: are these pages from different "
                           "reports?",
                           id, field(r, c.kernel), l.demangled));
      return l;
    }
    Launch& l = m_launches.emplace_back();
    l.id = id;
    l.demangled = std::string(field(r, c.kernel));
    l.kernel = kernel_base_name(l.demangled);
    l.pid = integer_field(r, c.pid, "Process ID");
    l.process = std::string(field(r, c.process));
    l.context = integer_field(r, c.context, "Context");
    l.stream = integer_field(r, c.stream, "Stream");
    l.device = static_cast<int>(integer_field(r, c.device, "Device"));
    l.cc = std::string(field(r, c.cc));
    if (c.block >= 0) {
      auto d = util::parse_dim3(field(r, c.block));
      if (!d) r.fail(fmt::format("Block Size is \"{}\", not \"(x, y, z)\"", field(r, c.block)));
      l.block = *d;
    }
    if (c.grid >= 0) {
      auto d = util::parse_dim3(field(r, c.grid));
      if (!d) r.fail(fmt::format("Grid Size is \"{}\", not \"(x, y, z)\"", field(r, c.grid)));
      l.grid = *d;
    }
    return l;
  }

private:
  std::vector<Launch>& m_launches;
  std::unordered_map<int, std::size_t> m_by_id;
};

Metric make_metric(std::string_view value, std::string_view unit) {
  Metric m;
  if (auto v = util::parse_number(value)) {
    auto base = util::to_base_unit(*v, unit);
    m.value = base.value;
    m.unit = std::move(base.unit);
  } else {
    m.unit = std::string(unit);
    m.text = std::string(value);
  }
  return m;
}

// A kernel's duration must be a time: a negative, infinite (1e400) or missing (n/a) one would
// count as nothing, or as everything, when the hot kernels are chosen.
void check_duration(const util::CsvReader& r, std::string_view name, const Metric& m) {
  if (name != "gpu__time_duration.sum") return;
  if (std::isnan(m.value))
    r.fail(fmt::format("gpu__time_duration.sum is \"{}\", not a number: the launch has no duration", m.text));
  if (!std::isfinite(m.value) || m.value < 0)
    r.fail(fmt::format("gpu__time_duration.sum is {}, not a duration", m.value));
}

void set_duration(Launch& l) {
  if (const Metric* m = l.metric("gpu__time_duration.sum")) l.duration_ns = m->value;
}

// Reads records until the page's header. A live ncu run prints ==PROF== lines and the
// program's own output first, so anything before the header is skipped.
void seek_header(util::CsvReader& r, std::string_view page) {
  std::string first_seen;
  while (r.next()) {
    if (r.size() > 0 && r[0] == "ID") return;
    if (first_seen.empty() && r.size() > 0 && !is_ncu_chatter(r)) first_seen = std::string(r[0]).substr(0, 60);
  }
  throw ParseError(r.name(), 0,
                   first_seen.empty() ? fmt::format("no {} page header (\"ID\",...) found: empty file?", page)
                                      : fmt::format("no {} page header (\"ID\",...) found; the file starts with \"{}\"",
                                                    page, first_seen));
}

} // namespace

void read_details_page(const std::string& path, std::vector<Launch>& launches) {
  util::CsvReader r(path);
  seek_header(r, "details");
  LaunchTable table(launches);
  for (;;) {
    // A repeated header starts a new block whose columns may differ.
    Columns cols(r.fields());
    IdColumns ids(cols);
    cols.require(r, "ID", "details");
    cols.require(r, "Kernel Name", "details");
    std::size_t name_col = cols.require(r, "Metric Name", "details");
    std::size_t unit_col = cols.require(r, "Metric Unit", "details");
    std::size_t value_col = cols.require(r, "Metric Value", "details");
    int section_col = cols.find("Section Name");
    int rule_name = cols.find("Rule Name"), rule_type = cols.find("Rule Type"),
        rule_desc = cols.find("Rule Description");
    int speedup_type = cols.find("Estimated Speedup Type"), speedup = cols.find("Estimated Speedup");
    std::size_t needed =
        std::max<std::size_t>({value_col, unit_col, name_col, static_cast<std::size_t>(ids.last())}) + 1;
    bool header_again = false;
    while (r.next()) {
      if (r.size() == 0 || is_ncu_chatter(r)) continue;
      if (r[0] == "ID") {
        header_again = true;
        break;
      }
      if (r.size() < needed)
        r.fail(fmt::format("row has {} fields but the header needs {} (truncated file?)", r.size(), needed));
      Launch& l = table.for_row(r, ids);
      std::string_view name = r[name_col];
      if (name.empty()) {
        // A rule finding: no metric, a rule name and its advice.
        if (rule_name < 0 || field(r, rule_name).empty()) continue;
        Rule rule;
        rule.section = std::string(field(r, section_col));
        rule.name = std::string(field(r, rule_name));
        rule.type = std::string(field(r, rule_type));
        rule.description = std::string(field(r, rule_desc));
        rule.speedup_type = std::string(field(r, speedup_type));
        if (auto v = util::parse_number(field(r, speedup))) rule.estimated_speedup = *v;
        l.rules.push_back(std::move(rule));
        continue;
      }
      Metric& m = l.metrics[std::string(name)] = make_metric(r[value_col], r[unit_col]);
      check_duration(r, name, m);
    }
    if (!header_again) break;
  }
  for (auto& l : launches) set_duration(l);
}

// A raw page is its header, the units row, then one row per launch (docs/ncu-formats.md). Cut
// short, it could still read as a page of fewer launches, so each part must be there: a header
// without its units row, a header without launch rows, a row with fewer fields, or a page without
// a launch the details page of the same report has, is an error at its line.
void read_raw_page(const std::string& path, std::vector<Launch>& launches) {
  util::CsvReader r(path);
  seek_header(r, "raw");
  // Launches the details page read before: the raw page of the same report has a row for each.
  std::map<int, std::string> expected;
  for (const auto& l : launches) expected.emplace(l.id, l.demangled);
  LaunchTable table(launches);
  for (;;) {
    const std::size_t header_line = r.line();
    bool units_seen = false;
    std::size_t rows = 0;
    Columns cols(r.fields());
    IdColumns ids(cols);
    cols.require(r, "ID", "raw");
    cols.require(r, "Kernel Name", "raw");
    if (cols.find("Metric Name") >= 0) r.fail("this is a details page, not a raw page");
    // Metric columns are those after the identifying ones.
    std::size_t first_metric = static_cast<std::size_t>(ids.last()) + 1;
    std::size_t width = cols.names().size();
    // Trailing empty header cells (a trailing comma) are not metrics.
    while (width > first_metric && cols.names()[width - 1].empty()) --width;
    std::vector<std::string> units(width);
    bool header_again = false;
    while (r.next()) {
      if (r.size() == 0 || is_ncu_chatter(r)) continue;
      if (r[0] == "ID") {
        header_again = true;
        break;
      }
      if (r.size() < width)
        r.fail(fmt::format("row has {} fields but the header has {} (truncated file?)", r.size(), width));
      if (r[0].empty()) {
        // The units row.
        if (units_seen || rows > 0)
          r.fail("a second units row, or one after the launch rows: is this two pages in one?");
        for (std::size_t i = first_metric; i < width; ++i) units[i] = std::string(r[i]);
        units_seen = true;
        continue;
      }
      if (!units_seen)
        r.fail(fmt::format("a launch row where the units row (\"\",\"\",...) belongs, after the header at line {}: "
                           "export the page with --print-units base",
                           header_line));
      ++rows;
      Launch& l = table.for_row(r, ids);
      expected.erase(l.id);
      for (std::size_t i = first_metric; i < width; ++i)
        check_duration(r, cols.names()[i], l.metrics[cols.names()[i]] = make_metric(r[i], units[i]));
    }
    if (!units_seen || rows == 0)
      throw ParseError(path, header_line,
                       fmt::format("the raw page's header is followed by {} (truncated file?)",
                                   units_seen ? "its units row and no launch rows" : "no units row"));
    if (!header_again) break;
  }
  if (!expected.empty())
    throw ParseError(path, r.line(),
                     fmt::format("the raw page ends here without a row for result {} ({}), which the details page of "
                                 "the same report has (truncated file?)",
                                 expected.begin()->first, expected.begin()->second));
  for (auto& l : launches) set_duration(l);
}

// The session page is read by line, not as CSV: ncu writes the profiler's command line into it
// with the command's own quotes unescaped ("... /bin/sh -c "./app --n 8" "), which no CSV reader
// accepts. Each attribute is one line, "key","value", so the value is everything between the
// first "," and the line's last quote.
std::map<std::string, std::string> read_session_page(const std::string& path) {
  // A session page is a few dozen lines; it is read whole, so its size is bounded first.
  std::error_code ec;
  if (auto size = std::filesystem::file_size(path, ec); !ec && size > k_max_session_page_bytes)
    throw ParseError(path, 0,
                     fmt::format("a session page of {} bytes; no Nsight Compute session page is larger than "
                                 "{} MiB: is the file damaged?",
                                 size, k_max_session_page_bytes >> 20));
  std::string text = util::read_file(path);
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b) {
    try {
      text = util::gunzip(text, k_max_session_page_bytes);
    } catch (const ParseError&) {
      throw;
    } catch (const Error& e) {
      throw ParseError(path, 0, std::string(e.what()) + " (a session page is a few KB: is the file damaged?)");
    }
  }
  auto unquote = [](std::string_view v) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      out += v[i];
      if (v[i] == '"' && i + 1 < v.size() && v[i + 1] == '"') ++i; // a doubled quote
    }
    return out;
  };
  std::map<std::string, std::string> out;
  for (std::string_view line : util::split(text, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t sep = line.find("\",\"");
    if (line.size() < 2 || line.front() != '"' || sep == std::string_view::npos) continue;
    std::string_view key = line.substr(1, sep - 1), value = line.substr(sep + 3);
    if (!value.empty() && value.back() == '"') value.remove_suffix(1);
    if (key.empty() || key.find("Attribute") != std::string_view::npos || key == "Process Id") continue;
    out.emplace(unquote(key), unquote(value));
  }
  return out;
}

} // namespace optimas::profile
