// The sandbox's walls (evaluate/isolation.hpp): behind bwrap's or unshare's, a program writes
// its own folder and nothing else (the application folder, $HOME, /tmp as others see it) and
// reaches no server; at the watch level it does all of that (the loop catches the changes), which
// the same checks show. A level this machine does not allow is skipped, with the reason.
#include "evaluate/isolation.hpp"
#include "evaluate/sandbox.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include "sandbox_fixture.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

namespace fs = std::filesystem;
using namespace optimas;
using evaluate::Isolation;
using optimas::test::TempDir;

namespace {

// A TCP server on 127.0.0.1 that accepts (the kernel's backlog does): its port.
class Listener {
public:
  Listener() {
    m_fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    if (m_fd < 0 || ::bind(m_fd, reinterpret_cast<sockaddr*>(&a), n) != 0 || ::listen(m_fd, 8) != 0 ||
        ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&a), &n) != 0)
      std::abort();
    m_port = ntohs(a.sin_port);
  }
  ~Listener() { ::close(m_fd); }
  int port() const { return m_port; }

private:
  int m_fd = -1, m_port = 0;
};

struct Attempts {
  bool own = false, app = false, home = false, tmp = false, network = false;
};

// A program, at `level`, in its folder `own`, that tries to write its folder, the application
// folder, $HOME and /tmp, and to connect to a server: what it managed to do, as seen from outside.
Attempts attempt(Isolation level, const fs::path& own, const fs::path& app, const fs::path& home, int port) {
  const std::string name = "optimas-isolation-" + std::to_string(::getpid());
  const fs::path in_tmp = fs::temp_directory_path() / name;
  fs::remove(in_tmp);
  const std::string script = "echo x > mine; echo x >> \"$APP/main.cu\"; echo x > \"$HOME/.bashrc\"; echo x > \"" +
                             in_tmp.string() +
                             "\"; python3 -c 'import socket, sys; socket.create_connection((\"127.0.0.1\", "
                             "int(sys.argv[1])), 3)' " +
                             std::to_string(port) + " && touch connected; exit 0";
  util::ProcessSpec spec;
  spec.argv = evaluate::isolated_argv(level, {own.string()}, {}, own.string(), nullptr, {"/bin/sh", "-c", script});
  spec.cwd = own.string();
  spec.env = {{"APP", app.string()}, {"HOME", home.string()}};
  spec.timeout_s = 30;
  auto r = util::run_process(spec);
  EXPECT_TRUE(r.ok()) << r.describe() << ": " << r.err;
  Attempts a;
  a.own = fs::exists(own / "mine");
  a.app = util::read_file((app / "main.cu").string()) != "int main() {}\n";
  a.home = fs::exists(home / ".bashrc");
  a.tmp = fs::exists(in_tmp);
  a.network = fs::exists(own / "connected");
  fs::remove(in_tmp);
  return a;
}

// A folder outside /tmp (below the test's working folder), which the private /tmp does not hide:
// there the walls must hold by being read-only.
class OutsideTmp {
public:
  OutsideTmp() {
    std::string tmpl = (fs::current_path() / "isolation-test-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    m_path = tmpl;
  }
  ~OutsideTmp() {
    std::error_code ec;
    fs::remove_all(m_path, ec);
  }
  const fs::path& path() const { return m_path; }

private:
  fs::path m_path;
};

void walls_hold(Isolation level) {
  if (!evaluate::allows(level)) GTEST_SKIP() << evaluate::isolation_name(level) << " is not allowed on this machine";
  TempDir own;
  OutsideTmp app, home;
  util::write_file((app.path() / "main.cu").string(), "int main() {}\n");
  Listener server;
  auto a = attempt(level, own.path(), app.path(), home.path(), server.port());
  EXPECT_TRUE(a.own) << "its own folder stays writable";
  EXPECT_FALSE(a.app) << "the application folder";
  EXPECT_FALSE(a.home) << "$HOME";
  EXPECT_FALSE(a.tmp) << "/tmp as others see it";
  EXPECT_FALSE(a.network) << "a connection to 127.0.0.1";
}

} // namespace

