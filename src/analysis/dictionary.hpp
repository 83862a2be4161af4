// Plain-language names: NVIDIA's metric descriptions (ncu --query-metrics on the H200, in
// data/ncu-metrics) and our own explanations of stall reasons and common metrics
// (data/explanations.yml). Both are compiled into the engine.
#pragma once

#include "profile/stalls.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace optimas::analysis {

struct Explanation {
  std::string title;  // a short label
  std::string means;  // what it measures
  std::string causes; // what usually drives it
  std::string helps;  // what usually helps
};

struct MetricInfo {
  std::string base;        // "dram__bytes"
  std::string unit;        // as ncu lists it
  std::string description; // NVIDIA's one-line description
};

class Dictionary {
public:
  // The dictionary compiled into the engine (parsed once, on first use).
  static const Dictionary& builtin();

  // NVIDIA's entry for a full metric name ("dram__bytes.sum.per_second" -> "dram__bytes").
  const MetricInfo* metric(std::string_view full_name) const;
  const Explanation* metric_explanation(std::string_view full_name) const;
  const Explanation* stall_explanation(profile::Stall stall) const;
  // NVIDIA's description of a stall reason (from the warpsampling collection).
  std::string stall_description(profile::Stall stall) const;

  // A short plain-language description of a metric for prompts and reports: our own title
  // when we have one, else NVIDIA's description with the rollup spelled out
  // ("# of bytes accessed in DRAM (sum, per second)"), else the name itself.
  std::string describe(std::string_view full_name) const;

  std::size_t metric_count() const { return m_metrics.size(); }
  std::size_t explained_metric_count() const { return m_metric_explanations.size(); }

  // Splits a full metric name into its base and its rollup/suffix ("sum.per_second").
  static std::pair<std::string, std::string> split_metric_name(std::string_view full_name);

  // For tests: builds a dictionary from the given texts instead of the compiled-in data.
  Dictionary(std::string_view metrics_csv, std::string_view warpsampling_csv, std::string_view explanations_yml);

private:
  std::map<std::string, MetricInfo, std::less<>> m_metrics;
  std::map<std::string, std::string, std::less<>> m_stall_descriptions;
  std::map<std::string, Explanation, std::less<>> m_metric_explanations;
  std::map<std::string, Explanation, std::less<>> m_stall_explanations;
};

} // namespace optimas::analysis
