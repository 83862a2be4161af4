// JSON as text for output and files. Profiles and programs carry bytes that are not UTF-8 (a
// kernel name, a session page, a program's output), which nlohmann::json refuses to write: here
// each such byte is written as the text \xNN instead, so --json output and artifacts never fail
// on them and lose nothing.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace optimas::util {

// `j` as JSON text (indent as in json::dump; -1: one line).
std::string json_text(const nlohmann::json& j, int indent = 2);

// `text` with every byte that is not part of valid UTF-8 written as \xNN.
std::string escape_invalid_utf8(std::string_view text);

} // namespace optimas::util
