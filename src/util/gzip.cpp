#include "util/gzip.hpp"

#include "util/error.hpp"

#include <fmt/format.h>
#include <zlib.h>

namespace optimas::util {

std::string gunzip(std::string_view compressed, std::size_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw Error("zlib: cannot start inflating");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      throw Error("zlib: corrupt gzip data");
    }
    if (out.size() + (sizeof buf - z.avail_out) > max_bytes) {
      inflateEnd(&z);
      throw Error(max_bytes % (1 << 20) == 0 ? fmt::format("the gzip data unpacks to more than {} MiB", max_bytes >> 20)
                                             : fmt::format("the gzip data unpacks to more than {} bytes", max_bytes));
    }
    out.append(buf, sizeof buf - z.avail_out);
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      throw Error("zlib: truncated gzip data");
    }
  }
  inflateEnd(&z);
  return out;
}

} // namespace optimas::util
