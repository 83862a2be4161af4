#include "evaluate/end_after.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace optimas::evaluate {

using nlohmann::json;

namespace {

constexpr double k_tail_slack = 1.25, k_tail_slack_s = 0.1;

std::string counts(const std::set<std::uint64_t>& values) {
  std::vector<std::string> parts;
  for (auto v : values) parts.push_back(std::to_string(v));
  return fmt::format("{}", fmt::join(parts, ", "));
}

} // namespace

json trace_summary(const Execution& e) {
  if (!e.hot_ms) return nullptr;
  json t = {{"hot_launches", e.hot_launches},
            {"launches", e.traced_launches},
            {"symbols", e.hot_symbols},
            {"hot_ms", *e.hot_ms},
            {"wall_s", e.wall_s}};
  if (e.after_hot_s) t["after_hot_s"] = *e.after_hot_s;
  if (e.traced_ms) t["kernel_ms"] = *e.traced_ms;
  if (e.traced_ms_to_hot_end) t["kernel_ms_to_hot_end"] = *e.traced_ms_to_hot_end;
  return t;
}

EndAfterPlan plan_end_after(const std::vector<json>& checks, const std::string& config) {
  EndAfterPlan plan;
  std::set<std::uint64_t> base_hot;
  std::set<std::string> symbols;
  int runs = 0;
  for (const auto& c : checks) {
    if (c.value("config", "") != config) continue;
    ++runs;
    const json* t = c.contains("trace") ? &c["trace"] : nullptr;
    if (!t || !(*t)["baseline"].is_object() || !(*t)["variant"].is_object()) {
      plan.reason = fmt::format("whole runs: validation run {} of {} was not traced", c.value("label", "?"), config);
      return plan;
    }
    const json &b = (*t)["baseline"], &v = (*t)["variant"];
    const auto b_hot = b.value("hot_launches", std::uint64_t{0}), v_hot = v.value("hot_launches", std::uint64_t{0});
    base_hot.insert(b_hot);
    if (v_hot != b_hot) {
      plan.reason = fmt::format("whole runs: the variant launched the hot kernels {} times on {}, the baseline {}",
                                v_hot, c.value("label", "?"), b_hot);
      return plan;
    }
    if (v.value("launches", std::uint64_t{0}) != b.value("launches", std::uint64_t{0})) {
      plan.reason = fmt::format("whole runs: on {} the variant launched {} kernels in all, the baseline {}",
                                c.value("label", "?"), v.value("launches", 0), b.value("launches", 0));
      return plan;
    }
    if (b.contains("after_hot_s") && v.contains("after_hot_s")) {
      double base_tail = b["after_hot_s"], variant_tail = v["after_hot_s"];
      if (variant_tail > base_tail * k_tail_slack + k_tail_slack_s) {
        plan.reason = fmt::format("whole runs: on {} the variant ran {:.3f} s after its last hot launch, the "
                                  "baseline {:.3f} s (work may have moved behind the kernels)",
                                  c.value("label", "?"), variant_tail, base_tail);
        return plan;
      }
    } else {
      plan.reason =
          fmt::format("whole runs: the traces of {} have no end time (an older tracer)", c.value("label", "?"));
      return plan;
    }
    for (const auto* side : {&b, &v})
      for (const auto& s : (*side).value("symbols", std::vector<std::string>{})) symbols.insert(s);
  }
  if (runs == 0) {
    plan.reason = fmt::format("whole runs: {} was not validated", config);
    return plan;
  }
  if (base_hot.size() != 1) {
    plan.reason = fmt::format("whole runs: the baseline launched the hot kernels a different number of times on "
                              "different inputs of {} ({})",
                              config, counts(base_hot));
    return plan;
  }
  const std::uint64_t n = *base_hot.begin();
  if (n == 0 || symbols.empty()) {
    plan.reason = fmt::format("whole runs: the validation runs of {} launched no hot kernel", config);
    return plan;
  }
  plan.end = Sandbox::EndAfter{n, std::vector<std::string>(symbols.begin(), symbols.end())};
  plan.reason = fmt::format("runs of {} end after {} hot-kernel launches", config, n);
  return plan;
}

} // namespace optimas::evaluate
