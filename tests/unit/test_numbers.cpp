#include "util/numbers.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace optimas::util;

TEST(Numbers, LocaleSeparatorsAndPlainValues) {
  EXPECT_EQ(parse_number("96,096"), 96096.0); // en_US
  EXPECT_EQ(parse_number("96096"), 96096.0);  // C
  EXPECT_EQ(parse_number("3,198,905,421.58"), 3198905421.58);
  EXPECT_EQ(parse_number("0.41"), 0.41);
  EXPECT_EQ(parse_number("-2.5e3"), -2500.0);
  EXPECT_EQ(parse_number(" 7 "), 7.0);
}

TEST(Numbers, NotANumber) {
  EXPECT_FALSE(parse_number(""));
  EXPECT_FALSE(parse_number("n/a"));
  EXPECT_FALSE(parse_number("-"));
  EXPECT_FALSE(parse_number("No-CC"));
  EXPECT_FALSE(parse_number("NVIDIA H200"));
  EXPECT_FALSE(parse_number("(256, 1, 1)"));
  auto nan = parse_number("nan");
  ASSERT_TRUE(nan);
  EXPECT_TRUE(std::isnan(*nan));
}

TEST(Numbers, Dim3) {
  EXPECT_EQ(parse_dim3("(256, 1, 1)"), (std::array<std::int64_t, 3>{256, 1, 1}));
  EXPECT_EQ(parse_dim3("(65,536, 2, 3)"), std::nullopt); // a separator inside a tuple is ambiguous
  EXPECT_EQ(parse_dim3("(16384, 4)"), (std::array<std::int64_t, 3>{16384, 4, 1}));
  EXPECT_EQ(parse_dim3("128"), (std::array<std::int64_t, 3>{128, 1, 1}));
  EXPECT_EQ(parse_dim3("(a, 1, 1)"), std::nullopt);
  EXPECT_EQ(parse_dim3("(1.5, 1, 1)"), std::nullopt);
}

// Found by fuzz_csv: inf and numbers past 2^63 were converted to int64 (undefined behaviour,
// INT64_MIN on x86) and taken as a grid size.
TEST(Numbers, IntegersTooLargeForInt64AreRejected) {
  for (const char* text : {"inf", "-inf", "nan", "1e300", "9223372036854775808", "9007199254740992"}) {
    EXPECT_EQ(parse_integer(text), std::nullopt) << text;
    EXPECT_EQ(parse_dim3(text), std::nullopt) << text;
    EXPECT_EQ(parse_dim3(std::string("(1, ") + text + ", 1)"), std::nullopt) << text;
  }
  EXPECT_EQ(parse_integer("9007199254740991"), 9007199254740991);
  EXPECT_EQ(parse_integer("-1,024"), -1024);
  EXPECT_EQ(parse_integer("2.5"), std::nullopt);
}

TEST(Numbers, BaseUnits) {
  auto us = to_base_unit(96.096, "us");
  EXPECT_DOUBLE_EQ(us.value, 96096.0);
  EXPECT_EQ(us.unit, "ns");
  auto usec = to_base_unit(1.5, "usecond");
  EXPECT_DOUBLE_EQ(usec.value, 1500.0);
  auto bw = to_base_unit(2.94, "Tbyte/second");
  EXPECT_DOUBLE_EQ(bw.value, 2.94e12);
  EXPECT_EQ(bw.unit, "byte/second");
  auto gbs = to_base_unit(3.0, "Gbyte/s");
  EXPECT_DOUBLE_EQ(gbs.value, 3e9);
  EXPECT_EQ(gbs.unit, "byte/second");
  auto hz = to_base_unit(1.98, "Ghz");
  EXPECT_DOUBLE_EQ(hz.value, 1.98e9);
  EXPECT_EQ(hz.unit, "hz");
  auto kb = to_base_unit(4, "Kbyte");
  EXPECT_DOUBLE_EQ(kb.value, 4000);
  EXPECT_EQ(kb.unit, "byte");
  auto per_ns = to_base_unit(2, "cycle/nsecond");
  EXPECT_DOUBLE_EQ(per_ns.value, 2e9);
  EXPECT_EQ(per_ns.unit, "cycle/second");
  EXPECT_EQ(to_base_unit(51.1, "%").unit, "%");
  EXPECT_EQ(to_base_unit(2.06, "inst/cycle").unit, "inst/cycle");
  EXPECT_DOUBLE_EQ(to_base_unit(12, "byte").value, 12);
}
