#include "evaluate/validate.hpp"

#include "config/app_config.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

using namespace optimas::evaluate;
using optimas::test::TempDir;

namespace {

Tolerance tol(Tolerance::Mode mode, double value) {
  Tolerance t;
  t.mode = mode;
  t.value = value;
  return t;
}

// Compares two texts written to files in `dir`.
OutputComparison compare_texts(const TempDir& dir, const std::string& expected, const std::string& actual,
                               const Tolerance& t) {
  return compare_outputs(dir.file("expected.out", expected), dir.file("actual.out", actual), t);
}

std::string hex_of(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

// A host program with a seed, three configurations (one held out) and `extra` optimas.yml lines.
optimas::config::AppConfig seeded_app(const TempDir& dir, const std::string& extra = "",
                                      const std::string& command = "./prog --n {n} --seed {seed}") {
  std::string yml = "name: prog\n"
                    "build:\n"
                    "  command: 'true'\n"
                    "run:\n"
                    "  command: " +
                    command +
                    "\n"
                    "  needs_gpu: false\n"
                    "configs:\n"
                    "  - {name: small, n: 10, seed: 1}\n"
                    "  - {name: big, n: 20, seed: 2}\n"
                    "  - {name: hidden, n: 15, seed: 3, held_out: true}\n" +
                    extra;
  if (command.find("{seed}") == std::string::npos) {
    // No seed placeholder: the configurations carry no seed either.
    for (const char* s : {", seed: 1", ", seed: 2", ", seed: 3"}) yml.erase(yml.find(s), std::strlen(s));
  }
  return optimas::config::load_app_config(dir.file("optimas.yml", yml));
}

} // namespace

TEST(Validate, ExactEqualFiles) {
  TempDir dir;
  auto r = compare_texts(dir, "1.0 2.0\nthree\n", "1.0 2.0\nthree\n", {});
  EXPECT_TRUE(r.equal);
  EXPECT_EQ(r.detail, "");
  // Empty files are equal too.
  EXPECT_TRUE(compare_texts(dir, "", "", {}).equal);
}

TEST(Validate, ExactReportsByteOffsetAndLine) {
  TempDir dir;
  auto r = compare_texts(dir, "ab\ncd\nef\n", "ab\ncd\neX\n", {});
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.detail, "outputs differ at byte 7 (line 3)");
  r = compare_texts(dir, "abc", "xbc", {});
  EXPECT_EQ(r.detail, "outputs differ at byte 0 (line 1)");
  // Numerically equal but written differently: exact means byte for byte.
  EXPECT_FALSE(compare_texts(dir, "1.0\n", "1.00\n", {}).equal);
}

TEST(Validate, ExactDifferenceBeyondTheFirstBlock) {
  TempDir dir;
  std::string big(70000, 'a');
  for (std::size_t i = 99; i < big.size(); i += 100) big[i] = '\n';
  std::string changed = big;
  changed[68000] = 'b';
  auto r = compare_texts(dir, big, changed, {});
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.detail, "outputs differ at byte 68000 (line 681)");
  EXPECT_TRUE(compare_texts(dir, big, big, {}).equal);
}

TEST(Validate, ExactDifferentLengths) {
  TempDir dir;
  auto r = compare_texts(dir, "abc\n", "abc\nmore\n", {});
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.detail, "outputs differ in length: the shorter one ends at byte 4");
  r = compare_texts(dir, "abc\nmore\n", "abc\n", {});
  EXPECT_FALSE(r.equal);
  EXPECT_NE(r.detail.find("differ in length"), std::string::npos);
  EXPECT_FALSE(compare_texts(dir, "x", "", {}).equal);
}

TEST(Validate, MissingOutputs) {
  TempDir dir;
  std::string expected = dir.file("expected.out", "1\n");
  std::string missing = (dir.path() / "none.out").string();
  for (auto t : {Tolerance{}, tol(Tolerance::Mode::relative, 1e-6)}) {
    auto r = compare_outputs(expected, missing, t);
    EXPECT_FALSE(r.equal);
    EXPECT_EQ(r.detail, "the variant wrote no output");
    EXPECT_THROW(compare_outputs(missing, expected, t), optimas::Error);
  }
}

