#include "profile/trace.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <unordered_map>

namespace optimas::profile {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_magic = "# optimas-trace ";
// Version 2 added the end line's timestamp and the X line of an early end; both are read.
constexpr int k_oldest_version = 1, k_version = 2;
// A launch line has 16 fields: L, the name id, device, context, stream, grid x y z, block
// x y z, static and dynamic shared memory, registers, start, end.
constexpr std::size_t k_launch_fields = 16;

template <typename T> T number(std::string_view s, const std::string& file, std::size_t line, const char* what) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    throw ParseError(file, line, fmt::format("{} \"{}\" is not a number of its kind", what, s));
  return v;
}

void read_file(const std::string& path, Trace& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot read the kernel trace", path));
  struct Name {
    std::string mangled, demangled, kernel;
  };
  std::unordered_map<std::uint32_t, Name> names;
  std::string text;
  std::size_t line_no = 0;
  std::int64_t pid = 0;
  bool ended = false, ended_early = false;
  std::uint64_t launches = 0;
  while (std::getline(in, text)) {
    ++line_no;
    out.bytes += text.size() + 1;
    if (line_no == 1) {
      if (text.rfind(k_magic, 0) != 0)
        throw ParseError(path, 1, "not a kernel trace of liboptimas-trace (no \"# optimas-trace\" line)");
      int v = number<int>(std::string_view(text).substr(k_magic.size()), path, 1, "the format version");
      if (v < k_oldest_version || v > k_version)
        throw ParseError(path, 1,
                         fmt::format("trace format {} is not one this optimas reads ({} to {})", v, k_oldest_version,
                                     k_version));
      continue;
    }
    if (text.empty()) continue;
    if (ended) throw ParseError(path, line_no, "a line after the end line");
    auto f = util::split(text, '\t');
    if (f[0] == "P" && f.size() == 3) {
      pid = number<std::int64_t>(f[1], path, line_no, "the process id");
    } else if (f[0] == "K" && f.size() == 4) {
      auto id = number<std::uint32_t>(f[1], path, line_no, "the name id");
      Name n{std::string(f[2]), std::string(f[3]), kernel_base_name(f[3])};
      if (!names.emplace(id, std::move(n)).second)
        throw ParseError(path, line_no, fmt::format("name id {} is defined twice", id));
    } else if (f[0] == "L" && f.size() == k_launch_fields) {
      auto id = number<std::uint32_t>(f[1], path, line_no, "the name id");
      auto it = names.find(id);
      if (it == names.end()) throw ParseError(path, line_no, fmt::format("name id {} is not defined above", id));
      Launch l;
      l.id = static_cast<int>(out.launches.size());
      l.kernel = it->second.kernel;
      l.demangled = it->second.demangled;
      l.mangled = it->second.mangled;
      l.pid = pid;
      l.device = number<int>(f[2], path, line_no, "the device");
      l.context = number<std::int64_t>(f[3], path, line_no, "the context");
      l.stream = number<std::int64_t>(f[4], path, line_no, "the stream");
      for (int d = 0; d < 3; ++d) {
        l.grid[d] = number<std::int64_t>(f[5 + d], path, line_no, "a grid size");
        l.block[d] = number<std::int64_t>(f[8 + d], path, line_no, "a block size");
      }
      auto metric = [&](const char* name, std::string_view v, const char* unit) {
        l.metrics[name] = Metric{static_cast<double>(number<std::int64_t>(v, path, line_no, name)), unit, ""};
      };
      metric("launch__shared_mem_per_block_static", f[11], "byte");
      metric("launch__shared_mem_per_block_dynamic", f[12], "byte");
      metric("launch__registers_per_thread", f[13], "register/thread");
      auto start = number<std::uint64_t>(f[14], path, line_no, "the start time");
      auto end = number<std::uint64_t>(f[15], path, line_no, "the end time");
      if (end < start) throw ParseError(path, line_no, "the kernel ends before it starts");
      l.start_ns = start;
      l.duration_ns = static_cast<double>(end - start);
      out.launches.push_back(std::move(l));
      ++launches;
    } else if (f[0] == "X" && f.size() == 2) {
      number<std::uint64_t>(f[1], path, line_no, "the counted launches");
      ended_early = true;
    } else if (f[0] == "E" && (f.size() == 3 || f.size() == 4)) {
      auto count = number<std::uint64_t>(f[1], path, line_no, "the launch count");
      if (count != launches)
        throw ParseError(path, line_no,
                         fmt::format("the end line counts {} launches, the file holds {}", count, launches));
      out.dropped += number<std::uint64_t>(f[2], path, line_no, "the dropped count");
      if (f.size() == 4) out.end_ns = std::max(out.end_ns, number<std::uint64_t>(f[3], path, line_no, "the end time"));
      if (ended_early) out.ended_early.push_back(path);
      ended = true;
    } else {
      throw ParseError(path, line_no, fmt::format("not a line of a kernel trace: \"{}\"", text.substr(0, 80)));
    }
  }
  if (line_no == 0) throw ParseError(path, 1, "the kernel trace is empty (did the program use CUDA?)");
  if (!ended) out.incomplete.push_back(path);
  out.files.push_back(path);
}

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
    for (const auto& f : files) read_file(f.string(), out);
  } else {
    read_file(path, out);
  }
  std::stable_sort(out.launches.begin(), out.launches.end(),
                   [](const Launch& a, const Launch& b) { return a.start_ns < b.start_ns; });
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
  for (const auto& l : profiled) by_key.emplace(kernel_signature_key(l.demangled), &l);
  std::unordered_map<std::string, const Launch*> cache;
  for (auto& l : traced) {
    auto [it, inserted] = cache.emplace(l.demangled, nullptr);
    if (inserted)
      if (auto m = by_key.find(kernel_signature_key(l.demangled)); m != by_key.end()) it->second = m->second;
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
