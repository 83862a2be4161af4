#include "util/json_text.hpp"

#include <gtest/gtest.h>

using optimas::util::escape_invalid_utf8;
using optimas::util::json_text;

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
