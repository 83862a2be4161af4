// Tests of campaign/campaign_file.cpp and campaign/cells.cpp: a good file's settings and cells
// (expansion order, stable filename-safe ids, each cell's optimas run command), and every bad
// key or value named by file:line.
#include "campaign/campaign_file.hpp"
#include "campaign/cells.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace optimas;
using namespace optimas::campaign;
using optimas::test::TempDir;

namespace {

// Two application folders beside the campaign file.
struct Apps {
  TempDir dir;
  Apps() {
    dir.file("apps/shmem/optimas.yml", "name: shmem\n");
    dir.file("apps/digits/optimas.yml", "name: digits\n");
  }
  std::string write(const std::string& yml) const { return dir.file("campaign.yml", yml); }
};

// The message of the error `load_campaign` throws for `yml`, or "" when it loads.
std::string error_of(const Apps& s, const std::string& yml) {
  std::string path = s.write(yml);
  try {
    load_campaign(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const char* k_good = R"(campaign: examples-ablation
applications:
  - apps/shmem
  - {path: apps/digits, configs: [default]}
diagnostics: [pc+ia, roofline, code-only]
backends: [builtin, {model: manual, name: by-hand}]
repeats: 2
iterations: 3
candidates: [1, 3]
run_options: [--no-tune]
runs_dir: store
gpus: 0
time_limit: 90m
requeue: 1
launcher: {name: local, options: {jobs: 2}}
)";

} // namespace

TEST(CampaignFile, AGoodFileGivesItsSettings) {
  Apps s;
  auto f = load_campaign(s.write(k_good));
  EXPECT_EQ(f.id, "examples-ablation");
  ASSERT_EQ(f.applications.size(), 2u);
  EXPECT_EQ(f.applications[0].name, "shmem");
  EXPECT_EQ(f.applications[0].path, std::filesystem::canonical(s.dir.path() / "apps/shmem").string());
  EXPECT_EQ(f.applications[1].configs, std::vector<std::string>{"default"});
  ASSERT_EQ(f.diagnostics.size(), 3u);
  EXPECT_EQ(f.diagnostics[0].setting, "pc,ia");
  EXPECT_EQ(f.diagnostics[0].label, "PC+IA");
  EXPECT_EQ(f.diagnostics[0].id, "pc_ia");
  EXPECT_EQ(f.diagnostics[2].setting, "code-only");
  EXPECT_EQ(f.diagnostics[2].label, "code-only");
  EXPECT_EQ(f.backends[1].name, "by-hand");
  EXPECT_EQ(f.repeats, 2);
  EXPECT_EQ(f.rounds, std::vector<int>{3}) << "iterations: is the older name of rounds:";
  EXPECT_EQ(f.candidates, (std::vector<int>{1, 3}));
  EXPECT_EQ(f.run_options, std::vector<std::string>{"--no-tune"});
  EXPECT_EQ(f.runs_dir, (std::filesystem::canonical(s.dir.path()) / "store").string());
  EXPECT_EQ(f.gpus, 0);
  EXPECT_DOUBLE_EQ(f.time_limit_s, 5400);
  EXPECT_EQ(f.requeue, 1);
  EXPECT_EQ(f.launcher.name, "local");
  EXPECT_EQ(f.launcher.options.at("jobs"), "2");
}

TEST(CampaignFile, DefaultsAreTheEightSubsetsAndTheBuiltinBackend) {
  Apps s;
  auto f = load_campaign(s.write("campaign: c1\napplications: [apps/shmem]\n"));
  std::vector<std::string> labels;
  for (const auto& d : f.diagnostics) labels.push_back(d.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"PC", "IA", "Roofline", "PC+IA", "PC+Roofline", "IA+Roofline",
                                              "PC+IA+Roofline", "code-only"}));
  ASSERT_EQ(f.backends.size(), 1u);
  EXPECT_EQ(f.backends[0].model, "builtin");
  EXPECT_EQ(f.repeats, 1);
  EXPECT_EQ(f.gpus, 1);
  EXPECT_EQ(f.requeue, 2);
  EXPECT_EQ(f.launcher.name, "local");
  EXPECT_EQ(f.runs_dir, (std::filesystem::canonical(s.dir.path()) / "runs").string());
}

