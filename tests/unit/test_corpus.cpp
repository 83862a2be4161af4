// Tests of store/corpus: the paper's keys first and in order, run-time formatting, the record of
// a run without a measured variant, best-only versus every measured variant, run selection.
#include "store/corpus.hpp"
#include "store/run_store.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

using namespace optimas;
using namespace optimas::store;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

const std::vector<std::string> k_paper_keys = {"App",      "Prompt",  "LLM",     "HW",     "SW",      "Compile", "Exec",
                                               "Opt_Code", "Applied", "Ignored", "Errors", "Base_RT", "Opt_RT"};
const std::vector<std::string> k_our_keys = {
    "run_id",  "variant", "config",  "held_out", "backend", "aa",  "diagnostics",    "verdict",
    "speedup", "ci_low",  "ci_high", "p_value",  "status",  "ear", "speed_of_light", "sha256"};

// Two variants: the first failed to build, the second (the best) was measured on two configs.
json improved_run() {
  return json::parse(R"json({
    "schema": "optimas.run/1", "id": "run-improved", "app": "stream", "started": "2026-11-30T01:00:00Z",
    "status": "finished", "outcome": "improved", "backend": "builtin", "model": "builtin",
    "diagnostics": "PC+IA+Roofline", "hw": "NVIDIA H200", "sw": "nvcc 13.0, ncu 2025.3.1.0", "sha256": "feed",
    "baseline": {"compile": "nvcc -O3 -o stream main.cu",
                 "configs": {"default": {"command": "./stream --n 10 --out o", "held_out": false},
                             "large": {"command": "./stream --n 1000 --out o", "held_out": true}}},
    "best": "i1a2", "verdict": "faster", "speedup": 1.12, "ci": [1.05, 1.2], "p_value": 0.008,
    "variants": [
      {"key": "i1a1", "iteration": 1, "attempt": 1, "status": "build_failed", "reason": "nvcc exited 1",
       "errors": "main.cu:3: error: expected ';'", "prompt": "iterations/1/attempt-1/prompt.md",
       "source": "iterations/1/attempt-1/src"},
      {"key": "i1a2", "iteration": 1, "attempt": 2, "status": "accepted", "reason": "faster",
       "prompt": "iterations/1/attempt-2/prompt.md", "source": "iterations/1/attempt-2/src",
       "applied_edits": [
         {"kernel": "triad", "evidence": ["PC1", "RF2"],
          "rationale": "Loads are strided by 32, so each warp touches 32 sectors. Coalescing fixes that."},
         {"kernel": "copy", "evidence": [], "rationale": "Use 1.5x wider\nvector loads"}],
       "ignored": [{"suggestion": "unroll the loop", "reason": "no evidence"}],
       "measurement": {"verdict": "faster", "speedup": 1.12, "ci": [1.05, 1.2], "p_value": 0.008,
         "configs": {
           "default": {"verdict": "faster", "speedup": 1.127, "ci": [1.05, 1.2], "p_value": 0.008,
                       "base_ms": 12.4, "variant_ms": 11.0},
           "large": {"verdict": "no significant change", "speedup": 1.01, "ci": [0.98, 1.04], "p_value": 0.4,
                     "base_ms": 1234.56, "variant_ms": 1222.2}}},
       "ear": {"evidence_coverage": 1.0, "correct": true}},
      {"key": "i2a1", "iteration": 2, "attempt": 1, "status": "rejected", "reason": "slower",
       "prompt": "iterations/2/attempt-1/prompt.md", "source": "iterations/2/attempt-1/src",
       "measurement": {"verdict": "slower", "speedup": 0.9,
         "configs": {"default": {"verdict": "slower", "speedup": 0.9, "base_ms": 12.4, "variant_ms": 13.8}}}}
    ]})json");
}

// No measured variant: the only one failed the guardrails.
json failed_run() {
  return json::parse(R"json({
    "id": "run-failed", "app": "stencil", "started": "2026-11-30T00:00:00Z", "status": "finished",
    "outcome": "failed", "backend": "openai", "model": "gpt-x", "best": null,
    "baseline": {"compile": "make", "configs": {"default": {"command": "./stencil"}}},
    "variants": [
      {"key": "i1a1", "status": "build_failed", "reason": "nvcc exited 2"},
      {"key": "i1a2", "status": "guardrail_rejected", "reason": "signature of k changed",
       "errors": "main.cu:10: k: parameter 2 changed", "prompt": "iterations/1/attempt-2/prompt.md",
       "ignored": ["tile the loop (withheld: no counter supports it)"]}
    ]})json");
}

