#include "evaluate/sandbox.hpp"

#include "evaluate/stats.hpp"
#include "profile/trace.hpp"

#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/regex.hpp"
#include "util/secrets.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <system_error>

extern char** environ;

namespace optimas::evaluate {

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t k_gib = 1ull << 30;

std::string stderr_log(const std::string& log_path) {
  std::string base = log_path;
  if (base.size() > 4 && base.compare(base.size() - 4, 4, ".log") == 0) base.resize(base.size() - 4);
  return base + ".stderr.log";
}

// What the tracer wrote to a run's stderr ("optimas-trace: ..." lines), for a run without a trace.
// Nothing at all: CUDA did not load it, which CUDA does not say.
std::string tracer_said(const std::string& stderr_path, const std::string& tracer) {
  std::error_code ec;
  std::string said;
  const std::string text = fs::is_regular_file(stderr_path, ec) ? util::read_file(stderr_path) : std::string();
  for (auto line : util::split(text, '\n'))
    if (line.rfind("optimas-trace: ", 0) == 0 && said.size() < 600)
      said += (said.empty() ? "" : " / ") + std::string(util::trim(line));
  if (!said.empty()) return "the tracer said: " + said;
  return fmt::format(
      "the tracer said nothing: most likely CUDA did not load {} (unreadable there, or a library it needs, "
      "CUPTI, not found: LD_LIBRARY_PATH), and does not say so",
      tracer);
}

std::string last_lines(const std::string& text, std::size_t lines) {
  std::size_t pos = text.size();
  if (pos && text[pos - 1] == '\n') --pos;
  for (std::size_t n = 0; n < lines && pos > 0; ++n) {
    std::size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) return text;
    pos = nl;
  }
  return text.substr(pos == 0 ? 0 : pos + 1);
}

std::string last_line(const std::string& text) {
  std::string out(util::trim(last_lines(text, 1)));
  if (out.size() > 200) {
    out.resize(200);
    out += "...";
  }
  return out;
}

} // namespace

void shield_self() {
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // /proc/<pid>/environ reads the strings the kernel placed at exec, whatever environ[] points
  // to now: setenv moves each secret to the heap, then its old bytes are zeroed.
  for (const auto& name : util::secret_variables()) {
    for (char** e = environ; *e; ++e) {
      std::string entry(*e);
      if (entry.compare(0, name.size() + 1, name + "=") != 0) continue;
      char* old = *e;
      ::setenv(name.c_str(), entry.c_str() + name.size() + 1, 1);
      // setenv may hand back a string it made before (a second call): then it is the live one.
      if (std::getenv(name.c_str()) != old + name.size() + 1) std::fill(old, old + entry.size(), '\0');
      break;
    }
  }
}

std::vector<std::string> tmp_paths_named(const std::vector<std::string>& commands) {
  std::set<std::string> found;
  for (const auto& text : commands)
    for (auto at = text.find("/tmp/"); at != std::string::npos; at = text.find("/tmp/", at + 1)) {
      const char before = at > 0 ? text[at - 1] : ' ';
      const bool flag = at >= 2 && text[at - 2] == '-' && (before == 'I' || before == 'L');
      if (!flag && (std::isalnum(static_cast<unsigned char>(before)) ||
                    std::string_view("_./-~").find(before) != std::string_view::npos))
        continue; // inside a longer path or word
      const auto end = text.find_first_of(" \t\n'\";:,&|()<>`$", at);
      fs::path p =
          fs::path(text.substr(at, end == std::string::npos ? std::string::npos : end - at)).lexically_normal();
      if (!p.has_filename()) p = p.parent_path();
      std::error_code ec;
      if (p != "/tmp" && fs::exists(p, ec)) found.insert(p.string());
    }
  return {found.begin(), found.end()};
}

