#include "prompt/reply.hpp"

#include <gtest/gtest.h>

using namespace optimas::prompt;

namespace {

const char* k_reply = R"JSON({
  "summary": "Loads stall on long scoreboard; mark inputs read-only.",
  "edits": [
    {"file": "main.cu", "kernel": "triad_kernel",
     "find": "__global__ void triad_kernel(double* a, const double* b, const double* c, double scalar, int n)",
     "replace": "__global__ void triad_kernel(double* __restrict__ a, const double* __restrict__ b, const double* __restrict__ c, double scalar, int n)",
     "line_start": null, "line_end": null, "new_text": null,
     "evidence": ["PC1", "RF1"], "rationale": "No aliasing lets loads be reordered.",
     "expected_effect": [{"metric": "stall_long_scoreboard", "direction": "decrease"}]},
    {"file": "main.cu", "kernel": "add_kernel", "find": null, "replace": null,
     "line_start": 48, "line_end": 48, "new_text": "  if (i < n) c[i] = a[i] + b[i];",
     "evidence": ["PC5"], "rationale": "Same line.", "expected_effect": []}
  ],
  "withheld": [{"suggestion": "Use FMA contraction", "reason": "changes results", "evidence": ["RF1"]}]
})JSON";

} // namespace

TEST(Reply, PlainJson) {
  auto p = parse_reply(k_reply);
  ASSERT_TRUE(p.ok()) << (p.errors.empty() ? "" : p.errors[0]);
  EXPECT_EQ(p.format, "json");
  ASSERT_EQ(p.reply->edits.size(), 2u);
  EXPECT_FALSE(p.reply->edits[0].is_range());
  EXPECT_EQ(p.reply->edits[0].evidence, (std::vector<std::string>{"PC1", "RF1"}));
  EXPECT_EQ(p.reply->edits[0].expected_effect[0].direction, "decrease");
  EXPECT_TRUE(p.reply->edits[1].is_range());
  EXPECT_EQ(p.reply->edits[1].line_start, 48);
  EXPECT_EQ(p.reply->withheld[0].reason, "changes results");
  // Round trip.
  auto again = parse_reply(to_json(*p.reply).dump());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(to_json(*again.reply), to_json(*p.reply));
}

// A reply is untrusted text: one nested a million levels deep overflowed the stack when its
// document was copied for the schema check. It is refused like any reply that is not JSON.
TEST(Reply, DeepNestingIsRefusedNotACrash) {
  for (std::string deep : {"{\"edits\": [], \"x\": " + std::string(1000000, '[') + std::string(1000000, ']') + "}",
                           "{\"edits\": [{\"file\": " + std::string(300, '{') + "}]}"}) {
    auto p = parse_reply(deep);
    EXPECT_FALSE(p.ok());
    EXPECT_FALSE(p.errors.empty());
  }
}

// The builtin optimizer names the rule of each edit; a model's reply has none, and the schema
// models are held to stays closed (no "rule" in it).
TEST(Reply, RuleIsKeptAsideFromTheSchema) {
  EXPECT_FALSE(reply_schema()["properties"]["edits"]["items"]["properties"].contains("rule"));
  auto p = parse_reply(k_reply);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p.reply->edits[0].rule.empty());
  EXPECT_FALSE(to_json(*p.reply)["edits"][0].contains("rule"));
  p.reply->edits[0].rule = "restrict";
  auto again = parse_reply(to_json(*p.reply).dump());
  ASSERT_TRUE(again.ok()) << again.errors[0];
  EXPECT_EQ(again.reply->edits[0].rule, "restrict");
  EXPECT_TRUE(again.reply->edits[1].rule.empty());
  nlohmann::json bad = to_json(*p.reply);
  bad["edits"][0]["rule"] = 7;
  auto wrong = parse_reply(bad.dump());
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.errors[0], "edits[0].rule: expected string or null, found a number");
  // addresses (the builtin's PC items an edit acts on) travels the same way.
  p.reply->edits[0].addresses = {"PC2", "PC5"};
  auto with = parse_reply(to_json(*p.reply).dump());
  ASSERT_TRUE(with.ok()) << with.errors[0];
  EXPECT_EQ(with.reply->edits[0].addresses, (std::vector<std::string>{"PC2", "PC5"}));
  EXPECT_TRUE(with.reply->edits[1].addresses.empty());
  bad = to_json(*p.reply);
  bad["edits"][0]["addresses"] = "PC2";
  wrong = parse_reply(bad.dump());
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.errors[0], "edits[0].addresses: expected an array, found a string");
}

