#include "util/process.hpp"

#include "util/secrets.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

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

// Why a supervisor, and not a cgroup: a cgroup v2 scope (systemd-run --user --scope, or a
// writable /sys/fs/cgroup) would hold every descendant too, but CI runs Debian 12 in a container
// without systemd and with a read-only or v1 cgroup tree, so it would only ever be an optional
// extra. A child subreaper needs no privilege and works in containers and in the H200's
// Firecracker VM alike: no descendant can leave its tree (an orphan is re-parented to it, setsid
// or not), so it can always find and kill every one of them.

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

void write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

// The parent of process `name` (its decimal pid), from /proc/<pid>/stat; -1 when unreadable.
pid_t parent_of(const char* name) {
  char path[64] = "/proc/";
  std::size_t len = 6;
  for (const char* c = name; *c && len < 50; ++c) path[len++] = *c;
  std::memcpy(path + len, "/stat", 6);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  // "pid (comm) state ppid ...": the command name may hold spaces and parentheses.
  const char* p = nullptr;
  for (ssize_t i = n - 1; i >= 0 && !p; --i)
    if (buf[i] == ')') p = buf + i;
  if (!p || p + 4 >= buf + n) return -1;
  p += 4; // ") S "
  pid_t ppid = 0;
  for (; p < buf + n && *p >= '0' && *p <= '9'; ++p) ppid = ppid * 10 + (*p - '0');
  return ppid;
}

// Sends `sig` to every process whose parent we are (the orphans we adopted included).
void signal_children(int sig) {
  const pid_t self = ::getpid();
  int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return;
  alignas(struct dirent64) char buf[8192];
  for (;;) {
    ssize_t n = ::getdents64(dir, buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t off = 0; off < n;) {
      const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
      off += d->d_reclen;
      pid_t pid = 0;
      const char* c = d->d_name;
      for (; *c >= '0' && *c <= '9'; ++c) pid = pid * 10 + (*c - '0');
      if (*c || pid <= 0) continue;
      if (parent_of(d->d_name) == self) ::kill(pid, sig);
    }
  }
  ::close(dir);
}

// Whether the program has exited (it stays a zombie, so its pid and process group id remain
// ours until end_tree kills the group); the orphans we adopted that have exited are reaped.
bool program_exited(pid_t program) {
  for (;;) {
    siginfo_t si{};
    if (::waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0) return false;
    if (si.si_pid == program) return true;
    ::waitpid(si.si_pid, nullptr, WNOHANG);
  }
}

// Kills the program's group and every descendant, and returns the program's wait status. A
// descendant's parent is alive (and below us) or we adopted it, so killing our children round
// after round, as their children come to us, reaches every one; it ends when we have none.
int end_tree(pid_t program) {
  ::kill(-program, SIGKILL);
  int status = 0;
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  for (;;) {
    int st = 0;
    pid_t w;
    while ((w = ::waitpid(-1, &st, WNOHANG)) > 0)
      if (w == program) status = st;
    if (w < 0 && errno != EINTR) break; // ECHILD: nothing of ours is left
    signal_children(SIGKILL);
    timespec step{0, 20'000'000};
    ::sigtimedwait(&chld, nullptr, &step);
  }
  return status;
}

// Makes this fork of run_process a supervisor: a process group of its own (no terminal signal
// reaches it), the signals it handles blocked (it takes them with sigwaitinfo, so none is lost
// between a check and a wait), SIGTERM when optimas dies, and the orphans of its tree. Returns
// the signal mask the program must start with.
sigset_t become_supervisor(pid_t parent) {
  ::setpgid(0, 0);
  sigset_t block, old;
  sigemptyset(&block);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGPIPE}) sigaddset(&block, sig);
  ::sigprocmask(SIG_BLOCK, &block, &old);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGCHLD, &dfl, nullptr); // an ignored SIGCHLD would reap our children for us
  // PR_SET_PDEATHSIG fires when the parent *thread* exits, not the process: run_process is
  // called from optimas' main thread, and that thread waits in run_process until we are gone.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(1); // optimas died before the line above: start nothing
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  ::prctl(PR_SET_NAME, "optimas-child");
  return old;
}