TEST(Validate, AbsoluteTolerance) {
  TempDir dir;
  auto t = tol(Tolerance::Mode::absolute, 0.01);
  EXPECT_TRUE(compare_texts(dir, "1.000 2.000\n", "1.005 1.995\n", t).equal);
  // Whitespace between tokens does not matter outside exact mode.
  EXPECT_TRUE(compare_texts(dir, "1.000 2.000\n", "1.000\n\t2.000", t).equal);
  auto r = compare_texts(dir, "1.000 2.000 3.000\n", "1.000 2.000 3.02\n", t);
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.detail, "value 3 differs beyond absolute 0.01: 3.000 vs 3.02");
  // Absolute: the same gap is too large around 1000 as well.
  EXPECT_FALSE(compare_texts(dir, "1000.00\n", "1000.02\n", t).equal);
}

TEST(Validate, RelativeTolerance) {
  TempDir dir;
  auto t = tol(Tolerance::Mode::relative, 1e-6);
  EXPECT_TRUE(compare_texts(dir, "1000000.0\n", "1000000.5\n", t).equal);
  EXPECT_TRUE(compare_texts(dir, "1e-20\n", "1.0000005e-20\n", t).equal);
  auto r = compare_texts(dir, "1.0\n", "1.00001\n", t);
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.detail, "value 1 differs beyond relative 1e-06: 1.0 vs 1.00001");
  // Zero against non-zero is never within a relative tolerance.
  EXPECT_FALSE(compare_texts(dir, "0\n", "1e-300\n", t).equal);
  EXPECT_TRUE(compare_texts(dir, "0\n", "-0\n", t).equal);
}

TEST(Validate, UlpTolerance) {
  TempDir dir;
  // A denormal: its bit pattern (1000) is small enough to be exact as a double, so the ULP
  // distance is not rounded (see UlpToleranceOfNormalNumbers for larger values).
  const double x = 1000 * std::nextafter(0.0, 1.0);
  std::string a = hex_of(x), b = hex_of(std::nextafter(std::nextafter(x, 1.0), 1.0));
  EXPECT_TRUE(compare_texts(dir, a + "\n", b + "\n", tol(Tolerance::Mode::ulp, 2)).equal);
  auto r = compare_texts(dir, a + "\n", b + "\n", tol(Tolerance::Mode::ulp, 1));
  EXPECT_FALSE(r.equal);
  EXPECT_NE(r.detail.find("beyond 1 ULP"), std::string::npos) << r.detail;
  // Across zero: the smallest positive and negative denormals are 2 ULP apart.
  double tiny = std::nextafter(0.0, 1.0);
  EXPECT_TRUE(compare_texts(dir, hex_of(tiny), hex_of(-tiny), tol(Tolerance::Mode::ulp, 2)).equal);
  EXPECT_FALSE(compare_texts(dir, hex_of(tiny), hex_of(-tiny), tol(Tolerance::Mode::ulp, 1)).equal);
}

// Normal numbers' bit patterns exceed 2^53: the distance must be taken in integers, not doubles.
TEST(Validate, UlpToleranceOfNormalNumbers) {
  TempDir dir;
  double x = 1.0;
  for (int i = 0; i < 100; ++i) x = std::nextafter(x, 2.0);
  auto r = compare_texts(dir, "1.0\n", hex_of(x) + "\n", tol(Tolerance::Mode::ulp, 4));
  EXPECT_FALSE(r.equal) << "1.0 and " << hex_of(x) << " are 100 ULP apart";
  double y = 1e-300;
  for (int i = 0; i < 10; ++i) y = std::nextafter(y, 1.0);
  EXPECT_FALSE(compare_texts(dir, hex_of(1e-300), hex_of(y), tol(Tolerance::Mode::ulp, 4)).equal) << "10 ULP apart";
}

// |a - b| <= rel * max(|a|, |b|) holds when one side is infinite (inf <= inf): it must not pass.
TEST(Validate, RelativeToleranceRejectsInfinityAgainstFinite) {
  TempDir dir;
  auto t = tol(Tolerance::Mode::relative, 1e-6);
  EXPECT_FALSE(compare_texts(dir, "1.0\n", "inf\n", t).equal);
  EXPECT_FALSE(compare_texts(dir, "inf\n", "-inf\n", t).equal);
}

TEST(Validate, HexFloatsAreNumbers) {
  TempDir dir;
  // 0x1.8p+1 is 3: equal in value to "3.0" (though not byte for byte).
  EXPECT_TRUE(compare_texts(dir, "0x1.8p+1\n", "3.0\n", tol(Tolerance::Mode::absolute, 0)).equal);
  EXPECT_FALSE(compare_texts(dir, "0x1.8p+1\n", "3.0\n", {}).equal);
  EXPECT_TRUE(compare_texts(dir, "0x1.8p+1\n", "0x1.8000001p+1\n", tol(Tolerance::Mode::relative, 1e-6)).equal);
  auto r = compare_texts(dir, "0x1.8p+1\n", "0x1.9p+1\n", tol(Tolerance::Mode::relative, 1e-6));
  EXPECT_FALSE(r.equal);
  EXPECT_NE(r.detail.find("0x1.9p+1"), std::string::npos) << r.detail;
}

