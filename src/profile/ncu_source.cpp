// The source page: per-CUDA-line and per-SASS-instruction warp-stall samples.
//
// Layouts seen with ncu 2025.3.1 (docs/ncu-formats.md):
//   cuda,sass: "File Path",F / "Function Name",K / header "Line No","Source","Address","Source",...
//              CUDA-line rows carry the line's totals with "-" addresses; the SASS rows after
//              them have an empty line field, may be listed twice and "..." rows separate runs.
//   sass:      "Kernel Name",K / header "Address","Source",...; each block may be printed twice.
//   cuda:      source text without metrics.
#include "profile/ncu_page.hpp"
#include "profile/ncu_readers.hpp"

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/numbers.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <unordered_map>

namespace optimas::profile {

namespace {

// The SourceCounters columns of an instruction row (issue #49), by header, and where each goes.
struct CounterColumn {
  std::string_view header;
  std::uint64_t InstructionCounters::*field;
};
constexpr CounterColumn k_counter_columns[] = {
    {"Instructions Executed", &InstructionCounters::executed},
    {"Thread Instructions Executed", &InstructionCounters::thread_executed},
    {"Divergent Branches", &InstructionCounters::divergent_branches},
    {"L1 Tag Requests Global", &InstructionCounters::global_requests},
    {"L2 Theoretical Sectors Global", &InstructionCounters::global_sectors},
    {"L2 Theoretical Sectors Global Ideal", &InstructionCounters::global_sectors_ideal},
    {"L2 Theoretical Sectors Global Excessive", &InstructionCounters::global_sectors_excessive},
    {"L1 Wavefronts Shared", &InstructionCounters::shared_wavefronts},
    {"L1 Wavefronts Shared Ideal", &InstructionCounters::shared_wavefronts_ideal},
    {"L1 Wavefronts Shared Excessive", &InstructionCounters::shared_wavefronts_excessive},
};

struct SourceColumns {
  int line_no = -1, code = -1, address = -1, sass = -1, all = -1, not_issued = -1;
  int conflict_ways = -1, access_size = -1;
  std::vector<std::pair<std::size_t, std::uint64_t InstructionCounters::*>> counters;
  std::vector<std::pair<std::size_t, StallColumn>> stalls;
  std::vector<std::string> names;
  std::size_t width = 0;
};

SourceColumns parse_header(const util::CsvReader& r, std::set<std::string>& unknown_stalls) {
  SourceColumns c;
  c.width = r.size();
  while (c.width > 0 && r[c.width - 1].empty()) --c.width;
  for (std::size_t i = 0; i < c.width; ++i) c.names.emplace_back(r[i]);
  for (std::size_t i = 0; i < c.width; ++i) {
    std::string_view h = r[i];
    int idx = static_cast<int>(i);
    if (h == "Line No" && c.line_no < 0)
      c.line_no = idx;
    else if (h == "Address" && c.address < 0)
      c.address = idx;
    else if (h == "Source") {
      // The first "Source" follows "Line No" (CUDA text), the one after "Address" is SASS.
      if (c.address >= 0 && c.sass < 0)
        c.sass = idx;
      else if (c.code < 0)
        c.code = idx;
    } else if (h == "Warp Stall Sampling (All Samples)")
      c.all = idx;
    else if (h == "Warp Stall Sampling (Not-issued Samples)")
      c.not_issued = idx;
    else if (h == "L1 Conflicts Shared N-Way")
      c.conflict_ways = idx;
    else if (h == "Access Size")
      c.access_size = idx;
    else if (auto it = std::find_if(std::begin(k_counter_columns), std::end(k_counter_columns),
                                    [&](const CounterColumn& k) { return k.header == h; });
             it != std::end(k_counter_columns))
      c.counters.emplace_back(i, it->field);
    else if (auto s = parse_stall_column(h))
      c.stalls.emplace_back(i, *s);
    else if (h.substr(0, 6) == "stall_")
      unknown_stalls.insert(std::string(h));
  }
  if (c.line_no < 0 && c.address < 0) r.fail("source page header has neither \"Line No\" nor \"Address\"");
  return c;
}

std::uint64_t count_field(const util::CsvReader& r, std::size_t i, std::string_view column) {
  std::string_view f = r[i];
  if (f.empty() || f == "-") return 0;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (ec == std::errc() && p == f.data() + f.size()) return v;
  // Thousands separators under some locales.
  // A whole number below 2^53: 1e39 or inf was converted to an integer (undefined behaviour).
  auto d = util::parse_integer(f);
  if (!d || *d < 0) r.fail(fmt::format("column \"{}\" is \"{}\", not a sample count", column, f));
  return static_cast<std::uint64_t>(*d);
}

Samples read_samples(const util::CsvReader& r, const SourceColumns& c) {
  const auto& names = c.names;
  Samples s;
  if (c.all >= 0) s.all = count_field(r, static_cast<std::size_t>(c.all), names[static_cast<std::size_t>(c.all)]);
  if (c.not_issued >= 0)
    s.not_issued =
        count_field(r, static_cast<std::size_t>(c.not_issued), names[static_cast<std::size_t>(c.not_issued)]);
  for (const auto& [i, col] : c.stalls) {
    std::uint64_t v = count_field(r, i, names[i]);
    auto& target = col.not_issued ? s.stalls_not_issued : s.stalls;
    target[static_cast<std::size_t>(col.stall)] += v;
  }
  return s;
}

// An instruction row's counters; "-" and empty count as zero, and so does a size that is not a
// number (line rows print "32(64)"; instruction rows a plain number).
InstructionCounters read_counters(const util::CsvReader& r, const SourceColumns& c) {
  InstructionCounters k;
  for (const auto& [i, field] : c.counters) k.*field = count_field(r, i, c.names[i]);
  if (c.conflict_ways >= 0)
    k.shared_conflict_ways = static_cast<std::uint32_t>(std::min<std::uint64_t>(
        count_field(r, static_cast<std::size_t>(c.conflict_ways), c.names[static_cast<std::size_t>(c.conflict_ways)]),
        1u << 16));
  if (c.access_size >= 0) {
    std::string_view f = r[static_cast<std::size_t>(c.access_size)];
    unsigned bits = 0;
    auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), bits);
    if (ec == std::errc() && p == f.data() + f.size() && bits <= 1024) k.access_bits = static_cast<std::uint16_t>(bits);
  }
  return k;
}