TEST(Isolation, BwrapWallsHold) {
  walls_hold(Isolation::bwrap);
}

TEST(Isolation, UnshareWallsHold) {
  walls_hold(Isolation::unshare);
}

// The watch level has no walls: the same program does all of it (so the checks above can fail).
TEST(Isolation, WatchHasNoWalls) {
  TempDir own;
  OutsideTmp app, home;
  util::write_file((app.path() / "main.cu").string(), "int main() {}\n");
  Listener server;
  auto a = attempt(Isolation::watch, own.path(), app.path(), home.path(), server.port());
  EXPECT_TRUE(a.own && a.app && a.home && a.tmp && a.network);
}

// A folder under /tmp stays writable behind the private /tmp (the run store of a test, or of a
// user whose runs are there), and a build lane's folder is seen at another path at every level.
TEST(Isolation, WritableUnderTmpAndSeenElsewhere) {
  for (auto level : {Isolation::bwrap, Isolation::unshare, Isolation::watch}) {
    if (!evaluate::allows(level) || (level == Isolation::watch && !evaluate::allows(Isolation::unshare))) continue;
    TempDir root;
    const fs::path lane = root.path() / "lanes" / "1", as = root.path() / "work" / "building";
    fs::create_directories(lane);
    fs::create_directories(as.parent_path() / "other");
    const evaluate::Seen seen{lane.string(), as.string()};
    util::ProcessSpec spec;
    spec.argv = evaluate::isolated_argv(level, {lane.string()}, {}, as.string(), &seen,
                                        {"/bin/sh", "-c", "pwd > where; ls .. > siblings"});
    spec.timeout_s = 30;
    auto r = util::run_process(spec);
    ASSERT_TRUE(r.ok()) << evaluate::isolation_name(level) << ": " << r.describe() << ": " << r.err;
    EXPECT_EQ(util::read_file((lane / "where").string()), as.string() + "\n") << evaluate::isolation_name(level);
    EXPECT_EQ(util::read_file((lane / "siblings").string()), "building\n") << evaluate::isolation_name(level);
  }
}

TEST(Isolation, NamesAndParsing) {
  bool automatic = false;
  EXPECT_EQ(evaluate::parse_isolation("unshare", automatic), Isolation::unshare);
  EXPECT_FALSE(automatic);
  EXPECT_EQ(evaluate::parse_isolation("auto", automatic), evaluate::strongest_isolation());
  EXPECT_TRUE(automatic);
  EXPECT_FALSE(evaluate::parse_isolation("chroot", automatic).has_value());
  EXPECT_TRUE(evaluate::allows(Isolation::watch));
}

