// Memory across runs: accepted edits of earlier runs recalled for kernels whose evidence resembles
// theirs, deterministically, with the reason shown.
#include "store/memory.hpp"

#include "store/corpus.hpp"
#include "store/journal.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace optimas;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json kernel(const std::string& name, const std::string& cls, const std::string& stall, double sectors = 4) {
  return {
      {"kernel", name},
      {"roofline", {{"class", cls}, {"access", {{"global_load_sectors_per_request", sectors}}}}},
      {"stalls",
       {{"kernel_stalls", {{stall, 900}, {"stall_selected", 100}}}, {"lines", json::array({json{{"stall", stall}}})}}}};
}

// A run in `root`: its run.json with one variant of `status` editing `edited`, and its diagnostics.
void add_run(const fs::path& root, const std::string& id, const json& kernels, const std::string& edited,
             const std::string& status, double speedup, bool aa = false, const std::string& campaign = "") {
  fs::create_directories(root / id / "iterations/1/attempt-1");
  json variant = {
      {"key", "i1a1"},
      {"dir", "iterations/1/attempt-1"},
      {"status", status},
      {"applied_edits",
       {{{"kernel", edited}, {"evidence", {"PC1"}}, {"rule", "restrict"}, {"rationale", "Loads wait. More."}}}},
      {"measurement",
       {{"speedup", speedup},
        {"ci", {speedup - 0.1, speedup + 0.1}},
        {"configs", {{"small", {{"speedup", speedup}}}, {"large", {{"speedup", speedup}}}}}}}};
  json run = {{"id", id}, {"app", "app-" + id}, {"aa", aa}, {"variants", json::array({variant})}};
  if (!campaign.empty()) run["campaign"] = {{"id", campaign}, {"cell", id}, {"seed", 1}};
  store::write_json_atomic((root / id / "run.json").string(), run);
  store::write_json_atomic((root / id / "diagnostics.json").string(), {{"kernels", kernels}});
  std::ofstream(root / id / "iterations/1/attempt-1/diff.patch") << "--- a/k.cu\n+++ b/k.cu\n-old\n+new\n";
}

} // namespace

// A campaign's cells run one after the other into one store; a later cell must not be shown an
// earlier cell's accepted edit, or the ablation's cells would differ by the order they ran in.
TEST(Memory, ACampaignCellLeavesOutTheRunsOfItsCampaign) {
  test::TempDir dir;
  const fs::path root = dir.path() / "runs";
  const json k = json::array({kernel("k", "memory-bound", "stall_long_scoreboard")});
  add_run(root, "bbbb0001", k, "k", "accepted", 1.5);                            // before the campaign
  add_run(root, "bbbb0002", k, "k", "accepted", 1.4, false, "rounds");           // a cell of this campaign
  add_run(root, "bbbb0003", k, "k", "accepted", 1.3, false, "another-campaign"); // of another
  store::RunStore st(root.string());

  auto run_ids = [](const std::vector<store::Memory>& memories) {
    std::vector<std::string> ids;
    for (const auto& m : memories) ids.push_back(m.run_id);
    return ids;
  };
  EXPECT_EQ(run_ids(store::collect_memories(st, "bbbb0009", "rounds")),
            (std::vector<std::string>{"bbbb0001", "bbbb0003"}));
  // A run of its own sees every run.
  EXPECT_EQ(run_ids(store::collect_memories(st, "bbbb0009")),
            (std::vector<std::string>{"bbbb0001", "bbbb0002", "bbbb0003"}));
}

TEST(Memory, FeaturesOfAKernel) {
  EXPECT_EQ(store::kernel_features(kernel("k", "memory-bound", "stall_long_scoreboard", 16)),
            (std::vector<std::string>{"access:uncoalesced_loads", "class:memory-bound", "line:long_scoreboard",
                                      "stall:long_scoreboard"}));
  EXPECT_TRUE(store::kernel_features(json::object()).empty());
  // Code-only diagnostics have neither roofline nor stalls: nothing to compare, and no throw.
  EXPECT_TRUE(store::kernel_features({{"kernel", "k"}, {"roofline", nullptr}, {"stalls", nullptr}}).empty());
  EXPECT_TRUE(store::kernel_features({{"roofline", {{"access", nullptr}}}, {"stalls", {{"lines", {1, "x"}}}}}).empty());
}

