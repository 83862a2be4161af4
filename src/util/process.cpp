#include "util/process.hpp"

#include "util/secrets.hpp"
#include "util/supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

extern char** environ;

namespace optimas::util {

namespace {

constexpr std::size_t k_capture_limit = 16u << 20; // keep the last 16 MB of captured output

void append_capped(std::string& s, const char* data, std::size_t n) {
  s.append(data, n);
  if (s.size() > 2 * k_capture_limit) s.erase(0, s.size() - k_capture_limit);
}

std::mutex g_mark_mutex;
std::string g_mark_name, g_mark_value; // set_child_mark

std::vector<std::string> child_environment(const ProcessSpec& spec) {
  std::map<std::string, std::string> set = spec.env;
  {
    std::lock_guard<std::mutex> lock(g_mark_mutex);
    if (!g_mark_name.empty()) set[g_mark_name] = g_mark_value;
  }
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    std::string key = entry.substr(0, entry.find('='));
    // The one list of key variables (util/secrets) is kept from every child: builds, programs,
    // profilers. A variable the caller sets on purpose is its own.
    bool drop = set.count(key) > 0 || is_secret_variable(key);
    for (const auto& u : spec.unset_env) drop = drop || u == key;
    if (!drop) env.push_back(entry);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

} // namespace

std::string ProcessResult::describe() const {
  if (spawn_failed) return "could not be started: " + err;
  if (timed_out) return fmt::format("timed out after {:.1f} s (killed with everything it started)", wall_s);
  if (signal) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  // Commands run through sh, which reports a child killed by signal N as exit code 128 + N.
  if (exit_code > 128 && exit_code < 128 + 32)
    return fmt::format("exit code {} (killed by signal {}, {}, as the shell reports it)", exit_code, exit_code - 128,
                       strsignal(exit_code - 128));
  return fmt::format("exit code {}", exit_code);
}

ProcessSpec shell(const std::string& command) {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", command};
  return spec;
}

std::optional<std::string> find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return name;
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= p.size()) {
    std::size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

double monotonic_s() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

namespace {

// Seconds we keep reading the output pipes after the supervisor has gone: all writers are dead
// by then, unless the supervisor was itself killed and something it could not end holds them.
constexpr double k_pipe_linger_s = 2.0;

std::mutex g_observer_mutex;
ChildObserver g_observer;

void notify(const ChildInfo& child, bool running) {
  std::lock_guard<std::mutex> lock(g_observer_mutex);
  if (g_observer) g_observer(child, running);
}

// ---------------------------------------------------------------------------------------------
// The supervisor is a fork of a process that may have other threads: from fork to _exit it
// uses only async-signal-safe calls (no allocation, no locks, no stdio).

// Reads exactly sizeof(T) bytes; false at end of file.
template <typename T> bool read_value(int fd, T& value) {
  char* p = reinterpret_cast<char*>(&value);
  std::size_t got = 0;
  while (got < sizeof value) {
    ssize_t n = ::read(fd, p + got, sizeof value - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<std::size_t>(n);
  }
  return true;
}

} // namespace

void set_child_observer(ChildObserver observer) {
  std::lock_guard<std::mutex> lock(g_observer_mutex);
  g_observer = std::move(observer);
}

void set_child_mark(const std::string& name, const std::string& value) {
  std::lock_guard<std::mutex> lock(g_mark_mutex);
  g_mark_name = name;
  g_mark_value = value;
}

namespace {

// The program as execve takes it, prepared before the fork (the child may not allocate).
struct PreparedProgram {
  std::vector<std::string> env;
  detail::ProgramImage image;
};

PreparedProgram prepare(const ProcessSpec& spec) {
  PreparedProgram p;
  p.env = child_environment(spec);
  for (auto& e : p.env) p.image.envp.push_back(e.data());
  p.image.envp.push_back(nullptr);
  for (const auto& a : spec.argv) p.image.argv.push_back(const_cast<char*>(a.c_str()));
  p.image.argv.push_back(nullptr);
  p.image.exe = spec.argv.empty() ? std::string() : spec.argv[0];
  if (auto found = find_executable(p.image.exe)) p.image.exe = *found;
  // Output files are named relative to our working directory, not the child's.
  auto absolute = [](const std::string& path) {
    return path.empty() || path.front() == '/' ? path : (std::filesystem::current_path() / path).string();
  };
  p.image.stdout_path = absolute(spec.stdout_path);
  p.image.stderr_path = absolute(spec.stderr_path);
  p.image.spec = &spec;
  return p;
}

// Reads the captured output until the supervisor reports the program's end (asking it to stop
// the program on timeout, and killing both when it does not); returns the program's wait status.
int collect(const ProcessSpec& spec, detail::Pipes& p, pid_t supervisor, pid_t program, ProcessResult& result,
            const std::function<double()>& elapsed) {
  std::vector<pollfd> fds; // captured output
  if (p.capture_out) fds.push_back({p.out[0], POLLIN, 0});
  if (p.capture_err) fds.push_back({p.err[0], POLLIN, 0});
  int status = 0;
  bool reaped = false;
  bool stop_sent = false, killed = false;
  double stop_time = 0, reap_time = 0;
  char buf[65536];
  while (!reaped || !fds.empty()) {
    // The report pipe wakes us the moment the supervisor writes the program's status or dies,
    // so wall_s is not rounded up to a polling interval.
    std::vector<pollfd> wait = fds;
    if (!reaped) wait.push_back({p.report[0], POLLIN, 0});
    if (::poll(wait.data(), wait.size(), 50) > 0) {
      for (std::size_t i = 0; i < fds.size(); ++i) fds[i].revents = wait[i].revents;
      for (std::size_t i = 0; i < fds.size();) {
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
          ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
          if (r > 0) {
            append_capped(fds[i].fd == p.out[0] ? result.out : result.err, buf, static_cast<std::size_t>(r));
          } else if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
            ::close(fds[i].fd);
            fds.erase(fds.begin() + static_cast<long>(i));
            continue;
          }
        }
        ++i;
      }
      if (!reaped && wait.back().revents) {
        // The supervisor's last act is writing the program's status (without it, it was
        // killed): it has exited or is about to, so this wait is short.
        int program_status = 0, left = 0;
        bool reported = read_value(p.report[0], program_status);
        if (reported && read_value(p.report[0], left)) result.left_running = left;
        while (::waitpid(supervisor, &status, 0) < 0 && errno == EINTR) {
        }
        if (reported) status = program_status;
        reaped = true;
        reap_time = elapsed();
      }
    }
    if (reaped && elapsed() - reap_time > k_pipe_linger_s) {
      for (const auto& f : fds) ::close(f.fd);
      fds.clear();
    }
    if (!reaped && spec.timeout_s > 0 && elapsed() > spec.timeout_s) {
      if (!stop_sent) {
        result.timed_out = true;
        ::kill(supervisor, SIGTERM); // the supervisor stops the program and ends its tree
        stop_sent = true;
        stop_time = elapsed();
      } else if (!killed && elapsed() - stop_time > k_grace_s + k_supervisor_slack_s) {
        ::kill(supervisor, SIGKILL);
        if (program > 0) ::kill(-program, SIGKILL);
        killed = true;
      }
    }
  }
  return status;
}

} // namespace

ProcessResult run_process(const ProcessSpec& spec) {
  ProcessResult result;
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };

