#include "profile/timeline.hpp"

#include "profile/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

namespace optimas::profile {

namespace {

// One piece of GPU work: a launch, a copy or a memset.
struct Work {
  std::uint64_t start = 0, end = 0;
  const Launch* launch = nullptr;
  const Transfer* transfer = nullptr;
};

std::string label(const Work& w) {
  if (w.launch) return w.launch->kernel;
  const Transfer& t = *w.transfer;
  if (t.memset) return "memset of " + bytes_text(t.bytes);
  return fmt::format("{} {} copy of {}", t.async ? "asynchronous" : "synchronous", direction_words(t.direction),
                     bytes_text(t.bytes));
}

template <typename T> void by_time_first(std::vector<T>& v) {
  std::stable_sort(v.begin(), v.end(), [](const T& a, const T& b) { return a.ns > b.ns; });
}

// A launch's end in integer nanoseconds: CUPTI's timestamps (about 1.8e18) are past what a double
// holds to the nanosecond (a 256 ns step there), which on recorded H200 traces merged
// back-to-back kernels of 2 us. A duration past the clock's range saturates.
std::uint64_t launch_end(const Launch& l) {
  if (!(l.duration_ns > 0)) return l.start_ns;
  const std::uint64_t room = std::numeric_limits<std::uint64_t>::max() - l.start_ns;
  if (l.duration_ns >= static_cast<double>(room)) return std::numeric_limits<std::uint64_t>::max();
  return l.start_ns + static_cast<std::uint64_t>(std::llround(l.duration_ns));
}

// Every launch, copy and memset by start.
// GPU work is clipped to the run's [start, end]: a record outside it (inconsistent timestamps)
// would otherwise make the GPU busier than the run was long.
std::vector<Work> gpu_work(const Trace& trace) {
  std::vector<Work> work;
  auto clip = [&](std::uint64_t x) { return std::clamp(x, trace.start_ns, trace.end_ns); };
  for (const auto& l : trace.launches) {
    const std::uint64_t start = clip(l.start_ns);
    work.push_back({start, std::max(start, clip(launch_end(l))), &l, nullptr});
  }
  for (const auto& t : trace.transfers) {
    const std::uint64_t start = clip(t.start_ns);
    work.push_back({start, std::max(start, clip(t.end_ns)), nullptr, &t});
  }
  std::stable_sort(work.begin(), work.end(), [](const Work& a, const Work& b) { return a.start < b.start; });
  return work;
}

// The union of [start, end) intervals sorted by start, in ns.
double union_ns(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& spans) {
  double total = 0;
  std::uint64_t from = 0, to = 0;
  bool open = false;
  for (const auto& [s, e] : spans) {
    if (open && s <= to) {
      to = std::max(to, e);
      continue;
    }
    if (open) total += static_cast<double>(to - from);
    from = s, to = e, open = true;
  }
  if (open) total += static_cast<double>(to - from);
  return total;
}

// How much of [s, e) no kernel of the sorted, merged `kernels` covers.
double exposed(std::uint64_t s, std::uint64_t e, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& kernels) {
  double covered = 0;
  auto it = std::upper_bound(kernels.begin(), kernels.end(), std::make_pair(s, s));
  if (it != kernels.begin()) --it;
  for (; it != kernels.end() && it->first < e; ++it) {
    std::uint64_t a = std::max(s, it->first), b = std::min(e, it->second);
    if (b > a) covered += static_cast<double>(b - a);
  }
  return static_cast<double>(e - s) - covered;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> merged_kernels(const std::vector<Work>& work) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (const auto& w : work) {
    if (!w.launch) continue;
    if (!out.empty() && w.start <= out.back().second)
      out.back().second = std::max(out.back().second, w.end);
    else
      out.push_back({w.start, w.end});
  }
  return out;
}

void add_traffic(Timeline& t, const std::vector<Work>& work) {
  auto kernels = merged_kernels(work);
  std::map<std::string, Traffic> by_direction;
  for (const auto& w : work) {
    if (!w.transfer) continue;
    const Transfer& x = *w.transfer;
    Traffic& d = by_direction[x.direction];
    d.direction = x.direction;
    ++d.count;
    d.bytes += x.bytes;
    d.synchronous += x.async ? 0 : 1;
    d.pageable += x.src_memory == "pageable" || x.dst_memory == "pageable";
    d.ns += static_cast<double>(x.end_ns - x.start_ns);
    d.exposed_ns += exposed(x.start_ns, x.end_ns, kernels);
    (x.memset ? t.memset_ns : t.transfer_ns) += static_cast<double>(x.end_ns - x.start_ns);
    ++(x.memset ? t.memsets : t.copies);
  }
  for (auto& [dir, d] : by_direction) t.traffic.push_back(std::move(d));
  by_time_first(t.traffic);
}

// Sweeps the GPU work in start order: the busy time, the gaps between its stretches grouped by
// what ends before and starts after them, and the copies that follow a kernel directly.
void add_gaps(Timeline& t, const std::vector<Work>& work, std::uint64_t run_start) {
  std::map<std::string, std::uint64_t> launches_of;
  for (const auto& w : work)
    if (w.launch) ++launches_of[w.launch->kernel];
  std::map<std::tuple<std::string, std::string, std::string>, GapGroup> groups;
  std::map<std::pair<std::string, std::string>, Follow> follows;
  const Work* last = nullptr;          // the work that ends the current stretch (the latest end)
  const Launch* last_kernel = nullptr; // the kernel with the latest end so far
  std::uint64_t from = 0;
  for (const auto& w : work) {
    if (last && w.start > last->end) {
      double ns = static_cast<double>(w.start - last->end);
      t.busy_ns += static_cast<double>(last->end - from);
      from = w.start;
      std::string k = last_kernel ? last_kernel->kernel : "";
      GapGroup& g = groups[{label(*last), label(w), k}];
      if (g.count == 0) g.before = label(*last), g.after = label(w), g.kernel_before = k;
      ++g.count;
      ++t.gaps;
      g.total_ns += ns;
      if (ns > g.largest_ns) g.largest_ns = ns, g.at_ns = static_cast<double>(last->end - run_start);
      if (!t.largest || ns > t.largest->largest_ns) {
        t.largest = g;
        t.largest->count = 1, t.largest->total_ns = ns, t.largest->largest_ns = ns;
        t.largest->at_ns = static_cast<double>(last->end - run_start);
      }
    } else if (!last) {
      from = w.start;
    }
    if (w.transfer && last && last->launch && w.start >= last->end) {
      Follow& f = follows[{label(w), last->launch->kernel}];
      f.what = label(w), f.kernel = last->launch->kernel, f.kernel_launches = launches_of[f.kernel];
      ++f.count;
    }
    if (!last || w.end > last->end) last = &w;
    if (w.launch && (!last_kernel || w.end >= launch_end(*last_kernel))) last_kernel = w.launch;
  }
  if (last) t.busy_ns += static_cast<double>(last->end - from);
  for (auto& [key, g] : groups) t.groups.push_back(std::move(g));
  std::stable_sort(t.groups.begin(), t.groups.end(),
                   [](const GapGroup& a, const GapGroup& b) { return a.total_ns > b.total_ns; });
  for (auto& [key, f] : follows) t.follows.push_back(std::move(f));
}

template <typename T> std::vector<HostTotal> totals(const std::vector<T>& records, std::string T::*name) {
  std::map<std::string, HostTotal> by_name;
  for (const auto& r : records) {
    HostTotal& h = by_name[r.*name];
    h.name = r.*name;
    ++h.count;
    h.ns += static_cast<double>(r.end_ns - r.start_ns);
  }
  std::vector<HostTotal> out;
  for (auto& [n, h] : by_name) out.push_back(std::move(h));
  by_time_first(out);
  return out;
}

} // namespace

std::string direction_words(const std::string& d) {
  static const std::map<std::string, std::string> k_words = {
      {"HtoD", "host-to-device"},  {"DtoH", "device-to-host"}, {"DtoD", "device-to-device"}, {"HtoH", "host-to-host"},
      {"PtoP", "peer-to-peer"},    {"HtoA", "host-to-array"},  {"AtoH", "array-to-host"},    {"AtoA", "array-to-array"},
      {"AtoD", "array-to-device"}, {"DtoA", "device-to-array"}};
  auto it = k_words.find(d);
  return it == k_words.end() ? d : it->second;
}

std::string bytes_text(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.3g} {}", v, units[u]);
}

