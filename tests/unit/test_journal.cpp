// Tests of store/journal: atomic writes, a step's record read back (errors naming file and line),
// and JSONL journals: every complete line kept, a truncated or broken one left out by file:line.
#include "store/journal.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

using namespace optimas;
using namespace optimas::store;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST(Journal, WriteJsonAtomicReplacesTheFileAndLeavesNoTemporary) {
  test::TempDir dir;
  std::string path = (dir.path() / "run.json").string();
  write_json_atomic(path, {{"status", "running"}});
  write_json_atomic(path, {{"status", "finished"}, {"errors", std::string("bad \xff byte")}});
  json back = json::parse(test::read_all(path));
  EXPECT_EQ(back["status"], "finished");
  EXPECT_EQ(back["errors"], "bad \\xff byte"); // invalid UTF-8 written as \xNN, not fatal
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);

  try {
    write_json_atomic((dir.path() / "missing" / "run.json").string(), json::object());
    FAIL() << "no error for a missing folder";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing/run.json"), std::string::npos) << e.what();
  }
}

TEST(Journal, ReadJsonGivesBackWhatWasWritten) {
  test::TempDir dir;
  std::string path = (dir.path() / "build.json").string();
  json doc = {{"ok", true}, {"fingerprint", "abc"}, {"wall_s", 1.5}};
  write_json_atomic(path, doc);
  EXPECT_EQ(read_json(path), doc);
}

TEST(Journal, ABrokenRecordNamesItsFileAndLine) {
  test::TempDir dir;
  std::string path = dir.file("build.json", "{\n  \"ok\": true,\n  \"result\": \n}\n");
  try {
    read_json(path);
    FAIL() << "broken JSON parsed";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), 4u) << e.what();
    EXPECT_TRUE(has(e.what(), path + ":4: not valid JSON: ")) << e.what();
    EXPECT_TRUE(has(e.what(), "delete it to redo that step")) << e.what();
    EXPECT_FALSE(has(e.what(), "[json.exception")) << e.what();
  }
}

// nlohmann reports a number past double's range as out_of_range, without a position; the line
// is found all the same.
TEST(Journal, ANumberPastDoublesRangeNamesItsLine) {
  test::TempDir dir;
  std::string path = dir.file("measurement.json", "{\n  \"runs\": 5,\n  \"speedup\": 1e400\n}\n");
  try {
    read_json(path);
    FAIL() << "1e400 parsed";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), 3u) << e.what();
  }
  try {
    parse_json("{\"id\": \"r\", \"wall_s\": -1e999}", "run.json", "run r: ");
    FAIL() << "-1e999 parsed";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), 1u) << e.what();
    EXPECT_TRUE(has(e.what(), "run.json:1: run r: not valid JSON: ")) << e.what();
  }
}

TEST(Journal, AppendedLinesReadBackInOrder) {
  test::TempDir dir;
  std::string path = (dir.path() / "measurements.jsonl").string();
  EXPECT_TRUE(read_journal(path).empty()); // none yet: no lines, no error
  append_line(path, {{"round", 0}, {"detail", "two\nlines"}});
  append_line(path, {{"round", 1}});
  auto lines = read_journal(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["detail"], "two\nlines"); // one journal line, whatever the text holds
  EXPECT_EQ(lines[1]["round"], 1);
  EXPECT_THROW(append_line((dir.path() / "missing" / "x.jsonl").string(), json::object()), Error);
}

// A kill while a line was written leaves it cut short: the lines before it are kept, the cut one
// is named by file and line.
TEST(Journal, ATruncatedLastLineIsLeftOutByFileAndLine) {
  auto j = parse_journal("{\"round\": 0}\n{\"round\": 1}\n{\"round\": 2, \"wall_", "runs/r/measurements.jsonl");
  ASSERT_EQ(j.lines.size(), 2u);
  EXPECT_EQ(j.lines[1]["round"], 1);
  ASSERT_EQ(j.skipped.size(), 1u);
  EXPECT_TRUE(has(j.skipped[0], "runs/r/measurements.jsonl:3: not valid JSON: ")) << j.skipped[0];
}

TEST(Journal, ALineWithABadNumberIsLeftOutAndTheRestKept) {
  auto j = parse_journal("{\"round\": 0}\n\n{\"round\": 1, \"wall_s\": 1e400}\n{\"round\": 2}\n", "m.jsonl");
  ASSERT_EQ(j.lines.size(), 2u);
  EXPECT_EQ(j.lines[0]["round"], 0);
  EXPECT_EQ(j.lines[1]["round"], 2);
  ASSERT_EQ(j.skipped.size(), 1u);
  EXPECT_TRUE(has(j.skipped[0], "m.jsonl:3: not valid JSON: ")) << j.skipped[0]; // the empty line counts
}

TEST(Journal, ALineThatIsNotAnObjectIsLeftOut) {
  auto j = parse_journal("[1, 2]\n\"text\"\n{\"round\": 0}\n", "v.jsonl");
  ASSERT_EQ(j.lines.size(), 1u);
  ASSERT_EQ(j.skipped.size(), 2u);
  EXPECT_EQ(j.skipped[0], "v.jsonl:1: not a JSON object");
  EXPECT_EQ(j.skipped[1], "v.jsonl:2: not a JSON object");
}

TEST(Journal, ReadJournalKeepsTheGoodLinesOfABrokenFile) {
  test::TempDir dir;
  std::string path = dir.file("validation.jsonl", "{\"label\": \"a\"}\n{\"label\": \"b\", \"passed\": tr");
  auto lines = read_journal(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["label"], "a");
}
