// Names a user gives that become part of a file or folder name: an application's, an input
// configuration's, a campaign's, a cell's, a backend entry's. One rule for all of them, checked
// where each is read (with its file and line), and a second check where a path is built from one,
// so that no name can reach outside the folder it names something in (../../victim wrote there).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace optimas::util {

// The longest name accepted: with the longest suffix we add (".r99", "measure-<name>-variant-99
// .stderr.log") it stays far below the 255 bytes of a file name.
inline constexpr std::size_t k_max_name = 128;

// Why `name` cannot name a file or folder, or empty when it can: 1 to k_max_name characters, each a
// letter, a digit, '.', '_', '+' or '-', the first a letter, a digit or '_' (so never ".", "..", a
// hidden file or something that reads as an option). Said as "takes letters, ..., got \"x\"".
std::string name_problem(std::string_view name);

// `dir` / `file`, where `file` is one name (a name of the rule above with a suffix such as ".log"):
// Error when it holds a '/', a NUL byte or is "." or "..", so a path built from a name never
// leaves `dir`, whatever the name's reader missed.
std::filesystem::path path_in(const std::filesystem::path& dir, std::string_view file);

} // namespace optimas::util
