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
#include <set>
#include <unordered_set>

namespace optimas::profile {

namespace {

struct SourceColumns {
  int line_no = -1, code = -1, address = -1, sass = -1, all = -1, not_issued = -1;
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

} // namespace

void for_each_source_block(const std::string& path, const std::function<void(KernelSource&&)>& on_block) {
  util::CsvReader r(path);
  std::set<std::string> unknown_stalls;
  std::string file;                     // current "File Path"
  std::set<std::string> files_in_block; // files seen in the current result (cuda,sass layout)
  std::unordered_set<std::uint64_t> addresses_seen;
  SourceColumns cols;
  bool have_header = false;
  bool have_block = false;
  KernelSource k;
  std::string line_file; // the CUDA line the following SASS rows belong to
  int line_number = 0;
  std::uint64_t block_start = 0;

  auto finish_block = [&] {
    if (!have_block) return;
    k.page_bytes = r.bytes_consumed() - block_start;
    on_block(std::move(k));
    k = KernelSource();
    have_block = false;
  };
  auto start_block = [&](std::string_view demangled) {
    finish_block();
    block_start = r.bytes_consumed();
    have_block = true;
    k.page_line = r.line();
    k.demangled = std::string(demangled);
    k.kernel = kernel_base_name(k.demangled);
    files_in_block.clear();
    addresses_seen.clear();
    have_header = false;
    line_number = 0;
  };

  while (r.next()) {
    if (r.size() == 0 || is_ncu_chatter(r)) continue;
    std::string_view first = r[0];
    if (first == "File Path" && r.size() >= 2) {
      file = std::string(r[1]);
      continue;
    }
    if (first == "Function Name" && r.size() >= 2) {
      // A kernel whose code spans several files repeats its block once per file: same
      // function, a file not yet seen in this result.
      bool continues = have_block && k.demangled == r[1] && !files_in_block.empty() && files_in_block.count(file) == 0;
      if (!continues) start_block(r[1]);
      files_in_block.insert(file);
      have_header = false;
      line_number = 0;
      continue;
    }
    if (first == "Kernel Name" && r.size() >= 2) {
      start_block(r[1]);
      continue;
    }
    if (first == "Line No" || first == "Address") {
      if (!have_block) r.fail("source page header before any \"Function Name\" or \"Kernel Name\" record");
      cols = parse_header(r, unknown_stalls);
      have_header = true;
      continue;
    }
    if (!have_header)
      r.fail(fmt::format("unexpected record \"{}\" before a source page header (not a source page?)", first));
    if (r.size() < cols.width)
      r.fail(fmt::format("row has {} fields but the header has {} (truncated file?)", r.size(), cols.width));
    if (r.size() > cols.width) // no page of ours has one: the columns would be read shifted
      r.fail(fmt::format("row has {} fields but the header has {} (a quote in the source text that Nsight Compute "
                         "did not double, followed by a comma and a quote?)",
                         r.size(), cols.width));
    std::string_view line_field = cols.line_no >= 0 ? r[static_cast<std::size_t>(cols.line_no)] : std::string_view();
    std::string_view addr_field = cols.address >= 0 ? r[static_cast<std::size_t>(cols.address)] : std::string_view();
    if (addr_field == "..." || line_field == "...") continue; // separator between listings
    if (!line_field.empty()) {
      int line_no = 0;
      auto [p, ec] = std::from_chars(line_field.data(), line_field.data() + line_field.size(), line_no);
      if (ec != std::errc() || p != line_field.data() + line_field.size() || line_no <= 0)
        r.fail(fmt::format("\"Line No\" is \"{}\", not a line number", line_field));
      SourceLine& l = k.lines.emplace_back();
      l.file = file;
      l.line = line_no;
      if (cols.code >= 0) l.code = std::string(r[static_cast<std::size_t>(cols.code)]);
      l.samples = read_samples(r, cols);
      line_file = l.file;
      line_number = l.line;
      continue;
    }
    std::uint64_t address = 0;
    if (!parse_address(addr_field, address))
      r.fail(fmt::format("\"Address\" is \"{}\", not a hex address", addr_field));
    // The cuda,sass view lists an instruction again after a "..." row: keep the first.
    if (!addresses_seen.insert(address).second) continue;
    SassInstruction& ins = k.instructions.emplace_back();
    ins.address = address;
    if (cols.sass >= 0) ins.sass = std::string(util::trim(r[static_cast<std::size_t>(cols.sass)]));
    if (line_number > 0) {
      ins.file = line_file;
      ins.line = line_number;
    }
    ins.samples = read_samples(r, cols);
  }
  finish_block();
  for (const auto& s : unknown_stalls) log::warn("{}: unknown stall column \"{}\" ignored", path, s);
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