std::vector<std::string> keys_of(const ordered_json& record) {
  std::vector<std::string> keys;
  for (const auto& item : record.items()) keys.push_back(item.key());
  return keys;
}

std::vector<ordered_json> parse_lines(const std::string& text) {
  std::vector<ordered_json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(ordered_json::parse(line));
  return out;
}

void put(RunStore& store, const json& run) {
  store.create_run(run["id"].get<std::string>());
  write_json_atomic(store.run_dir(run["id"].get<std::string>()) + "/run.json", run);
}

} // namespace

TEST(Corpus, FormatsRunTimesWithFourSignificantDigits) {
  EXPECT_EQ(format_runtime_ms(12.4), "12.4ms");
  EXPECT_EQ(format_runtime_ms(12.3456), "12.35ms");
  EXPECT_EQ(format_runtime_ms(11.0), "11ms");
  EXPECT_EQ(format_runtime_ms(0.5), "0.5ms");
  EXPECT_EQ(format_runtime_ms(1234.56), "1235ms");
  EXPECT_EQ(format_runtime_ms(123456.7), "123457ms"); // no exponent for long runs
}

TEST(Corpus, BestVariantGivesOneRecordPerConfigWithThePaperKeysFirst) {
  auto records = corpus_records("run-improved", improved_run(), false);
  ASSERT_EQ(records.size(), 2u);
  std::vector<std::string> expected = k_paper_keys;
  expected.insert(expected.end(), k_our_keys.begin(), k_our_keys.end());
  EXPECT_EQ(keys_of(records[0]), expected);

  const ordered_json& r = records[0];
  EXPECT_EQ(r["App"], "stream");
  EXPECT_EQ(r["Prompt"], "run-improved/iterations/1/attempt-2/prompt.md");
  EXPECT_EQ(r["LLM"], "builtin");
  EXPECT_EQ(r["HW"], "NVIDIA H200");
  EXPECT_EQ(r["SW"], "nvcc 13.0, ncu 2025.3.1.0");
  EXPECT_EQ(r["Compile"], "nvcc -O3 -o stream main.cu");
  EXPECT_EQ(r["Exec"], "./stream --n 10 --out o");
  EXPECT_EQ(r["Opt_Code"], "run-improved/iterations/1/attempt-2/src");
  EXPECT_EQ(r["Applied"], ordered_json({"triad: Loads are strided by 32, so each warp touches 32 sectors [PC1,RF2]",
                                        "copy: Use 1.5x wider vector loads"}));
  EXPECT_EQ(r["Ignored"], ordered_json({"unroll the loop (no evidence)"}));
  EXPECT_EQ(r["Errors"], "");
  EXPECT_EQ(r["Base_RT"], "12.4ms");
  EXPECT_EQ(r["Opt_RT"], "11ms");
  EXPECT_EQ(r["run_id"], "run-improved");
  EXPECT_EQ(r["variant"], "i1a2");
  EXPECT_EQ(r["config"], "default");
  EXPECT_EQ(r["held_out"], false);
  EXPECT_EQ(r["backend"], "builtin");
  EXPECT_EQ(r["diagnostics"], "PC+IA+Roofline");
  EXPECT_EQ(r["verdict"], "faster");
  EXPECT_DOUBLE_EQ(r["speedup"].get<double>(), 1.127); // the configuration's, not the variant's
  EXPECT_DOUBLE_EQ(r["ci_low"].get<double>(), 1.05);
  EXPECT_DOUBLE_EQ(r["ci_high"].get<double>(), 1.2);
  EXPECT_DOUBLE_EQ(r["p_value"].get<double>(), 0.008);
  EXPECT_EQ(r["status"], "accepted");
  EXPECT_EQ(r["ear"]["correct"], true);
  EXPECT_EQ(r["sha256"], "feed");

  const ordered_json& held = records[1];
  EXPECT_EQ(held["config"], "large");
  EXPECT_EQ(held["held_out"], true);
  EXPECT_EQ(held["Exec"], "./stream --n 1000 --out o");
  EXPECT_EQ(held["Base_RT"], "1235ms");
  EXPECT_EQ(held["Opt_RT"], "1222ms");
  EXPECT_EQ(held["verdict"], "no significant change");
}