// Waits for the program; on SIGTERM (a timeout, or optimas died) it asks the program's group
// to stop and gives it k_grace_s; then it ends the whole tree, reports the program's wait
// status to run_process and exits.
[[noreturn]] void supervise(pid_t program, int exec_fd, int report_fd) {
  if (program < 0) {
    const char msg[] = "cannot start a process (fork failed: the process or memory limit is reached)";
    write_all(exec_fd, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::setpgid(program, program); // also here, so the group exists before anyone signals it
  write_all(report_fd, &program, sizeof program);
  ::close(exec_fd);
  // optimas' standard streams may be a pipe that someone reads to its end: not ours to hold.
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0)
    for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
  sigset_t wanted;
  sigemptyset(&wanted);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&wanted, sig);
  bool stopping = false;
  double stop_by = 0;
  while (!program_exited(program)) {
    int sig;
    if (!stopping) {
      sig = ::sigwaitinfo(&wanted, nullptr);
    } else {
      double left = stop_by - monotonic_s();
      if (left <= 0) break;
      auto whole = static_cast<time_t>(left);
      timespec wait{whole, static_cast<long>((left - static_cast<double>(whole)) * 1e9)};
      sig = ::sigtimedwait(&wanted, nullptr, &wait);
    }
    if (!stopping && (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)) {
      stopping = true;
      stop_by = monotonic_s() + k_grace_s;
      ::kill(-program, SIGTERM);
    }
  }
  int status = end_tree(program);
  write_all(report_fd, &status, sizeof status);
  ::_exit(0);
}

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