TEST(Validate, NonNumericTokensMustMatch) {
  TempDir dir;
  auto t = tol(Tolerance::Mode::absolute, 1);
  EXPECT_TRUE(compare_texts(dir, "sum = 1.0\n", "sum = 1.5\n", t).equal);
  auto r = compare_texts(dir, "sum = 1.0\n", "total = 1.0\n", t);
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.detail, "value 1 differs: \"sum\" vs \"total\"");
  // A number against a word is a mismatch, not a comparison of values.
  r = compare_texts(dir, "x 1.0\n", "x 1.0x\n", t);
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.detail, "value 2 differs: \"1.0\" vs \"1.0x\"");
}

TEST(Validate, TokenCountMismatch) {
  TempDir dir;
  auto t = tol(Tolerance::Mode::relative, 1e-3);
  auto r = compare_texts(dir, "1 2 3\n", "1 2\n", t);
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.detail, "outputs differ in length: one ends after 2 values");
  r = compare_texts(dir, "1 2\n", "1 2 3\n", t);
  EXPECT_FALSE(r.equal);
  EXPECT_EQ(r.detail, "outputs differ in length: one ends after 2 values");
  EXPECT_FALSE(compare_texts(dir, "", "0\n", t).equal);
}

TEST(Validate, NanEqualsNan) {
  TempDir dir;
  for (auto t :
       {tol(Tolerance::Mode::absolute, 0.1), tol(Tolerance::Mode::relative, 0.1), tol(Tolerance::Mode::ulp, 4)}) {
    // Spelled differently, so the values (not the tokens) are compared.
    EXPECT_TRUE(compare_texts(dir, "nan 1\n", "-nan 1\n", t).equal) << describe(t);
    EXPECT_TRUE(compare_texts(dir, "NaN\n", "nan\n", t).equal) << describe(t);
    auto r = compare_texts(dir, "nan\n", "1.0\n", t);
    EXPECT_FALSE(r.equal) << describe(t);
    EXPECT_FALSE(compare_texts(dir, "2.0\n", "nan\n", t).equal) << describe(t);
    EXPECT_TRUE(compare_texts(dir, "inf\n", "Infinity\n", t).equal) << describe(t);
  }
  EXPECT_FALSE(compare_texts(dir, "inf\n", "-inf\n", tol(Tolerance::Mode::absolute, 0.1)).equal);
  EXPECT_FALSE(compare_texts(dir, "inf\n", "1.0\n", tol(Tolerance::Mode::ulp, 4)).equal);
}

TEST(Validate, ToleranceFromSettingsAndDescribe) {
  optimas::config::ValidateSettings s;
  auto t = tolerance_from(s);
  EXPECT_EQ(t.mode, Tolerance::Mode::exact);
  EXPECT_EQ(describe(t), "byte for byte");

  s.tolerance = "rel";
  s.tolerance_value = 1e-12;
  t = tolerance_from(s);
  EXPECT_EQ(t.mode, Tolerance::Mode::relative);
  EXPECT_DOUBLE_EQ(t.value, 1e-12);
  EXPECT_EQ(describe(t), "relative 1e-12");

  s.tolerance = "abs";
  s.tolerance_value = 0.5;
  t = tolerance_from(s);
  EXPECT_EQ(t.mode, Tolerance::Mode::absolute);
  EXPECT_EQ(describe(t), "absolute 0.5");

  s.tolerance = "ulp";
  s.tolerance_value = 4;
  t = tolerance_from(s);
  EXPECT_EQ(t.mode, Tolerance::Mode::ulp);
  EXPECT_DOUBLE_EQ(t.value, 4);
  EXPECT_EQ(describe(t), "4 ULP");

  s.tolerance = "approximately";
  EXPECT_THROW(tolerance_from(s), optimas::UsageError);
}

TEST(Validate, ToleranceFromLoadedConfig) {
  TempDir dir;
  auto app = seeded_app(dir, "validate:\n  tolerance: {rel: 1e-9}\n");
  auto t = tolerance_from(app.validate);
  EXPECT_EQ(t.mode, Tolerance::Mode::relative);
  EXPECT_DOUBLE_EQ(t.value, 1e-9);
}

