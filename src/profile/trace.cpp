#include "profile/trace.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <tuple>
#include <unordered_map>

namespace optimas::profile {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_magic = "# optimas-trace ";
// Version 2 added the end line's timestamp and the X line of an early end; version 3 the M, S,
// Y and R lines of the timeline and the end line's count of them. All three are read.
constexpr int k_oldest_version = 1, k_version = 3;
// A launch line has 16 fields: L, the name id, device, context, stream, grid x y z, block
// x y z, static and dynamic shared memory, registers, start, end.
constexpr std::size_t k_launch_fields = 16;
// The words the tracer writes for CUPTI's enumerations (src/tracer/optimas_trace.cpp).
constexpr std::string_view k_directions[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                             "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
constexpr std::string_view k_memories[] = {"unknown", "pageable", "pinned",        "device",
                                           "array",   "managed",  "device_static", "managed_static"};
constexpr std::string_view k_wait_types[] = {"unknown", "event", "stream_wait_event", "stream", "context"};

template <typename T> T number(std::string_view s, const std::string& file, std::size_t line, const char* what) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    throw ParseError(file, line, fmt::format("{} \"{}\" is not a number of its kind", what, s));
  return v;
}

// One trace file, line by line; each kind of line has its own step.
class FileReader {
public:
  FileReader(const std::string& path, Trace& out) : m_path(path), m_out(out) {}

  void read() {
    std::ifstream in(m_path, std::ios::binary);
    if (!in) throw Error(fmt::format("{}: cannot read the kernel trace", m_path));
    std::string text;
    while (std::getline(in, text)) {
      ++m_line;
      m_out.bytes += text.size() + 1;
      if (m_line == 1) {
        header(text);
        continue;
      }
      if (text.empty()) continue;
      if (m_ended) fail("a line after the end line");
      line(text);
    }
    if (m_line == 0) throw ParseError(m_path, 1, "the kernel trace is empty (did the program use CUDA?)");
    if (!m_ended) m_out.incomplete.push_back(m_path);
    m_out.files.push_back(m_path);
  }

private:
  struct Name {
    std::string mangled, demangled, kernel;
  };

  [[noreturn]] void fail(const std::string& what) const { throw ParseError(m_path, m_line, what); }
  template <typename T> T num(std::string_view s, const char* what) const { return number<T>(s, m_path, m_line, what); }
  template <std::size_t N>
  std::string word(std::string_view s, const std::string_view (&known)[N], const char* what) const {
    if (std::find(std::begin(known), std::end(known), s) == std::end(known))
      fail(fmt::format("{} \"{}\" is not one the tracer writes", what, s));
    return std::string(s);
  }
  // A start and an end, in order.
  std::pair<std::uint64_t, std::uint64_t> span(std::string_view start, std::string_view end, const char* what) const {
    auto s = num<std::uint64_t>(start, "the start time"), e = num<std::uint64_t>(end, "the end time");
    if (e < s) fail(fmt::format("the {} ends before it starts", what));
    return {s, e};
  }

  void header(const std::string& text) {
    if (text.rfind(k_magic, 0) != 0) fail("not a kernel trace of liboptimas-trace (no \"# optimas-trace\" line)");
    m_version = num<int>(std::string_view(text).substr(k_magic.size()), "the format version");
    if (m_version < k_oldest_version || m_version > k_version)
      fail(fmt::format("trace format {} is not one this optimas reads ({} to {})", m_version, k_oldest_version,
                       k_version));
    m_out.version = m_out.files.empty() ? m_version : std::min(m_out.version, m_version);
  }

