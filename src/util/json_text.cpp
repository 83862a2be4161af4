#include "util/json_text.hpp"

#include "util/secrets.hpp"

#include <fmt/format.h>

namespace optimas::util {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when there is none.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  std::size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  // Overlong forms, surrogates and code points past U+10FFFF are not valid either.
  if (n == 2 && c < 0xC2) return 0;
  if (n == 3 && ((c == 0xE0 && byte(i + 1) < 0xA0) || (c == 0xED && byte(i + 1) >= 0xA0))) return 0;
  if (n == 4 && ((c == 0xF0 && byte(i + 1) < 0x90) || c > 0xF4 || (c == 0xF4 && byte(i + 1) >= 0x90))) return 0;
  return n;
}

nlohmann::json escaped(const nlohmann::json& j) {
  if (j.is_string()) return escape_invalid_utf8(j.get_ref<const std::string&>());
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& x : j) out.push_back(escaped(x));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : j.items()) out[escape_invalid_utf8(k)] = escaped(v);
    return out;
  }
  return j;
}

} // namespace

std::string escape_invalid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = utf8_length(text, i);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

nlohmann::json parse_json(std::string_view text, bool allow_exceptions) {
  using json = nlohmann::json;
  // The callback sees each value's depth as the parser reaches it; the parser keeps no stack of
  // its own calls, so the document is refused before anything recursive touches it.
  auto bounded = [](int depth, json::parse_event_t, json&) {
    if (depth > k_max_json_depth)
      throw json::parse_error::create(
          101, 0, fmt::format("syntax error: nested more than {} levels deep", k_max_json_depth), nullptr);
    return true;
  };
  try {
    return json::parse(text, bounded);
  } catch (const json::exception&) { // parse_error, or out_of_range for a number like 1e400
    if (allow_exceptions) throw;
    return json(json::value_t::discarded);
  }
}

std::string json_text(const nlohmann::json& j, int indent) {
  std::string text;
  try {
    text = j.dump(indent);
  } catch (const nlohmann::json::type_error&) {
    // 316: invalid UTF-8 somewhere; the rare case pays for the copy.
    text = escaped(j).dump(indent);
  }
  // All JSON output and artifacts are made here: --json, result.json, run.json, journals.
  return redact(text);
}

} // namespace optimas::util