TEST(Validate, ChecksEveryConfigThenFreshSeeds) {
  TempDir dir;
  auto app = seeded_app(dir, "validate:\n  fresh_seeds: 2\n");
  auto checks = validation_checks(app, "run-1/variant-1");
  ASSERT_EQ(checks.size(), 9u); // 3 declared + 2 x 3 fresh

  // Every configuration as declared first, the held-out one flagged.
  const char* names[] = {"small", "big", "hidden"};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(checks[i].config, names[i]);
    EXPECT_EQ(checks[i].label, names[i]);
    EXPECT_EQ(checks[i].held_out, i == 2);
    EXPECT_EQ(checks[i].input.params, app.find(names[i])->params);
  }
  // Then the fresh seeds: the other parameters kept, the seed new.
  std::set<std::string> seeds;
  for (int i = 3; i < 9; ++i) {
    const auto& c = checks[i];
    const auto& declared = *app.find(c.config);
    EXPECT_EQ(c.config, names[(i - 3) % 3]);
    EXPECT_EQ(c.held_out, declared.held_out);
    EXPECT_EQ(c.input.params.at("n"), declared.params.at("n"));
    std::string seed = c.input.params.at("seed");
    EXPECT_NE(seed, declared.params.at("seed"));
    for (const auto& other : app.configs) EXPECT_NE(seed, other.params.at("seed"));
    EXPECT_EQ(c.label, c.config + "+seed " + seed);
    seeds.insert(seed);
  }
  EXPECT_EQ(seeds.size(), 6u) << "fresh seeds repeat";
  EXPECT_EQ(app.command_for(checks[3].input, "o"), "./prog --n 10 --seed " + checks[3].input.params.at("seed"));
}

TEST(Validate, FreshSeedsAreDeterministicPerSalt) {
  TempDir dir;
  auto app = seeded_app(dir);
  auto seeds_of = [&](const std::string& salt) {
    std::vector<std::string> out;
    for (const auto& c : validation_checks(app, salt)) out.push_back(c.input.params.at("seed"));
    return out;
  };
  auto first = seeds_of("run-1/v1");
  ASSERT_EQ(first.size(), 6u); // fresh_seeds defaults to 1
  EXPECT_EQ(first, seeds_of("run-1/v1"));
  auto other = seeds_of("run-1/v2");
  for (std::size_t i = 3; i < 6; ++i) EXPECT_NE(first[i], other[i]) << i;
  // The declared ones do not depend on the salt.
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(first[i], other[i]);
}

TEST(Validate, NamedSeedParameter) {
  TempDir dir;
  auto app = seeded_app(dir, "validate:\n  fresh_seeds: 3\n", "./prog --n {n}");
  ASSERT_TRUE(app.seed_param.empty());
  // No seed: only the declared configurations, whatever fresh_seeds says.
  EXPECT_EQ(validation_checks(app, "s").size(), 3u);

  TempDir other;
  std::string yml = "name: prog\n"
                    "build: {command: 'true'}\n"
                    "run:\n"
                    "  command: ./prog --n {n} --rng {rng}\n"
                    "  seed: rng\n"
                    "configs:\n"
                    "  - {name: small, n: 10, rng: 5}\n";
  auto seeded = optimas::config::load_app_config(other.file("optimas.yml", yml));
  auto checks = validation_checks(seeded, "s");
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].input.params.at("rng"), "5");
  EXPECT_NE(checks[1].input.params.at("rng"), "5");
  EXPECT_EQ(checks[1].label, "small+seed " + checks[1].input.params.at("rng"));
}

TEST(Validate, NoFreshSeedsWhenZero) {
  TempDir dir;
  auto app = seeded_app(dir, "validate:\n  fresh_seeds: 0\n");
  auto checks = validation_checks(app, "s");
  ASSERT_EQ(checks.size(), 3u);
  for (const auto& c : checks) EXPECT_EQ(c.label, c.config);
}

TEST(Validate, ConfigsRestrictTheList) {
  TempDir dir;
  auto app = seeded_app(dir, "validate:\n  configs: [hidden, small]\n");
  auto checks = validation_checks(app, "s");
  ASSERT_EQ(checks.size(), 4u);
  EXPECT_EQ(checks[0].config, "hidden");
  EXPECT_TRUE(checks[0].held_out);
  EXPECT_EQ(checks[1].config, "small");
  EXPECT_FALSE(checks[1].held_out);
  EXPECT_EQ(checks[2].config, "hidden");
  EXPECT_TRUE(checks[2].held_out);
  EXPECT_EQ(checks[3].config, "small");
  for (const auto& c : checks) EXPECT_NE(c.config, "big");
}
