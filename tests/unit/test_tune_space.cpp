// tune/space: the grid, the constraints, and what a point gives the build.
#include "tune/space.hpp"
#include "util/error.hpp"

#include <gtest/gtest.h>

using namespace optimas;
using config::TuneParam;

namespace {

TuneParam macro(const std::string& name, std::vector<std::string> values) {
  return {name, TuneParam::Kind::macro, std::move(values), 3};
}
TuneParam flag(const std::string& name, std::vector<std::string> values) {
  return {name, TuneParam::Kind::flag, std::move(values), 4};
}
config::TuneConstraint constraint(const std::string& text, int line = 9) {
  return {util::Expr::parse(text), line};
}

} // namespace

TEST(TuneSpace, AllowedPointsInGridOrder) {
  config::TuneSettings t;
  t.params = {macro("BX", {"8", "16", "32"}), macro("BY", {"8", "16", "32"})};
  t.constraints = {constraint("BX * BY <= 256")};
  tune::Space s(t, "app/optimas.yml");
  std::vector<std::string> labels;
  for (const auto& p : s.allowed_points()) labels.push_back(s.label(p));
  EXPECT_EQ(labels, (std::vector<std::string>{"BX=8 BY=8", "BX=8 BY=16", "BX=8 BY=32", "BX=16 BY=8", "BX=16 BY=16",
                                              "BX=32 BY=8"}));
  EXPECT_TRUE(s.allowed({1, 1}));
  EXPECT_FALSE(s.allowed({2, 2}));
  EXPECT_FALSE(s.allowed({3, 0})); // off the grid
  EXPECT_FALSE(s.allowed({0}));
}

TEST(TuneSpace, WhatTheBuildIsGiven) {
  config::TuneSettings t;
  t.params = {macro("TPB", {"128", "256"}), flag("dlcm", {"", "-Xptxas -dlcm=ca"}), flag("regs", {"-maxrregcount=64"})};
  tune::Space s(t, "optimas.yml");
  const tune::Point none = {1, 0, 0}, ca = {0, 1, 0};
  EXPECT_EQ(s.label(none), "TPB=256 dlcm=none regs=-maxrregcount=64");
  EXPECT_EQ(s.flags(none), "-DTPB=256 -maxrregcount=64");
  EXPECT_EQ(s.flags(ca), "-DTPB=128 -Xptxas -dlcm=ca -maxrregcount=64");
  EXPECT_EQ(s.values_json(ca), (nlohmann::json{{"TPB", 128}, {"dlcm", "-Xptxas -dlcm=ca"}, {"regs", "-maxrregcount=64"}}));
  auto env = s.build_env(ca, "");
  EXPECT_EQ(env.at("NVCC_APPEND_FLAGS"), "-DTPB=128 -Xptxas -dlcm=ca -maxrregcount=64");
  EXPECT_EQ(env.at("OPTIMAS_TUNE_FLAGS"), env.at("NVCC_APPEND_FLAGS"));
  // Flags this process was given for nvcc stay, first.
  EXPECT_EQ(s.build_env(ca, "-lineinfo").at("NVCC_APPEND_FLAGS"), "-lineinfo -DTPB=128 -Xptxas -dlcm=ca -maxrregcount=64");
  EXPECT_EQ(s.build_env(ca, "-lineinfo").at("OPTIMAS_TUNE_FLAGS"), "-DTPB=128 -Xptxas -dlcm=ca -maxrregcount=64");
}

TEST(TuneSpace, ConstraintsThatCannotBeEvaluatedNameTheLine) {
  config::TuneSettings t;
  t.params = {macro("BX", {"0", "1"})};
  t.constraints = {constraint("64 / BX >= 1", 17)};
  try {
    tune::Space s(t, "app/optimas.yml");
    FAIL() << "a division by zero was not reported";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("app/optimas.yml:17: constraint \"64 / BX >= 1\" cannot be evaluated at BX=0"),
              std::string::npos)
        << e.what();
  }
}

TEST(TuneSpace, NoPointAllowed) {
  config::TuneSettings t;
  t.params = {macro("BX", {"1", "2"})};
  t.constraints = {constraint("BX > 2")};
  tune::Space s(t, "optimas.yml");
  EXPECT_TRUE(s.allowed_points().empty());
}
