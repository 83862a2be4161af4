// util/error.cpp: errors name the file and line; the kinds main() maps to exit codes.
#include "util/error.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include <set>
#include <string>

using namespace optimas;

TEST(Error, ParseErrorNamesFileAndLine) {
  ParseError e("tests/data/x.csv", 17, "a field is not a number");
  EXPECT_STREQ(e.what(), "tests/data/x.csv:17: a field is not a number");
  EXPECT_EQ(e.file(), "tests/data/x.csv");
  EXPECT_EQ(e.line(), 17u);
  EXPECT_EQ(e.reason(), "a field is not a number");
}

// Line 0 means the error is the whole file's (a missing file, a bad archive): no ":0".
TEST(Error, LineZeroIsTheWholeFile) {
  ParseError e("run.json", 0, "not JSON");
  EXPECT_STREQ(e.what(), "run.json: not JSON");
  EXPECT_EQ(e.line(), 0u);
  EXPECT_EQ(e.reason(), "not JSON");
}

// The largest line a 64-bit reader can report is printed whole.
TEST(Error, LargeLineNumbersArePrintedWhole) {
  ParseError e("big.csv", 18446744073709551615ull, "too long");
  EXPECT_STREQ(e.what(), "big.csv:18446744073709551615: too long");
}

// main() catches ConfigError before ParseError (usage exit) and both before Error.
TEST(Error, KindsAreCaughtByTheirBases) {
  try {
    throw ConfigError("examples/stream/optimas.yml", 4, "unknown key \"mesure\"");
  } catch (const ParseError& e) {
    EXPECT_STREQ(e.what(), "examples/stream/optimas.yml:4: unknown key \"mesure\"");
    EXPECT_NE(dynamic_cast<const ConfigError*>(&e), nullptr);
  }
  EXPECT_THROW(throw UsageError("--alpha must be in (0, 1]"), Error);
  EXPECT_THROW(throw PendingError("write the answer to reply.json"), Error);
  EXPECT_THROW(throw ParseError("f", 1, "x"), std::runtime_error);
  try {
    throw UsageError("bad option");
  } catch (const ParseError&) {
    FAIL() << "a UsageError is not a ParseError";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "bad option");
  }
}

// README lists these codes; scripts test them.
TEST(Error, ExitCodesAreDistinctAndDocumented) {
  EXPECT_EQ(k_exit_ok, 0);
  EXPECT_EQ(k_exit_error, 1);
  EXPECT_EQ(k_exit_usage, 2);
  EXPECT_EQ(k_exit_no_improvement, 3);
  EXPECT_EQ(k_exit_pending, 4);
}

// A library's error in our words: nlohmann's without its tag, std::filesystem's as PATH: REASON.
TEST(Error, PlainMessagesOfLibraries) {
  try {
    const auto parsed = nlohmann::json::parse("{\"a\": tru}");
    FAIL() << "parsed " << parsed.dump();
  } catch (const std::exception& e) {
    const std::string m = plain_message(e);
    EXPECT_EQ(m.find("[json.exception"), std::string::npos) << m;
    EXPECT_EQ(m.rfind("not valid JSON at line 1, column", 0), 0u) << m;
  }
  try {
    (void)nlohmann::json::parse("{\"a\": 3}")["a"].get<std::string>();
    FAIL() << "converted";
  } catch (const std::exception& e) {
    EXPECT_EQ(plain_message(e), "a value of the wrong kind: type must be string, but is number");
  }
  try {
    (void)std::filesystem::file_size("/nonexistent/optimas-error-test");
    FAIL() << "sized";
  } catch (const std::exception& e) {
    EXPECT_EQ(plain_message(e), "/nonexistent/optimas-error-test: No such file or directory");
  }
  EXPECT_EQ(plain_message(Error("run r: as we said it")), "run r: as we said it");
}
