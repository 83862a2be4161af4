// Tests of llm/pricing: the price table (built in, from YAML, a user's file over it), pricing a
// call, and the totals of a run.
#include "llm/backend.hpp"
#include "llm/pricing.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace optimas::llm;

TEST(Pricing, TheBuiltInTableLoadsAndPricesKnownModels) {
  const PriceTable& table = PriceTable::builtin();
  auto gpt5 = table.find("openai", "gpt-5");
  ASSERT_TRUE(gpt5.has_value());
  EXPECT_GT(gpt5->output_per_mtok, gpt5->input_per_mtok);
  EXPECT_TRUE(table.find("anthropic", "claude-sonnet-4-5").has_value());
  EXPECT_TRUE(table.find("gemini", "gemini-2.5-pro").has_value());
  EXPECT_FALSE(table.find("openai", "gpt-unknown").has_value());
  EXPECT_FALSE(table.find("manual", "").has_value());

  auto local = table.find("ollama", "any-model:7b");
  ASSERT_TRUE(local.has_value()) << "local providers cost nothing";
  EXPECT_EQ(local->input_per_mtok, 0);
  EXPECT_EQ(local->output_per_mtok, 0);
  EXPECT_TRUE(table.find("openai-compatible", "whatever").has_value());
}

TEST(Pricing, PriceFillsCostFromTokens) {
  PriceTable table = PriceTable::from_yaml("openai:\n  models:\n    gpt-5: {input: 1.25, output: 10}\n", "t.yml");
  Usage u;
  u.input_tokens = 2'000'000;
  u.output_tokens = 500'000;
  price(u, "openai", "gpt-5", table);
  EXPECT_TRUE(u.cost_known);
  EXPECT_DOUBLE_EQ(u.cost_usd, 2 * 1.25 + 0.5 * 10);

  Usage unknown;
  unknown.input_tokens = 10;
  price(unknown, "openai", "gpt-7", table);
  EXPECT_FALSE(unknown.cost_known);
  EXPECT_EQ(unknown.cost_usd, 0);
}

TEST(Pricing, AUserFileOverridesEntryByEntry) {
  PriceTable table = PriceTable::builtin();
  auto mini_before = table.find("openai", "gpt-5-mini");
  ASSERT_TRUE(mini_before.has_value());
  table.merge(PriceTable::from_yaml(R"(
openai:
  models:
    gpt-5: {input: 1.0, output: 8.0}
    my-finetune: {input: 3, output: 12}
anthropic:
  default: {input: 3, output: 15}
)",
                                    "user.yml"));
  EXPECT_EQ(table.find("openai", "gpt-5")->input_per_mtok, 1.0);
  EXPECT_EQ(table.find("openai", "my-finetune")->output_per_mtok, 12);
  EXPECT_EQ(table.find("openai", "gpt-5-mini")->input_per_mtok, mini_before->input_per_mtok) << "kept";
  EXPECT_EQ(table.find("anthropic", "claude-future-9")->output_per_mtok, 15) << "provider default";

  optimas::test::TempDir dir;
  auto path = dir.file("prices.yml", "gemini:\n  models:\n    gemini-2.5-pro: {input: 2.5, output: 15}\n");
  EXPECT_EQ(PriceTable::with_overrides(path).find("gemini", "gemini-2.5-pro")->input_per_mtok, 2.5);
}

