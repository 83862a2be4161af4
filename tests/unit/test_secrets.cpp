// Tests of util/secrets: the one list of key variables and the redactor. Key values never
// survive redact(), redact_file() or a RedactingStreambuf; the list is what children lose.
#include "util/secrets.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <sstream>
#include <string>

using optimas::util::is_secret_variable;
using optimas::util::redact;
using optimas::util::redact_file;
using optimas::util::register_secret_variable;

namespace {

using optimas::test::read_all;
using optimas::test::ScopedEnv;
using optimas::test::TempDir;

bool contains(const std::vector<std::string>& list, const std::string& x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}

} // namespace

TEST(Redact, ReplacesEveryKeyVariable) {
  ScopedEnv a("OPENAI_API_KEY", "sk-test-SECRET-123456");
  ScopedEnv b("GOOGLE_API_KEY", "AIza-test-google-000");
  ScopedEnv c("ANTHROPIC_API_KEY", "sk-ant-test-999999");
  EXPECT_EQ(redact("key sk-test-SECRET-123456 and again sk-test-SECRET-123456."),
            "key [REDACTED] and again [REDACTED].");
  EXPECT_EQ(redact("x-goog-api-key: AIza-test-google-000"), "x-goog-api-key: [REDACTED]");
  EXPECT_EQ(redact("{\"k\":\"sk-ant-test-999999\"}"), "{\"k\":\"[REDACTED]\"}");
}

TEST(Redact, ReplacesVariablesNamedLikeSecrets) {
  ScopedEnv a("MYPROXY_API_KEY", "proxy-key-abcdefgh");
  ScopedEnv b("HF_TOKEN", "hf_tokenvalue_1234");
  ScopedEnv c("VAULT_SECRET", "vault-secret-5678");
  ScopedEnv d("DB_PASSWORD", "db-password-0000");
  EXPECT_EQ(redact("proxy-key-abcdefgh hf_tokenvalue_1234 vault-secret-5678 db-password-0000"),
            "[REDACTED] [REDACTED] [REDACTED] [REDACTED]");
}

TEST(Redact, LeavesShortPlaceholdersAndOtherVariablesAlone) {
  // vLLM users often set a placeholder key; replacing "EMPTY" everywhere would garble messages.
  ScopedEnv a("LOCAL_API_KEY", "EMPTY");
  ScopedEnv b("OPTIMAS_TEST_PLAIN_VALUE", "a-long-ordinary-value");
  EXPECT_EQ(redact("EMPTY a-long-ordinary-value"), "EMPTY a-long-ordinary-value");
}

// The api_key_env case: a variable with no telltale name is a secret once it is registered.
TEST(Redact, ARegisteredVariableIsASecretWhateverItsName) {
  ScopedEnv a("OPTIMAS_TEST_LLM_PASS", "plain-named-value-42");
  ScopedEnv b("OPTIMAS_TEST_SHORT_PASS", "k123x");
  EXPECT_FALSE(is_secret_variable("OPTIMAS_TEST_LLM_PASS"));
  EXPECT_EQ(redact("Bearer plain-named-value-42"), "Bearer plain-named-value-42");
  register_secret_variable("OPTIMAS_TEST_LLM_PASS");
  register_secret_variable("OPTIMAS_TEST_SHORT_PASS");
  EXPECT_TRUE(is_secret_variable("OPTIMAS_TEST_LLM_PASS"));
  EXPECT_EQ(redact("Bearer plain-named-value-42"), "Bearer [REDACTED]");
  // A registered variable is known to hold a key, so a short one counts too.
  EXPECT_EQ(redact("Bearer k123x"), "Bearer [REDACTED]");
}

TEST(Redact, ReadsTheEnvironmentAtEachCall) {
  ScopedEnv a("LATE_API_KEY", nullptr);
  EXPECT_EQ(redact("late-key-0123456789"), "late-key-0123456789");
  ScopedEnv b("LATE_API_KEY", "late-key-0123456789");
  EXPECT_EQ(redact("late-key-0123456789"), "[REDACTED]");
}

TEST(Redact, ALongerKeyContainingAShorterOneGoesWhole) {
  ScopedEnv a("SHORT_TOKEN", "abcdefgh12");
  ScopedEnv b("LONG_TOKEN", "abcdefgh12-and-more");
  EXPECT_EQ(redact("abcdefgh12-and-more / abcdefgh12"), "[REDACTED] / [REDACTED]");
}

