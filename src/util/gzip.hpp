// Decompressing gzip data held in memory (zlib).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace optimas::util {

// What gunzip holds in memory at most: far more than any small page it reads (a session page,
// the compiled-in metric descriptions), far less than a gzip bomb unpacks to.
inline constexpr std::size_t k_max_gunzip_bytes = std::size_t{256} << 20; // 256 MiB

// Throws Error when the data is not valid gzip, or when it unpacks to more than `max_bytes`
// (then before holding more than that).
std::string gunzip(std::string_view compressed, std::size_t max_bytes = k_max_gunzip_bytes);

} // namespace optimas::util