namespace {

// Behind `level`, a program reads a file and a folder's file under /tmp passed as readable (the
// kernel tracer, where optimas lies under /tmp), cannot write them, and still cannot see another
// file of /tmp. Without `readable`, the private /tmp hides them, and CUDA goes on without a
// tracer it cannot load, silently.
void readable_under_tmp(Isolation level) {
  if (!evaluate::allows(level)) GTEST_SKIP() << evaluate::isolation_name(level) << " is not allowed on this machine";
  TempDir own, tools, other; // each under /tmp (TempDir makes its folders there)
  if (tools.path().string().rfind("/tmp/", 0) != 0) GTEST_SKIP() << "the test folders are not under /tmp (TMPDIR)";
  util::write_file((tools.path() / "tracer.so").string(), "tracer\n");
  fs::create_directories(tools.path() / "lib");
  util::write_file((tools.path() / "lib" / "cupti.so").string(), "cupti\n");
  util::write_file((other.path() / "secret").string(), "secret\n");
  const std::string tracer = (tools.path() / "tracer.so").string(), lib = (tools.path() / "lib").string();
  const std::string script = "cat '" + tracer + "' '" + lib + "/cupti.so' > seen; cat '" +
                             (other.path() / "secret").string() + "' > other 2>/dev/null; echo x >> '" + tracer +
                             "' 2>/dev/null; exit 0";
  util::ProcessSpec spec;
  spec.argv = evaluate::isolated_argv(level, {own.path().string()}, {tracer, lib, "/usr/bin/env"}, own.path().string(),
                                      nullptr, {"/bin/sh", "-c", script});
  spec.cwd = own.path().string();
  spec.timeout_s = 30;
  auto r = util::run_process(spec);
  ASSERT_TRUE(r.ok()) << r.describe() << ": " << r.err;
  EXPECT_EQ(util::read_file((own.path() / "seen").string()), "tracer\ncupti\n");
  EXPECT_EQ(util::read_file((own.path() / "other").string()), "") << "another file of /tmp stays hidden";
  EXPECT_EQ(util::read_file(tracer), "tracer\n") << "the readable file stays read-only";
}

// A path under /tmp is seen with its whole folder right below /tmp: what a command reaches from
// it by `..` (Rodinia's Makefiles include ../../common/make.config, found through `make -I
// /tmp/suite/cuda/bfs`) is there, read-only, and a writable folder inside that folder (a run store
// beside the suite) stays writable; another folder of /tmp stays hidden.
void dotdot_from_readable(Isolation level) {
  if (!evaluate::allows(level)) GTEST_SKIP() << evaluate::isolation_name(level) << " is not allowed on this machine";
  TempDir top, other;
  if (top.path().string().rfind("/tmp/", 0) != 0) GTEST_SKIP() << "the test folders are not under /tmp (TMPDIR)";
  top.file("suite/common/make.config", "CC = nvcc\n");
  top.file("suite/cuda/bfs/Makefile", "include ../../common/make.config\n");
  fs::create_directories(top.path() / "runs" / "work");
  other.file("secret", "secret\n");
  const std::string bfs = (top.path() / "suite" / "cuda" / "bfs").string(),
                    own = (top.path() / "runs" / "work").string();
  const std::string script = "cat '" + bfs + "/../../common/make.config' > seen; cat '" +
                             (other.path() / "secret").string() + "' > other 2>/dev/null; echo x >> '" + bfs +
                             "/Makefile' 2>/dev/null; exit 0";
  util::ProcessSpec spec;
  spec.argv = evaluate::isolated_argv(level, {own}, {bfs}, own, nullptr, {"/bin/sh", "-c", script});
  spec.cwd = own;
  spec.timeout_s = 30;
  auto r = util::run_process(spec);
  ASSERT_TRUE(r.ok()) << r.describe() << ": " << r.err;
  EXPECT_EQ(util::read_file(own + "/seen"), "CC = nvcc\n") << "the folder `..` reaches is seen";
  EXPECT_EQ(util::read_file(own + "/other"), "") << "another folder of /tmp stays hidden";
  EXPECT_EQ(util::read_file(bfs + "/Makefile"), "include ../../common/make.config\n") << "and read-only";
}

} // namespace

TEST(Isolation, BwrapShowsWhatDotDotReachesFromAReadablePath) {
  dotdot_from_readable(Isolation::bwrap);
}

TEST(Isolation, UnshareShowsWhatDotDotReachesFromAReadablePath) {
  dotdot_from_readable(Isolation::unshare);
}

TEST(Isolation, BwrapShowsReadablePathsUnderTmp) {
  readable_under_tmp(Isolation::bwrap);
}

TEST(Isolation, UnshareShowsReadablePathsUnderTmp) {
  readable_under_tmp(Isolation::unshare);
}

