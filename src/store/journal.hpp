// The files of a run folder: JSON documents a step writes whole (atomically) and reads back on a
// resume, and JSONL journals (validation.jsonl, measurements.jsonl) it appends one line to per
// result as it goes, so that an interrupted run loses at most the line it was writing.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace optimas::store {

// Writes `doc` (indented, with a final newline) to a temporary file beside `path`, fsyncs it and
// renames it over `path`, so a reader sees the old or the new document, never half of one.
// Bytes that are not valid UTF-8 (compiler output) are written as \xNN (util::json_text), not fatal.
void write_json_atomic(const std::string& path, const nlohmann::json& doc);

// Parses `text`, read from `path`. Not JSON, or a number past double's range (1e400): a
// ParseError naming `path` and the line, with `what` before nlohmann's reason and `advice` after.
nlohmann::json parse_json(const std::string& text, const std::string& path, const std::string& what = "",
                          const std::string& advice = "");

// A step's record (build.json, replies.json, options.json, ...): ParseError naming file and line
// when it is broken, with the advice to delete it so that the step is done again.
nlohmann::json read_json(const std::string& path);

// Appends `doc` as one line of JSON and flushes it; Error naming the file when it cannot.
void append_line(const std::string& path, const nlohmann::json& doc);

struct Journal {
  std::vector<nlohmann::json> lines; // the objects, in order
  std::vector<std::string> skipped;  // "file:line: why" for each line left out
};

// The lines of a journal's text. A line that is not a JSON object (the last one cut short by a
// kill, a number past double's range) is left out and named in `skipped`: what it recorded is
// taken again, and every line before and after it is kept.
Journal parse_journal(const std::string& text, const std::string& path);

// The journal at `path` (none: no lines); a line left out is logged as a warning naming
// file:line.
std::vector<nlohmann::json> read_journal(const std::string& path);

} // namespace optimas::store
