// What a provider's structured-output mode takes of JSON Schema. Each API accepts its own subset
// and some refuse a request that carries a keyword outside it ("400 Invalid schema"), so a
// backend never sends the reply schema as written: it sends what its dialect keeps. The tables
// live next to each backend's code (openai.cpp, gemini.cpp, ...) and are registered through its
// BackendSpec; this file holds the one walk they share. Our own check of a reply always uses the
// full schema (prompt::validate), so a keyword stripped here is still enforced there.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace optimas::llm {

using KeywordSet = std::set<std::string, std::less<>>;

struct SchemaDialect {
  std::string name = {};        // "openai-strict": shown by `optimas backends` and in check reports
  std::string source = {};      // the provider's documentation page the tables follow
  std::string declared_in = {}; // "src/llm/openai.cpp": where to change the tables
  // With keep_unlisted false (an allow-list), only `kept` keywords are sent. With keep_unlisted
  // true, every keyword but the `stripped` ones is sent.
  KeywordSet kept = {};
  KeywordSet stripped = {};
  bool keep_unlisted = false;
  // The values of "format" the provider knows; empty: all. Another value strips the keyword.
  KeywordSet formats = {};
  // The provider has a strict mode that holds only for closed schemas: an object at the root,
  // and in every object "additionalProperties": false and every property listed in "required".
  // A schema that is not closed goes out with strict mode off (and a warning).
  bool strict_mode = false;

  bool keeps(std::string_view keyword) const;
};

struct SanitisedSchema {
  nlohmann::json schema;             // what the backend sends
  std::vector<std::string> stripped; // each keyword taken out, with its place: "$schema at /"
  bool strict = false;               // strict mode can be asked for (dialects with strict_mode only)
  std::string not_strict_because;    // why not, naming the place, when strict_mode holds but strict is false
};

// The schema as `dialect` sends it. Only keywords are ever removed: property names (the keys
// under "properties", "$defs", ...) and values (enum, required, const) are kept as they are,
// so a property called "format" or "title" survives.
SanitisedSchema sanitise_schema(const nlohmann::json& schema, const SchemaDialect& dialect);

// sanitise_schema for a backend about to send a request: logs the stripped keywords (debug) and,
// once per backend and reason, warns that strict mode was turned off and why.
SanitisedSchema outgoing_schema(const nlohmann::json& schema, const SchemaDialect& dialect, std::string_view who);

// One line for `optimas backends`: "openai-strict: keeps type, properties, ...; strict mode when closed".
std::string describe(const SchemaDialect& dialect);

} // namespace optimas::llm