const Follow* Timeline::follow(const std::string& what, const std::string& kernel) const {
  for (const auto& f : follows)
    if (f.what == what && f.kernel == kernel) return &f;
  return nullptr;
}

std::optional<Timeline> summarize_timeline(const Trace& trace) {
  if (trace.version < 3 || trace.start_ns == 0 || trace.end_ns <= trace.start_ns) return std::nullopt;
  Timeline t;
  t.wall_ns = static_cast<double>(trace.end_ns - trace.start_ns);
  t.launches = trace.launches.size();
  t.processes = trace.files.size();
  t.ended_early = !trace.ended_early.empty();
  auto work = gpu_work(trace);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> kernels;
  for (const auto& w : work)
    if (w.launch) kernels.push_back({w.start, w.end});
  t.kernel_ns = union_ns(kernels);
  add_traffic(t, work);
  add_gaps(t, work, trace.start_ns);
  if (!work.empty()) {
    std::uint64_t last_end = 0;
    for (const auto& w : work) last_end = std::max(last_end, w.end);
    t.before_first_ns =
        work.front().start > trace.start_ns ? static_cast<double>(work.front().start - trace.start_ns) : 0;
    t.after_last_ns = trace.end_ns > last_end ? static_cast<double>(trace.end_ns - last_end) : 0;
  }
  t.calls = totals(trace.calls, &BlockingCall::name);
  t.waits = totals(trace.waits, &HostWait::type);
  return t;
}

