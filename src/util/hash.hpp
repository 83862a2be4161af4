// SHA-256 (OpenSSL) of files and strings, as lowercase hex.
#pragma once

#include <string>
#include <string_view>

namespace optimas::util {

std::string sha256_hex(std::string_view data);
std::string sha256_file(const std::string& path);

} // namespace optimas::util
