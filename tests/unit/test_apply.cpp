#include "edit/apply.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

using namespace optimas;

namespace {

const std::string k_src = "#include <cstdio>\n"                                    // 1
                          "__global__ void k(float* a, const float* b, int n) {\n" // 2
                          "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"     // 3
                          "  if (i < n) a[i] = b[i] * 2.0f;\n"                     // 4
                          "}\n"                                                    // 5
                          "int main() { return 0; }\n";                            // 6

prompt::Edit find_edit(std::string find, std::string replace) {
  prompt::Edit e;
  e.file = "main.cu";
  e.kernel = "k";
  e.find = std::move(find);
  e.replace = std::move(replace);
  e.evidence = {"PC1"};
  return e;
}

prompt::Edit range_edit(std::int64_t first, std::int64_t last, std::string text) {
  prompt::Edit e;
  e.file = "main.cu";
  e.kernel = "k";
  e.line_start = first;
  e.line_end = last;
  e.new_text = std::move(text);
  e.evidence = {"RF1"};
  return e;
}

} // namespace

TEST(Apply, FindReplaceAndRangeAgainstTheOriginalLines) {
  prompt::Reply r;
  r.edits = {find_edit("float* a, const float* b", "float* __restrict__ a, const float* __restrict__ b"),
             range_edit(4, 4, "  if (i < n) a[i] = __ldg(&b[i]) * 2.0f;")};
  auto app = edit::apply_edits({{"main.cu", k_src}}, r, {"PC1", "RF1"});
  ASSERT_EQ(app.applied(), 2u);
  EXPECT_EQ(app.outcomes[0].first_line, 2);
  EXPECT_EQ(app.outcomes[1].first_line, 4);
  const std::string& out = app.result["main.cu"];
  EXPECT_NE(out.find("float* __restrict__ a, const float* __restrict__ b, int n) {\n"), std::string::npos);
  EXPECT_NE(out.find("  if (i < n) a[i] = __ldg(&b[i]) * 2.0f;\n}\n"), std::string::npos);
  EXPECT_EQ(app.original["main.cu"], k_src); // the original is untouched
  auto diff = edit::unified_diff(k_src, out, "main.cu");
  EXPECT_NE(diff.find("--- a/main.cu\n+++ b/main.cu\n@@ -1,6 +1,6 @@\n"), std::string::npos) << diff;
  EXPECT_NE(diff.find("-  if (i < n) a[i] = b[i] * 2.0f;\n+  if (i < n) a[i] = __ldg(&b[i]) * 2.0f;\n"),
            std::string::npos);
}

TEST(Apply, ClaimedEditsThatCannotBeAppliedAreRecorded) {
  prompt::Reply r;
  r.edits = {find_edit("a[i] = c[i]", "x"),             // never occurs: a hallucinated edit
             find_edit("i", "j"),                       // occurs many times
             range_edit(40, 41, "x"),                   // outside the file
             find_edit("int n", "int m"),               // fine
             range_edit(2, 2, "__global__ void k() {"), // overlaps the previous edit
             find_edit("return 0", "return 1")};
  r.edits[5].file = "other.cu";
  r.edits[3].evidence = {"PC9"};
  auto app = edit::apply_edits({{"main.cu", k_src}}, r, {"PC1", "RF1"});
  ASSERT_EQ(app.outcomes.size(), 6u);
  EXPECT_NE(app.outcomes[0].reason.find("does not occur"), std::string::npos);
  EXPECT_NE(app.outcomes[1].reason.find("occurs"), std::string::npos);
  EXPECT_NE(app.outcomes[1].reason.find("unique"), std::string::npos);
  EXPECT_NE(app.outcomes[2].reason.find("outside"), std::string::npos);
  EXPECT_TRUE(app.outcomes[3].applied);
  EXPECT_EQ(app.outcomes[3].unknown_evidence, (std::vector<std::string>{"PC9"}));
  EXPECT_NE(app.outcomes[4].reason.find("overlaps edit 4"), std::string::npos);
  EXPECT_NE(app.outcomes[5].reason.find("not one of the application's sources"), std::string::npos);
  EXPECT_EQ(app.applied(), 1u);
  EXPECT_EQ(app.not_applied(), 5u);
}

// Line ranges near the limits of int: no overflow, no edit applied somewhere else.
TEST(Apply, HugeLineRangesAreNotApplied) {
  prompt::Reply r;
  r.edits = {range_edit(4, 2147483647, "x"), range_edit(4294967349, 4294967349, "y"),
             range_edit(1, std::numeric_limits<std::int64_t>::max(), "z")};
  auto app = edit::apply_edits({{"main.cu", k_src}}, r, {"RF1"});
  EXPECT_EQ(app.applied(), 0u);
  for (const auto& o : app.outcomes) EXPECT_FALSE(o.reason.empty());
  EXPECT_EQ(app.result["main.cu"], k_src);
}

TEST(Apply, PathsMatchByFileName) {
  prompt::Reply r;
  r.edits = {find_edit("2.0f", "2.0f /* x */")};
  r.edits[0].file = "/work/main/examples/demo/main.cu";
  auto app = edit::apply_edits({{"main.cu", k_src}}, r, {});
  EXPECT_EQ(app.applied(), 1u);
}

TEST(Apply, DiffOfIdenticalTextsIsEmpty) {
  EXPECT_EQ(edit::unified_diff(k_src, k_src, "main.cu"), "");
}