namespace {

nlohmann::json group_json(const GapGroup& g) {
  return {{"before", g.before}, {"after", g.after},       {"kernel_before", g.kernel_before},
          {"count", g.count},   {"total_ns", g.total_ns}, {"largest_ns", g.largest_ns},
          {"at_ns", g.at_ns}};
}

} // namespace

nlohmann::json to_json(const Traffic& d) {
  return {{"direction", d.direction}, {"count", d.count}, {"bytes", d.bytes},          {"synchronous", d.synchronous},
          {"pageable", d.pageable},   {"ns", d.ns},       {"exposed_ns", d.exposed_ns}};
}

Traffic traffic_from_json(const nlohmann::json& j) {
  auto number = [&j](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  auto count = [&](const char* key) { return static_cast<std::uint64_t>(std::max(0.0, number(key))); };
  auto direction = j.find("direction");
  return {direction != j.end() && direction->is_string() ? direction->get<std::string>() : std::string(),
          count("count"),
          count("bytes"),
          count("synchronous"),
          count("pageable"),
          number("ns"),
          number("exposed_ns")};
}

nlohmann::json to_json(const Timeline& t) {
  using nlohmann::json;
  json traffic = json::array(), groups = json::array(), follows = json::array(), calls = json::array(),
       waits = json::array();
  for (const auto& d : t.traffic) traffic.push_back(to_json(d));
  for (const auto& g : t.groups) groups.push_back(group_json(g));
  for (const auto& f : t.follows)
    follows.push_back(
        {{"what", f.what}, {"kernel", f.kernel}, {"count", f.count}, {"kernel_launches", f.kernel_launches}});
  for (const auto& c : t.calls) calls.push_back({{"name", c.name}, {"count", c.count}, {"ns", c.ns}});
  for (const auto& w : t.waits) waits.push_back({{"type", w.name}, {"count", w.count}, {"ns", w.ns}});
  return {{"wall_ns", t.wall_ns},
          {"busy_ns", t.busy_ns},
          {"busy_fraction", t.busy_fraction()},
          {"kernel_ns", t.kernel_ns},
          {"transfer_ns", t.transfer_ns},
          {"memset_ns", t.memset_ns},
          {"idle_ns", t.idle_ns()},
          {"gap_ns", t.gap_ns()},
          {"before_first_ns", t.before_first_ns},
          {"after_last_ns", t.after_last_ns},
          {"launches", t.launches},
          {"copies", t.copies},
          {"memsets", t.memsets},
          {"gaps", t.gaps},
          {"traffic", traffic},
          {"gap_groups", groups},
          {"largest_gap", t.largest ? group_json(*t.largest) : json(nullptr)},
          {"follows", follows},
          {"blocking_calls", calls},
          {"host_waits", waits},
          {"processes", t.processes},
          {"ended_early", t.ended_early}};
}

} // namespace optimas::profile
