// profile/json.cpp: `optimas profile --json` (schema optimas.profile/1): every key it writes is
// documented in docs/profile-json.md, numbers ncu printed as n/a are null, and the optional
// parts appear only when asked for.
#include "profile/json.hpp"

#include "config/options.hpp"

#include "profile/importer.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

using namespace optimas::profile;
using nlohmann::json;

namespace {

Samples samples(std::uint64_t all, std::uint64_t long_sb, std::uint64_t not_issued) {
  Samples s;
  s.all = all;
  s.not_issued = not_issued;
  s.stalls[static_cast<std::size_t>(Stall::long_scoreboard)] = long_sb;
  s.stalls[static_cast<std::size_t>(Stall::selected)] = all - long_sb;
  s.stalls_not_issued[static_cast<std::size_t>(Stall::long_scoreboard)] = not_issued;
  return s;
}

Launch launch(int id, std::string kernel, double ns) {
  Launch l;
  l.id = id;
  l.kernel = kernel;
  l.demangled = kernel + "(int, double *)";
  l.block = {256, 1, 1};
  l.grid = {65536, 1, 1};
  l.cc = "9.0";
  l.duration_ns = ns;
  return l;
}

// One run: dloop (two launches, one of them with n/a for its time), saxpy, a rule, a text metric,
// a timing pass, and a source block with lines and instructions.
Profile small_profile() {
  Profile p;
  p.manifest = {{"mode", "import"}, {"source", "/data/x"}};
  optimas::profile::Run r;
  r.config = "small";
  r.repeat = 1;
  r.files = {"details.csv", "source.csv"};
  r.input_bytes = 1234;
  r.session = {{"display_name", "NVIDIA H200"}};
  r.launches = {launch(0, "dloop", 353024), launch(1, "dloop", k_nan), launch(2, "saxpy", 62368)};
  r.launches[0].metrics["dram__bytes.sum.per_second"] = {6.8e11, "byte/second", ""};
  r.launches[0].metrics["device__attribute_display_name"] = {k_nan, "", "NVIDIA H200"};
  r.launches[0].rules.push_back({"SpeedOfLight", "SOLBottleneck", "OPT", "Memory is busy.", "global", k_nan});
  r.timing = {launch(0, "dloop", 350000), launch(1, "saxpy", 60000)};
  KernelSource s;
  s.result_id = 0;
  s.kernel = "dloop";
  s.demangled = "dloop(int, double *)";
  s.lines.push_back({"/src/k.cu", 9, "for (...)", samples(100, 70, 80)});
  s.instructions.push_back({0x90, "LDG.E R2, [R2.64]", "/src/k.cu", 9, samples(60, 50, 55)});
  s.instructions.push_back({0xa0, "FFMA R7, R2, UR6, R7", "", 0, samples(40, 20, 25)});
  r.sources.push_back(s);
  p.runs.push_back(r);
  return p;
}

// The quoted words of docs/profile-json.md's example: the documented keys.
std::set<std::string> documented_keys() {
  std::ifstream in(std::filesystem::path(OPTIMAS_TEST_DATA).parent_path().parent_path() / "docs" / "profile-json.md");
  std::stringstream text;
  text << in.rdbuf();
  std::set<std::string> keys;
  const std::string doc = text.str();
  const std::regex quoted("\"([a-z_]+)\"");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), quoted); it != std::sregex_iterator(); ++it)
    keys.insert((*it)[1]);
  return keys;
}

// Every object key under `j`, except the keys of maps whose keys are data (metric names, stall
// reasons, the manifest's and session page's own attributes).
void collect_keys(const json& j, std::set<std::string>& keys) {
  if (j.is_array()) {
    for (const auto& e : j) collect_keys(e, keys);
    return;
  }
  if (!j.is_object()) return;
  for (const auto& [key, value] : j.items()) {
    keys.insert(key);
    if (key == "manifest" || key == "session") continue;
    if (key == "stalls" || key == "stalls_not_issued") {
      for (const auto& [reason, count] : value.items()) {
        EXPECT_EQ(reason.rfind("stall_", 0), 0u) << reason;
        EXPECT_GT(count.get<std::uint64_t>(), 0u) << "zero counts are left out: " << reason;
      }
      continue;
    }
    if (key == "metrics") {
      for (const auto& [name, metric] : value.items()) collect_keys(metric, keys);
      continue;
    }
    collect_keys(value, keys);
  }
}

} // namespace