  detail::Pipes p;
  p.capture_out = spec.stdout_path.empty();
  p.capture_err = spec.stderr_path.empty() && !spec.stderr_to_stdout;
  if ((p.capture_out && ::pipe2(p.out, O_CLOEXEC) != 0) || (p.capture_err && ::pipe2(p.err, O_CLOEXEC) != 0) ||
      ::pipe2(p.exec, O_CLOEXEC) != 0 || ::pipe2(p.report, O_CLOEXEC) != 0 ||
      ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p.go) != 0) {
    result.spawn_failed = true;
    result.err = std::strerror(errno);
    p.close_all();
    return result;
  }
  const PreparedProgram program_image = prepare(spec);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    result.spawn_failed = true;
    result.err = std::strerror(errno);
    p.close_all();
    return result;
  }
  if (pid == 0) detail::supervisor_main(parent, p, program_image.image); // see run_process in the header
  ::setpgid(pid, pid); // also from the parent, to win the race with an early kill
  ::close(p.exec[1]);
  ::close(p.report[1]);
  ::close(p.go[0]);
  if (p.capture_out) ::close(p.out[1]);
  if (p.capture_err) ::close(p.err[1]);

  // The supervisor reports the program's pid as soon as it has forked it (nothing when it could
  // not); the program waits for the go, so it is recorded before it runs.
  pid_t program = 0;
  if (!read_value(p.report[0], program)) program = 0;
  ChildInfo info;
  info.supervisor = pid;
  info.supervisor_start = process_start_time(pid).value_or(0);
  info.group = program;
  info.group_start = program > 0 ? process_start_time(program).value_or(0) : 0;
  notify(info, true);
  if (spec.on_start) spec.on_start(info);
  // MSG_NOSIGNAL: a program that failed before it read the go must not kill us with SIGPIPE.
  (void)!::send(p.go[1], "g", 1, MSG_NOSIGNAL);
  ::close(p.go[1]);

  // The exec pipe closes on a successful exec (O_CLOEXEC); anything read from it is an exec error.
  std::string exec_error;
  {
    char buf[512];
    ssize_t n;
    while ((n = ::read(p.exec[0], buf, sizeof buf)) > 0) exec_error.append(buf, static_cast<std::size_t>(n));
    ::close(p.exec[0]);
  }
  int status = collect(spec, p, pid, program, result, elapsed);
  ::close(p.report[0]);
  notify(info, false);
  result.wall_s = elapsed();
  if (!exec_error.empty()) {
    result.spawn_failed = true;
    result.err = exec_error;
    return result;
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  // A program sees no key variable, but may find a key elsewhere (a file, another process):
  // what it wrote is redacted before anyone reads it.
  if (!spec.stdout_path.empty()) redact_file(program_image.image.stdout_path);
  if (!spec.stderr_path.empty()) redact_file(program_image.image.stderr_path);
  result.out = redact(result.out);
  result.err = redact(result.err);
  return result;
}

} // namespace optimas::util
