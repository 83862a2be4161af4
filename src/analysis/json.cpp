#include "analysis/json.hpp"

#include "analysis/dictionary.hpp"

#include <cmath>

namespace optimas::analysis {

namespace {

using nlohmann::json;

json num(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json throughput_json(const std::vector<Throughput>& ts) {
  json out = json::array();
  for (const auto& t : ts)
    out.push_back({{"name", t.name}, {"achieved", num(t.achieved)}, {"peak", num(t.peak)}, {"rho", num(t.rho)}});
  return out;
}

json access_json(const MemoryAccess& a) {
  return {{"global_load_sectors_per_request", num(a.global_load_sectors_per_request)},
          {"global_store_sectors_per_request", num(a.global_store_sectors_per_request)},
          {"shared_bank_conflicts", num(a.shared_bank_conflicts)},
          {"shared_wavefronts", num(a.shared_wavefronts)},
          {"local_load_requests", num(a.local_load_requests)},
          {"local_store_requests", num(a.local_store_requests)},
          {"local_sectors", num(a.local_sectors)},
          {"shared_excessive_wavefronts", num(a.shared_excessive_wavefronts)},
          {"shared_ideal_wavefronts", num(a.shared_ideal_wavefronts)},
          {"summary", a.summary}};
}

json roofline_json(const Roofline& r) {
  json limits = json::object();
  for (const auto& [what, blocks] : r.occupancy_limits) limits[what] = num(blocks);
  return {{"id", r.id},
          {"launches", r.launches},
          {"duration_ns", num(r.duration_ns)},
          {"compute", throughput_json(r.compute)},
          {"memory", throughput_json(r.memory)},
          {"flops", num(r.flops)},
          {"intensity", {{"dram", num(r.intensity_dram)}, {"l2", num(r.intensity_l2)}, {"l1", num(r.intensity_l1)}}},
          {"sm_throughput", num(r.sm_throughput)},
          {"rho_compute", num(r.rho_compute)},
          {"rho_memory", num(r.rho_memory)},
          {"compute_basis", r.compute_basis},
          {"memory_basis", r.memory_basis},
          {"compute_saturated", r.compute_saturated},
          {"memory_saturated", r.memory_saturated},
          {"class", r.bound},
          {"summary", r.summary},
          {"speed_of_light",
           {{"fraction", num(r.sol.fraction)},
            {"limit", r.sol.limit},
            {"attainable_flops", num(r.sol.attainable)},
            {"sentence", r.sol.sentence}}},
          {"occupancy",
           {{"achieved_pct", num(r.achieved_occupancy)},
            {"theoretical_pct", num(r.theoretical_occupancy)},
            {"limiter", r.occupancy_limiter},
            {"registers_per_thread", num(r.registers_per_thread)},
            {"block_size", r.block_size},
            {"waves", num(r.waves)},
            {"blocks_per_sm_limits", limits}}},
          {"issue", {{"per_cycle", num(r.issue_per_cycle)}, {"eligible_warps_per_cycle", num(r.eligible_warps)}}},
          {"access", access_json(r.access)}};
}

const char* status_name(Cause::Status s) {
  switch (s) {
  case Cause::Status::found:
    return "found";
  case Cause::Status::ambiguous:
    return "ambiguous";
  case Cause::Status::undecided:
    break;
  }
  return "undecided";
}

json facts_json(const LineFacts& f) {
  json accesses = json::array();
  for (const auto& a : f.accesses)
    accesses.push_back({{"space", a.space},
                        {"operation", a.operation},
                        {"bits", a.bits},
                        {"requests", a.executed},
                        {"instructions", a.instructions},
                        {"sectors", a.sectors},
                        {"sectors_ideal", a.sectors_ideal},
                        {"sectors_excessive", a.sectors_excessive},
                        {"sectors_per_request", num(a.sectors_per_request())},
                        {"ideal_sectors_per_request", num(a.ideal_sectors_per_request())},
                        {"wavefronts", a.wavefronts},
                        {"wavefronts_ideal", a.wavefronts_ideal},
                        {"wavefronts_excessive", a.wavefronts_excessive},
                        {"conflict_ways", a.conflict_ways},
                        {"excessive_share", num(a.excessive_share())},
                        {"text", a.text()}});
  return {{"accesses", accesses},
          {"threads", num(f.threads)},
          {"divergent_branches", f.divergent_branches},
          {"text", f.text()}};
}

json cause_json(const Cause& c) {
  json j = {{"status", status_name(c.status)},
            {"kind", c.kind},
            {"stall", std::string(profile::stall_label(c.stall))},
            {"file", c.status == Cause::Status::found ? json(c.file) : json(nullptr)},
            {"line", c.status == Cause::Status::found ? json(c.line) : json(nullptr)},
            {"code", c.code},
            {"instruction", c.instruction},
            {"details", c.details},
            {"operation", c.operation},
            {"share", c.share},
            {"candidates", c.candidates},
            {"why", c.why},
            {"text", c.text()}};
  if (!c.barrier_at.empty()) j["barrier"] = c.barrier_at;
  j["facts"] = c.facts ? facts_json(*c.facts) : json(nullptr);
  return j;
}

json divergence_json(const Divergence& d) {
  return {{"status", status_name(d.status)},
          {"file", d.status == Cause::Status::found ? json(d.file) : json(nullptr)},
          {"line", d.status == Cause::Status::found ? json(d.line) : json(nullptr)},
          {"code", d.code},
          {"threads", d.threads},
          {"branch_threads", d.branch_threads},
          {"candidates", d.candidates},
          {"why", d.why},
          {"text", d.text()}};
}

json stalls_json(const StallSummary& s) {
  const auto& dict = Dictionary::builtin();
  json lines = json::array();
  for (const auto& l : s.lines) {
    json e = {{"id", l.id},
              {"file", l.file},
              {"line", l.line},
              {"code", l.code},
              {"samples", l.samples},
              {"stalled", l.stalled},
              {"kernel_share", l.kernel_share},
              {"stall", std::string(profile::stall_label(l.dominant))},
              {"fraction", l.dominant_fraction},
              {"memory", facts_json(l.facts)},
              {"cause", l.cause ? cause_json(*l.cause) : json(nullptr)},
              {"divergence", l.divergence ? divergence_json(*l.divergence) : json(nullptr)}};
    if (const auto* x = dict.stall_explanation(l.dominant))
      e["explanation"] = {{"title", x->title}, {"helps", x->helps}};
    lines.push_back(std::move(e));
  }
  json kernel_stalls = json::object();
  for (const auto& [stall, count] : s.kernel_stalls) kernel_stalls[std::string(profile::stall_label(stall))] = count;
  return {{"total_samples", s.total_samples},
          {"kernel_stalls", kernel_stalls},
          {"lines", lines},
          {"lines_seen", s.lines_seen},
          {"lines_below_tau", s.lines_below_tau},
          {"lines_over_budget", s.lines_over_budget},
          {"raw_bytes", s.raw_bytes},
          {"summary_bytes", s.text.size()},
          {"reduction", s.reduction()},
          {"summary", s.text}};
}

json counters_json(const CounterSelection& c) {
  json top = json::array();
  for (const auto& w : c.top)
    top.push_back({{"id", w.id},
                   {"counter", w.counter},
                   {"description", w.description},
                   {"importance", w.importance},
                   {"frequency", w.frequency},
                   {"mean_weight", w.mean_weight}});
  return {{"runs", c.runs},
          {"counters_total", c.counters_total},
          {"counters_used", c.counters_used},
          {"dropped",
           {{"constant", c.dropped_constant},
            {"missing", c.dropped_missing},
            {"time", c.dropped_time},
            {"duplicate", c.dropped_duplicate}}},
          {"mean_r2", c.mean_r2},
          {"reliable", c.reliable},
          {"caveat", c.caveat},
          {"top", top}};
}

} // namespace

json to_json(const Diagnostics& d) {
  json kernels = json::array();
  for (const auto& kd : d.kernels) {
    json k = {{"kernel", kd.time.kernel},
              {"demangled", kd.time.demangled},
              {"share", kd.time.share},
              {"total_ns", kd.time.total_ns},
              {"launches", kd.time.launches},
              {"roofline", kd.roofline ? roofline_json(*kd.roofline) : json(nullptr)},
              {"stalls", kd.stalls ? stalls_json(*kd.stalls) : json(nullptr)},
              {"counters", kd.counters ? counters_json(*kd.counters) : json(nullptr)},
              {"notes", kd.notes}};
    kernels.push_back(std::move(k));
  }
  json all = json::array();
  for (const auto& k : d.hot.kernels)
    all.push_back({{"kernel", k.kernel},
                   {"demangled", k.demangled},
                   {"share", k.share},
                   {"total_ns", k.total_ns},
                   {"launches", k.launches},
                   {"hot", k.hot}});
  json evidence = json::array();
  for (const auto& e : d.evidence)
    evidence.push_back({{"id", e.id},
                        {"kind", e.kind},
                        {"kernel", e.kernel},
                        {"text", e.text},
                        {"saved", num(e.saved)},
                        {"gain", num(e.gain)}});
  const auto& o = d.options;
  return {{"schema", "optimas.diagnostics/1"},
          {"config", d.config},
          {"sources", sources_label(o.sources)},
          {"options",
           {{"alpha", o.alpha},
            {"tau_sat", o.tau_sat},
            {"tau_stall", o.saliency.tau},
            {"max_summary_bytes", o.saliency.max_bytes},
            {"kappa", o.eomp.kappa},
            {"pool", o.eomp.pool},
            {"ensemble", o.eomp.ensemble},
            {"seed", o.eomp.seed}}},
          {"total_ns", d.hot.total_ns},
          {"all_kernels", all},
          {"kernels", kernels},
          {"evidence", evidence},
          {"timeline", d.timeline ? profile::to_json(*d.timeline) : json(nullptr)},
          {"application_headroom", d.timeline ? json(d.application_headroom) : json(nullptr)},
          {"raw_bytes", d.raw_bytes},
          {"summary_bytes", d.summary_bytes}};
}

} // namespace optimas::analysis