// The paths under /tmp an application's commands name: words, values after `=` or `:`, what
// follows -I or -L; not a /tmp inside a longer path, not a path that does not exist.
TEST(Isolation, TmpPathsNamedByCommands) {
  TempDir suite;
  if (suite.path().string().rfind("/tmp/", 0) != 0) GTEST_SKIP() << "the test folders are not under /tmp (TMPDIR)";
  fs::create_directories(suite.path() / "Common");
  fs::create_directories(suite.path() / "lib");
  const std::string data = suite.file("in.txt", "1\n"), root = suite.path().string();
  const auto found = evaluate::tmp_paths_named(
      {"cmake -S . -B build -DCMAKE_CUDA_FLAGS='-I" + root + "/Common/ --threads 0' && cmake --build build",
       "nvcc -L" + root + "/lib x.cu -o x; ./x --input=" + data + " " + root + "/missing",
       "PATH=" + root + "/lib:$PATH ./x ../tmp/" + root.substr(5) + " data" + root + " /tmp"});
  EXPECT_EQ(found, (std::vector<std::string>{root + "/Common", data, root + "/lib"}));
}

namespace {

// A build whose command names a file under /tmp (as `optimas init` writes `-I/tmp/...` for a copy
// of a suite's program): behind `level`'s private /tmp it reads it, with sandbox_for's readable
// paths, and not without them; another file of /tmp stays hidden.
void build_reads_named_tmp_paths(Isolation level) {
  if (!evaluate::allows(level)) GTEST_SKIP() << evaluate::isolation_name(level) << " is not allowed on this machine";
  TempDir app_dir, suite, other;
  if (suite.path().string().rfind("/tmp/", 0) != 0) GTEST_SKIP() << "the test folders are not under /tmp (TMPDIR)";
  suite.file("inc/h.h", "#define H 1\n");
  // The other file by a pattern, so that the command names no path of it.
  const std::string secret = "secret-" + other.path().filename().string();
  other.file(secret, "secret\n");
  const std::string pattern = (other.path().parent_path() / "*" / secret).string();
  util::ProcessSpec probe = util::shell("cat " + pattern);
  probe.stdout_path = (app_dir.path() / "all").string();
  ASSERT_TRUE(util::run_process(probe).ok());
  ASSERT_EQ(util::read_file(probe.stdout_path), "secret\n") << "the pattern finds the other file outside the walls";
  const std::string build = "  command: 'cat " + suite.path().string() + "/inc/h.h > got; cat " + pattern +
                            " > other 2>/dev/null; touch prog'\n  binary: prog\n";
  auto app = test::host_app(app_dir, "  command: ./prog\n", build);
  auto sandbox = evaluate::sandbox_for(app);
  sandbox.isolation = level;
  ASSERT_EQ(sandbox.readable, std::vector<std::string>{(suite.path() / "inc" / "h.h").string()});
  auto b = evaluate::build_in(app, app.dir, (app_dir.path() / "build.log").string(), sandbox);
  ASSERT_TRUE(b.ok) << b.result;
  EXPECT_EQ(util::read_file((app_dir.path() / "got").string()), "#define H 1\n");
  EXPECT_EQ(util::read_file((app_dir.path() / "other").string()), "") << "another file of /tmp stays hidden";
  // A readable folder that holds the writable one goes up first, the writable one on top of it.
  sandbox.readable.push_back(app_dir.path().string());
  fs::remove(app_dir.path() / "got");
  b = evaluate::build_in(app, app.dir, (app_dir.path() / "build.log").string(), sandbox);
  ASSERT_TRUE(b.ok) << b.result;
  EXPECT_EQ(util::read_file((app_dir.path() / "got").string()), "#define H 1\n");
  sandbox.readable.clear();
  b = evaluate::build_in(app, app.dir, (app_dir.path() / "build.log").string(), sandbox);
  EXPECT_EQ(util::read_file((app_dir.path() / "got").string()), "") << "without it the private /tmp hides the header";
}

} // namespace

TEST(Isolation, BwrapBuildReadsTmpPathsItsCommandNames) {
  build_reads_named_tmp_paths(Isolation::bwrap);
}

TEST(Isolation, UnshareBuildReadsTmpPathsItsCommandNames) {
  build_reads_named_tmp_paths(Isolation::unshare);
}
