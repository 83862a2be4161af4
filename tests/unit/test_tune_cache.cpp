// tune/cache: results by (context, point), written atomically, damaged entries a miss.
#include "tune/cache.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <fstream>

using namespace optimas;
using nlohmann::json;

TEST(TuneCache, StoresAndFindsByContextAndPoint) {
  test::TempDir dir;
  tune::PointCache cache(dir.path() / "tune");
  const json context = {{"files", {{"main.cu", "abc"}}}, {"build", "make"}};
  const std::string key = tune::PointCache::key(context, "TPB=128");
  EXPECT_FALSE(cache.get(key, "TPB=128"));
  const json result = {{"status", "accepted"}, {"measurement", {{"speedup", 1.4}}}};
  EXPECT_FALSE(cache.put(key, "TPB=128", result));
  auto hit = cache.get(key, "TPB=128");
  ASSERT_TRUE(hit);
  EXPECT_EQ(*hit, result);
  EXPECT_EQ(cache.path_for(key).parent_path().filename().string(), key.substr(0, 2));
  // Another point, or other sources: another key.
  EXPECT_NE(tune::PointCache::key(context, "TPB=256"), key);
  json edited = context;
  edited["files"]["main.cu"] = "abd";
  EXPECT_NE(tune::PointCache::key(edited, "TPB=128"), key);
  EXPECT_FALSE(cache.get(tune::PointCache::key(edited, "TPB=128"), "TPB=128"));
}

TEST(TuneCache, DamagedOrForeignEntriesAreMisses) {
  test::TempDir dir;
  tune::PointCache cache(dir.path() / "tune");
  const std::string key = tune::PointCache::key(json::object(), "A=1");
  ASSERT_FALSE(cache.put(key, "A=1", {{"status", "rejected"}}));
  EXPECT_FALSE(cache.get(key, "A=2")) << "an entry holding another point was taken";
  std::ofstream(cache.path_for(key)) << "{\"point\": \"A=1\", \"resu";
  EXPECT_FALSE(cache.get(key, "A=1"));
}

TEST(TuneCache, AnUnwritableCacheIsAWarningNotAFailure) {
  test::TempDir dir;
  dir.file("tune", "a file where the folder should be");
  tune::PointCache cache(dir.path() / "tune");
  auto why = cache.put(tune::PointCache::key(json::object(), "A=1"), "A=1", {{"status", "rejected"}});
  EXPECT_TRUE(why.has_value());
}
