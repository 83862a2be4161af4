// Tests of llm/secrets: key values never survive redact().
#include "llm/secrets.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

using optimas::llm::redact;

namespace {

using optimas::test::ScopedEnv;

} // namespace

TEST(Redact, ReplacesEveryRegistryKeyVariable) {
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
  EXPECT_EQ(redact("proxy-key-abcdefgh hf_tokenvalue_1234 vault-secret-5678"), "[REDACTED] [REDACTED] [REDACTED]");
}

TEST(Redact, LeavesShortPlaceholdersAndOtherVariablesAlone) {
  // vLLM users often set a placeholder key; replacing "EMPTY" everywhere would garble messages.
  ScopedEnv a("LOCAL_API_KEY", "EMPTY");
  ScopedEnv b("OPTIMAS_TEST_PLAIN_VALUE", "a-long-ordinary-value");
  ScopedEnv c("OPENAI_API_KEY", "abc");
  EXPECT_EQ(redact("EMPTY a-long-ordinary-value abc"), "EMPTY a-long-ordinary-value abc");
}

TEST(Redact, ShortButRealRegistryKeysAreStillReplaced) {
  ScopedEnv a("OPENAI_API_KEY", "k123x");
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

TEST(Redact, TextWithoutSecretsIsUnchanged) {
  ScopedEnv a("OPENAI_API_KEY", "sk-test-SECRET-123456");
  EXPECT_EQ(redact(""), "");
  EXPECT_EQ(redact("nothing to see"), "nothing to see");
}