  void line(const std::string& text) {
    auto f = util::split(text, '\t');
    const bool timeline = m_version >= 3; // M, S, Y and R lines are format 3's
    if (f[0] == "P" && f.size() == 3) {
      m_pid = num<std::int64_t>(f[1], "the process id");
      auto start = num<std::uint64_t>(f[2], "the start time");
      m_out.start_ns = m_out.start_ns == 0 ? start : std::min(m_out.start_ns, start);
    } else if (f[0] == "K" && f.size() == 4) {
      auto id = num<std::uint32_t>(f[1], "the name id");
      // The tracer's demangler (the host compiler's) leaves a file-static kernel's symbol as it is.
      std::string demangled(f[3]);
      if (demangled == f[2])
        if (auto s = demangle_static_kernel(f[2]); !s.empty()) demangled = std::move(s);
      std::string base = kernel_base_name(demangled);
      if (!m_names.emplace(id, Name{std::string(f[2]), std::move(demangled), std::move(base)}).second)
        fail(fmt::format("name id {} is defined twice", id));
    } else if (f[0] == "L" && f.size() == k_launch_fields) {
      launch(f);
    } else if (timeline && f[0] == "M" && f.size() == 12) {
      copy(f);
    } else if (timeline && f[0] == "S" && f.size() == 10) {
      memset(f);
    } else if (timeline && f[0] == "Y" && f.size() == 7) {
      HostWait w{word(f[1], k_wait_types, "the synchronisation"), num<std::int64_t>(f[2], "the context"),
                 num<std::int64_t>(f[3], "the stream"), m_pid};
      std::tie(w.start_ns, w.end_ns) = span(f[4], f[5], "synchronisation");
      w.correlation = num<std::uint64_t>(f[6], "the correlation id");
      m_out.waits.push_back(std::move(w));
      ++m_records;
    } else if (timeline && f[0] == "R" && f.size() == 6) {
      if (f[1].rfind("cuda", 0) != 0 || f[1].find(' ') != std::string_view::npos)
        fail(fmt::format("\"{}\" is not the name of a CUDA runtime call", f[1]));
      BlockingCall c{std::string(f[1]), num<std::uint64_t>(f[2], "the thread id"), m_pid};
      std::tie(c.start_ns, c.end_ns) = span(f[3], f[4], "call");
      c.correlation = num<std::uint64_t>(f[5], "the correlation id");
      m_out.calls.push_back(std::move(c));
      ++m_records;
    } else if (f[0] == "X" && f.size() == 2) {
      num<std::uint64_t>(f[1], "the counted launches");
      m_ended_early = true;
    } else if (f[0] == "E" && (m_version >= 3 ? f.size() == 5 : f.size() == 3 || f.size() == 4)) {
      end(f);
    } else {
      fail(fmt::format("not a line of a kernel trace (format {}): \"{}\"", m_version, text.substr(0, 80)));
    }
  }

  void launch(const std::vector<std::string_view>& f) {
    auto id = num<std::uint32_t>(f[1], "the name id");
    auto it = m_names.find(id);
    if (it == m_names.end()) fail(fmt::format("name id {} is not defined above", id));
    Launch l;
    l.id = static_cast<int>(m_out.launches.size());
    l.kernel = it->second.kernel;
    l.demangled = it->second.demangled;
    l.mangled = it->second.mangled;
    l.pid = m_pid;
    l.device = num<int>(f[2], "the device");
    l.context = num<std::int64_t>(f[3], "the context");
    l.stream = num<std::int64_t>(f[4], "the stream");
    for (int d = 0; d < 3; ++d) {
      l.grid[d] = num<std::int64_t>(f[5 + d], "a grid size");
      l.block[d] = num<std::int64_t>(f[8 + d], "a block size");
    }
    auto metric = [&](const char* name, std::string_view v, const char* unit) {
      l.metrics[name] = Metric{static_cast<double>(num<std::int64_t>(v, name)), unit, ""};
    };
    metric("launch__shared_mem_per_block_static", f[11], "byte");
    metric("launch__shared_mem_per_block_dynamic", f[12], "byte");
    metric("launch__registers_per_thread", f[13], "register/thread");
    auto [start, end] = span(f[14], f[15], "kernel");
    l.start_ns = start;
    l.duration_ns = static_cast<double>(end - start);
    m_out.launches.push_back(std::move(l));
    ++m_launches;
  }

  // M  direction  src memory  dst memory  bytes  device  context  stream  start  end  async  correlation
  void copy(const std::vector<std::string_view>& f) {
    Transfer t;
    t.direction = word(f[1], k_directions, "the copy direction");
    t.src_memory = word(f[2], k_memories, "the source memory");
    t.dst_memory = word(f[3], k_memories, "the destination memory");
    transfer_tail(t, f, 4, "copy");
  }

