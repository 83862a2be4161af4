// Decompressing gzip data held in memory (zlib).
#pragma once

#include <string>
#include <string_view>

namespace optimas::util {

// Throws Error when the data is not valid gzip.
std::string gunzip(std::string_view compressed);

} // namespace optimas::util