Sandbox sandbox_for(const config::AppConfig& app) {
  Sandbox s;
  s.timeout_s = app.timeout_s;
  s.limits.core_dumps = false;
  s.limits.file_bytes = 16 * k_gib;
  if (!app.needs_gpu) s.limits.address_space = 64 * k_gib;
  std::vector<std::string> commands = {app.build_command, app.clean_command};
  for (const auto& c : app.configs) commands.push_back(app.command_for(c, "out"));
  s.readable = tmp_paths_named(commands);
  return s;
}

std::string BuildResult::tail(std::size_t lines) const {
  if (log.empty() || !fs::exists(log)) return {};
  return last_lines(util::read_file(log), lines);
}

BuildResult build_in(const config::AppConfig& app, const std::string& dir, const std::string& log_path,
                     const Sandbox& sandbox, const std::map<std::string, std::string>& env, const SeenAs* seen_as) {
  auto step = [&](const std::string& command, bool append) {
    util::ProcessSpec spec = util::shell(command);
    spec.cwd = dir;
    const Seen seen{dir, seen_as ? seen_as->path : ""};
    spec.argv = isolated_argv(sandbox.isolation, {dir}, sandbox.readable, seen_as ? seen.as : dir,
                              seen_as ? &seen : nullptr, spec.argv);
    for (const auto& [k, v] : env) spec.env[k] = v;
    spec.timeout_s = sandbox.timeout_s;
    spec.limits = sandbox.limits;
    spec.stdout_path = log_path;
    spec.append_stdout = append;
    spec.stderr_to_stdout = true;
    return util::run_process(spec);
  };
  BuildResult b;
  b.log = log_path;
  if (!app.clean_command.empty()) {
    auto c = step(app.clean_command, false);
    if (!c.ok()) {
      b.result = fmt::format("build.clean failed ({}): {}", c.describe(), app.clean_command);
      b.wall_s = c.wall_s;
      return b;
    }
  }
  auto r = step(app.build_command, !app.clean_command.empty());
  b.ok = r.ok();
  b.result = r.describe();
  b.wall_s += r.wall_s;
  if (b.ok && !app.binary.empty() && !fs::exists(fs::path(dir) / app.binary)) {
    b.ok = false;
    b.result = fmt::format("the build succeeded but made no {}", app.binary);
  }
  return b;
}

namespace {

// Longer lines of a program's output are not searched. libstdc++'s matcher recurses once per
// character a repeat takes: a line of 100,000 digits after "kernel_time_ms: " overflowed the
// stack, and a variant is untrusted code that can print one. What run.kernel_time and
// validate.ignore look for (a kernel time, a bandwidth) fits in a short line.
constexpr std::size_t k_max_searched_line = 4096;

// Whether `re` matches in [begin, end), one line of output (its newline, if any, not counted);
// never for a line over the limit.
bool search_line(std::string::const_iterator begin, std::string::const_iterator end, const std::regex& re,
                 std::smatch& m, std::regex_constants::match_flag_type flags = std::regex_constants::match_default) {
  auto length = static_cast<std::size_t>(end - begin);
  if (length > 0 && *(end - 1) == '\n') --length;
  return length <= k_max_searched_line && std::regex_search(begin, end, m, re, flags);
}
bool search_line(std::string::const_iterator begin, std::string::const_iterator end, const std::regex& re) {
  std::smatch unused;
  return search_line(begin, end, re, unused);
}

// `text` less the lines (each with its newline, if any) that `drop` is true of.
template <class Drop> std::string without_lines(const std::string& text, const Drop& drop) {
  std::string kept;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    if (!drop(text.begin() + static_cast<long>(start), text.begin() + static_cast<long>(end)))
      kept.append(text, start, end - start);
    start = end;
  }
  return kept;
}

