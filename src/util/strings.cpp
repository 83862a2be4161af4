#include "util/strings.hpp"

#include "util/error.hpp"
#include "util/secrets.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace optimas::util {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

std::size_t count_occurrences(std::string_view haystack, std::string_view needle) {
  std::size_t n = 0;
  for (auto pos = haystack.find(needle); pos != std::string_view::npos; pos = haystack.find(needle, pos + 1)) ++n;
  return n;
}

std::string shell_quote(std::string_view word) {
  bool plain = !word.empty();
  for (char c : word) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) ||
          std::string_view("@%+=:,./-_").find(c) != std::string_view::npos)) {
      plain = false;
      break;
    }
  }
  if (plain) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(a);
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, std::string_view content) {
  // Every artifact optimas writes goes through here, sources of variants included: a key a
  // model's answer carries must not reach any of them.
  const std::string text = redact(content);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("cannot write " + path);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out) throw Error("write failed: " + path);
}

} // namespace optimas::util

#include <ctime>

namespace optimas::util {

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Up to the first '.', '!' or '?' that ends a sentence (followed by a space or the end), with
// line breaks folded, so each applied edit stays one short line. A final '.' is dropped.
std::string first_sentence(std::string_view text) {
  std::string flat;
  bool pending_space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      pending_space = !flat.empty();
      continue;
    }
    if (pending_space) flat += ' ';
    pending_space = false;
    flat += c;
  }
  for (std::size_t i = 0; i < flat.size(); ++i) {
    char c = flat[i];
    if ((c == '.' || c == '!' || c == '?') && (i + 1 == flat.size() || flat[i + 1] == ' '))
      return c == '.' ? flat.substr(0, i) : flat.substr(0, i + 1);
  }
  return flat;
}

std::optional<std::vector<std::string>> split_simple_command(std::string_view command) {
  auto plain = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_./=:,+@%^-").find(c) != std::string_view::npos;
  };
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < command.size()) {
    if (command[i] == ' ' || command[i] == '\t') {
      ++i;
      continue;
    }
    std::string word;
    while (i < command.size() && command[i] != ' ' && command[i] != '\t') {
      char c = command[i];
      if (c == '\'' || c == '"') {
        auto end = command.find(c, i + 1);
        if (end == std::string_view::npos) return std::nullopt;
        auto inside = command.substr(i + 1, end - i - 1);
        if (c == '"' && inside.find_first_of("$`\\!") != std::string_view::npos) return std::nullopt;
        word += inside;
        i = end + 1;
      } else if (plain(c)) {
        word += c;
        ++i;
      } else {
        return std::nullopt;
      }
    }
    words.push_back(std::move(word));
  }
  if (words.empty()) return std::nullopt;
  // "A=b prog" sets a variable; builtins and keywords are not programs.
  static const std::vector<std::string> k_builtins = {"exec", "cd", "export", "set", "eval", "source", ".", "time",
                                                      "if", "for", "while", "until", "case", "unset", "ulimit", "umask"};
  const std::string& first = words.front();
  if (first.empty() || first.find('=') != std::string::npos ||
      std::find(k_builtins.begin(), k_builtins.end(), first) != k_builtins.end())
    return std::nullopt;
  return words;
}

} // namespace optimas::util
