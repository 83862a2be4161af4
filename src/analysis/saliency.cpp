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
  m_code.add(block);
  k.raw_bytes += page_bytes;
  k.launches += 1;
  auto line_for = [&](const std::string& file, int line, const std::string& code) -> Line& {
    auto [li, fresh] = k.index.try_emplace({file, line}, k.lines.size());
    if (fresh) k.lines.push_back({file, line, code, {}});
    return k.lines[li->second];
  };
  if (!block.lines.empty()) {
    for (const auto& l : block.lines) line_for(l.file, l.line, l.code).samples.add(l.samples);
  } else {
    // A sass-only page: instructions without line correlation count under line 0.
    for (const auto& i : block.instructions) line_for(i.file, i.line, "").samples.add(i.samples);
  }
}

std::vector<std::pair<std::string, int>> SalientLine::cause_lines() const {
  std::vector<std::pair<std::string, int>> out;
  if (cause && cause->status == Cause::Status::found && (cause->line != line || cause->file != file))
    out.emplace_back(cause->file, cause->line);
  if (divergence && divergence->status == Cause::Status::found) out.emplace_back(divergence->file, divergence->line);
  return out;
}

std::string SalientLine::causes_text() const {
  std::vector<std::string> parts;
  if (cause) parts.push_back(cause->text());
  // The cause line's own figures where they say more than its producer's (another access, few
  // threads): the JSON always has them.
  if (cause && cause->facts && (cause->facts->accesses.size() > 1 || cause->facts->threads < 31.5))
    parts.push_back(fmt::format("{}:{}: {}", std::filesystem::path(cause->file).filename().string(), cause->line,
                                cause->facts->text()));
  // The line's own facts; its thread count is said with the divergence where there is one.
  LineFacts own = facts;
  if (divergence) own.threads = profile::k_nan;
  if (std::string f = own.text(); !f.empty()) parts.push_back("this line: " + f);
  if (divergence) parts.push_back(divergence->text());
  return util::join(parts, "; ");
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

  const KernelCode kernel_code = m_code.code(kernel);
  for (auto& c : candidates) {
    c.facts = line_facts(kernel_code, c.file, c.line);
    c.cause = find_cause(kernel_code, c.file, c.line, c.dominant);
    c.divergence = find_divergence(kernel_code, c.file, c.line);
    // The cause line's code, from the page (a line with SASS has its row there).
    auto code_of = [&](const std::string& file, int line) -> std::string {
      auto it = k.index.find({file, line});
      return it == k.index.end() ? "" : std::string(util::trim(k.lines[it->second].code));
    };
    if (c.cause && c.cause->status == Cause::Status::found && (c.cause->line != c.line || c.cause->file != c.file))
      c.cause->code = code_of(c.cause->file, c.cause->line);
    if (c.divergence && c.divergence->status == Cause::Status::found)
      c.divergence->code = code_of(c.divergence->file, c.divergence->line);
  }

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
    std::string entry = fmt::format("[{}] {}:{} ({:.1f}% of samples) {}: {:.0f}% | {}", id,
                                    std::filesystem::path(c.file).filename().string(), c.line, 100 * c.kernel_share,
                                    profile::stall_label(c.dominant), 100 * c.dominant_fraction, code);
    if (std::string why = c.causes_text(); !why.empty()) entry += " | " + why;
    entry += "\n";
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