bool parse_address(std::string_view f, std::uint64_t& out) {
  if (f.size() < 3 || f[0] != '0' || (f[1] != 'x' && f[1] != 'X')) return false;
  auto [p, ec] = std::from_chars(f.data() + 2, f.data() + f.size(), out, 16);
  return ec == std::errc() && p == f.data() + f.size();
}

} // namespace

bool same_block(const KernelSource& a, const KernelSource& b) {
  if (a.demangled != b.demangled || a.instructions.size() != b.instructions.size() || a.lines.size() != b.lines.size())
    return false;
  for (std::size_t i = 0; i < a.instructions.size(); ++i) {
    const auto& x = a.instructions[i];
    const auto& y = b.instructions[i];
    if (x.address != y.address || x.samples.all != y.samples.all || x.samples.stalls != y.samples.stalls) return false;
  }
  for (std::size_t i = 0; i < a.lines.size(); ++i)
    if (a.lines[i].line != b.lines[i].line || a.lines[i].samples.all != b.lines[i].samples.all) return false;
  return true;
}

namespace {

// Undoes the sass view's doubled blocks: k, k, m, m, ... -> k, m, ...
void undo_doubling(std::vector<KernelSource>& blocks, int expected, const std::string& path) {
  if (blocks.size() < 2 || blocks.size() % 2 != 0) return;
  bool pairs_equal = true;
  for (std::size_t i = 0; i + 1 < blocks.size() && pairs_equal; i += 2)
    pairs_equal = same_block(blocks[i], blocks[i + 1]);
  // Equal pairs are a doubled page whatever the count: two launches never sample alike.
  bool doubled = pairs_equal || (expected > 0 && blocks.size() == 2 * static_cast<std::size_t>(expected));
  if (!doubled) return;
  if (!pairs_equal)
    log::warn("{}: {} blocks for {} results, but pairs differ; keeping every other block", path, blocks.size(),
              expected);
  std::vector<KernelSource> kept;
  for (std::size_t i = 0; i < blocks.size(); i += 2) kept.push_back(std::move(blocks[i]));
  blocks = std::move(kept);
}

// The source page read record by record: the current block, its header, and the CUDA line the
// SASS rows that follow belong to.
class SourcePage {
public:
  SourcePage(const std::string& path, const std::function<void(KernelSource&&)>& on_block)
      : m_r(path), m_on_block(on_block) {}