TEST(Reply, FencedBlockAfterProse) {
  std::string text = std::string("Here is my analysis of the kernel.\n\n```json\n") + k_reply + "\n```\nHope it helps.";
  auto p = parse_reply(text);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.format, "fenced-json");
  auto bare = parse_reply(std::string("Sure! ") + k_reply + " Done.");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare.format, "prose+json");
}

TEST(Reply, SchemaErrorsSayWhatIsWrong) {
  auto p = parse_reply(R"({"summary": "x", "edits": [{"file": "main.cu", "kernel": "k", "find": "a", "replace": "b",
    "line_start": null, "line_end": null, "new_text": null, "evidence": "PC1", "rationale": "r",
    "expected_effect": [{"metric": "m", "direction": "sideways"}]}], "withheld": [], "extra": 1})");
  EXPECT_FALSE(p.ok());
  auto has = [&](const std::string& s) {
    for (const auto& e : p.errors)
      if (e.find(s) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("edits[0].evidence: expected array, found a string"));
  EXPECT_TRUE(has("edits[0].expected_effect[0].direction: \"sideways\" is not one of"));
  EXPECT_TRUE(has("unexpected property \"extra\""));
}

TEST(Reply, EachEditUsesExactlyOneForm) {
  auto p =
      parse_reply(R"({"summary": "", "withheld": [], "edits": [{"file": "f", "kernel": "k", "find": "a", "replace": "b",
    "line_start": 3, "line_end": 4, "new_text": "x", "evidence": [], "rationale": "", "expected_effect": []}]})");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.errors[0].find("not both"), std::string::npos);
}

// A NUL byte ("\u0000" in JSON) in any text of an edit is refused with the field's name: it was
// written into the source (issue 32).
TEST(Reply, NulBytesAreRefused) {
  auto with = [](const std::string& file, const std::string& find, const std::string& replace,
                 const std::string& new_text) {
    return parse_reply(R"({"summary": "", "withheld": [], "edits": [{"file": ")" + file + R"(", "kernel": "k",
      "find": ")" + find +
                       R"(", "replace": ")" + replace + R"(", "line_start": null, "line_end": null,
      "new_text": )" + new_text +
                       R"(, "evidence": ["PC1"], "rationale": "", "expected_effect": []}]})");
  };
  EXPECT_TRUE(with("main.cu", "a", "b", "null").ok());
  for (auto [field, p] :
       std::vector<std::pair<std::string, ParsedReply>>{{"replace", with("main.cu", "a", "b\\u0000c", "null")},
                                                        {"find", with("main.cu", "a\\u0000", "b", "null")},
                                                        {"file", with("main.cu\\u0000.txt", "a", "b", "null")}}) {
    ASSERT_FALSE(p.ok()) << field;
    EXPECT_NE(p.errors[0].find("edits[0]." + field + ": contains a NUL byte"), std::string::npos) << p.errors[0];
  }
}

// Line numbers from a model are untrusted: 2^31 - 1, 2^32 + 53 (which wrapped to 53 in a 32-bit
// int and was applied) and 2^64 - 1 are errors, not edits of some other line.
TEST(Reply, LineNumbersOutOfRangeAreErrors) {
  auto with_range = [](const std::string& start, const std::string& end) {
    return parse_reply(R"({"summary": "", "withheld": [], "edits": [{"file": "f", "kernel": "k", "find": null,
      "replace": null, "line_start": )" +
                       start + R"(, "line_end": )" + end + R"(, "new_text": "x", "evidence": [],
      "rationale": "", "expected_effect": []}]})");
  };
  EXPECT_TRUE(with_range("3", "4").ok());
  for (auto [start, end] : std::vector<std::pair<std::string, std::string>>{{"1", "2147483647"},
                                                                            {"4294967349", "4294967349"},
                                                                            {"1", "18446744073709551615"},
                                                                            {"-3", "4"},
                                                                            {"2.5", "4"}}) {
    auto p = with_range(start, end);
    ASSERT_FALSE(p.ok()) << start << ".." << end;
    bool said = false;
    for (const auto& e : p.errors)
      said = said || e.find("is not valid") != std::string::npos || e.find("edits[0].line_start") != std::string::npos;
    EXPECT_TRUE(said) << start << ".." << end << ": " << p.errors[0];
  }
}

