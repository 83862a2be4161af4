#include "profile/source_match.hpp"

#include "profile/ncu_readers.hpp"

#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <memory>
#include <unordered_map>

namespace optimas::profile {

namespace {

constexpr std::size_t k_none = static_cast<std::size_t>(-1);

// The launches of each kernel, in result order, under the three keys of a demangled name.
class KernelIndex {
public:
  explicit KernelIndex(const std::vector<Launch>& launches) {
    for (std::size_t i = 0; i < launches.size(); ++i) {
      const std::string& d = launches[i].demangled;
      m_by_name[d].push_back(i);
      m_by_signature[kernel_signature_key(d)].push_back(i);
      m_by_key[kernel_name_key(d)].push_back(i);
    }
  }

  // The launches of the kernel a name spells, from the strictest key to the loosest; null when none.
  const std::vector<std::size_t>* kernel_of(const std::string& demangled) const {
    if (auto it = m_by_name.find(demangled); it != m_by_name.end()) return &it->second;
    if (auto it = m_by_signature.find(kernel_signature_key(demangled)); it != m_by_signature.end()) return &it->second;
    if (auto it = m_by_key.find(kernel_name_key(demangled)); it != m_by_key.end()) return &it->second;
    return nullptr;
  }

private:
  using Map = std::unordered_map<std::string, std::vector<std::size_t>>;
  Map m_by_name, m_by_signature, m_by_key;
};

struct Matcher {
  explicit Matcher(const std::vector<Launch>& l) : launches(l), index(l), block_of(l.size(), k_none) {}

  const std::vector<Launch>& launches;
  KernelIndex index;
  std::vector<KernelSource> kept;
  std::vector<std::size_t> launch_of; // per kept block: its launch, or k_none
  std::vector<std::size_t> block_of;  // per launch: its kept block, or k_none
  SourceMatch result;
  std::size_t first_unmatched = k_none, first_duplicate = k_none;

  // The launch a block of this kernel takes; k_none for a second print of a matched block or
  // when every launch of the kernel is taken.
  std::size_t pick(const std::vector<std::size_t>& kernel, const KernelSource& b, bool& duplicate) {
    auto samples = static_cast<double>(b.total_samples());
    std::size_t first_free = k_none;
    for (std::size_t i : kernel) {
      if (block_of[i] != k_none) continue;
      if (first_free == k_none) first_free = i;
      if (launches[i].value("smsp__pcsamp_sample_count") == samples) {
        if (i != first_free) ++result.by_samples;
        return i;
      }
    }
    for (std::size_t i : kernel)
      if (block_of[i] != k_none && same_block(kept[block_of[i]], b)) {
        duplicate = true;
        return k_none;
      }
    return first_free;
  }

  void add(KernelSource&& b) {
    const auto* kernel = index.kernel_of(b.demangled);
    bool duplicate = false;
    std::size_t l = kernel ? pick(*kernel, b, duplicate) : k_none;
    if (duplicate) {
      ++result.duplicates;
      if (first_duplicate == k_none) first_duplicate = b.page_line;
      return;
    }
    if (l == k_none) {
      ++result.unmatched;
      if (first_unmatched == k_none) first_unmatched = kept.size();
    } else {
      block_of[l] = kept.size();
      ++result.matched;
    }
    launch_of.push_back(l);
    kept.push_back(std::move(b));
  }
};

// Takes the spelling of the launch tables (or of the timing pass) for a block's kernel.
bool rename(KernelSource& b, const Launch& l) {
  if (b.demangled == l.demangled) return false;
  b.demangled = l.demangled;
  b.kernel = l.kernel;
  return true;
}

std::string id_list(const std::vector<int>& ids) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < ids.size() && i < 8; ++i) parts.push_back(std::to_string(ids[i]));
  if (ids.size() > 8) parts.push_back("...");
  return util::join(parts, ", ");
}

void report(const SourceMatch& m, const Matcher& x, const std::string& page, std::size_t launches) {
  if (m.unmatched > 0) {
    const KernelSource& b = x.kept[x.first_unmatched];
    log::warn("{}: {} source block(s) match no profiled launch (the first, line {}, is \"{}\"); kept without a "
              "result ID",
              page, m.unmatched, b.page_line, b.demangled);
  }
  if (!m.without_source.empty())
    log::warn("{}: {} of {} profiled launches have no source block (results {})", page, m.without_source.size(),
              launches, id_list(m.without_source));
  if (m.duplicates > 0)
    log::info("{}: {} source block(s) printed a second time were dropped (the first at line {})", page, m.duplicates,
              x.first_duplicate);
  if (m.renamed > 0)
    log::info("{}: {} source block(s) spell their kernel's name differently from the launch tables; matched by "
              "kernel and instance",
              page, m.renamed);
}

} // namespace

struct SourceMatcher::State {
  explicit State(const std::vector<Launch>& l) : x(l) {}
  Matcher x;
};

SourceMatcher::SourceMatcher(const std::vector<Launch>& launches, const std::vector<Launch>& timing, std::string page)
    : m_state(std::make_unique<State>(launches)), m_launches(launches), m_timing(timing), m_page(std::move(page)) {}

SourceMatcher::~SourceMatcher() = default;

void SourceMatcher::add(KernelSource&& block) {
  m_state->x.add(std::move(block));
}

SourceMatch SourceMatcher::finish(std::vector<KernelSource>& out) {
  Matcher& x = m_state->x;
  const auto& launches = m_launches;
  KernelIndex timed(m_timing);
  for (std::size_t i = 0; i < x.kept.size(); ++i) {
    KernelSource& b = x.kept[i];
    if (std::size_t l = x.launch_of[i]; l != k_none) {
      b.result_id = launches[l].id;
      x.result.renamed += rename(b, launches[l]);
    } else {
      b.result_id = -1;
      if (const auto* kernel = timed.kernel_of(b.demangled)) rename(b, m_timing[kernel->front()]);
    }
  }
  for (std::size_t l = 0; l < launches.size(); ++l)
    if (x.block_of[l] == k_none) x.result.without_source.push_back(launches[l].id);
  report(x.result, x, m_page, launches.size());
  for (auto& b : x.kept) out.push_back(std::move(b));
  x.kept.clear();
  return x.result;
}

SourceMatch match_sources(std::vector<KernelSource>& blocks, const std::vector<Launch>& launches,
                          const std::vector<Launch>& timing, const std::string& page) {
  SourceMatcher m(launches, timing, page);
  for (auto& b : blocks) m.add(std::move(b));
  blocks.clear();
  return m.finish(blocks);
}

} // namespace optimas::profile
