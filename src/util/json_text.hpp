// JSON as text for output and files, and the null-safe reading of JSON documents we did not
// necessarily write whole (run.json, table.json, a profile's summary). Profiles and programs carry bytes that are not
// UTF-8 (a kernel name, a session page, a program's output), which nlohmann::json refuses to write: here each such byte
// is written as the text \xNN instead, so --json output and artifacts never fail on them and lose nothing.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace optimas::util {

// Documents nested deeper than this are refused. nlohmann::json parses any depth without
// recursion, but copying, comparing and writing a value recurse: a model's reply of a million
// nested brackets overflowed the stack. Ours nest a dozen levels.
constexpr int k_max_json_depth = 256;

// json::parse, refusing documents nested deeper than k_max_json_depth: they throw
// json::parse_error as other malformed text does, or, with allow_exceptions false, give a
// discarded value as json::parse does. Every JSON we read goes through here.
nlohmann::json parse_json(std::string_view text, bool allow_exceptions = true);

// `j` as JSON text (indent as in json::dump; -1: one line).
std::string json_text(const nlohmann::json& j, int indent = 2);

// `text` with every byte that is not part of valid UTF-8 written as \xNN.
std::string escape_invalid_utf8(std::string_view text);

// obj[key] when `obj` is an object holding `key`, else null: for documents whose fields may be
// missing or mistyped, read without throwing.
inline const nlohmann::json& member(const nlohmann::json& obj, const std::string& key) {
  static const nlohmann::json k_null;
  if (!obj.is_object()) return k_null;
  auto it = obj.find(key);
  return it == obj.end() ? k_null : *it;
}

// obj[key] when it is a string, else "": the dashboard's pages read run files this way.
inline std::string member_string(const nlohmann::json& obj, const std::string& key) {
  const nlohmann::json& v = member(obj, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

} // namespace optimas::util