// A line number past the range was reported as "line range -1..-1": the error shows what the
// reply gave.
TEST(Reply, LineNumbersOutOfRangeAreShownAsGiven) {
  auto p = parse_reply(R"({"summary": "", "withheld": [], "edits": [{"file": "f", "kernel": "k", "find": null,
    "replace": null, "line_start": 1000000000000, "line_end": 1000000000000, "new_text": "x", "evidence": [],
    "rationale": "", "expected_effect": []}]})");
  ASSERT_FALSE(p.ok());
  ASSERT_EQ(p.errors.size(), 1u) << p.errors[1];
  EXPECT_NE(p.errors[0].find("edits[0]: line range 1000000000000..1000000000000 is not valid"), std::string::npos)
      << p.errors[0];
  EXPECT_EQ(p.errors[0].find("-1"), std::string::npos) << p.errors[0];
}

TEST(Reply, OversizedRepliesAreRefusedUnparsed) {
  std::string huge = std::string(k_reply) + std::string(k_max_reply_bytes, ' ');
  auto p = parse_reply(huge);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.errors[0].find("replies over 8 MB are refused"), std::string::npos) << p.errors[0];
}

TEST(Reply, CodeBlockFallbackAndGarbage) {
  auto code = parse_reply("I rewrote it:\n```cuda\n__global__ void k(float* a) { a[0] = 1; }\n```\n");
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(code.format, "code-block");
  ASSERT_TRUE(code.reply->full_source);
  EXPECT_NE(code.reply->full_source->find("__global__"), std::string::npos);
  auto none = parse_reply("I cannot help with that.");
  EXPECT_FALSE(none.ok());
  EXPECT_EQ(none.format, "none");
  EXPECT_FALSE(parse_reply("").ok());
  auto truncated = parse_reply(std::string(k_reply).substr(0, 300));
  EXPECT_FALSE(truncated.ok());
}

TEST(Reply, ValidatorOnTheSchemaItself) {
  EXPECT_EQ(reply_schema()["required"], (nlohmann::json{"summary", "edits", "withheld"}));
  EXPECT_TRUE(
      validate(
          nlohmann::json{{"summary", ""}, {"edits", nlohmann::json::array()}, {"withheld", nlohmann::json::array()}},
          reply_schema())
          .empty());
  EXPECT_EQ(validate(nlohmann::json::array(), reply_schema()).size(), 1u);
}

// Found by fuzz_reply: a float line number past long long's range (4e125) was cast to long long to
// see whether it is whole (undefined behaviour; on x86 it then failed as "not an integer").
// It is an integer by JSON Schema, and the edit's range check rejects it.
TEST(Reply, HugeFloatIsAnIntegerWithoutOverflow) {
  const nlohmann::json integer = {{"type", "integer"}};
  EXPECT_TRUE(validate(nlohmann::json(4.44444e125), integer).empty());
  EXPECT_TRUE(validate(nlohmann::json(-1e300), integer).empty());
  EXPECT_FALSE(validate(nlohmann::json(2.5), integer).empty());
  auto p = parse_reply(R"({"summary": "", "withheld": [], "edits": [{"file": "f", "kernel": "k", "find": null,
    "replace": null, "line_start": 1, "line_end": 4.44444e125, "new_text": "x", "evidence": [], "rationale": "",
    "expected_effect": []}]})");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.errors[0].find("line range"), std::string::npos) << p.errors[0];
}