  void read() {
    while (m_r.next()) {
      if (m_r.size() == 0 || is_ncu_chatter(m_r)) continue;
      if (read_record(m_r[0])) continue;
      check_row(m_r[0]);
      std::string_view line_field =
          m_cols.line_no >= 0 ? m_r[static_cast<std::size_t>(m_cols.line_no)] : std::string_view();
      std::string_view addr_field =
          m_cols.address >= 0 ? m_r[static_cast<std::size_t>(m_cols.address)] : std::string_view();
      if (addr_field == "..." || line_field == "...") continue; // separator between listings
      if (!line_field.empty())
        read_line(line_field);
      else
        read_instruction(addr_field);
    }
    finish_block();
  }

  const std::set<std::string>& unknown_stalls() const { return m_unknown_stalls; }

private:
  void finish_block() {
    if (!m_have_block) return;
    if (m_listed_under_two_lines) count_inlined_once();
    m_k.page_bytes = m_r.bytes_consumed() - m_block_start;
    m_on_block(std::move(m_k));
    m_k = KernelSource();
    m_have_block = false;
  }

  void start_block(std::string_view demangled) {
    finish_block();
    m_block_start = m_r.bytes_consumed();
    m_have_block = true;
    m_k.page_line = m_r.line();
    m_k.demangled = std::string(demangled);
    m_k.kernel = kernel_base_name(m_k.demangled);
    m_files_in_block.clear();
    m_addresses_seen.clear();
    m_listed_under_two_lines = false;
    m_have_header = false;
    m_line_number = 0;
  }

  // An inlined function's instruction is listed under each line it passes through: the call site
  // and the callee's line, in the same file (a __device__ helper) or in a header listed after the
  // kernel's own file (cooperative_groups.h in cuda-samples' mergeSort), and each line row sums
  // its instructions: the same samples counted two to four times. Each instruction counts once,
  // on the line it was first listed under; a line keeps what its instructions give.
  void count_inlined_once() {
    std::map<std::pair<std::string_view, int>, Samples> by_line;
    for (const auto& ins : m_k.instructions)
      if (ins.line > 0) by_line[{ins.file, ins.line}].add(ins.samples);
    for (auto& l : m_k.lines) {
      auto it = by_line.find({l.file, l.line});
      l.samples = it == by_line.end() ? Samples() : it->second;
      if (it != by_line.end()) it->second = Samples(); // a line listed twice counts once
    }
  }

  // A record that is no row of the table (a file, a kernel, a header) is taken in; false for a row.
  bool read_record(std::string_view first) {
    if (first == "File Path" && m_r.size() >= 2) {
      m_file = std::string(m_r[1]);
      return true;
    }
    if (first == "Function Name" && m_r.size() >= 2) {
      // A kernel whose code spans several files repeats its block once per file: same
      // function, a file not yet seen in this result.
      bool continues =
          m_have_block && m_k.demangled == m_r[1] && !m_files_in_block.empty() && m_files_in_block.count(m_file) == 0;
      if (!continues) start_block(m_r[1]);
      m_files_in_block.insert(m_file);
      m_have_header = false;
      m_line_number = 0;
      return true;
    }
    if (first == "Kernel Name" && m_r.size() >= 2) {
      start_block(m_r[1]);
      return true;
    }
    if (first == "Line No" || first == "Address") {
      if (!m_have_block) m_r.fail("source page header before any \"Function Name\" or \"Kernel Name\" record");
      m_cols = parse_header(m_r, m_unknown_stalls);
      m_have_header = true;
      m_k.has_counters = m_k.has_counters || !m_cols.counters.empty();
      return true;
    }
    return false;
  }