TEST(CampaignFile, EveryMistakeNamesFileAndLine) {
  Apps s;
  const std::string head = "campaign: c1\napplications: [apps/shmem]\n";
  const std::string file = s.dir.path().string() + "/campaign.yml";
  struct Case {
    std::string yml, expected;
  };
  std::vector<Case> cases = {
      {head + "repeat: 2\n", ":3: unknown key \"repeat\" in the campaign file"},
      {head + "launcher: pbs\n", ":3: unknown launcher \"pbs\" (known: local, slurm)"},
      {head + "launcher: {name: local, options: {partition: gpu}}\n",
       ":3: launcher local has no option \"partition\" (its options: jobs, gpus)"},
      {head + "launcher: {name: local, option: {jobs: 1}}\n", ":3: unknown key \"option\" in launcher"},
      {head + "diagnostics: [pc, pc+sass]\n", ":3: unknown diagnostic source \"sass\""},
      {head + "diagnostics: [pc+ia, ia+pc]\n", ":3: two diagnostic subsets give cells the id part \"pc_ia\""},
      {head + "time_limit: 60 minutes\n", ":3: time_limit takes a duration such as 90s, 60m or 2h"},
      {head + "time_limit: 0m\n", ":3: time_limit takes a duration"},
      {head + "repeats: 0\n", ":3: repeats must be a whole number from 1 to 100, got \"0\""},
      {head + "gpus: two\n", ":3: gpus must be a whole number from 0 to 1024"},
      // Every whole number is bounded: iterations the option table's way (at most 100).
      {head + "iterations: 101\n", ":3: iterations must be a whole number from 1 to 100, got \"101\""},
      {head + "iterations: 1e9\n", ":3: iterations must be a whole number from 1 to 100, got \"1e9\""},
      {head + "iterations: 2147483648\n", ":3: iterations must be a whole number from 1 to 100"},
      // The search's axes: a number or a list of different ones, within the option table's bounds.
      {head + "rounds: [1, 101]\n", ":3: rounds must be a whole number from 1 to 100, got \"101\""},
      {head + "rounds: [1, 3, 1]\n", ":3: rounds lists 1 twice"},
      {head + "rounds: []\n", ":3: rounds lists no value"},
      {head + "candidates: [0]\n", ":3: candidates must be a whole number from 1 to 16, got \"0\""},
      {head + "rounds: 2\niterations: 2\n", ":4: give rounds: or its older name iterations:, not both"},
      {head + "repeats: 101\n", ":3: repeats must be a whole number from 1 to 100"},
      {head + "requeue: 101\n", ":3: requeue must be a whole number from 0 to 100"},
      {head + "gpus: 99999999999999999999\n", ":3: gpus must be a whole number from 0 to 1024"},
      // Names that become file names: a configuration (--measure-configs) and a backend's name (cell ids).
      {"campaign: c1\napplications:\n  - {path: apps/shmem, configs: [small, ../../x]}\n",
       ":3: a configuration takes 1 to 128 letters"},
      {head + "backends: [{model: builtin, name: ../../x}]\n", ":3: name takes 1 to 128 letters"},
      {head + "backends: [{model: builtin, name: \"a\\0b\"}]\n", ":3: name takes 1 to 128 letters"},
      {"campaign: ..\napplications: [apps/shmem]\n", ":1: campaign: "},
      {"campaign: \"c\\0\"\napplications: [apps/shmem]\n", ":1: campaign: "},
      {head + "backends: [{model: builtin, name: " + std::string(120, 'b') + "}]\n", ":2: a cell id takes 1 to 128"},
      {head + "backends: [nosuch/model]\n", ":3:"},
      {head + "backends: [builtin, builtin]\n",
       ":3: two backends give cells the id part \"builtin\"; give one a name:"},
      {head + "backends: [{model: builtin, options: {temperature: 2}}]\n", ":3:"},
      {head + "run_options: [--no-tune, --diagnostics=pc]\n", ":3: run_options: --diagnostics is the campaign's"},
      {"campaign: c1\napplications:\n  - apps/shmem\n  - apps/nothere\n", ":4: application folder"},
      {"campaign: c1\napplications:\n  - {path: apps}\n", ":3: application folder"},
      {"campaign: c1\napplications:\n  - {paths: apps/shmem}\n", ":3: unknown key \"paths\" in an application"},
      {"campaign: bad/id\napplications: [apps/shmem]\n", ":1: campaign: "},
      {"applications: [apps/shmem]\n", ":1: the campaign file needs campaign:"},
      {"campaign: c1\n", ":1: the campaign file needs applications:"},
      {"campaign: c1\napplications: [apps/shmem]\ncampaign: c2\n", ":3: \"campaign\" is given twice"},
      {"campaign: c1\napplications: [apps/shmem\n", "campaign.yml:"},
  };
  for (const auto& c : cases) {
    std::string got = error_of(s, c.yml);
    EXPECT_EQ(got.rfind(file, 0), 0u) << c.yml << " -> " << got;
    EXPECT_NE(got.find(c.expected), std::string::npos) << c.yml << " -> " << got;
  }
  // An application folder without its optimas.yml.
  s.dir.file("apps/empty/README", "");
  EXPECT_NE(error_of(s, "campaign: c1\napplications: [apps/empty]\n").find(":2: application folder"),
            std::string::npos);
  EXPECT_NE(error_of(s, "campaign: c1\napplications: [apps/empty]\n").find("has no optimas.yml"), std::string::npos);
}

