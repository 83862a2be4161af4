#include "serve/html.hpp"

#include <gtest/gtest.h>

using namespace optimas::serve;

TEST(ServeHtml, MarkupInUntrustedTextShowsAsText) {
  std::string out = escape("<script>alert('x')</script> & \"q\"");
  EXPECT_EQ(out, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
  EXPECT_EQ(out.find('<'), std::string::npos);
}

TEST(ServeHtml, InvalidUtf8AndControlBytesBecomeReplacementCharacters) {
  EXPECT_EQ(escape("a\xff" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(escape("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD"); // a cut sequence
  EXPECT_EQ(escape("x\x01y"), "x\xEF\xBF\xBDy");
  EXPECT_EQ(escape("caf\xC3\xA9 \xE2\x86\x92\n\t"), "caf\xC3\xA9 \xE2\x86\x92\n\t"); // valid text stays
}

TEST(ServeHtml, AnchorsHoldOnlySafeCharacters) {
  EXPECT_EQ(anchor("i1a1"), "i1a1");
  EXPECT_EQ(anchor("a\"><x"), "a___x");
}

TEST(ServeHtml, NumbersAndSpeedups) {
  EXPECT_EQ(si(4.29e12), "4.29 T");
  EXPECT_EQ(si(12), "12");
  EXPECT_EQ(speedup_text(nlohmann::json(3.4514)), "3.45x");
  EXPECT_EQ(speedup_text(nlohmann::json()), "\xE2\x80\x93");
  EXPECT_EQ(text_of(nlohmann::json("<b>")), "<b>"); // text_of does not escape: callers do
}

TEST(ServeHtml, PagesCarryTheirStyleAndNoScript) {
  std::string p = page("t <x>", "<p>body</p>");
  EXPECT_NE(p.find("<title>t &lt;x&gt;</title>"), std::string::npos);
  EXPECT_NE(p.find("<style>"), std::string::npos);
  EXPECT_EQ(p.find("<script"), std::string::npos);
  EXPECT_NE(p.find("href=\"/compare\""), std::string::npos);
  std::string report = page("t", "<p>body</p>", false);
  EXPECT_EQ(report.find("href=\"/"), std::string::npos);
}
