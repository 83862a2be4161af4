// Small string helpers that know nothing of CUDA, profiles or models.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace optimas::util {

std::string_view trim(std::string_view s);
std::vector<std::string_view> split(std::string_view s, char sep);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string to_lower(std::string_view s);
bool contains(std::string_view haystack, std::string_view needle);
// How often `needle` occurs in `haystack`, overlapping occurrences counted.
std::size_t count_occurrences(std::string_view haystack, std::string_view needle);
// Quotes a word for a POSIX shell so that it survives `sh -c` unchanged.
std::string shell_quote(std::string_view word);
std::string shell_join(const std::vector<std::string>& argv);
// The words of a command that a POSIX shell would run as one plain program: words of
// [A-Za-z0-9_./=:,+@%^-], single-quoted strings and double-quoted strings without $ ` \ !.
// nullopt for anything a shell would interpret (pipes, redirections, ;, &, variables, globs,
// ~, an assignment or a builtin in front), and for an empty command.
std::optional<std::vector<std::string>> split_simple_command(std::string_view command);
std::string read_file(const std::string& path);
void write_file(const std::string& path, std::string_view content);

} // namespace optimas::util

namespace optimas::util {

// The first sentence of `text` on one line (line breaks folded; a final '.' dropped).
std::string first_sentence(std::string_view text);

// Current time in UTC as "2026-11-29T22:10:00Z".
std::string utc_now_iso8601();

} // namespace optimas::util
