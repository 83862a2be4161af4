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

// Object files and CMake's build state: a snapshot never holds them, so every build compiles.
bool is_build_output(const fs::path& path, bool directory) {
  std::string name = path.filename().string();
  if (directory) return name == "CMakeFiles";
  if (name == "CMakeCache.txt") return true;
  std::string ext = path.extension().string();
  return ext == ".o" || ext == ".obj";
}

// What went wrong while copying into `to`, for an Error; a full disk says what to do about it.
std::string copy_failure(const std::string& from, const std::string& to, const fs::filesystem_error& e) {
  std::string what = e.path1().empty() ? from : e.path1().string();
  if (e.code() == std::errc::no_space_on_device || e.code().value() == EDQUOT)
    return fmt::format("the disk is full ({}) while copying {} into {}; the partial copy was removed: free some space "
                       "there, then resume the run",
                       e.code().message(), what, to);
  return fmt::format("cannot copy {} into {}: {}; the partial copy was removed", what, to, e.code().message());
}

// fs::copy_file reports a full disk as "Input/output error" (libstdc++ drops the errno of
// sendfile): this copy keeps ENOSPC, so the message can say what to do.
void copy_regular_file(const fs::path& from, const fs::path& to) {
  auto fail = [&](int in, int out) {
    std::error_code ec(errno, std::generic_category());
    if (in >= 0) ::close(in);
    if (out >= 0) ::close(out);
    throw fs::filesystem_error("cannot copy", from, to, ec);
  };
  int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (in < 0 || ::fstat(in, &st) != 0) fail(in, -1);
  int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 07777);
  if (out < 0 || ::fchmod(out, st.st_mode & 07777) != 0) fail(in, out);
  std::vector<char> buf(1 << 20);
  for (;;) {
    ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(in, out);
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(out, buf.data() + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) fail(in, out);
      done += w;
    }
  }
  ::close(in);
  if (::close(out) != 0) fail(-1, -1);
}

std::string boot_id() {
  std::error_code ec;
  if (!fs::exists("/proc/sys/kernel/random/boot_id", ec)) return {};
  return std::string(util::trim(util::read_file("/proc/sys/kernel/random/boot_id")));
}

