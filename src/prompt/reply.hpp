// The reply every backend must give (docs/reply.schema.json, compiled in): structured edits
// citing evidence, and withheld suggestions. Parsing accepts the JSON alone, in a fenced block,
// or after leading prose; a full-source code block is the fallback. A reply that does not parse
// is a value with errors, never an exception.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace optimas::prompt {

struct ExpectedEffect {
  std::string metric;
  std::string direction; // "increase" or "decrease"
};

// No source file Optimas edits has more lines than this; larger line numbers are errors.
inline constexpr std::int64_t k_max_line = 10'000'000;

struct Edit {
  std::string file;
  std::string kernel;
  std::optional<std::string> find; // exact text, must occur once
  std::optional<std::string> replace;
  // A line range instead (1-based, inclusive). 64-bit: a model's numbers are untrusted, and the
  // parser rejects any beyond k_max_line before anything adds to them.
  std::int64_t line_start = 0;
  std::int64_t line_end = 0;
  std::optional<std::string> new_text;
  std::vector<std::string> evidence;
  std::string rationale;
  std::vector<ExpectedEffect> expected_effect;
  // The builtin optimizer's rule that made the edit ("pad_shared", "hoist", ...); empty from a
  // model. Not part of the schema models are asked for: parse_reply takes it aside first.
  std::string rule;
  // The builtin's too: the PC items whose stalled lines the edit acts on without changing them
  // (a padded array's uses, an unrolled loop's body), for where-the-time-is coverage
  // (propose::coverage). Taken aside like `rule`.
  std::vector<std::string> addresses;
  bool is_range() const { return line_start > 0; }
};

struct Withheld {
  std::string suggestion;
  std::string reason;
  std::vector<std::string> evidence;
};

struct Reply {
  std::string summary;
  std::vector<Edit> edits;
  std::vector<Withheld> withheld;
  // Fallback: the model answered with a whole source file in a code block instead of JSON.
  std::optional<std::string> full_source;
};

// Larger replies are refused before they are parsed, diffed or stored.
inline constexpr std::size_t k_max_reply_bytes = 8'000'000;

struct ParsedReply {
  std::optional<Reply> reply;
  std::string format;              // "json", "fenced-json", "prose+json", "code-block", "none"
  std::vector<std::string> errors; // what is wrong, with JSON paths ("edits[1].evidence: ...")
  bool ok() const { return reply.has_value() && errors.empty(); }
};

// The published schema.
const nlohmann::json& reply_schema();

// Validates a JSON document against a schema (the subset our schemas use: type, enum,
// required, properties, additionalProperties, items, minimum). Returns the errors.
std::vector<std::string> validate(const nlohmann::json& doc, const nlohmann::json& schema,
                                  const std::string& path = "");

ParsedReply parse_reply(std::string_view text);

nlohmann::json to_json(const Reply& reply);

} // namespace optimas::prompt