  // S  memory  bytes  device  context  stream  start  end  async  correlation
  void memset(const std::vector<std::string_view>& f) {
    Transfer t;
    t.memset = true;
    t.direction = "set";
    t.dst_memory = word(f[1], k_memories, "the memory");
    transfer_tail(t, f, 2, "memset");
  }

  // The fields that copies and memsets share, from f[i] on.
  void transfer_tail(Transfer& t, const std::vector<std::string_view>& f, std::size_t i, const char* what) {
    t.bytes = num<std::uint64_t>(f[i], "the byte count");
    t.device = num<int>(f[i + 1], "the device");
    t.context = num<std::int64_t>(f[i + 2], "the context");
    t.stream = num<std::int64_t>(f[i + 3], "the stream");
    std::tie(t.start_ns, t.end_ns) = span(f[i + 4], f[i + 5], what);
    auto async = num<int>(f[i + 6], "the async flag");
    if (async != 0 && async != 1) fail(fmt::format("the async flag is 0 or 1, not {}", async));
    t.async = async == 1;
    t.correlation = num<std::uint64_t>(f[i + 7], "the correlation id");
    t.pid = m_pid;
    m_out.transfers.push_back(std::move(t));
    ++m_records;
  }

  void end(const std::vector<std::string_view>& f) {
    auto count = num<std::uint64_t>(f[1], "the launch count");
    if (count != m_launches) fail(fmt::format("the end line counts {} launches, the file holds {}", count, m_launches));
    m_out.dropped += num<std::uint64_t>(f[2], "the dropped count");
    if (f.size() >= 4) m_out.end_ns = std::max(m_out.end_ns, num<std::uint64_t>(f[3], "the end time"));
    if (f.size() >= 5) {
      auto records = num<std::uint64_t>(f[4], "the record count");
      if (records != m_records)
        fail(fmt::format("the end line counts {} copies, memsets, waits and calls, the file holds {}", records,
                         m_records));
    }
    if (m_ended_early) m_out.ended_early.push_back(m_path);
    m_ended = true;
  }

  std::string m_path;
  Trace& m_out;
  std::unordered_map<std::uint32_t, Name> m_names;
  std::size_t m_line = 0;
  int m_version = 0;
  std::int64_t m_pid = 0;
  bool m_ended = false, m_ended_early = false;
  std::uint64_t m_launches = 0, m_records = 0; // L lines; M, S, Y and R lines
};

bool is_trace_file(const fs::path& p) {
  auto name = p.filename().string();
  return name.rfind("trace-", 0) == 0 && p.extension() == ".tsv";
}

} // namespace

Trace read_trace(const std::string& path) {
  Trace out;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file() && is_trace_file(e.path())) files.push_back(e.path());
    if (files.empty())
      throw Error(fmt::format("{}: no kernel trace (trace-*.tsv) in this folder: the program launched no "
                              "kernel, or the tracer was not loaded (see its message on the program's stderr)",
                              path));
    std::sort(files.begin(), files.end());
    for (const auto& f : files) FileReader(f.string(), out).read();
  } else {
    FileReader(path, out).read();
  }
  std::stable_sort(out.launches.begin(), out.launches.end(),
                   [](const Launch& a, const Launch& b) { return a.start_ns < b.start_ns; });
  auto by_start = [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; };
  std::stable_sort(out.transfers.begin(), out.transfers.end(), by_start);
  std::stable_sort(out.waits.begin(), out.waits.end(), by_start);
  std::stable_sort(out.calls.begin(), out.calls.end(), by_start);
  for (std::size_t i = 0; i < out.launches.size(); ++i) out.launches[i].id = static_cast<int>(i);
  return out;
}

double traced_time_ns(const Trace& trace, const std::vector<std::string>& keys) {
  double total = 0;
  std::unordered_map<std::string, bool> wanted;
  for (const auto& l : trace.launches) {
    if (!keys.empty()) {
      auto [it, inserted] = wanted.emplace(l.demangled, false);
      if (inserted) it->second = std::find(keys.begin(), keys.end(), kernel_signature_key(l.demangled)) != keys.end();
      if (!it->second) continue;
    }
    total += l.duration_ns;
  }
  return total;
}

