#include "util/supervisor.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace optimas::util::detail {

// Why a supervisor, and not a cgroup: a cgroup v2 scope (systemd-run --user --scope, or a
// writable /sys/fs/cgroup) would hold every descendant too, but CI runs Debian 12 in a container
// without systemd and with a read-only or v1 cgroup tree, so it would only ever be an optional
// extra. A child subreaper needs no privilege and works in containers and in the H200's
// Firecracker VM alike: no descendant can leave its tree (an orphan is re-parented to it, setsid
// or not), so it can always find and kill every one of them.

void Pipes::close_all() {
  for (int* pair : {out, err, exec, report, go})
    for (int i = 0; i < 2; ++i)
      if (pair[i] >= 0) {
        ::close(pair[i]);
        pair[i] = -1;
      }
}

namespace {

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
// `left` counts the processes reaped here besides the program: those still running (or just
// ended, unreaped) when the program exited. Orphans that ended earlier were reaped while it ran.
int end_tree(pid_t program, int& left) {
  ::kill(-program, SIGKILL);
  int status = 0;
  left = 0;
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  for (;;) {
    int st = 0;
    pid_t w;
    while ((w = ::waitpid(-1, &st, WNOHANG)) > 0) {
      if (w == program)
        status = st;
      else
        ++left;
    }
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
  int left = 0;
  int status = end_tree(program, left);
  write_all(report_fd, &status, sizeof status);
  write_all(report_fd, &left, sizeof left);
  ::_exit(0);
}

// The program's side, between the supervisor's fork and exec: its own process group (a timeout
// kills everything it started), death with the supervisor, its limits, folder and streams; then
// it waits for run_process's go and execs. Any failure is written to the exec pipe.
[[noreturn]] void start_program(pid_t supervisor, const sigset_t& program_mask, Pipes& p, const ProgramImage& image) {
  const ProcessSpec& spec = *image.spec;
  ::sigprocmask(SIG_SETMASK, &program_mask, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != supervisor) ::_exit(127);
  ::setpgid(0, 0);
  ::close(p.go[1]);
  auto die = [&](const char* what) {
    std::string msg = std::string(what) + ": " + std::strerror(errno);
    (void)!::write(p.exec[1], msg.data(), msg.size());
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
  if (p.capture_out) {
    ::dup2(p.out[1], 1);
  } else {
    int fd = ::open(image.stdout_path.c_str(), O_WRONLY | O_CREAT | (spec.append_stdout ? O_APPEND : O_TRUNC), 0644);
    if (fd < 0) die(("cannot write " + image.stdout_path).c_str());
    ::dup2(fd, 1);
  }
  if (spec.stderr_to_stdout) {
    ::dup2(1, 2);
  } else if (p.capture_err) {
    ::dup2(p.err[1], 2);
  } else {
    int fd = ::open(image.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die(("cannot write " + image.stderr_path).c_str());
    ::dup2(fd, 2);
  }
  // The program starts only once run_process has told the observer (a run folder's record),
  // so a kill of optimas at any moment leaves no running program that the record lacks.
  char go_byte = 0;
  ssize_t got;
  while ((got = ::read(p.go[0], &go_byte, 1)) < 0 && errno == EINTR) {
  }
  if (got != 1) ::_exit(127); // we are gone, or the start failed
  ::execve(image.exe.c_str(), image.argv.data(), image.envp.data());
  die(("cannot run " + (spec.argv.empty() ? std::string("(nothing)") : spec.argv[0])).c_str());
  ::_exit(127); // die does not return
}

} // namespace

void supervisor_main(pid_t parent, Pipes& p, const ProgramImage& image) {
  ::close(p.exec[0]);
  ::close(p.report[0]);
  if (p.capture_out) ::close(p.out[0]);
  if (p.capture_err) ::close(p.err[0]);
  const sigset_t program_mask = become_supervisor(parent);
  const pid_t supervisor = ::getpid();
  pid_t program = ::fork();
  if (program == 0) start_program(supervisor, program_mask, p, image);
  if (p.capture_out) ::close(p.out[1]);
  if (p.capture_err) ::close(p.err[1]);
  ::close(p.go[0]);
  ::close(p.go[1]);
  supervise(program, p.exec[1], p.report[1]);
}

} // namespace optimas::util::detail
