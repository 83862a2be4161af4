#include "util/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace optimas {

ParseError::ParseError(std::string file, std::size_t line, const std::string& what)
    : Error(line > 0 ? fmt::format("{}:{}: {}", file, line, what) : fmt::format("{}: {}", file, what)),
      m_file(std::move(file)), m_line(line), m_reason(what) {}

std::string plain_message(const std::exception& e) {
  if (const auto* j = dynamic_cast<const nlohmann::json::exception*>(&e)) {
    std::string text = j->what();
    if (text.rfind("[json.exception.", 0) == 0)
      if (auto close = text.find("] "); close != std::string::npos) text.erase(0, close + 2);
    if (dynamic_cast<const nlohmann::json::parse_error*>(&e)) {
      // "parse error at line 1, column 3: syntax error while parsing value - invalid literal; last read: 'x'"
      if (text.rfind("parse error ", 0) == 0) text.erase(0, 12);
      return "not valid JSON " + text;
    }
    if (dynamic_cast<const nlohmann::json::type_error*>(&e)) return "a value of the wrong kind: " + text;
    if (dynamic_cast<const nlohmann::json::out_of_range*>(&e))
      return text.find("parsing") != std::string::npos ? "not valid JSON: " + text // 1e400
                                                       : "a value is missing or out of range: " + text;
    return "JSON: " + text;
  }
  if (const auto* f = dynamic_cast<const std::filesystem::filesystem_error*>(&e)) {
    std::string path = f->path1().string();
    if (!f->path2().empty()) path += " -> " + f->path2().string();
    return path.empty() ? f->code().message() : fmt::format("{}: {}", path, f->code().message());
  }
  return e.what();
}

} // namespace optimas
