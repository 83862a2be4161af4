// store/run_inputs.cpp: a run folder read back (run --resume, apply) is checked before anything
// is read through it or written into it: no link out of it, no path of run.json outside it, the
// optimas.yml and the snapshot the run recorded.
#include "store/run_inputs.hpp"

#include "store/journal.hpp"
#include "test_helpers.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/strings.hpp"

#include <gtest/gtest.h>

#include <filesystem>

using namespace optimas;
using optimas::test::TempDir;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* k_id = "3f2a0000-0000-4000-8000-000000000002";
constexpr const char* k_yml = "name: demo\nsources: [main.cu]\n";

// A run folder as the loop leaves it: its copy of optimas.yml, the snapshot and its record, one
// variant in iterations/.
struct RunFolder {
  TempDir app, runs, elsewhere;
  std::string yml = app.file("optimas.yml", k_yml);
  std::string source = app.file("main.cu", "slow\n");
  fs::path dir = runs.path() / k_id;
  json run;

  RunFolder() {
    runs.file(std::string(k_id) + "/config/optimas.yml", k_yml);
    runs.file(std::string(k_id) + "/snapshot/optimas.yml", k_yml);
    runs.file(std::string(k_id) + "/snapshot/main.cu", "slow\n");
    runs.file(std::string(k_id) + "/iterations/1/attempt-1/src/main.cu", "fast\n");
    store::write_json_atomic((dir / "snapshot.json").string(),
                             {{"files",
                               {{"main.cu", util::sha256_file((dir / "snapshot/main.cu").string())},
                                {"optimas.yml", util::sha256_file(yml)}}},
                              {"left_out", json::array()}});
    run = {{"id", k_id},
           {"config_path", yml},
           {"inputs", {{"main.cu", util::sha256_file(source)}, {"optimas.yml", util::sha256_file(yml)}}},
           {"variants",
            {{{"key", "i1a1"},
              {"dir", "iterations/1/attempt-1"},
              {"source", "iterations/1/attempt-1/src"},
              {"prompt", "iterations/1/attempt-1/prompt.md"}}}}};
  }

  std::string check() const { return store::check_run_folder(dir.string(), k_id, run); }

  // The refusal's message: a UsageError naming the run.
  std::string refusal() const {
    try {
      check();
    } catch (const UsageError& e) {
      EXPECT_TRUE(util::contains(e.what(), std::string("run ") + k_id + ": ")) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "not refused";
    return "";
  }
};

} // namespace

TEST(RunInputs, AFolderAsTheLoopLeftItPasses) {
  RunFolder f;
  EXPECT_EQ(f.check(), f.yml);
  fs::create_directories(f.dir / "work" / "baseline");
  fs::create_directory_symlink("baseline", f.dir / "work" / "building"); // the loop's own link
  EXPECT_EQ(f.check(), f.yml);
}

TEST(RunInputs, ALinkOutOfTheFolderIsRefused) {
  for (const char* name : {"work", "iterations"}) {
    RunFolder f;
    if (fs::exists(f.dir / name)) fs::rename(f.dir / name, f.elsewhere.path() / name);
    fs::create_directory_symlink(f.elsewhere.path() / name, f.dir / name);
    std::string why = f.refusal();
    EXPECT_TRUE(util::contains(why, (f.dir / name).string() + " is a symbolic link to " +
                                        (f.elsewhere.path() / name).string() + ", outside the run folder"))
        << why;
  }
  RunFolder deep; // deeper, and dangling: writing through it would create what it names
  fs::create_symlink(deep.elsewhere.path() / "planted.cu", deep.dir / "iterations/1/attempt-1/src/extra.cu");
  EXPECT_TRUE(util::contains(deep.refusal(), "attempt-1/src/extra.cu is a symbolic link")) << deep.refusal();
}

TEST(RunInputs, APathOfRunJsonOutsideTheFolderIsRefused) {
  const std::vector<std::pair<std::string, json>> cases = {
      {"variants[0].source", "/etc"},
      {"variants[0].source", "../other-run/iterations/1/attempt-1/src"},
      {"variants[0].dir", "iterations/../../x"},
      {"variants[0].prompt", 7},
  };
  for (const auto& [field, value] : cases) {
    RunFolder f;
    f.run["variants"][0][field.substr(field.find('.') + 1)] = value;
    std::string why = f.refusal();
    EXPECT_TRUE(util::contains(why, "run.json's " + field)) << why;
  }
  RunFolder tuned;
  tuned.run["tune"] = {{"best", "../../elsewhere"}, {"points", json::array()}};
  EXPECT_TRUE(util::contains(tuned.refusal(), "run.json's tune.best")) << tuned.refusal();
  tuned.run["tune"] = {{"points", {{{"key", "t1"}, {"dir", "/tmp"}}}}};
  EXPECT_TRUE(util::contains(tuned.refusal(), "run.json's tune.points[0].dir")) << tuned.refusal();
}

