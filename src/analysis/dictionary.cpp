#include "analysis/dictionary.hpp"

#include "util/csv.hpp"
#include "util/error.hpp"
#include "util/gzip.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace optimas::embedded {
std::string_view metric_descriptions_gz();
std::string_view warpsampling_csv();
std::string_view explanations_yml();
} // namespace optimas::embedded

namespace optimas::analysis {

namespace {

// Rollups and suffixes ncu appends to base metric names, and how to say them.
constexpr struct {
  std::string_view token;
  std::string_view words;
} k_suffix_words[] = {
    {"sum", "sum"},
    {"avg", "average"},
    {"max", "maximum"},
    {"min", "minimum"},
    {"pct_of_peak_sustained_elapsed", "% of peak over the elapsed time"},
    {"pct_of_peak_sustained_active", "% of peak over active cycles"},
    {"per_second", "per second"},
    {"per_cycle_active", "per active cycle"},
    {"per_cycle_elapsed", "per elapsed cycle"},
    {"peak_sustained", "sustained peak"},
    {"pct", "%"},
    {"ratio", "ratio"},
};

Explanation read_explanation(const YAML::Node& n) {
  Explanation e;
  auto get = [&](const char* key) { return n[key] ? n[key].as<std::string>() : std::string(); };
  e.title = get("title");
  e.means = get("means");
  e.causes = get("causes");
  e.helps = get("helps");
  return e;
}

} // namespace

std::pair<std::string, std::string> Dictionary::split_metric_name(std::string_view full_name) {
  // Section-qualified copies ("SM_B.TriageCompute.l1tex__t_sectors.sum") name the same metric.
  if (auto unit = full_name.find("__"); unit != std::string_view::npos) {
    auto qualifier = full_name.rfind('.', unit);
    if (qualifier != std::string_view::npos) full_name.remove_prefix(qualifier + 1);
  }
  auto dot = full_name.find('.');
  if (dot == std::string_view::npos) return {std::string(full_name), ""};
  return {std::string(full_name.substr(0, dot)), std::string(full_name.substr(dot + 1))};
}

Dictionary::Dictionary(std::string_view metrics_csv, std::string_view warpsampling_csv,
                       std::string_view explanations_yml) {
  auto r = util::CsvReader::from_string(std::string(metrics_csv), "metric dictionary");
  while (r.next()) {
    if (r.size() < 4 || r[0] == "Metric name") continue;
    MetricInfo info{std::string(r[0]), std::string(r[2]), std::string(r[3])};
    m_metrics.emplace(info.base, std::move(info));
  }
  auto w = util::CsvReader::from_string(std::string(warpsampling_csv), "warpsampling dictionary");
  while (w.next()) {
    if (w.size() < 4 || w[0] == "Metric name") continue;
    // The warp-sampling counters are metrics too (smsp__pcsamp_warps_issue_stalled_*).
    m_metrics.emplace(std::string(w[0]), MetricInfo{std::string(w[0]), std::string(w[2]), std::string(w[3])});
    auto col = profile::parse_stall_column(w[0]);
    if (col && !col->not_issued)
      m_stall_descriptions.emplace(std::string(profile::stall_name(col->stall)), std::string(w[3]));
  }
  YAML::Node root = YAML::Load(std::string(explanations_yml));
  if (root["stalls"])
    for (const auto& kv : root["stalls"])
      m_stall_explanations.emplace(kv.first.as<std::string>(), read_explanation(kv.second));
  if (root["metrics"])
    for (const auto& kv : root["metrics"])
      m_metric_explanations.emplace(kv.first.as<std::string>(), read_explanation(kv.second));
}

const Dictionary& Dictionary::builtin() {
  static const Dictionary d(util::gunzip(embedded::metric_descriptions_gz()), embedded::warpsampling_csv(),
                            embedded::explanations_yml());
  return d;
}

const MetricInfo* Dictionary::metric(std::string_view full_name) const {
  auto it = m_metrics.find(full_name);
  if (it == m_metrics.end()) it = m_metrics.find(split_metric_name(full_name).first);
  return it == m_metrics.end() ? nullptr : &it->second;
}

const Explanation* Dictionary::metric_explanation(std::string_view full_name) const {
  auto it = m_metric_explanations.find(full_name);
  return it == m_metric_explanations.end() ? nullptr : &it->second;
}

const Explanation* Dictionary::stall_explanation(profile::Stall stall) const {
  auto it = m_stall_explanations.find(profile::stall_name(stall));
  return it == m_stall_explanations.end() ? nullptr : &it->second;
}

std::string Dictionary::stall_description(profile::Stall stall) const {
  auto it = m_stall_descriptions.find(profile::stall_name(stall));
  return it == m_stall_descriptions.end() ? std::string() : it->second;
}

std::string Dictionary::describe(std::string_view full_name) const {
  if (const auto* e = metric_explanation(full_name); e && !e->title.empty()) return e->title;
  const MetricInfo* info = metric(full_name);
  if (!info || info->description.empty()) return std::string(full_name);
  auto [base, suffix] = split_metric_name(full_name);
  std::string words;
  for (auto token : util::split(suffix, '.')) {
    std::string_view w = token;
    for (const auto& s : k_suffix_words)
      if (s.token == token) w = s.words;
    if (w.empty()) continue;
    words += words.empty() ? "" : ", ";
    words += w;
  }
  std::string desc = info->description;
  while (!desc.empty() && desc.back() == '.') desc.pop_back();
  return words.empty() ? desc : fmt::format("{} ({})", desc, words);
}

} // namespace optimas::analysis