TEST(Corpus, ARunWithoutAMeasuredVariantGivesOneRecordSayingWhy) {
  auto records = corpus_records("run-failed", failed_run(), false);
  ASSERT_EQ(records.size(), 1u);
  const ordered_json& r = records[0];
  auto keys = keys_of(r);
  keys.resize(k_paper_keys.size());
  EXPECT_EQ(keys, k_paper_keys);
  EXPECT_TRUE(r["config"].is_null());
  EXPECT_TRUE(r["Exec"].is_null());
  EXPECT_TRUE(r["Opt_RT"].is_null());
  EXPECT_TRUE(r["Base_RT"].is_null());
  EXPECT_TRUE(r["Opt_Code"].is_null());
  EXPECT_EQ(r["Prompt"], "run-failed/iterations/1/attempt-2/prompt.md");
  EXPECT_EQ(r["Errors"], "variant i1a2 guardrail_rejected: signature of k changed\nmain.cu:10: k: parameter 2 changed");
  EXPECT_EQ(r["Ignored"], ordered_json({"tile the loop (withheld: no counter supports it)"}));
  EXPECT_EQ(r["variant"], "i1a2");
  EXPECT_EQ(r["status"], "guardrail_rejected");
  EXPECT_EQ(r["LLM"], "gpt-x");

  // No variant at all: the run's own error, or its status.
  json bare = {{"id", "bare"}, {"status", "failed"}, {"error", "nvcc not found on PATH"}};
  auto bare_records = corpus_records("bare", bare, true);
  ASSERT_EQ(bare_records.size(), 1u);
  EXPECT_EQ(bare_records[0]["Errors"], "nvcc not found on PATH");
  bare.erase("error");
  EXPECT_EQ(corpus_records("bare", bare, false)[0]["Errors"], "no variant was produced (run status: failed)");
}

TEST(Corpus, AllVariantsGivesEveryMeasuredVariant) {
  auto records = corpus_records("run-improved", improved_run(), true);
  ASSERT_EQ(records.size(), 3u); // i1a2 on two configs, i2a1 on one; the unmeasured i1a1 gives none
  EXPECT_EQ(records[0]["variant"], "i1a2");
  EXPECT_EQ(records[1]["variant"], "i1a2");
  EXPECT_EQ(records[2]["variant"], "i2a1");
  EXPECT_EQ(records[2]["Opt_RT"], "13.8ms");
  EXPECT_EQ(records[2]["verdict"], "slower");
  EXPECT_EQ(records[2]["status"], "rejected");

  // Without a best, the default export still records the run, as a failure.
  json no_best = improved_run();
  no_best["best"] = nullptr;
  auto best_only = corpus_records("run-improved", no_best, false);
  ASSERT_EQ(best_only.size(), 1u);
  EXPECT_TRUE(best_only[0]["config"].is_null());
  EXPECT_EQ(corpus_records("run-improved", no_best, true).size(), 3u);
}

TEST(Corpus, ExportWritesOneLinePerRecordOldestRunFirst) {
  test::TempDir dir;
  RunStore store(dir.path().string());
  put(store, improved_run());
  put(store, failed_run());
  store.create_run("broken");
  dir.file("broken/run.json", "{");

  std::ostringstream all;
  EXPECT_EQ(export_corpus(store, {}, all), 3u); // the broken run is left out with a warning
  auto lines = parse_lines(all.str());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["run_id"], "run-failed"); // started earlier
  EXPECT_EQ(lines[1]["run_id"], "run-improved");
  EXPECT_EQ(keys_of(lines[1]).front(), "App");

  std::ostringstream every;
  CorpusOptions options;
  options.runs = {"run-i", "run-improved"}; // a prefix and the full id: one run, once
  options.all_variants = true;
  EXPECT_EQ(export_corpus(store, options, every), 3u);
  for (const auto& line : parse_lines(every.str())) EXPECT_EQ(line["run_id"], "run-improved");

  std::ostringstream none;
  EXPECT_THROW(export_corpus(store, {{"missing-run"}, false}, none), Error);
  EXPECT_THROW(export_corpus(store, {{"broken"}, false}, none), ParseError);
}

// A/A runs measure the baseline against itself; as ordinary builtin records ("rejected", "no
// significant change") they skewed every rate taken from the corpus (issue 32). Left out of an
// export of every run; named, exported with aa true.
TEST(Corpus, AARunsAreLeftOutUnlessNamed) {
  test::TempDir dir;
  RunStore store(dir.path().string());
  put(store, improved_run());
  json aa = failed_run();
  aa["id"] = "run-aa";
  aa["aa"] = true;
  put(store, aa);

  std::ostringstream all;
  EXPECT_EQ(export_corpus(store, {}, all), 2u);
  for (const auto& line : parse_lines(all.str())) {
    EXPECT_EQ(line["run_id"], "run-improved");
    EXPECT_EQ(line["aa"], false);
  }
  std::ostringstream named;
  EXPECT_EQ(export_corpus(store, {{"run-aa"}, false}, named), 1u);
  auto lines = parse_lines(named.str());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["aa"], true);
}