TEST(CampaignFile, TimeLimitsTakeSuffixes) {
  EXPECT_DOUBLE_EQ(parse_time_limit("45"), 45);
  EXPECT_DOUBLE_EQ(parse_time_limit("90s"), 90);
  EXPECT_DOUBLE_EQ(parse_time_limit("60m"), 3600);
  EXPECT_DOUBLE_EQ(parse_time_limit("1.5h"), 5400);
  EXPECT_THROW(parse_time_limit("1d"), UsageError);
  EXPECT_THROW(parse_time_limit("-5m"), UsageError);
  EXPECT_THROW(parse_time_limit(""), UsageError);
}

TEST(CampaignCells, ExpandInFileOrderWithStableIds) {
  Apps s;
  auto f = load_campaign(s.write(k_good));
  auto cells = expand_cells(f);
  ASSERT_EQ(cells.size(), 2u * 3u * 2u * 2u * 2u); // apps x subsets x backends x candidate counts x seeds
  std::vector<std::string> ids;
  for (const auto& c : cells) ids.push_back(c.id);
  EXPECT_EQ(ids[0], "shmem-pc_ia-builtin-k1-s1");
  EXPECT_EQ(ids[1], "shmem-pc_ia-builtin-k1-s2");
  EXPECT_EQ(ids[2], "shmem-pc_ia-builtin-k3-s1");
  EXPECT_EQ(ids[4], "shmem-pc_ia-by-hand-k1-s1");
  EXPECT_EQ(ids[8], "shmem-roofline-builtin-k1-s1");
  EXPECT_EQ(ids[16], "shmem-code-only-builtin-k1-s1");
  EXPECT_EQ(ids.back(), "digits-code-only-by-hand-k3-s2");
  EXPECT_EQ(cells[2].candidates, 3);
  EXPECT_EQ(cells[2].rounds, 3);
  // Unique, and the same when the file is read again.
  auto sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  auto again = expand_cells(load_campaign(s.write(k_good)));
  for (std::size_t i = 0; i < cells.size(); ++i) EXPECT_EQ(again[i].id, ids[i]);
}

TEST(CampaignCells, ModelsBecomeFilenameSafeIdParts) {
  EXPECT_EQ(filename_safe("openai/gpt-5"), "openai_gpt-5");
  EXPECT_EQ(filename_safe("ollama/llama3.1:70b"), "ollama_llama3.1_70b");
  EXPECT_EQ(filename_safe(".hidden"), "_hidden");
}

TEST(CampaignCells, EachCellIsOneOptimasRun) {
  Apps s;
  auto f = load_campaign(s.write(k_good));
  auto cells = expand_cells(f);
  // 2 applications x 3 subsets x 2 backends x 1 round count x 2 candidate counts x 2 seeds.
  ASSERT_EQ(cells.size(), 48u);
  EXPECT_EQ(cells[0].id, "shmem-pc_ia-builtin-k1-s1") << "one round count: no part for it";
  EXPECT_EQ(cells[2].id, "shmem-pc_ia-builtin-k3-s1");
  auto args = run_arguments(f, cells.back()); // digits, code-only, manual, 3 rounds, 3 candidates, seed 2
  auto has = [&](const std::string& flag, const std::string& value) {
    for (std::size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == flag && args[i + 1] == value) return true;
    return false;
  };
  EXPECT_EQ(args[0], "run");
  EXPECT_TRUE(has("--app", f.applications[1].path));
  EXPECT_TRUE(has("--runs-dir", f.runs_dir));
  EXPECT_TRUE(has("--campaign", "examples-ablation"));
  EXPECT_TRUE(has("--cell", "digits-code-only-by-hand-k3-s2"));
  EXPECT_TRUE(has("--seed", "2"));
  EXPECT_TRUE(has("--diagnostics", "code-only"));
  EXPECT_TRUE(has("--model", "manual"));
  EXPECT_TRUE(has("--rounds", "3"));
  EXPECT_TRUE(has("--candidates", "3"));
  EXPECT_TRUE(has("--measure-configs", "default"));
  EXPECT_TRUE(has("--work-dir", manual_dir(f, cells.back())));
  EXPECT_EQ(args.back(), "--no-tune");
  // The builtin cells have no manual folder.
  auto first = run_arguments(f, cells.front());
  EXPECT_EQ(std::find(first.begin(), first.end(), "--work-dir"), first.end());
  EXPECT_EQ(shell_line({"optimas", "run", "--app", "/a b/it's"}), "optimas run --app '/a b/it'\\''s'");
}
