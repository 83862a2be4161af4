#include "llm/backend.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <sys/stat.h>

using namespace optimas::llm;

TEST(ManualBackend, WritesThePromptThenReadsTheAnswer) {
  optimas::test::TempDir dir;
  BackendConfig c = parse_model("manual");
  c.work_dir = (dir.path() / "chat").string();
  auto b = make_backend(c);
  Request r;
  r.system = "You are a tuner.";
  r.prompt = "Optimize k.";
  auto first = b->complete(r);
  ASSERT_FALSE(ok(first));
  const auto& f = std::get<Failure>(first);
  EXPECT_EQ(f.kind, FailureKind::awaiting_reply);
  EXPECT_FALSE(is_retryable(f.kind));
  // The message names both files.
  std::string prompt_file, reply_file;
  for (const auto& e : std::filesystem::directory_iterator(c.work_dir)) prompt_file = e.path().string();
  ASSERT_NE(prompt_file.find("prompt-"), std::string::npos);
  EXPECT_NE(f.message.find(prompt_file), std::string::npos);
  reply_file = prompt_file;
  reply_file.replace(reply_file.find("prompt-"), 7, "reply-");
  EXPECT_NE(f.message.find(reply_file), std::string::npos);
  EXPECT_NE(optimas::test::read_all(prompt_file).find("Optimize k."), std::string::npos);

  std::ofstream(reply_file) << "{\"summary\": \"ok\"}";
  auto second = b->complete(r);
  ASSERT_TRUE(ok(second));
  EXPECT_EQ(std::get<Response>(second).text, "{\"summary\": \"ok\"}");
  // A different prompt is a different pair of files: an old answer is never reused.
  r.prompt = "Optimize k2.";
  EXPECT_FALSE(ok(b->complete(r)));
}

// A reply path that is a folder or a FIFO was an "internal error" (or a hang); an oversized
// reply was read whole. Each is now a failure that names the file.
TEST(ManualBackend, ReplyPathsThatAreNotSmallFilesAreRefused) {
  for (const char* kind : {"dir", "fifo", "huge"}) {
    optimas::test::TempDir dir;
    BackendConfig c = parse_model("manual");
    c.work_dir = (dir.path() / "chat").string();
    auto b = make_backend(c);
    Request r;
    r.prompt = "Optimize k.";
    ASSERT_FALSE(ok(b->complete(r)));
    std::string reply_file;
    for (const auto& e : std::filesystem::directory_iterator(c.work_dir)) reply_file = e.path().string();
    reply_file.replace(reply_file.find("prompt-"), 7, "reply-");
    if (std::string(kind) == "dir")
      std::filesystem::create_directory(reply_file);
    else if (std::string(kind) == "fifo")
      ASSERT_EQ(::mkfifo(reply_file.c_str(), 0600), 0);
    else
      std::ofstream(reply_file) << std::string(9'000'000, ' ');
    auto result = b->complete(r);
    ASSERT_FALSE(ok(result)) << kind;
    const auto& f = std::get<Failure>(result);
    EXPECT_EQ(f.kind, FailureKind::bad_request) << kind;
    EXPECT_NE(f.message.find(reply_file), std::string::npos) << f.message;
  }
}
