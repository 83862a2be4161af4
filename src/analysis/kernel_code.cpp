#include "analysis/kernel_code.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace optimas::analysis {

namespace {

double ratio(std::uint64_t a, std::uint64_t b) {
  return b ? static_cast<double>(a) / static_cast<double>(b) : profile::k_nan;
}

} // namespace

// ---------------------------------------------------------------- aggregation

void CodeAggregator::add(const profile::KernelSource& block) {
  if (block.instructions.empty()) return;
  std::uint64_t first = block.instructions.front().address;
  for (const auto& i : block.instructions) first = std::min(first, i.address);
  auto [it, fresh] = m_kernels.try_emplace(block.demangled);
  Kernel& k = it->second;
  if (fresh) k.base = first;
  k.has_counters = k.has_counters || block.has_counters;
  for (const auto& i : block.instructions) {
    auto [slot, added] = k.by_offset.try_emplace(i.address - first);
    CodeInstruction& c = slot->second;
    if (added) {
      c.offset = i.address - first;
      c.sass = i.sass;
      c.file = i.file;
      c.line = i.line;
    }
    c.samples.add(i.samples);
    c.counters.add(i.counters);
  }
}

KernelCode CodeAggregator::code(const std::string& demangled) const {
  KernelCode out;
  auto it = m_kernels.find(demangled);
  if (it == m_kernels.end()) return out;
  out.base = it->second.base;
  out.has_counters = it->second.has_counters;
  out.instructions.reserve(it->second.by_offset.size());
  for (const auto& [offset, c] : it->second.by_offset) {
    out.instructions.push_back(c);
    out.instructions.back().decoded = profile::sass::decode(c.sass);
  }
  return out;
}

// ---------------------------------------------------------------- line facts

// A request is one warp-level execution of the instruction (as ncu's kernel-wide
// l1tex__t_requests count them); the page's "L1 Tag Requests Global" counts tag lookups instead.
double LineAccess::sectors_per_request() const {
  return ratio(sectors, executed);
}
double LineAccess::ideal_sectors_per_request() const {
  return ratio(sectors_ideal, executed);
}
double LineAccess::excessive_share() const {
  if (space == "shared") return ratio(wavefronts_excessive, wavefronts);
  return ratio(sectors_excessive, sectors);
}

std::string LineAccess::text() const {
  std::string head = bits > 0 ? fmt::format("{} {} ({}-bit)", space, operation, bits) : space + " " + operation;
  if (space == "shared" && wavefronts > 0) {
    double x = excessive_share();
    if (conflict_ways > 1)
      return fmt::format("{}: {}-way bank conflicts, {:.0f}% of its wavefronts excessive", head, conflict_ways,
                         100 * x);
    return head + ": no bank conflicts";
  }
  if (executed > 0 && sectors > 0) {
    double spr = sectors_per_request(), ideal = ideal_sectors_per_request(), x = excessive_share();
    if (x >= 0.05)
      return fmt::format("{}: {:.1f} sectors per request where {:.1f} would do, {:.0f}% excessive", head, spr, ideal,
                         100 * x);
    return fmt::format("{}: {:.1f} sectors per request (ideal {:.1f})", head, spr, ideal);
  }
  return head;
}

std::string LineFacts::text() const {
  std::vector<std::string> parts;
  for (const auto& a : accesses) parts.push_back(a.text());
  if (std::isfinite(threads) && threads < 31.5) {
    std::string t = fmt::format("{:.1f} of 32 threads active", threads);
    if (divergent_branches > 0) t += fmt::format(", {} divergent branches", divergent_branches);
    parts.push_back(std::move(t));
  }
  return util::join(parts, "; ");
}

LineFacts line_facts(const KernelCode& code, const std::string& file, int line) {
  LineFacts f;
  std::uint64_t executed = 0, threads = 0;
  for (const auto& c : code.instructions) {
    if (c.line != line || c.file != file) continue;
    executed += c.counters.executed;
    threads += c.counters.thread_executed;
    f.divergent_branches += c.counters.divergent_branches;
    const auto& d = c.decoded;
    if (d.access == profile::sass::Access::none || d.space == profile::sass::Space::constant ||
        d.space == profile::sass::Space::none)
      continue;
    std::string space = std::string(profile::sass::space_name(d.space)),
                op = std::string(profile::sass::access_name(d.access));
    auto it = std::find_if(f.accesses.begin(), f.accesses.end(),
                           [&](const LineAccess& a) { return a.space == space && a.operation == op; });
    if (it == f.accesses.end()) {
      f.accesses.push_back({});
      it = f.accesses.end() - 1;
      it->space = space;
      it->operation = op;
    }
    const auto& k = c.counters;
    it->bits = std::max(it->bits, k.access_bits ? static_cast<int>(k.access_bits) : d.access_bits);
    it->executed += k.executed;
    ++it->instructions;
    it->requests += k.global_requests;
    it->sectors += k.global_sectors;
    it->sectors_ideal += k.global_sectors_ideal;
    it->sectors_excessive += k.global_sectors_excessive;
    it->wavefronts += k.shared_wavefronts;
    it->wavefronts_ideal += k.shared_wavefronts_ideal;
    it->wavefronts_excessive += k.shared_wavefronts_excessive;
    it->conflict_ways = std::max(it->conflict_ways, k.shared_conflict_ways);
  }
  if (code.has_counters) f.threads = ratio(threads, executed);
  return f;
}

} // namespace optimas::analysis