// A run's stdout as it is compared: less the lines that vary from run to run, the kernel time
// and what validate.ignore names (bandwidths, elapsed times).
std::string compared_stdout(const config::AppConfig& app, const std::string& out) {
  std::vector<std::regex> drop;
  if (!app.kernel_time.empty()) drop.push_back(util::compile_regex(app.kernel_time.pattern));
  for (const auto& re : app.validate.ignore) drop.push_back(util::compile_regex(re));
  return without_lines(out, [&](auto begin, auto end) {
    return std::any_of(drop.begin(), drop.end(), [&](const std::regex& re) { return search_line(begin, end, re); });
  });
}

} // namespace

std::optional<double> parse_kernel_time(const std::string& pattern, const std::string& text) {
  if (pattern.empty()) return std::nullopt;
  std::regex re = util::compile_regex(pattern); // checked when optimas.yml was loaded
  std::optional<double> total;
  // Line by line, as the output's comparison drops the lines it matches.
  for (std::size_t start = 0; start < text.size();) {
    std::size_t stop = text.find('\n', start);
    stop = stop == std::string::npos ? text.size() : stop;
    auto line_begin = text.begin() + static_cast<long>(start), line_end = text.begin() + static_cast<long>(stop);
    std::smatch m;
    auto flags = std::regex_constants::match_default;
    while (search_line(line_begin, line_end, re, m, flags)) {
      char* end = nullptr;
      std::string group = m[1].str();
      double v = std::strtod(group.c_str(), &end);
      if (end != group.c_str()) total = total.value_or(0) + v;
      if (m[0].length() == 0) break; // an empty match would find itself again
      line_begin = m[0].second;
      flags = std::regex_constants::match_prev_avail; // "^" is the line's start only
    }
    start = stop + 1;
  }
  return total;
}

namespace {

// The launches up to and including the n-th launch of one of `symbols` (all when it has fewer).
void keep_until(profile::Trace& trace, const Sandbox::EndAfter& end) {
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < trace.launches.size(); ++i) {
    const auto& l = trace.launches[i];
    if (std::find(end.symbols.begin(), end.symbols.end(), l.mangled) != end.symbols.end() && ++seen == end.launches) {
      trace.launches.resize(i + 1);
      return;
    }
  }
}

// The run's trace figures into `e`, and the trace removed; why there are none, if there are none.
std::optional<std::string> read_run_trace(const fs::path& trace_dir, const Sandbox& sandbox, Execution& e) {
  // The trace is the program's own record of its kernels; it is read and then removed, and a
  // run that left none (the tracer could not start, or the program bypassed it) has no time.
  std::error_code ec;
  if (fs::is_empty(trace_dir, ec)) return fmt::format("the run left no kernel trace in {}", trace_dir.string());
  profile::Trace trace = profile::read_trace(trace_dir.string());
  fs::remove_all(trace_dir, ec);
  e.ended_early = sandbox.end_after.launches > 0 && !trace.ended_early.empty();
  if (!trace.incomplete.empty() && !e.ended_early)
    return std::string("its kernel trace has no end line: a process of the run did not exit normally");
  if (sandbox.end_after.launches > 0) keep_until(trace, sandbox.end_after);
  e.traced_ms = profile::traced_time_ns(trace) / 1e6;
  e.traced_launches = trace.launches.size();
  if (!sandbox.hot_kernels.empty()) {
    auto hot = profile::launch_durations_ms(trace, sandbox.hot_kernels);
    e.hot_ms = hot_time(hot);
    for (const auto& k : hot) e.hot_launches += k.size();
    std::set<std::string> symbols;
    std::uint64_t last_end = 0;
    double to_hot_end_ns = 0, so_far_ns = 0;
    for (const auto& l : trace.launches) {
      so_far_ns += l.duration_ns;
      if (profile::is_launch_of(l, sandbox.hot_kernels)) {
        symbols.insert(l.mangled);
        last_end = std::max(last_end, l.start_ns + static_cast<std::uint64_t>(l.duration_ns));
        to_hot_end_ns = so_far_ns;
      }
    }
    e.hot_symbols.assign(symbols.begin(), symbols.end());
    e.traced_ms_to_hot_end = to_hot_end_ns / 1e6;
    if (trace.end_ns > 0 && last_end > 0 && trace.end_ns >= last_end) e.after_hot_s = (trace.end_ns - last_end) / 1e9;
  }
  return std::nullopt;
}

} // namespace

