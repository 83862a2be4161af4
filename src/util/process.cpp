#include "util/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace optimas::util {

namespace {

constexpr std::size_t k_capture_limit = 16u << 20; // keep the last 16 MB of captured output

void append_capped(std::string& s, const char* data, std::size_t n) {
  s.append(data, n);
  if (s.size() > 2 * k_capture_limit) s.erase(0, s.size() - k_capture_limit);
}

std::vector<std::string> child_environment(const ProcessSpec& spec) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    std::string key = entry.substr(0, entry.find('='));
    bool drop = spec.env.count(key) > 0;
    for (const auto& u : spec.unset_env) drop = drop || u == key;
    if (!drop) env.push_back(entry);
  }
  for (const auto& [k, v] : spec.env) env.push_back(k + "=" + v);
  return env;
}

} // namespace

std::string ProcessResult::describe() const {
  if (spawn_failed) return "could not be started: " + err;
  if (timed_out) return fmt::format("timed out after {:.1f} s (process group killed)", wall_s);
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

ProcessResult run_process(const ProcessSpec& spec) {
  ProcessResult result;
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };

  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, exec_pipe[2] = {-1, -1};
  bool capture_out = spec.stdout_path.empty();
  bool capture_err = spec.stderr_path.empty() && !spec.stderr_to_stdout;
  if ((capture_out && ::pipe2(out_pipe, O_CLOEXEC) != 0) || (capture_err && ::pipe2(err_pipe, O_CLOEXEC) != 0) ||
      ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    result.spawn_failed = true;
    result.err = std::strerror(errno);
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

  pid_t pid = ::fork();
  if (pid < 0) {
    result.spawn_failed = true;
    result.err = std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    // Child: own process group, so a timeout can kill everything it started.
    ::setpgid(0, 0);
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
    ::execve(exe.c_str(), argv.data(), envp.data());
    die(("cannot run " + (spec.argv.empty() ? std::string("(nothing)") : spec.argv[0])).c_str());
  }
  ::setpgid(pid, pid); // also from the parent, to win the race with an early kill
  ::close(exec_pipe[1]);
  if (capture_out) ::close(out_pipe[1]);
  if (capture_err) ::close(err_pipe[1]);

  // exec_pipe closes on a successful exec (O_CLOEXEC); anything read from it is an exec error.
  std::string exec_error;
  {
    char buf[512];
    ssize_t n;
    while ((n = ::read(exec_pipe[0], buf, sizeof buf)) > 0) exec_error.append(buf, static_cast<std::size_t>(n));
    ::close(exec_pipe[0]);
  }

  std::vector<pollfd> fds;
  if (capture_out) fds.push_back({out_pipe[0], POLLIN, 0});
  if (capture_err) fds.push_back({err_pipe[0], POLLIN, 0});
  int status = 0;
  bool reaped = false;
  bool killed = false;
  double kill_time = 0;
  char buf[65536];
  while (!reaped || !fds.empty()) {
    if (!fds.empty()) {
      int wait_ms = 50;
      int n = ::poll(fds.data(), fds.size(), wait_ms);
      if (n > 0) {
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
      }
    } else {
      ::usleep(10000); // nothing to read: wait for the child to exit (checked below)
    }
    if (!reaped) {
      pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        reaped = true;
        // A grandchild may keep the pipes open: end the group so reading can finish.
        ::kill(-pid, SIGKILL);
      }
    }
    if (!reaped && spec.timeout_s > 0 && elapsed() > spec.timeout_s) {
      if (!killed) {
        result.timed_out = true;
        ::kill(-pid, SIGTERM);
        killed = true;
        kill_time = elapsed();
      } else if (elapsed() - kill_time > 2.0) {
        ::kill(-pid, SIGKILL);
      }
    }
  }
  result.wall_s = elapsed();
  if (!exec_error.empty()) {
    result.spawn_failed = true;
    result.err = exec_error;
    return result;
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

} // namespace optimas::util