bool is_launch_of(const Launch& l, const std::vector<std::string>& functions) {
  return std::find(functions.begin(), functions.end(), l.kernel.substr(0, l.kernel.find('<'))) != functions.end();
}

std::vector<std::vector<double>> launch_durations_ms(const Trace& trace, const std::vector<std::string>& functions) {
  std::vector<std::vector<double>> out(functions.size());
  for (const auto& l : trace.launches) {
    auto it = std::find(functions.begin(), functions.end(), l.kernel.substr(0, l.kernel.find('<')));
    if (it != functions.end()) out[it - functions.begin()].push_back(l.duration_ns / 1e6);
  }
  return out;
}

void adopt_profiled_names(std::vector<Launch>& traced, const std::vector<Launch>& profiled) {
  std::map<std::string, const Launch*> by_key;
  // By name and template arguments alone: ncu writes a template's parameters as its own
  // placeholders ("void reduce7<int, 256, 1>(const T1 *, T1 *, unsigned int)"), so only the
  // name matches; taken where that name has one profiled signature.
  std::map<std::string, std::vector<const Launch*>> by_name;
  for (const auto& l : profiled) {
    by_key.emplace(kernel_signature_key(l.demangled), &l);
    auto& same = by_name[kernel_name_key(l.demangled)];
    if (std::none_of(same.begin(), same.end(), [&](const Launch* x) { return x->demangled == l.demangled; }))
      same.push_back(&l);
  }
  std::unordered_map<std::string, const Launch*> cache;
  for (auto& l : traced) {
    auto [it, inserted] = cache.emplace(l.demangled, nullptr);
    if (inserted) {
      if (auto m = by_key.find(kernel_signature_key(l.demangled)); m != by_key.end())
        it->second = m->second;
      else if (auto n = by_name.find(kernel_name_key(l.demangled)); n != by_name.end() && n->second.size() == 1)
        it->second = n->second.front();
    }
    if (it->second) {
      l.kernel = it->second->kernel;
      l.demangled = it->second->demangled;
    }
  }
}

std::vector<LaunchPick> pick_launches(const std::vector<Launch>& traced, const std::vector<std::string>& hot_demangled,
                                      int cap) {
  // Invocation numbers of each hot kernel's launches, counted per function name.
  std::map<std::string, std::int64_t> seen;
  std::map<std::string, std::vector<std::int64_t>> by_kernel;
  std::map<std::string, std::string> function_of;
  for (const auto& l : traced) {
    std::string f = kernel_function_name(l.kernel);
    std::int64_t n = ++seen[f];
    if (std::find(hot_demangled.begin(), hot_demangled.end(), l.demangled) == hot_demangled.end()) continue;
    by_kernel[l.demangled].push_back(n);
    function_of[l.demangled] = f;
  }
  std::vector<LaunchPick> out;
  for (const auto& hot : hot_demangled) {
    auto it = by_kernel.find(hot);
    if (it == by_kernel.end()) continue;
    const auto& all = it->second;
    std::vector<std::int64_t> picked;
    auto k = static_cast<std::size_t>(cap);
    if (cap <= 0 || all.size() <= k) {
      picked = all;
    } else {
      // First and last, the rest evenly between: the kernel early, late and in its steady state.
      for (std::size_t i = 0; i < k; ++i) picked.push_back(all[k == 1 ? 0 : i * (all.size() - 1) / (k - 1)]);
    }
    const std::string& f = function_of[hot];
    auto same = std::find_if(out.begin(), out.end(), [&](const LaunchPick& p) { return p.function == f; });
    if (same == out.end()) {
      out.push_back({f, {}, seen[f]});
      same = std::prev(out.end());
    }
    for (auto n : picked)
      if (std::find(same->invocations.begin(), same->invocations.end(), n) == same->invocations.end())
        same->invocations.push_back(n);
    std::sort(same->invocations.begin(), same->invocations.end());
  }
  return out;
}

} // namespace optimas::profile