Execution execute_in(const config::AppConfig& app, const std::string& dir, const config::InputConfig& config,
                     const std::string& output_path_given, const std::string& log_path, const Sandbox& sandbox) {
  // The program runs in `dir`: every path it is handed is absolute, or it would land elsewhere.
  const std::string output_path = fs::absolute(output_path_given).lexically_normal().string();
  const bool via_placeholder = app.run_command.find("{output}") != std::string::npos;
  const bool via_files = !via_placeholder && !app.outputs.empty();
  // Where each output lands: the first at output_path, the k-th declared file at output_path.k.
  std::vector<std::string> targets = {output_path};
  for (std::size_t k = 1; via_files && k < app.outputs.size(); ++k)
    targets.push_back(fmt::format("{}.{}", output_path, k));
  for (const auto& t : targets) fs::remove(t);
  if (via_files)
    for (const auto& o : app.outputs) fs::remove(fs::path(dir) / o);
  util::ProcessSpec spec = util::shell(app.command_for(config, util::shell_quote(output_path)));
  spec.cwd = dir;
  spec.timeout_s = sandbox.timeout_s;
  spec.limits = sandbox.limits;
  spec.stdout_path = log_path;
  spec.stderr_path = stderr_log(log_path);
  for (const auto& [k, v] : sandbox.env) spec.env[k] = v;
  const fs::path trace_dir = fs::absolute(log_path + ".trace").lexically_normal();
  if (!sandbox.tracer.empty()) {
    fs::remove_all(trace_dir);
    fs::create_directories(trace_dir);
    spec.env["CUDA_INJECTION64_PATH"] = sandbox.tracer;
    spec.env["OPTIMAS_TRACE_DIR"] = trace_dir.string();
    if (sandbox.end_after.launches > 0) {
      spec.env["OPTIMAS_TRACE_END_AFTER"] = std::to_string(sandbox.end_after.launches);
      spec.env["OPTIMAS_TRACE_END_KERNELS"] = util::join(sandbox.end_after.symbols, " ");
    }
  }
  // Behind the walls it writes its folder, its outputs' folder and its trace, nothing else.
  std::vector<std::string> writable = {fs::absolute(dir).lexically_normal().string()};
  for (const auto& t : targets) {
    const std::string folder = fs::path(t).parent_path().string();
    fs::create_directories(folder);
    if (std::find(writable.begin(), writable.end(), folder) == writable.end()) writable.push_back(folder);
  }
  // And the tracer, which CUDA loads from its path: where the private /tmp hides it (optimas kept
  // under /tmp), CUDA goes on without it, silently, and the run has no trace.
  std::vector<std::string> readable = sandbox.readable;
  if (!sandbox.tracer.empty()) {
    writable.push_back(trace_dir.string());
    readable.push_back(fs::absolute(sandbox.tracer).lexically_normal().string());
  }
  spec.argv = isolated_argv(sandbox.isolation, writable, readable, writable.front(), nullptr, spec.argv);
  auto r = util::run_process(spec);

  Execution e;
  e.wall_s = r.wall_s;
  e.left_running = r.left_running;
  e.output = output_path;
  std::string out = fs::exists(log_path) ? util::read_file(log_path) : std::string();
  // The trace first: a run the tracer ended early counts whatever its exit status (a shell
  // command may go on to steps that want the outputs it never wrote).
  if (!sandbox.tracer.empty() && !r.timed_out) {
    std::optional<std::string> missing;
    try {
      missing = read_run_trace(trace_dir, sandbox, e);
    } catch (const Error&) { // a bad trace: an error for a run that needs it, else no figures
      if (r.ok() && !sandbox.trace_optional) throw;
      e = Execution{};
      e.wall_s = r.wall_s;
      e.left_running = r.left_running;
      e.output = output_path;
    }
    if (missing && r.ok() && !sandbox.trace_optional) {
      e.failure = fmt::format("{} ({}; see {})", *missing, tracer_said(stderr_log(log_path), sandbox.tracer),
                              stderr_log(log_path));
      return e;
    }
  }
  if (!r.ok() && !e.ended_early) {
    std::string err = fs::exists(spec.stderr_path) ? util::read_file(spec.stderr_path) : std::string();
    std::string last = last_line(err.empty() ? out : err);
    e.failure = r.describe() + (last.empty() ? "" : ": " + last);
    return e;
  }
  if (e.ended_early) {
    e.ok = true;
    return e;
  }
  const auto& kt = app.kernel_time;
  if (auto printed = parse_kernel_time(kt.pattern, out)) e.kernel_ms = *printed * kt.unit_ms * app.kernel_calls(config);
  if (!kt.empty() && !e.kernel_ms) {
    e.failure = fmt::format("the program printed no kernel time matching '{}'", kt.pattern);
    return e;
  }
  if (via_files) {
    for (std::size_t k = 0; k < app.outputs.size(); ++k) {
      fs::path produced = fs::path(dir) / app.outputs[k];
      if (!fs::exists(produced)) {
        e.failure = fmt::format("the program wrote no {}", app.outputs[k]);
        return e;
      }
      fs::rename(produced, targets[k]);
    }
  } else if (!via_placeholder) {
    util::write_file(output_path, compared_stdout(app, out));
  } else if (!fs::exists(output_path)) {
    e.failure = "the program wrote no output file";
    return e;
  }
  e.outputs = targets;
  e.ok = true;
  return e;
}

