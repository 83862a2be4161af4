// Tests of util/gzip: gunzip in memory, bounded.
#include "util/gzip.hpp"

#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <string>

using optimas::util::gunzip;

TEST(Gunzip, UnpacksWhatGzipPacked) {
  optimas::test::TempDir dir;
  std::string path = (dir.path() / "p.gz").string();
  optimas::test::write_gzip(path, "head\n", "abc", 3u << 20, "tail\n");
  std::string text = gunzip(optimas::test::read_all(path));
  EXPECT_EQ(text.size(), 5u + (3u << 20) + 5u);
  EXPECT_EQ(text.substr(0, 8), "head\nabc");
  EXPECT_EQ(text.substr(text.size() - 5), "tail\n");
}

// A gzip bomb: a few hundred KB that unpack to 512 MiB. It is refused before it is held.
TEST(Gunzip, ABombIsRefusedBeforeItIsHeld) {
  optimas::test::TempDir dir;
  std::string path = (dir.path() / "bomb.gz").string();
  optimas::test::write_gzip(path, "", std::string(4096, '\0'), 512ull << 20);
  std::string packed = optimas::test::read_all(path);
  ASSERT_LT(packed.size(), 8u << 20);
  EXPECT_EQ(optimas::util::k_max_gunzip_bytes, 256u << 20);
  try {
    gunzip(packed);
    FAIL() << "512 MiB were unpacked";
  } catch (const optimas::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unpacks to more than 256 MiB"), std::string::npos) << e.what();
  }
  EXPECT_LT(optimas::test::peak_rss_mib(), 400);
  EXPECT_THROW(gunzip(packed, 1000), optimas::Error);
}

TEST(Gunzip, DamagedDataIsAnError) {
  EXPECT_THROW(gunzip("not gzip at all"), optimas::Error);
}