TEST(Pricing, MistakesNameTheFileAndLine) {
  auto fails_at = [](const std::string& text, std::size_t line, const std::string& words) {
    try {
      PriceTable::from_yaml(text, "my-prices.yml");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const optimas::ParseError& e) {
      EXPECT_EQ(e.file(), "my-prices.yml");
      EXPECT_EQ(e.line(), line) << e.what();
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  fails_at("openai:\n  models:\n    gpt-5: {input: 1.25}\n", 3, "needs both");
  fails_at("openai:\n  models:\n    gpt-5: {input: -1, output: 2}\n", 3, "negative");
  fails_at("openai:\n  models:\n    gpt-5: {input: cheap, output: 2}\n", 3, "not a number");
  fails_at("openai:\n  model:\n    gpt-5: {input: 1, output: 2}\n", 2, "unknown field \"model\"");
  fails_at("openai:\n  models:\n    gpt-5: {input: 1, outptu: 2}\n", 3, "unknown field \"outptu\"");
  fails_at("openai: [1, 2\n", 2, "");
}

TEST(Pricing, RunTotalsSumCallsAndCountReplaysApart) {
  UsageTotals totals;
  Response a;
  a.usage = {1000, 100, 0.5, true};
  Response b;
  b.usage = {2000, 200, 1.0, true};
  Response replay = a;
  replay.from_cache = true;
  totals.add(a);
  totals.add(b);
  totals.add(replay);
  EXPECT_EQ(totals.calls, 2);
  EXPECT_EQ(totals.cached_calls, 1);
  EXPECT_EQ(totals.input_tokens, 3000u);
  EXPECT_EQ(totals.output_tokens, 300u);
  EXPECT_DOUBLE_EQ(totals.cost_usd, 1.5);
  EXPECT_TRUE(totals.cost_known);
  totals.add(Usage{5, 5, 0, false});
  EXPECT_FALSE(totals.cost_known) << "one unknown price makes the total a lower bound";
}

TEST(Pricing, TheBuiltinOptimizerCostsNothingAndManualIsUnknown) {
  // A run with the builtin backend has a known cost, $0, wherever it is added up (ask, optimize,
  // run); a chat window's is unknown.
  Usage u{4000, 900, 0, false};
  price(u, "builtin", "", PriceTable::builtin());
  EXPECT_TRUE(u.cost_known);
  EXPECT_EQ(u.cost_usd, 0);
  Usage chat{4000, 900, 0, false};
  price(chat, "manual", "", PriceTable::builtin());
  EXPECT_FALSE(chat.cost_known);
}

TEST(Pricing, AnExactModelWinsOverItsProvidersDefault) {
  PriceTable table = PriceTable::from_yaml(R"(
acme:
  default: {input: 1, output: 2}
  models:
    big: {input: 10, output: 20}
)",
                                           "t.yml");
  EXPECT_EQ(table.find("acme", "big")->input_per_mtok, 10);
  EXPECT_EQ(table.find("acme", "small")->output_per_mtok, 2);
  EXPECT_FALSE(table.find("other", "big").has_value());
  // A later default replaces the provider's default and keeps its models.
  table.merge(PriceTable::from_yaml("acme:\n  default: {input: 3, output: 4}\n", "u.yml"));
  EXPECT_EQ(table.find("acme", "small")->input_per_mtok, 3);
  EXPECT_EQ(table.find("acme", "big")->input_per_mtok, 10);
  EXPECT_FALSE(PriceTable::from_yaml("", "empty.yml").find("openai", "gpt-5").has_value());
}

TEST(Pricing, AMissingUserFileIsAnErrorNamingIt) {
  try {
    PriceTable::with_overrides("/nonexistent/my-prices.yml");
    ADD_FAILURE() << "a missing price file was accepted";
  } catch (const optimas::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/my-prices.yml"), std::string::npos) << e.what();
  }
}

TEST(Pricing, TotalsOfOnlyReplayedCallsCostNothing) {
  UsageTotals totals;
  Response replay;
  replay.usage = {1000, 100, 0, false}; // as stored: never priced
  replay.from_cache = true;
  totals.add(replay);
  totals.add(replay);
  EXPECT_EQ(totals.calls, 0);
  EXPECT_EQ(totals.cached_calls, 2);
  EXPECT_EQ(totals.input_tokens, 0u);
  EXPECT_EQ(totals.cost_usd, 0);
  EXPECT_TRUE(totals.cost_known) << "nothing was paid this run, and that is known";
}
