// util/log.cpp: levels, prefixes, stderr only, and no secret in a log line.
#include "util/log.hpp"
#include "util/secrets.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <functional>
#include <iostream>
#include <string>

namespace olog = optimas::log;
using optimas::test::ScopedEnv;
using optimas::test::TempDir;

namespace {

// What `body` writes to the file descriptors 1 and 2, caught in files and restored afterwards.
struct Captured {
  std::string out, err;
};

Captured capture(const std::function<void()>& body) {
  TempDir dir;
  const std::string out_path = (dir.path() / "out").string(), err_path = (dir.path() / "err").string();
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved_out = ::dup(1), saved_err = ::dup(2);
  FILE* out = std::fopen(out_path.c_str(), "w");
  FILE* err = std::fopen(err_path.c_str(), "w");
  if (saved_out < 0 || saved_err < 0 || !out || !err) std::abort();
  ::dup2(::fileno(out), 1);
  ::dup2(::fileno(err), 2);
  body();
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  ::close(saved_out);
  ::close(saved_err);
  std::fclose(out);
  std::fclose(err);
  return {optimas::test::read_all(out_path), optimas::test::read_all(err_path)};
}

// Restores the level the other tests of this binary expect.
class LogTest : public ::testing::Test {
protected:
  void TearDown() override { olog::set_level(olog::Level::info); }
};

} // namespace

TEST_F(LogTest, DefaultLevelIsInfo) {
  EXPECT_EQ(olog::level(), olog::Level::info);
}

TEST_F(LogTest, EachLevelHasItsPrefixAndGoesToStderr) {
  olog::set_level(olog::Level::debug);
  auto c = capture([] {
    olog::debug("d {}", 1);
    olog::info("i {}", 2);
    olog::warn("w {}", 3);
    olog::error("e {}", 4);
  });
  EXPECT_EQ(c.err, "debug: d 1\ni 2\nwarning: w 3\nerror: e 4\n");
  EXPECT_EQ(c.out, "") << "a log line reached stdout, where results go";
}

TEST_F(LogTest, LinesBelowTheLevelAreDropped) {
  olog::set_level(olog::Level::warn);
  EXPECT_EQ(olog::level(), olog::Level::warn);
  auto c = capture([] {
    olog::debug("not this");
    olog::info("nor this");
    olog::warn("this");
    olog::error("and this");
  });
  EXPECT_EQ(c.err, "warning: this\nerror: and this\n");
}

// -q: nothing at all, errors included (main() prints the error that ends the program itself).
TEST_F(LogTest, QuietDropsEverything) {
  olog::set_level(olog::Level::quiet);
  auto c = capture([] {
    olog::warn("w");
    olog::error("e");
  });
  EXPECT_EQ(c.err, "");
}

TEST_F(LogTest, SecretsAreRedactedFromLogLines) {
  optimas::util::register_secret_variable("OPTIMAS_TEST_LOG_CREDENTIAL");
  ScopedEnv key("OPTIMAS_TEST_LOG_CREDENTIAL", "sk-log-test-0123456789abcdef");
  auto c = capture([] {
    olog::warn("the server said: invalid key sk-log-test-0123456789abcdef (check it)");
    olog::error("Authorization: Bearer {}", "sk-log-test-0123456789abcdef");
  });
  EXPECT_EQ(c.err.find("sk-log-test-0123456789abcdef"), std::string::npos) << c.err;
  EXPECT_EQ(c.err, std::string("warning: the server said: invalid key ") + std::string(optimas::util::k_redacted) +
                       " (check it)\nerror: Authorization: Bearer " + std::string(optimas::util::k_redacted) + "\n");
}

// A message may hold a NUL or a brace from a program's output; it is written whole, as it is.
TEST_F(LogTest, MessagesAreWrittenVerbatim) {
  auto c = capture([] {
    olog::write(olog::Level::info, std::string_view("a\0b {}", 6));
    olog::info("{}", "100% {not a field}");
  });
  EXPECT_EQ(c.err, std::string("a\0b {}\n100% {not a field}\n", 26));
}