  // A row must follow a header and have exactly its fields.
  void check_row(std::string_view first) const {
    if (!m_have_header)
      m_r.fail(fmt::format("unexpected record \"{}\" before a source page header (not a source page?)", first));
    if (m_r.size() < m_cols.width)
      m_r.fail(fmt::format("row has {} fields but the header has {} (truncated file?)", m_r.size(), m_cols.width));
    if (m_r.size() > m_cols.width) // no page of ours has one: the columns would be read shifted
      m_r.fail(fmt::format("row has {} fields but the header has {} (a quote in the source text that Nsight Compute "
                           "did not double, followed by a comma and a quote?)",
                           m_r.size(), m_cols.width));
  }

  void read_line(std::string_view line_field) {
    int line_no = 0;
    auto [p, ec] = std::from_chars(line_field.data(), line_field.data() + line_field.size(), line_no);
    if (ec != std::errc() || p != line_field.data() + line_field.size() || line_no <= 0)
      m_r.fail(fmt::format("\"Line No\" is \"{}\", not a line number", line_field));
    SourceLine& l = m_k.lines.emplace_back();
    l.file = m_file;
    l.line = line_no;
    if (m_cols.code >= 0) l.code = std::string(m_r[static_cast<std::size_t>(m_cols.code)]);
    l.samples = read_samples(m_r, m_cols);
    m_line_file = l.file;
    m_line_number = l.line;
  }

  void read_instruction(std::string_view addr_field) {
    std::uint64_t address = 0;
    if (!parse_address(addr_field, address))
      m_r.fail(fmt::format("\"Address\" is \"{}\", not a hex address", addr_field));
    // The cuda,sass view lists an instruction again after a "..." row: keep the first.
    if (auto [seen, fresh] = m_addresses_seen.emplace(address, m_k.instructions.size()); !fresh) {
      const SassInstruction& first = m_k.instructions[seen->second];
      if (m_line_number > 0 && (first.line != m_line_number || first.file != m_line_file))
        m_listed_under_two_lines = true;
      return;
    }
    SassInstruction& ins = m_k.instructions.emplace_back();
    ins.address = address;
    if (m_cols.sass >= 0) ins.sass = std::string(util::trim(m_r[static_cast<std::size_t>(m_cols.sass)]));
    if (m_line_number > 0) {
      ins.file = m_line_file;
      ins.line = m_line_number;
    }
    ins.samples = read_samples(m_r, m_cols);
    if (!m_cols.counters.empty() || m_cols.conflict_ways >= 0) ins.counters = read_counters(m_r, m_cols);
  }

  util::CsvReader m_r;
  const std::function<void(KernelSource&&)>& m_on_block;
  std::set<std::string> m_unknown_stalls;
  std::string m_file;                     // current "File Path"
  std::set<std::string> m_files_in_block; // files seen in the current result (cuda,sass layout)
  std::unordered_map<std::uint64_t, std::size_t> m_addresses_seen; // address -> its instruction
  bool m_listed_under_two_lines = false; // an instruction inlined: listed under its call site and its callee's line
  SourceColumns m_cols;
  bool m_have_header = false;
  bool m_have_block = false;
  KernelSource m_k;
  std::string m_line_file; // the CUDA line the following SASS rows belong to
  int m_line_number = 0;
  std::uint64_t m_block_start = 0;
};

} // namespace

void for_each_source_block(const std::string& path, const std::function<void(KernelSource&&)>& on_block) {
  SourcePage page(path, on_block);
  page.read();
  for (const auto& s : page.unknown_stalls()) log::warn("{}: unknown stall column \"{}\" ignored", path, s);
}

std::vector<KernelSource> read_source_page(const std::string& path, int expected_results) {
  std::vector<KernelSource> blocks;
  for_each_source_block(path, [&](KernelSource&& k) { blocks.push_back(std::move(k)); });
  // Only the sass view (no line numbers anywhere) prints its blocks twice.
  bool sass_layout = std::all_of(blocks.begin(), blocks.end(), [](const KernelSource& b) { return b.lines.empty(); });
  if (sass_layout) undo_doubling(blocks, expected_results, path);
  return blocks;
}

} // namespace optimas::profile
