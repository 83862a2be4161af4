#include "util/hash.hpp"

#include "util/error.hpp"

#include <openssl/evp.h>

#include <array>
#include <cstdio>
#include <memory>

namespace optimas::util {

namespace {

struct Sha256 {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
  Sha256() {
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) throw Error("OpenSSL: cannot start SHA-256");
  }
  void update(const void* data, std::size_t n) { EVP_DigestUpdate(ctx.get(), data, n); }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx.get(), digest, &len);
    static constexpr char k_digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < len; ++i) {
      out += k_digits[digest[i] >> 4];
      out += k_digits[digest[i] & 15];
    }
    return out;
  }
};

} // namespace

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data.data(), data.size());
  return h.hex();
}

std::string sha256_file(const std::string& path) {
  std::unique_ptr<FILE, decltype(&std::fclose)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw Error("cannot open " + path + " to hash it");
  Sha256 h;
  std::array<char, 1 << 16> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) h.update(buf.data(), n);
  if (std::ferror(f.get())) throw Error("read error while hashing " + path);
  return h.hex();
}

} // namespace optimas::util