ProcessResult run_process(const ProcessSpec& spec) {
  ProcessResult result;
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };

  // exec_pipe: the program's exec error; report_pipe: the supervisor's reports (the program's
  // pid, then its wait status); go: the program waits on it until it has been recorded.
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, exec_pipe[2] = {-1, -1}, report_pipe[2] = {-1, -1},
      go[2] = {-1, -1};
  auto close_all = [&] {
    for (int* pair : {out_pipe, err_pipe, exec_pipe, report_pipe, go})
      for (int i = 0; i < 2; ++i)
        if (pair[i] >= 0) ::close(pair[i]);
  };
  bool capture_out = spec.stdout_path.empty();
  bool capture_err = spec.stderr_path.empty() && !spec.stderr_to_stdout;
  if ((capture_out && ::pipe2(out_pipe, O_CLOEXEC) != 0) || (capture_err && ::pipe2(err_pipe, O_CLOEXEC) != 0) ||
      ::pipe2(exec_pipe, O_CLOEXEC) != 0 || ::pipe2(report_pipe, O_CLOEXEC) != 0 ||
      ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) != 0) {
    result.spawn_failed = true;
    result.err = std::strerror(errno);
    close_all();
    return result;
  }

  std::vector<std::string> env = child_environment(spec);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::string exe = spec.argv.empty() ? std::string() : spec.argv[0];
  if (auto found = find_executable(exe)) exe = *found;
  // Output files are named relative to our working directory, not the child's.
  auto absolute = [](const std::string& p) {
    return p.empty() || p.front() == '/' ? p : (std::filesystem::current_path() / p).string();
  };
  const std::string stdout_path = absolute(spec.stdout_path);
  const std::string stderr_path = absolute(spec.stderr_path);

  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    result.spawn_failed = true;
    result.err = std::strerror(errno);
    close_all();
    return result;
  }
  if (pid == 0) {
    // The supervisor (see run_process in the header).
    ::close(exec_pipe[0]);
    ::close(report_pipe[0]);
    if (capture_out) ::close(out_pipe[0]);
    if (capture_err) ::close(err_pipe[0]);
    const sigset_t program_mask = become_supervisor(parent);
    const pid_t supervisor = ::getpid();
    pid_t program = ::fork();
    if (program != 0) {
      if (capture_out) ::close(out_pipe[1]);
      if (capture_err) ::close(err_pipe[1]);
      ::close(go[0]);
      ::close(go[1]);
      supervise(program, exec_pipe[1], report_pipe[1]);
    }
    // The program: its own process group, so a timeout can kill everything it started, and it
    // dies with the supervisor (which has one thread, see become_supervisor).
    ::sigprocmask(SIG_SETMASK, &program_mask, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != supervisor) ::_exit(127);
    ::setpgid(0, 0);
    ::close(go[1]);
    auto die = [&](const char* what) {
      std::string msg = std::string(what) + ": " + std::strerror(errno);
      (void)!::write(exec_pipe[1], msg.data(), msg.size());
      ::_exit(127);
    };
    auto limit = [&](int resource, std::uint64_t value, const char* what) {
      if (value == 0) return;
      rlimit rl{static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
      if (::setrlimit(resource, &rl) != 0) die(what);
    };
    limit(RLIMIT_FSIZE, spec.limits.file_bytes, "cannot limit file size");
    limit(RLIMIT_AS, spec.limits.address_space, "cannot limit address space");
    limit(RLIMIT_CPU, spec.limits.cpu_s, "cannot limit CPU time");
    limit(RLIMIT_NOFILE, spec.limits.open_files, "cannot limit open files");
    if (!spec.limits.core_dumps) {
      rlimit none{0, 0};
      ::setrlimit(RLIMIT_CORE, &none);
    }
    if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) die(("cannot enter " + spec.cwd).c_str());
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    if (capture_out) {
      ::dup2(out_pipe[1], 1);
    } else {
      int fd = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | (spec.append_stdout ? O_APPEND : O_TRUNC), 0644);
      if (fd < 0) die(("cannot write " + stdout_path).c_str());
      ::dup2(fd, 1);
    }
    if (spec.stderr_to_stdout) {
      ::dup2(1, 2);
    } else if (capture_err) {
      ::dup2(err_pipe[1], 2);
    } else {
      int fd = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) die(("cannot write " + stderr_path).c_str());
      ::dup2(fd, 2);
    }
    // The program starts only once run_process has told the observer (a run folder's record),
    // so a kill of optimas at any moment leaves no running program that the record lacks.
    char go_byte = 0;
    ssize_t got;
    while ((got = ::read(go[0], &go_byte, 1)) < 0 && errno == EINTR) {
    }
    if (got != 1) ::_exit(127); // we are gone, or the start failed
    ::execve(exe.c_str(), argv.data(), envp.data());
    die(("cannot run " + (spec.argv.empty() ? std::string("(nothing)") : spec.argv[0])).c_str());
  }
  ::setpgid(pid, pid); // also from the parent, to win the race with an early kill
  ::close(exec_pipe[1]);
  ::close(report_pipe[1]);
  ::close(go[0]);
  if (capture_out) ::close(out_pipe[1]);
  if (capture_err) ::close(err_pipe[1]);

  // The supervisor reports the program's pid as soon as it has forked it (nothing when it could
  // not); the program waits for the go, so it is recorded before it runs.
  pid_t program = 0;
  if (!read_value(report_pipe[0], program)) program = 0;
  ChildInfo info;
  info.supervisor = pid;
  info.supervisor_start = process_start_time(pid).value_or(0);
  info.group = program;
  info.group_start = program > 0 ? process_start_time(program).value_or(0) : 0;
  notify(info, true);
  if (spec.on_start) spec.on_start(info);
  // MSG_NOSIGNAL: a program that failed before it read the go must not kill us with SIGPIPE.
  (void)!::send(go[1], "g", 1, MSG_NOSIGNAL);
  ::close(go[1]);

  // exec_pipe closes on a successful exec (O_CLOEXEC); anything read from it is an exec error.
  std::string exec_error;
  {
    char buf[512];
    ssize_t n;
    while ((n = ::read(exec_pipe[0], buf, sizeof buf)) > 0) exec_error.append(buf, static_cast<std::size_t>(n));
    ::close(exec_pipe[0]);
  }

  std::vector<pollfd> fds; // captured output
  if (capture_out) fds.push_back({out_pipe[0], POLLIN, 0});
  if (capture_err) fds.push_back({err_pipe[0], POLLIN, 0});
  int status = 0;
  bool reaped = false;
  bool stop_sent = false, killed = false;
  double stop_time = 0, reap_time = 0;
  char buf[65536];
  while (!reaped || !fds.empty()) {
    // The report pipe wakes us the moment the supervisor writes the program's status or dies,
    // so wall_s is not rounded up to a polling interval.
    std::vector<pollfd> wait = fds;
    if (!reaped) wait.push_back({report_pipe[0], POLLIN, 0});
    if (::poll(wait.data(), wait.size(), 50) > 0) {
      for (std::size_t i = 0; i < fds.size(); ++i) fds[i].revents = wait[i].revents;
      for (std::size_t i = 0; i < fds.size();) {
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
          ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
          if (r > 0) {
            append_capped(fds[i].fd == out_pipe[0] ? result.out : result.err, buf, static_cast<std::size_t>(r));
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
        int program_status = 0;
        bool reported = read_value(report_pipe[0], program_status);
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
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
        ::kill(pid, SIGTERM); // the supervisor stops the program and ends its tree
        stop_sent = true;
        stop_time = elapsed();
      } else if (!killed && elapsed() - stop_time > k_grace_s + k_supervisor_slack_s) {
        ::kill(pid, SIGKILL);
        if (program > 0) ::kill(-program, SIGKILL);
        killed = true;
      }
    }
  }
  ::close(report_pipe[0]);
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
  if (!spec.stdout_path.empty()) redact_file(stdout_path);
  if (!spec.stderr_path.empty()) redact_file(stderr_path);
  result.out = redact(result.out);
  result.err = redact(result.err);
  return result;
}

} // namespace optimas::util
