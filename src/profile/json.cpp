#include "profile/json.hpp"

#include <cmath>

namespace optimas::profile {

namespace {

using nlohmann::json;

json number(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json stalls_json(const StallCounts& counts) {
  json out = json::object();
  for (std::size_t i = 0; i < k_stall_count; ++i)
    if (counts[i]) out[std::string(stall_label(static_cast<Stall>(i)))] = counts[i];
  return out;
}

json samples_json(const Samples& s) {
  return {{"samples", s.all},
          {"not_issued", s.not_issued},
          {"stalls", stalls_json(s.stalls)},
          {"stalls_not_issued", stalls_json(s.stalls_not_issued)}};
}

json launch_json(const Launch& l, std::size_t run, const Run& r, const JsonOptions& o) {
  json j = {{"run", run},
            {"config", r.config},
            {"repeat", r.repeat},
            {"id", l.id},
            {"kernel", l.kernel},
            {"demangled", l.demangled},
            {"block", l.block},
            {"grid", l.grid},
            {"device", l.device},
            {"cc", l.cc},
            {"duration_ns", number(l.duration_ns)},
            {"metric_count", l.metrics.size()},
            {"rule_count", l.rules.size()}};
  if (o.metrics) {
    json m = json::object();
    for (const auto& [name, metric] : l.metrics) {
      json v = {{"value", number(metric.value)}, {"unit", metric.unit}};
      if (!metric.text.empty()) v["text"] = metric.text;
      m[name] = std::move(v);
    }
    j["metrics"] = std::move(m);
    json rules = json::array();
    for (const auto& rule : l.rules)
      rules.push_back({{"section", rule.section},
                       {"name", rule.name},
                       {"type", rule.type},
                       {"description", rule.description},
                       {"speedup_type", rule.speedup_type},
                       {"estimated_speedup", number(rule.estimated_speedup)}});
    j["rules"] = std::move(rules);
  }
  return j;
}

} // namespace

json to_json(const HotKernels& hot) {
  json kernels = json::array();
  for (const auto& k : hot.kernels)
    kernels.push_back({{"kernel", k.kernel},
                       {"demangled", k.demangled},
                       {"total_ns", k.total_ns},
                       {"launches", k.launches},
                       {"share", k.share},
                       {"hot", k.hot}});
  return {{"alpha", hot.alpha}, {"total_ns", hot.total_ns}, {"kernels", kernels}};
}

json to_json(const Profile& profile, const JsonOptions& o) {
  json runs = json::array(), launches = json::array(), timing = json::array(), sources = json::array();
  for (std::size_t ri = 0; ri < profile.runs.size(); ++ri) {
    const Run& r = profile.runs[ri];
    runs.push_back({{"config", r.config},
                    {"timeline", r.timeline ? to_json(*r.timeline) : json(nullptr)},
                    {"repeat", r.repeat},
                    {"files", r.files},
                    {"input_bytes", r.input_bytes},
                    {"session", r.session},
                    {"launch_count", r.launches.size()},
                    {"timing_launch_count", r.timing.size()},
                    {"hot_kernels", to_json(select_hot_kernels(r.timed_launches(), o.alpha))}});
    for (const auto& l : r.launches) launches.push_back(launch_json(l, ri, r, o));
    JsonOptions no_metrics;
    for (const auto& l : r.timing) timing.push_back(launch_json(l, ri, r, no_metrics));
    for (const auto& s : r.sources) {
      json lines = json::array();
      for (const auto& l : s.lines) {
        json lj = {{"file", l.file}, {"line", l.line}, {"code", l.code}};
        lj.update(samples_json(l.samples));
        lines.push_back(std::move(lj));
      }
      json js = {{"run", ri},
                 {"config", r.config},
                 {"result_id", s.result_id},
                 {"kernel", s.kernel},
                 {"demangled", s.demangled},
                 {"total_samples", s.total_samples()},
                 {"instruction_count", s.instructions.size()},
                 {"lines", std::move(lines)}};
      if (o.instructions) {
        json ins = json::array();
        for (const auto& i : s.instructions) {
          json ij = {{"address", i.address}, {"sass", i.sass}, {"file", i.file}, {"line", i.line}};
          ij.update(samples_json(i.samples));
          ins.push_back(std::move(ij));
        }
        js["instructions"] = std::move(ins);
      }
      sources.push_back(std::move(js));
    }
  }
  return {{"schema", "optimas.profile/1"},
          {"manifest", profile.manifest},
          {"runs", runs},
          {"launches", launches},
          {"timing", timing},
          {"sources", sources}};
}

} // namespace optimas::profile