bool compares_stdout(const config::AppConfig& app) {
  return app.run_command.find("{output}") == std::string::npos && app.outputs.empty();
}

void drop_whole_lines(const std::string& path, const std::vector<std::string>& patterns) {
  std::vector<std::regex> drop;
  for (const auto& p : patterns) drop.push_back(util::compile_regex(p));
  util::write_file(path, without_lines(util::read_file(path), [&](auto begin, auto end) {
                     if (end > begin && *(end - 1) == '\n') --end;
                     return static_cast<std::size_t>(end - begin) <= k_max_searched_line &&
                            std::any_of(drop.begin(), drop.end(),
                                        [&](const std::regex& re) { return std::regex_match(begin, end, re); });
                   }));
}

std::string outputs_sha256(const Execution& e) {
  if (e.outputs.size() == 1) return util::sha256_file(e.outputs.front());
  std::string all;
  for (const auto& o : e.outputs) all += util::sha256_file(o) + "\n";
  return util::sha256_hex(all);
}

std::uintmax_t outputs_bytes(const Execution& e) {
  std::uintmax_t n = 0;
  for (const auto& o : e.outputs) n += fs::file_size(o);
  return n;
}

void remove_outputs(const Execution& e) {
  std::error_code ec;
  fs::remove(e.output, ec);
  for (const auto& o : e.outputs) fs::remove(o, ec);
}

std::string gpu_query(const std::string& field) {
  auto smi = util::find_executable("nvidia-smi");
  if (!smi) return {};
  util::ProcessSpec spec;
  spec.argv = {*smi, "--query-gpu=" + field, "--format=csv,noheader"};
  spec.timeout_s = 30;
  auto r = util::run_process(spec);
  if (!r.ok()) return {};
  return std::string(util::trim(r.out.substr(0, r.out.find('\n'))));
}

std::string gpu_name() {
  return gpu_query("name");
}

bool gpu_present() {
  auto smi = util::find_executable("nvidia-smi");
  if (!smi) return false;
  util::ProcessSpec spec;
  spec.argv = {*smi, "-L"};
  spec.timeout_s = 30;
  auto r = util::run_process(spec);
  return r.ok() && r.out.find("GPU ") != std::string::npos;
}

} // namespace optimas::evaluate