TEST(Memory, RecallsTheResemblingAcceptedEditsWithTheirReasons) {
  test::TempDir dir;
  const fs::path root = dir.path() / "runs";
  add_run(root, "aaaa0001", json::array({kernel("k1<4>", "memory-bound", "stall_long_scoreboard")}), "k1", "accepted",
          1.5);
  add_run(root, "aaaa0002", json::array({kernel("k2", "compute-bound", "stall_wait")}), "k2", "accepted", 2.0);
  add_run(root, "aaaa0003", json::array({kernel("k3", "memory-bound", "stall_long_scoreboard")}), "k3", "accepted", 9.0,
          true);
  add_run(root, "aaaa0004", json::array({kernel("k4", "memory-bound", "stall_long_scoreboard")}), "k4", "rejected",
          0.9);
  add_run(root, "aaaa0005", json::array({kernel("k5", "memory-bound", "stall_long_scoreboard")}), "k5", "accepted",
          1.2);
  store::RunStore st(root.string());

  auto memories = store::collect_memories(st, "aaaa0005"); // the current run is left out
  ASSERT_EQ(memories.size(), 2u);                          // neither the A/A run nor the rejected one
  EXPECT_EQ(memories[0].kernel, "k1");
  EXPECT_EQ(memories[0].edits, std::vector<std::string>{"k1 citing PC1 (rule restrict): Loads wait"});
  EXPECT_NE(memories[0].diff.find("+new"), std::string::npos);

  // A memory-bound kernel waiting on loads resembles k1 only; a compute-bound one waiting on
  // dependencies resembles k2 only; with both hot, both, the closer match first.
  json here = {{"kernels", json::array({kernel("mine", "memory-bound", "stall_long_scoreboard")})}};
  auto r = store::recall(memories, here, 3);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].memory.run_id, "aaaa0001");
  EXPECT_EQ(r[0].for_kernel, "mine");
  EXPECT_EQ(r[0].shared,
            (std::vector<std::string>{"class:memory-bound", "line:long_scoreboard", "stall:long_scoreboard"}));
  EXPECT_DOUBLE_EQ(r[0].score, 1.0);

  json both = {
      {"kernels",
       {kernel("mine", "memory-bound", "stall_long_scoreboard", 16), kernel("other", "compute-bound", "stall_wait")}}};
  r = store::recall(memories, both, 3);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].memory.kernel, "k2"); // all four features shared
  EXPECT_EQ(r[1].memory.kernel, "k1"); // three of four
  EXPECT_EQ(store::recall(memories, both, 1).size(), 1u);
  EXPECT_TRUE(
      store::recall(memories, {{"kernels", json::array({kernel("x", "latency-bound", "stall_barrier")})}}, 3).empty());

  std::string text = store::render_recall(r);
  EXPECT_NE(text.find("## Worked examples from earlier runs"), std::string::npos);
  EXPECT_NE(text.find("### k1 in app-aaaa0001 (run aaaa0001, variant i1a1): 1.500x [1.400, 1.600]"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Shown because: memory-bound, long_scoreboard on a line, long_scoreboard (as mine here)."),
            std::string::npos)
      << text;
  EXPECT_EQ(store::render_recall({}), "");
}

// An exported corpus carries each accepted variant's memories, so that another machine's runs can
// recall them (optimas run --memory-file): read back, they are the store's, once per variant and
// kernel although each measured configuration has a record of its own.
TEST(Memory, AnExportedCorpusGivesTheStoresMemoriesBack) {
  test::TempDir dir;
  const fs::path root = dir.path() / "runs";
  add_run(root, "aaaa0001", json::array({kernel("k1<4>", "memory-bound", "stall_long_scoreboard")}), "k1", "accepted",
          1.5);
  add_run(root, "aaaa0004", json::array({kernel("k4", "memory-bound", "stall_long_scoreboard")}), "k4", "rejected",
          0.9);
  store::RunStore st(root.string());
  const std::string path = (dir.path() / "corpus.jsonl").string();
  store::CorpusOptions all;
  all.all_variants = true;
  EXPECT_EQ(store::export_corpus_file(st, all, path), 4u); // two configurations a run
  auto from_file = store::corpus_memories(path);
  auto from_store = store::collect_memories(st);
  ASSERT_EQ(from_file.size(), 1u);
  ASSERT_EQ(from_store.size(), 1u);
  const auto &f = from_file[0], &s = from_store[0];
  EXPECT_EQ(f.run_id, "aaaa0001");
  EXPECT_EQ(f.app, s.app);
  EXPECT_EQ(f.variant, s.variant);
  EXPECT_EQ(f.kernel, "k1");
  EXPECT_EQ(f.features, s.features);
  EXPECT_DOUBLE_EQ(f.speedup, 1.5);
  EXPECT_DOUBLE_EQ(f.ci_low, 1.4);
  EXPECT_EQ(f.edits, s.edits);
  EXPECT_EQ(f.diff, s.diff);
  // Recalled for a kernel like k1, with the same reason as from the store.
  json here = {{"kernels", json::array({kernel("mine", "memory-bound", "stall_long_scoreboard")})}};
  auto r = store::recall(from_file, here, 3);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(store::render_recall(r), store::render_recall(store::recall(from_store, here, 3)));
  // Added to the store's, a memory the store has already is not shown twice.
  store::add_memories(from_store, from_file);
  EXPECT_EQ(from_store.size(), 1u);
}

TEST(Memory, ABrokenCorpusIsNamedWithItsLine) {
  test::TempDir dir;
  auto corpus = [&](const std::string& text) {
    const std::string path = (dir.path() / "c.jsonl").string();
    std::ofstream(path) << text;
    return path;
  };
  auto error_of = [](const std::string& path) {
    try {
      store::corpus_memories(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string good =
      R"({"memory": [{"kernel": "k", "features": ["class:memory-bound"], "speedup": 1.2, )"
      R"("ci": [1.1, 1.3], "edits": [], "diff": "", "run_id": "r", "app": "a", "variant": "i1a1"}]})";
  EXPECT_EQ(store::corpus_memories(corpus(good + "\n{\"App\": \"x\"}\n\n")).size(), 1u) << "a record without memory";
  EXPECT_NE(error_of(corpus(good + "\nnot json\n")).find("c.jsonl:2: not a corpus record"), std::string::npos);
  EXPECT_NE(error_of(corpus(R"({"memory": {}})")).find("c.jsonl:1: \"memory\" is not a list"), std::string::npos);
  std::string featureless = good;
  featureless.replace(featureless.find(R"(["class:memory-bound"])"), 22, "[]");
  EXPECT_NE(error_of(corpus(featureless)).find("c.jsonl:1: a memory has no features"), std::string::npos)
      << error_of(corpus(featureless));
  std::string no_speedup = good;
  no_speedup.replace(no_speedup.find("1.2"), 3, "-1");
  EXPECT_NE(error_of(corpus(no_speedup)).find("c.jsonl:1: a memory has no positive \"speedup\""), std::string::npos);
  EXPECT_NE(error_of((dir.path() / "none.jsonl").string()).find("cannot read the corpus"), std::string::npos);
}
