// util/hash.cpp: SHA-256 of strings and files against the FIPS 180-2 test vectors.
#include "util/error.hpp"
#include "util/hash.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <string>

using optimas::util::sha256_file;
using optimas::util::sha256_hex;

namespace {

// FIPS 180-2, appendix B: "abc", the 448-bit message, and one million "a".
constexpr const char* k_abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr const char* k_448 = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
constexpr const char* k_million_a = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
constexpr const char* k_empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

} // namespace

TEST(Hash, StringsMatchTheStandardVectors) {
  EXPECT_EQ(sha256_hex(""), k_empty);
  EXPECT_EQ(sha256_hex("abc"), k_abc);
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"), k_448);
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), k_million_a);
}

TEST(Hash, LowercaseHexOfThirtyTwoBytes) {
  std::string h = sha256_hex("optimas");
  ASSERT_EQ(h.size(), 64u);
  EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos) << h;
}

// A string_view is hashed by its size, not up to its first NUL.
TEST(Hash, EmbeddedZeroBytesCount) {
  const std::string with_nul("ab\0c", 4);
  EXPECT_NE(sha256_hex(with_nul), sha256_hex("ab"));
  EXPECT_NE(sha256_hex(with_nul), sha256_hex(std::string("ab\0d", 4)));
}

// The file reader goes through 64 KiB pieces: one million bytes take 16 of them.
TEST(Hash, FilesHashAsTheirBytes) {
  optimas::test::TempDir dir;
  EXPECT_EQ(sha256_file(dir.file("abc.txt", "abc")), k_abc);
  EXPECT_EQ(sha256_file(dir.file("empty", "")), k_empty);
  EXPECT_EQ(sha256_file(dir.file("a.bin", std::string(1000000, 'a'))), k_million_a);
  const std::string binary("\0\x01\xff\n\r\0", 6);
  EXPECT_EQ(sha256_file(dir.file("b.bin", binary)), sha256_hex(binary));
}

TEST(Hash, AMissingFileIsAnErrorNamingIt) {
  optimas::test::TempDir dir;
  const std::string path = (dir.path() / "no-such-file").string();
  try {
    sha256_file(path);
    FAIL() << "hashing a missing file did not throw";
  } catch (const optimas::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

// A folder opens (fopen succeeds on Linux) but cannot be read: an error, not the empty hash.
TEST(Hash, AFolderIsAReadError) {
  optimas::test::TempDir dir;
  EXPECT_THROW(sha256_file(dir.path().string()), optimas::Error);
}