std::string last_line(const std::string& text) {
  std::string out(util::trim(last_lines(text, 1)));
  return out.size() > 200 ? out.substr(0, 200) + "..." : out;
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

Sandbox sandbox_for(const config::AppConfig& app) {
  Sandbox s;
  s.timeout_s = app.timeout_s;
  s.limits.core_dumps = false;
  s.limits.file_bytes = 16 * k_gib;
  if (!app.needs_gpu) s.limits.address_space = 64 * k_gib;
  return s;
}

namespace {

// The copy of snapshot_application, which removes it when it fails.
Snapshot snapshot_into(const config::AppConfig& app, const std::string& to) {
  std::set<std::string> skip = {".git", ".optimas", "runs", "optimas-profile", "optimas-variant", "optimas-manual"};
  if (!app.binary.empty()) skip.insert(fs::path(app.binary).lexically_normal().string());
  for (const auto& o : app.outputs) skip.insert(fs::path(o).lexically_normal().string());
  if (!app.build_dir.empty()) skip.insert(fs::path(app.build_dir).lexically_normal().string());
  Snapshot snap;
  fs::create_directories(to);
  const fs::path from(app.dir);
  for (auto it = fs::recursive_directory_iterator(from); it != fs::recursive_directory_iterator(); ++it) {
    fs::path rel = fs::relative(it->path(), from);
    if (skip.count(rel.string()) || it->path().filename() == ".git") {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (is_build_output(it->path(), it->is_directory())) {
      snap.left_out.push_back(rel.string());
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    fs::path target = fs::path(to) / rel;
    if (it->is_directory()) {
      fs::create_directories(target);
    } else if (it->is_regular_file()) {
      copy_regular_file(it->path(), target);
      snap.files[rel.string()] = util::sha256_file(target.string());
    }
  }
  std::sort(snap.left_out.begin(), snap.left_out.end());
  return snap;
}

} // namespace

Snapshot snapshot_application(const config::AppConfig& app, const std::string& to) {
  ScratchFolder scratch(to);
  try {
    Snapshot snap = snapshot_into(app, to);
    scratch.keep();
    return snap;
  } catch (const fs::filesystem_error& e) {
    throw Error(copy_failure(app.dir, to, e));
  }
}

void copy_tree(const std::string& from, const std::string& to) {
  ScratchFolder scratch(to);
  try {
    fs::create_directories(to);
    for (auto it = fs::recursive_directory_iterator(from); it != fs::recursive_directory_iterator(); ++it) {
      fs::path target = fs::path(to) / fs::relative(it->path(), from);
      if (it->is_directory())
        fs::create_directories(target);
      else if (it->is_regular_file())
        copy_regular_file(it->path(), target);
    }
  } catch (const fs::filesystem_error& e) {
    throw Error(copy_failure(from, to, e));
  }
  scratch.keep();
}

ScratchFolder::~ScratchFolder() {
  if (m_keep) return;
  std::error_code ec; // a destructor may run while an exception unwinds: it must not throw
  fs::remove_all(m_path, ec);
}

ChildRecord::ChildRecord(std::string path, const std::string& run_id) : m_path(std::move(path)) {
  util::set_child_observer([this](const util::ChildInfo& child, bool running) { changed(child, running); });
  util::set_child_mark(k_run_mark, run_id);
}

ChildRecord::~ChildRecord() {
  util::set_child_observer({});
  util::set_child_mark("", "");
  std::error_code ec;
  if (!m_children.empty()) fs::remove(m_path, ec);
}

// Called by run_process (one call at a time); it must not throw, or a program would run on
// unwatched: a record that cannot be written is a warning.
void ChildRecord::changed(const util::ChildInfo& child, bool running) {
  if (running) {
    m_children.push_back(child);
  } else {
    m_children.erase(std::remove_if(m_children.begin(), m_children.end(),
                                    [&](const util::ChildInfo& c) { return c.supervisor == child.supervisor; }),
                     m_children.end());
  }
  try {
    write();
  } catch (const std::exception& e) {
    if (!m_warned)
      log::warn("{}: cannot record the running programs ({}); a resumed run may not find them", m_path, e.what());
    m_warned = true;
  }
}

void ChildRecord::write() const {
  if (m_children.empty()) {
    fs::remove(m_path);
    return;
  }
  nlohmann::json children = nlohmann::json::array();
  for (const auto& c : m_children)
    children.push_back({{"supervisor", c.supervisor},
                        {"supervisor_start", c.supervisor_start},
                        {"group", c.group},
                        {"group_start", c.group_start}});
  const int self = ::getpid();
  nlohmann::json owner = {{"pid", self}, {"start", util::process_start_time(self).value_or(0)}};
  nlohmann::json doc = {{"owner", owner}, {"boot_id", boot_id()}, {"children", children}};
  // Written next to the record and renamed over it: a kill at any moment leaves the old
  // record or the new one, never half of one.
  const std::string tmp = fmt::format("{}.tmp.{}", m_path, self);
  util::write_file(tmp, doc.dump(2) + "\n");
  fs::rename(tmp, m_path);
}

namespace {

// The supervisors of end_recorded_children.
int end_recorded_supervisors(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return 0;
  nlohmann::json doc;
  try {
    doc = util::parse_json(util::read_file(path));
    if (!doc.is_object() || !doc.value("children", nlohmann::json()).is_array())
      throw std::runtime_error("no children list");
  } catch (const std::exception& e) {
    log::warn("{}: not a record of running programs ({}); ignoring it", path, e.what());
    fs::remove(path, ec);
    return 0;
  }
  if (doc.value("boot_id", "") != boot_id()) { // the machine restarted: nothing recorded still runs
    fs::remove(path, ec);
    return 0;
  }
  const auto& owner = doc.value("owner", nlohmann::json::object());
  const int owner_pid = owner.value("pid", 0);
  if (owner_pid > 0 && owner_pid != ::getpid() &&
      util::process_start_time(owner_pid) == owner.value("start", std::uint64_t{0}))
    throw Error(fmt::format("{}: process {}, which started these programs, is still working on this run; two processes "
                            "must not work on one run: wait for it to finish, or stop it (kill {}) and resume again",
                            path, owner_pid, owner_pid));
  int ended = 0;
  for (const auto& c : doc["children"]) {
    util::ChildInfo child;
    child.supervisor = c.value("supervisor", 0);
    child.supervisor_start = c.value("supervisor_start", std::uint64_t{0});
    child.group = c.value("group", 0);
    child.group_start = c.value("group_start", std::uint64_t{0});
    if (util::end_child(child)) ++ended;
  }
  fs::remove(path, ec);
  return ended;
}

} // namespace

int end_recorded_children(const std::string& path, const std::string& run_id) {
  int ended = end_recorded_supervisors(path);
  // What a supervisor that was itself killed left behind (a background process, one that left
  // with setsid) no longer has a recorded pid of its own: it carries the run's mark.
  return ended + util::end_marked(k_run_mark, run_id);
}

std::string build_fingerprint(const config::AppConfig& app, const std::string& dir, const Snapshot& snapshot) {
  std::vector<fs::path> products;
  if (!app.binary.empty()) {
    products.push_back(fs::path(dir) / app.binary);
  } else {
    for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
      fs::path rel = fs::relative(it->path(), dir);
      if (it->is_directory() && rel == "out") it.disable_recursion_pending();
      if (it->is_regular_file() && !snapshot.files.count(rel.string())) products.push_back(it->path());
    }
    std::sort(products.begin(), products.end());
  }
  // nvcc names its temporary files tmpxft_<pid>_<counter>-<n>_<file> and those names end up in
  // the objects; with them blanked, two builds of one source are byte-identical.
  static const std::regex k_tmpxft("tmpxft_[0-9a-f]{8}_[0-9a-f]{8}-[0-9]+");
  std::string all;
  for (const auto& p : products) {
    if (!fs::exists(p)) continue;
    std::string bytes = util::read_file(p.string());
    all +=
        fs::relative(p, dir).string() + '\0' + util::sha256_hex(std::regex_replace(bytes, k_tmpxft, "tmpxft")) + '\n';
  }
  return util::sha256_hex(all);
}

std::string BuildResult::tail(std::size_t lines) const {
  if (log.empty() || !fs::exists(log)) return {};
  return last_lines(util::read_file(log), lines);
}

BuildResult build_in(const config::AppConfig& app, const std::string& dir, const std::string& log_path,
                     const Sandbox& sandbox, const std::map<std::string, std::string>& env) {
  auto step = [&](const std::string& command, bool append) {
    util::ProcessSpec spec = util::shell(command);
    spec.cwd = dir;
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
  const fs::path trace_dir = fs::absolute(log_path + ".trace").lexically_normal();
  if (!sandbox.tracer.empty()) {
    fs::remove_all(trace_dir);
    fs::create_directories(trace_dir);
    spec.env["CUDA_INJECTION64_PATH"] = sandbox.tracer;
    spec.env["OPTIMAS_TRACE_DIR"] = trace_dir.string();
  }
  auto r = util::run_process(spec);

  Execution e;
  e.wall_s = r.wall_s;
  e.output = output_path;
  std::string out = fs::exists(log_path) ? util::read_file(log_path) : std::string();
  if (!r.ok()) {
    std::string err = fs::exists(spec.stderr_path) ? util::read_file(spec.stderr_path) : std::string();
    std::string last = last_line(err.empty() ? out : err);
    e.failure = r.describe() + (last.empty() ? "" : ": " + last);
    return e;
  }
  if (!sandbox.tracer.empty()) {
    // The trace is the program's own record of its kernels; it is read and then removed, and a
    // run that left none (the tracer could not start, or the program bypassed it) has no time.
    std::error_code ec;
    if (fs::is_empty(trace_dir, ec)) {
      e.failure = fmt::format("the run left no kernel trace in {} (see {})", trace_dir.string(), stderr_log(log_path));
      return e;
    }
    profile::Trace trace = profile::read_trace(trace_dir.string());
    if (!trace.incomplete.empty()) {
      e.failure = "its kernel trace has no end line: a process of the run did not exit normally";
      return e;
    }
    e.traced_ms = profile::traced_time_ns(trace) / 1e6;
    e.traced_launches = trace.launches.size();
    if (!sandbox.hot_kernels.empty()) {
      auto hot = profile::launch_durations_ms(trace, sandbox.hot_kernels);
      e.hot_ms = hot_time(hot);
      for (const auto& k : hot) e.hot_launches += k.size();
    }
    fs::remove_all(trace_dir, ec);
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
    // The output is stdout, less the lines that vary from run to run: the kernel time and what
    // validate.ignore names (bandwidths, elapsed times).
    std::vector<std::regex> drop;
    if (!kt.empty()) drop.push_back(util::compile_regex(kt.pattern));
    for (const auto& re : app.validate.ignore) drop.push_back(util::compile_regex(re));
    std::string kept;
    for (std::size_t start = 0; start < out.size();) {
      std::size_t end = out.find('\n', start);
      end = end == std::string::npos ? out.size() : end + 1;
      bool dropped = false;
      for (const auto& re : drop)
        dropped =
            dropped || search_line(out.begin() + static_cast<long>(start), out.begin() + static_cast<long>(end), re);
      if (!dropped) kept.append(out, start, end - start);
      start = end;
    }
    util::write_file(output_path, kept);
  } else if (!fs::exists(output_path)) {
    e.failure = "the program wrote no output file";
    return e;
  }
  e.outputs = targets;
  e.ok = true;
  return e;
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