TEST(Redact, TheJsonFormOfAKeyWithAQuoteGoesToo) {
  ScopedEnv a("ODD_TOKEN", "abc\"def\\ghi-123");
  EXPECT_EQ(redact(R"({"k": "abc\"def\\ghi-123"})"), R"({"k": "[REDACTED]"})");
}

TEST(Redact, RedactingTwiceIsRedactingOnce) {
  ScopedEnv a("ODD_SECRET", "REDACTED"); // inside the replacement itself: left alone
  ScopedEnv b("OTHER_SECRET", "other-secret-value");
  const std::string once = redact("REDACTED other-secret-value");
  EXPECT_EQ(redact(once), once);
}

TEST(Redact, TextWithoutSecretsIsUnchanged) {
  ScopedEnv a("OPENAI_API_KEY", "sk-test-SECRET-123456");
  EXPECT_EQ(redact(""), "");
  EXPECT_EQ(redact("nothing to see"), "nothing to see");
}

TEST(SecretVariables, NamesEveryKeyVariableSetNow) {
  ScopedEnv a("OPENAI_API_KEY", "sk-test");
  ScopedEnv b("MY_TOKEN", "t");
  ScopedEnv c("DB_PASSWORD", "p");
  ScopedEnv d("optimas_test_secret", "s");
  ScopedEnv e("OPTIMAS_TEST_VISIBLE", "1");
  ScopedEnv f("OPTIMAS_TEST_NAMED_BY_OPTION", "v");
  register_secret_variable("OPTIMAS_TEST_NAMED_BY_OPTION");
  auto names = optimas::util::secret_variables();
  for (const char* n :
       {"OPENAI_API_KEY", "MY_TOKEN", "DB_PASSWORD", "optimas_test_secret", "OPTIMAS_TEST_NAMED_BY_OPTION"})
    EXPECT_TRUE(contains(names, n)) << n;
  for (const char* n : {"PATH", "HOME", "OPTIMAS_TEST_VISIBLE"}) EXPECT_FALSE(contains(names, n)) << n;
}

TEST(RedactFile, ReplacesKeysAcrossPiecesAndKeepsTheRest) {
  ScopedEnv a("OPTIMAS_TEST_FILE_TOKEN", "file-token-0123456789");
  TempDir dir;
  // The second key straddles the 1 MiB pieces the file is read in.
  std::string text = "start file-token-0123456789\n" + std::string((1 << 20) - 38, 'x') + "file-token-0123456789 end\n";
  ASSERT_LT(text.find("file-token-0123456789", 30), std::size_t{1} << 20);
  ASSERT_GT(text.find("file-token-0123456789", 30) + 21, std::size_t{1} << 20);
  std::string path = dir.file("program.log", text);
  std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_TRUE(redact_file(path));
  std::string want = "start [REDACTED]\n" + std::string((1 << 20) - 38, 'x') + "[REDACTED] end\n";
  EXPECT_EQ(read_all(path), want);
  EXPECT_EQ(std::filesystem::status(path).permissions(),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_FALSE(std::filesystem::exists(path + ".redacting"));
}

TEST(RedactFile, AFileWithoutKeysIsNotRewritten) {
  ScopedEnv a("OPTIMAS_TEST_FILE_TOKEN", "file-token-0123456789");
  TempDir dir;
  std::string path = dir.file("clean.log", "nothing secret\n");
  auto before = std::filesystem::last_write_time(path);
  EXPECT_FALSE(redact_file(path));
  EXPECT_EQ(std::filesystem::last_write_time(path), before);
  EXPECT_FALSE(redact_file((dir.path() / "missing.log").string()));
}

TEST(RedactingStreambuf, RedactsWhatIsPrintedLineByLine) {
  ScopedEnv a("OPTIMAS_TEST_STREAM_TOKEN", "stream-token-987654");
  std::ostringstream sink;
  {
    optimas::util::RedactingStreambuf buf(sink.rdbuf());
    std::ostream out(&buf);
    out << "Bearer stream-"
        << "token-987654 and more\n"; // split between two writes
    out << "tail stream-token-987654";
    EXPECT_EQ(sink.str(), "Bearer [REDACTED] and more\n");
  } // the rest on destruction
  EXPECT_EQ(sink.str(), "Bearer [REDACTED] and more\ntail [REDACTED]");
}
