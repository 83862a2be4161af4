#include "util/names.hpp"

#include "util/error.hpp"

#include <fmt/format.h>

namespace optimas::util {

namespace {

bool plain(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// A name as a message may show it: printable ASCII, anything else as \xNN (a NUL byte included).
std::string shown(std::string_view name) {
  std::string out = "\"";
  for (char c : name.substr(0, k_max_name + 8)) {
    auto u = static_cast<unsigned char>(c);
    out += u >= 0x20 && u < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  return out + (name.size() > k_max_name + 8 ? "...\"" : "\"");
}

} // namespace

std::string name_problem(std::string_view name) {
  bool ok = !name.empty() && name.size() <= k_max_name && plain(name.front());
  for (char c : name) ok = ok && (plain(c) || c == '.' || c == '-' || c == '+');
  if (ok) return {};
  return fmt::format("takes 1 to {} letters, digits, '.', '_', '+' or '-', the first a letter, a digit or '_' (it "
                     "names files and folders), got {}",
                     k_max_name, shown(name));
}

std::filesystem::path path_in(const std::filesystem::path& dir, std::string_view file) {
  if (file.empty() || file == "." || file == ".." || file.find('/') != std::string_view::npos ||
      file.find('\0') != std::string_view::npos)
    throw Error(
        fmt::format("refusing to make the file {} in {}: it is not one plain file name", shown(file), dir.string()));
  return dir / std::string(file);
}

} // namespace optimas::util