TEST(RunInputs, ConfigPathMustBeTheOptimasYmlTheRunRecorded) {
  RunFolder f;
  // Another folder, with another optimas.yml: apply would write there, a resume build it.
  const std::string other = f.elsewhere.file("optimas.yml", "name: other\nsources: [main.cu]\n");
  f.run["config_path"] = other;
  std::string why = f.refusal();
  EXPECT_TRUE(util::contains(why, other + " changed since run " + k_id +
                                      " started, or run.json's config_path was "
                                      "edited"))
      << why;
  f.run["config_path"] = "optimas.yml";
  EXPECT_TRUE(util::contains(f.refusal(), "run.json's config_path \"optimas.yml\" is not the absolute path"));
  f.run["config_path"] = (f.elsewhere.path() / "nosuch.yml").string();
  EXPECT_TRUE(util::contains(f.refusal(), "no such file"));
  // The run's copy replaced too: run.json's inputs still tell.
  f.run["config_path"] = other;
  util::write_file((f.dir / "config/optimas.yml").string(), "name: other\nsources: [main.cu]\n");
  EXPECT_TRUE(util::contains(f.refusal(), "changed since run"));
  // Both records gone from a run that has variants: nothing to check it against.
  fs::remove(f.dir / "config/optimas.yml");
  f.run.erase("inputs");
  f.run["config_path"] = f.yml;
  EXPECT_TRUE(util::contains(f.refusal(), "config/optimas.yml is missing"));
}

TEST(RunInputs, TheSnapshotMustBeAsSnapshotJsonRecordedIt) {
  RunFolder f;
  util::write_file((f.dir / "snapshot/main.cu").string(), "slow\n// edited\n");
  EXPECT_TRUE(util::contains(f.refusal(), (f.dir / "snapshot/main.cu").string() + " is not as the run recorded it"))
      << f.refusal();
  util::write_file((f.dir / "snapshot/main.cu").string(), "slow\n");
  EXPECT_EQ(f.check(), f.yml);
  f.runs.file(std::string(k_id) + "/snapshot/include/extra.h", "#define N 1\n");
  EXPECT_TRUE(util::contains(f.refusal(), "snapshot/include/extra.h is not in")) << f.refusal();
  fs::remove_all(f.dir / "snapshot/include");
  fs::remove(f.dir / "snapshot/main.cu");
  EXPECT_TRUE(util::contains(f.refusal(), "snapshot/main.cu (recorded in")) << f.refusal();
  fs::remove(f.dir / "snapshot.json");
  EXPECT_TRUE(util::contains(f.refusal(), "snapshot.json is missing")) << f.refusal();
  util::write_file((f.dir / "snapshot.json").string(), R"({"files": {"../run.json": "0"}})");
  EXPECT_TRUE(util::contains(f.refusal(), "snapshot/../run.json (recorded in")) << f.refusal();
  EXPECT_TRUE(util::contains(f.refusal(), "\"../run.json\" leads out of " + (f.dir / "snapshot").string()));
}

// A run killed before its snapshot was taken has no record of one yet: it takes it when resumed.
TEST(RunInputs, ARunStoppedBeforeItsSnapshotPasses) {
  RunFolder f;
  fs::remove_all(f.dir / "snapshot");
  fs::remove_all(f.dir / "iterations");
  fs::remove_all(f.dir / "config");
  fs::remove(f.dir / "snapshot.json");
  f.run = {{"id", k_id}, {"config_path", f.yml}, {"variants", json::array()}};
  EXPECT_EQ(f.check(), f.yml);
}

TEST(RunInputs, PathInRunNamesTheFieldAndTheRun) {
  RunFolder f;
  EXPECT_EQ(store::path_in_run(f.dir.string(), k_id, "iterations/1", "x"), fs::canonical(f.dir) / "iterations/1");
  try {
    store::path_in_run(f.dir.string(), k_id, "/etc/passwd", "run.json's variants[3].source");
    FAIL() << "not refused";
  } catch (const UsageError& e) {
    EXPECT_TRUE(util::contains(e.what(), std::string("run ") + k_id +
                                             ": run.json's variants[3].source \"/etc/passwd\" leads out of " +
                                             f.dir.string()))
        << e.what();
  }
}
