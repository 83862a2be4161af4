#include "analysis/saliency.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace optimas::analysis {

using profile::k_stall_count;
using profile::Stall;

void StallAggregator::add(const profile::KernelSource& block, std::uint64_t page_bytes) {
  auto [it, inserted] = m_kernels.try_emplace(block.demangled);
  if (inserted) m_order.push_back(block.demangled);
  Kernel& k = it->second;
  k.raw_bytes += page_bytes;
  k.launches += 1;
  auto add_samples = [](profile::Samples& into, const profile::Samples& s) {
    into.all += s.all;
    into.not_issued += s.not_issued;
    for (std::size_t i = 0; i < k_stall_count; ++i) {
      into.stalls[i] += s.stalls[i];
      into.stalls_not_issued[i] += s.stalls_not_issued[i];
    }
  };
  auto line_for = [&](const std::string& file, int line, const std::string& code) -> Line& {
    auto [li, fresh] = k.index.try_emplace({file, line}, k.lines.size());
    if (fresh) k.lines.push_back({file, line, code, {}});
    return k.lines[li->second];
  };
  if (!block.lines.empty()) {
    for (const auto& l : block.lines) add_samples(line_for(l.file, l.line, l.code).samples, l.samples);
  } else {
    // A sass-only page: instructions without line correlation count under line 0.
    for (const auto& i : block.instructions) add_samples(line_for(i.file, i.line, "").samples, i.samples);
  }
}

std::vector<std::string> StallAggregator::kernels() const {
  return m_order;
}

StallSummary StallAggregator::summarize(const std::string& kernel, const SaliencyOptions& o,
                                        const std::string& id_prefix, int first_id) const {
  StallSummary s;
  s.kernel = profile::kernel_base_name(kernel);
  auto it = m_kernels.find(kernel);
  if (it == m_kernels.end()) return s;
  const Kernel& k = it->second;
  s.raw_bytes = k.raw_bytes;
  profile::StallCounts totals{};
  for (const auto& l : k.lines) {
    s.total_samples += l.samples.all;
    for (std::size_t i = 0; i < k_stall_count; ++i) totals[i] += l.samples.stalls[i];
  }
  for (std::size_t i = 0; i < k_stall_count; ++i)
    if (totals[i]) s.kernel_stalls.emplace_back(static_cast<Stall>(i), totals[i]);
  std::stable_sort(s.kernel_stalls.begin(), s.kernel_stalls.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });

  std::vector<SalientLine> candidates;
  for (const auto& l : k.lines) {
    if (l.samples.all == 0) continue;
    ++s.lines_seen;
    SalientLine c;
    c.file = l.file;
    c.line = l.line;
    c.code = std::string(util::trim(l.code));
    c.samples = l.samples.all;
    c.kernel_share = s.total_samples ? static_cast<double>(l.samples.all) / s.total_samples : 0;
    // Stalled samples: every reason but "selected", which means the warp issued.
    std::size_t best = k_stall_count;
    for (std::size_t i = 0; i < k_stall_count; ++i) {
      if (!profile::is_stalled(static_cast<Stall>(i))) continue;
      c.stalled += l.samples.stalls[i];
      if (l.samples.stalls[i] > 0 && (best == k_stall_count || l.samples.stalls[i] > l.samples.stalls[best])) best = i;
    }
    if (best == k_stall_count || c.stalled == 0) continue;
    c.dominant = static_cast<Stall>(best);
    c.dominant_fraction = static_cast<double>(l.samples.stalls[best]) / c.stalled;
    if (c.kernel_share < o.min_line_share) continue;
    if (c.dominant_fraction < o.tau) {
      ++s.lines_below_tau;
      continue;
    }
    candidates.push_back(std::move(c));
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const SalientLine& a, const SalientLine& b) { return a.samples > b.samples; });

  std::string header = fmt::format("Kernel {}: {} PC samples", s.kernel, s.total_samples);
  if (!s.kernel_stalls.empty()) {
    header += "; most common stalls:";
    for (std::size_t i = 0; i < std::min<std::size_t>(3, s.kernel_stalls.size()); ++i)
      header += fmt::format(" {} {:.0f}%", profile::stall_label(s.kernel_stalls[i].first),
                            100.0 * s.kernel_stalls[i].second / std::max<std::uint64_t>(1, s.total_samples));
  }
  s.text = header + "\n";
  int next_id = first_id;
  for (std::size_t ci = 0; ci < candidates.size(); ++ci) {
    SalientLine& c = candidates[ci];
    std::string id = fmt::format("{}{}", id_prefix, next_id);
    std::string code = c.code.size() > 160 ? c.code.substr(0, 157) + "..." : c.code;
    std::string entry = fmt::format("[{}] {}:{} ({:.1f}% of samples) {}: {:.0f}% | {}\n", id,
                                    std::filesystem::path(c.file).filename().string(), c.line, 100 * c.kernel_share,
                                    profile::stall_label(c.dominant), 100 * c.dominant_fraction, code);
    if (s.text.size() + entry.size() > o.max_bytes) {
      s.lines_over_budget = candidates.size() - ci; // lower-ranked lines stay out too
      break;
    }
    c.id = std::move(id);
    ++next_id;
    s.text += entry;
    s.lines.push_back(std::move(c));
  }
  return s;
}

} // namespace optimas::analysis