TEST(ProfileJson, DefaultOutputLeavesOutMetricsAndInstructions) {
  json j = to_json(small_profile());
  EXPECT_EQ(j["schema"], "optimas.profile/1");
  EXPECT_EQ(j["manifest"]["source"], "/data/x");
  ASSERT_EQ(j["launches"].size(), 3u);
  const json& l0 = j["launches"][0];
  EXPECT_EQ(l0["run"], 0);
  EXPECT_EQ(l0["config"], "small");
  EXPECT_EQ(l0["repeat"], 1);
  EXPECT_EQ(l0["kernel"], "dloop");
  EXPECT_EQ(l0["block"], json({256, 1, 1}));
  EXPECT_EQ(l0["duration_ns"], 353024.0);
  EXPECT_EQ(l0["metric_count"], 2);
  EXPECT_EQ(l0["rule_count"], 1);
  EXPECT_FALSE(l0.contains("metrics"));
  EXPECT_FALSE(l0.contains("rules"));
  ASSERT_EQ(j["sources"].size(), 1u);
  EXPECT_FALSE(j["sources"][0].contains("instructions"));
  EXPECT_EQ(j["sources"][0]["instruction_count"], 2);
  EXPECT_EQ(j["sources"][0]["total_samples"], 100) << "the instructions' samples";
}

TEST(ProfileJson, NotANumberIsNull) {
  JsonOptions all{true, true};
  json j = to_json(small_profile(), all);
  EXPECT_TRUE(j["launches"][1]["duration_ns"].is_null());
  const json& metrics = j["launches"][0]["metrics"];
  EXPECT_EQ(metrics["dram__bytes.sum.per_second"], json({{"value", 6.8e11}, {"unit", "byte/second"}}));
  EXPECT_TRUE(metrics["device__attribute_display_name"]["value"].is_null());
  EXPECT_EQ(metrics["device__attribute_display_name"]["text"], "NVIDIA H200");
  EXPECT_TRUE(j["launches"][0]["rules"][0]["estimated_speedup"].is_null());
  // JSON has no NaN: the text parses back.
  EXPECT_EQ(json::parse(j.dump()), j);
  EXPECT_EQ(j.dump().find("nan"), std::string::npos);
}

TEST(ProfileJson, RunsCarryTheirHotKernelsFromTheTimingPass) {
  json run = to_json(small_profile())["runs"][0];
  EXPECT_EQ(run["config"], "small");
  EXPECT_EQ(run["files"], json({"details.csv", "source.csv"}));
  EXPECT_EQ(run["input_bytes"], 1234);
  EXPECT_EQ(run["session"]["display_name"], "NVIDIA H200");
  EXPECT_EQ(run["launch_count"], 3);
  EXPECT_EQ(run["timing_launch_count"], 2);
  const json& hot = run["hot_kernels"];
  EXPECT_EQ(hot["alpha"], optimas::config::default_of<double>("alpha"));
  EXPECT_EQ(hot["total_ns"], 410000.0) << "the timing pass, not the profiled launches";
  ASSERT_EQ(hot["kernels"].size(), 2u);
  EXPECT_EQ(hot["kernels"][0]["kernel"], "dloop");
  EXPECT_EQ(hot["kernels"][0]["hot"], true);
  EXPECT_EQ(hot["kernels"][1]["hot"], false);
  // The timing pass is listed without metrics even when they are asked for.
  json j = to_json(small_profile(), {true, true});
  ASSERT_EQ(j["timing"].size(), 2u);
  EXPECT_FALSE(j["timing"][0].contains("metrics"));
}

TEST(ProfileJson, SamplesKeepTheirStallsPerLineAndInstruction) {
  json src = to_json(small_profile(), {false, true})["sources"][0];
  const json& line = src["lines"][0];
  EXPECT_EQ(line["file"], "/src/k.cu");
  EXPECT_EQ(line["line"], 9);
  EXPECT_EQ(line["samples"], 100);
  EXPECT_EQ(line["not_issued"], 80);
  EXPECT_EQ(line["stalls"], json({{"stall_long_scoreboard", 70}, {"stall_selected", 30}}));
  EXPECT_EQ(line["stalls_not_issued"], json({{"stall_long_scoreboard", 80}}));
  ASSERT_EQ(src["instructions"].size(), 2u);
  EXPECT_EQ(src["instructions"][0]["address"], 0x90);
  EXPECT_EQ(src["instructions"][0]["sass"], "LDG.E R2, [R2.64]");
  EXPECT_EQ(src["instructions"][1]["file"], "");
  EXPECT_EQ(src["instructions"][1]["line"], 0);
}

// The document a script reads: a key the code writes and the page does not name is a doc to fix.
TEST(ProfileJson, EveryKeyIsDocumented) {
  const auto documented = documented_keys();
  ASSERT_GT(documented.size(), 30u) << "docs/profile-json.md was not read";
  std::set<std::string> written;
  collect_keys(to_json(small_profile(), {true, true}), written);
  collect_keys(to_json(import_profile(optimas::test::data_path("h200/stream")), {true, true}), written);
  for (const auto& key : written) EXPECT_TRUE(documented.count(key)) << "\"" << key << "\" is not in docs/profile-json.md";
}

// Same profile, same text: the output can be diffed and cached.
TEST(ProfileJson, StableText) {
  JsonOptions all{true, true};
  EXPECT_EQ(to_json(small_profile(), all).dump(), to_json(small_profile(), all).dump());
  json back = json::parse(to_json(small_profile(), all).dump(2));
  EXPECT_EQ(back, to_json(small_profile(), all));
}
