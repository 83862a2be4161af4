#include "edit/apply.hpp"
#include "util/process.hpp"

#include "test_helpers.hpp"

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
  EXPECT_NE(app.outcomes[5].reason.find("not one of the prompt's sources"), std::string::npos);
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

// Found by fuzz_reply: an edit whose line_start the parser marked invalid (-1) and that has no
// find text was taken as a find/replace edit and its empty find dereferenced (a segfault).
TEST(Apply, EditWithNeitherFormIsNotApplied) {
  prompt::Reply r;
  r.edits = {range_edit(-1, 5, "x"), range_edit(0, 0, "y")};
  auto app = edit::apply_edits({{"main.cu", k_src}}, r, {"RF1"});
  ASSERT_EQ(app.outcomes.size(), 2u);
  for (const auto& o : app.outcomes) {
    EXPECT_FALSE(o.applied);
    EXPECT_NE(o.reason.find("neither find/replace nor a valid line range"), std::string::npos) << o.reason;
  }
  EXPECT_EQ(app.result["main.cu"], k_src);
}

// A path that ends in a source's name may be another file of that name: only the name the
// prompt shows is applied (issue 32: /tmp/x/main.cu and ../../x/main.cu edited main.cu).
TEST(Apply, OnlyThePromptsFileNamesAreApplied) {
  for (const char* file : {"/work/main/examples/demo/main.cu", "/tmp/x/main.cu", "../../x/main.cu"}) {
    prompt::Reply r;
    r.edits = {find_edit("2.0f", "2.0f /* x */")};
    r.edits[0].file = file;
    auto app = edit::apply_edits({{"main.cu", k_src}}, r, {});
    EXPECT_EQ(app.applied(), 0u) << file;
    EXPECT_TRUE(app.outcomes[0].unknown_file) << file;
    EXPECT_NE(app.outcomes[0].reason.find("not one of the prompt's sources (main.cu)"), std::string::npos)
        << app.outcomes[0].reason;
    EXPECT_EQ(app.result["main.cu"], k_src);
  }
}

TEST(Apply, DiffOfIdenticalTextsIsEmpty) {
  EXPECT_EQ(edit::unified_diff(k_src, k_src, "main.cu"), "");
}

// A diff is a real patch: `patch` turns the before into the after, for a local edit (the common
// head and tail are context) and for a rewrite too large for the LCS table, which is written as
// one removal and one addition instead of a table of lines x lines (a 20 MB reply took 8 GB).
TEST(Apply, DiffsApplyWithPatchAndStayBounded) {
  auto lines = [](int from, int count, const char* tag) {
    std::string out;
    for (int i = from; i < from + count; ++i) out += std::string(tag) + " " + std::to_string(i) + "\n";
    return out;
  };
  std::string local_before = lines(0, 3000, "line"), local_after = local_before;
  local_after.replace(local_after.find("line 1500\n"), 10, "changed 1500\nadded\n");
  std::string big_before = lines(0, 5000, "old"), big_after = "kept\n" + lines(0, 5000, "new") + "kept\n";
  big_before = "kept\n" + big_before + "kept\n";
  for (auto [before, after] : std::vector<std::pair<std::string, std::string>>{{local_before, local_after},
                                                                                  {big_before, big_after}}) {
    test::TempDir dir;
    std::string diff = edit::unified_diff(before, after, "f.txt");
    ASSERT_FALSE(diff.empty());
    dir.file("f.txt", before);
    std::string patch = dir.file("d.patch", diff);
    util::ProcessSpec spec = util::shell("patch -s -p1 < " + patch);
    spec.cwd = dir.path().string();
    auto r = util::run_process(spec);
    ASSERT_TRUE(r.ok()) << r.describe() << r.out << r.err;
    EXPECT_EQ(test::read_all((dir.path() / "f.txt").string()), after);
  }
  // The same hunk GNU diff -u writes.
  EXPECT_NE(edit::unified_diff(local_before, local_after, "f.txt").find("@@ -1498,7 +1498,8 @@"), std::string::npos);
}
