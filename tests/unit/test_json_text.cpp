#include "util/json_text.hpp"

#include <gtest/gtest.h>

using optimas::util::escape_invalid_utf8;
using optimas::util::json_text;
using optimas::util::parse_json;

// A kernel name or a session page with a byte that is not UTF-8 broke --json ("internal error"):
// nlohmann::json refuses to write it. Now the byte is written as \xNN and nothing else changes.
TEST(JsonText, InvalidUtf8BytesAreWrittenAsEscapes) {
  nlohmann::json j = {{"kernel", std::string("k\xff\xfe_name")}, {std::string("ke\xc3y"), {"ok", std::string("\x80")}}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);
  std::string text = json_text(j, -1);
  auto back = nlohmann::json::parse(text);
  EXPECT_EQ(back["kernel"], "k\\xff\\xfe_name");
  EXPECT_EQ(back["ke\\xc3y"][1], "\\x80");
  EXPECT_EQ(back["ke\\xc3y"][0], "ok");
}

TEST(JsonText, ValidTextIsUnchanged) {
  nlohmann::json j = {{"name", "a \u00e9 \u4e2d \U0001F680"}, {"n", 3}};
  EXPECT_EQ(json_text(j), j.dump(2));
  EXPECT_EQ(escape_invalid_utf8("plain \u00e9"), "plain \u00e9");
  // Overlong forms, surrogates and truncated sequences are not valid UTF-8.
  EXPECT_EQ(escape_invalid_utf8("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(escape_invalid_utf8("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(escape_invalid_utf8("ab\xe4\xb8"), "ab\\xe4\\xb8");
}

// Deep documents are refused as they are read: nlohmann::json parses any depth, but copying,
// comparing and writing recurse (a reply of a million brackets overflowed the stack).
TEST(JsonText, ParseRefusesDeepDocuments) {
  auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_EQ(parse_json(nested(256)).dump(), nested(256)); // the root is depth 0
  EXPECT_THROW(parse_json(nested(258)), nlohmann::json::parse_error);
  try {
    parse_json("{\"a\": " + nested(1000000) + "}");
    ADD_FAILURE() << "a million levels parsed";
  } catch (const nlohmann::json::parse_error& e) {
    EXPECT_NE(std::string(e.what()).find("nested more than 256 levels deep"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(parse_json(nested(1000000), false).is_discarded());
  // As json::parse does with allow_exceptions false: malformed text and numbers past double's
  // range give a discarded value, never an exception.
  EXPECT_TRUE(parse_json("{\"a\": ", false).is_discarded());
  EXPECT_TRUE(parse_json("[1e400]", false).is_discarded());
  EXPECT_EQ(parse_json(R"({"a": [1, {"b": null}]})")["a"][1], nlohmann::json({{"b", nullptr}}));
}
