// Tests of llm/schema_dialect: the walk that turns a schema into what a provider takes, the
// strict-mode check, and the dialects the registry names. What each provider receives is shown in
// its own test file (test_llm_openai.cpp, ...), against its documentation.
#include "llm/backend.hpp"
#include "llm/schema_dialect.hpp"
#include "prompt/reply.hpp"
#include "util/log.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

using namespace optimas::llm;
using nlohmann::json;

namespace {

const SchemaDialect k_allow = {
    .name = "test-allow",
    .kept = {"type", "properties", "required", "additionalProperties", "items", "enum", "anyOf", "$defs", "$ref",
             "format", "prefixItems"},
    .formats = {"date"},
    .strict_mode = true,
};

const SchemaDialect k_deny = {
    .name = "test-deny",
    .stripped = {"$schema", "$id"},
    .keep_unlisted = true,
};

bool has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

} // namespace

TEST(SchemaDialect, AnAllowListSendsOnlyItsKeywordsAndSaysWhatItLeftOut) {
  json schema = json::parse(R"({
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "t",
    "type": "object",
    "properties": {"when": {"type": "string", "format": "date", "description": "d"}},
    "required": ["when"],
    "additionalProperties": false
  })");
  SanitisedSchema out = sanitise_schema(schema, k_allow);
  EXPECT_EQ(out.schema, json::parse(R"({
    "type": "object",
    "properties": {"when": {"type": "string", "format": "date"}},
    "required": ["when"],
    "additionalProperties": false
  })"));
  EXPECT_EQ(out.stripped.size(), 3u);
  EXPECT_TRUE(has(out.stripped, "$schema at /"));
  EXPECT_TRUE(has(out.stripped, "title at /"));
  EXPECT_TRUE(has(out.stripped, "description at /properties/when"));
  EXPECT_TRUE(out.strict);
}

TEST(SchemaDialect, NamesAndValuesAreNeverTakenForKeywords) {
  // Properties and definitions called like keywords, and keyword-like strings in enum, required
  // and const, are data: only keywords in schema positions are judged.
  json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "title": {"type": "string", "enum": ["$schema", "title"]},
      "$schema": {"type": "string"},
      "description": {"$ref": "#/$defs/minLength"}
    },
    "required": ["title", "$schema", "description"],
    "additionalProperties": false,
    "$defs": {"minLength": {"type": "integer", "minimum": 0}}
  })");
  SanitisedSchema out = sanitise_schema(schema, k_allow);
  EXPECT_EQ(out.schema["properties"]["title"], json::parse(R"({"type": "string", "enum": ["$schema", "title"]})"));
  EXPECT_EQ(out.schema["properties"]["$schema"], json::parse(R"({"type": "string"})"));
  EXPECT_EQ(out.schema["properties"]["description"], json::parse(R"({"$ref": "#/$defs/minLength"})"));
  EXPECT_EQ(out.schema["$defs"]["minLength"], json::parse(R"({"type": "integer"})"));
  EXPECT_EQ(out.schema["required"], schema["required"]);
  EXPECT_EQ(out.stripped, (std::vector<std::string>{"minimum at /$defs/minLength"}));
}

TEST(SchemaDialect, WalksIntoEverySubschema) {
  json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "list": {"type": "array", "items": {"type": "string", "minLength": 1}},
      "pair": {"type": "array", "prefixItems": [{"type": "integer", "maximum": 3}, {"type": "string"}]},
      "either": {"anyOf": [{"type": "string", "pattern": "x"}, {"type": "null"}]},
      "map": {"type": "object", "additionalProperties": {"type": "number", "multipleOf": 2}},
      "old": {"type": "array", "items": [{"type": "string", "maxLength": 4}]}
    },
    "required": ["list", "pair", "either", "map", "old"],
    "additionalProperties": false
  })");
  SanitisedSchema out = sanitise_schema(schema, k_allow);
  EXPECT_EQ(out.stripped, (std::vector<std::string>{
                              "pattern at /properties/either/anyOf/0", "minLength at /properties/list/items",
                              "multipleOf at /properties/map/additionalProperties",
                              "maxLength at /properties/old/items/0", "maximum at /properties/pair/prefixItems/0"}));
  EXPECT_EQ(out.schema["properties"]["map"]["additionalProperties"], json::parse(R"({"type": "number"})"));
  EXPECT_EQ(out.schema["properties"]["old"]["items"], json::parse(R"([{"type": "string"}])"));
}

TEST(SchemaDialect, AFormatTheProviderDoesNotListIsLeftOut) {
  json schema = {{"type", "string"}, {"format", "uri"}};
  SanitisedSchema out = sanitise_schema(schema, k_allow);
  EXPECT_EQ(out.schema, (json{{"type", "string"}}));
  EXPECT_EQ(out.stripped, (std::vector<std::string>{"format \"uri\" at /"}));
}

TEST(SchemaDialect, ADenyListSendsEverythingElse) {
  json schema = optimas::prompt::reply_schema();
  SanitisedSchema out = sanitise_schema(schema, k_deny);
  json expected = schema;
  expected.erase("$schema");
  expected.erase("$id");
  EXPECT_EQ(out.schema, expected);
  EXPECT_FALSE(out.strict) << "no strict mode in this dialect";
  EXPECT_TRUE(out.not_strict_because.empty());
}

TEST(SchemaDialect, StrictModeNeedsEveryObjectClosedAndComplete) {
  json closed = json::parse(R"({
    "type": "object",
    "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"],
                         "additionalProperties": false}},
    "required": ["a"],
    "additionalProperties": false
  })");
  EXPECT_TRUE(sanitise_schema(closed, k_allow).strict);

  json open = closed;
  open["properties"]["a"].erase("additionalProperties");
  SanitisedSchema out = sanitise_schema(open, k_allow);
  EXPECT_FALSE(out.strict);
  EXPECT_EQ(out.not_strict_because, "the object at /properties/a does not have \"additionalProperties\": false");

  json optional = closed;
  optional["properties"]["a"]["required"] = json::array();
  EXPECT_EQ(sanitise_schema(optional, k_allow).not_strict_because,
            "the object at /properties/a does not list its property \"b\" in \"required\"");

  json in_items = closed;
  in_items["properties"]["a"] = {{"type", "array"}, {"items", {{"type", "object"}, {"properties", json::object()}}}};
  EXPECT_EQ(sanitise_schema(in_items, k_allow).not_strict_because,
            "the object at /properties/a/items does not have \"additionalProperties\": false");

  EXPECT_EQ(sanitise_schema(json{{"type", "array"}, {"items", {{"type", "string"}}}}, k_allow).not_strict_because,
            "the root of the schema is not an object");
  json any = closed;
  any["anyOf"] = json::array({closed, closed});
  EXPECT_EQ(sanitise_schema(any, k_allow).not_strict_because, "the root of the schema is an anyOf");
}

TEST(SchemaDialect, TheFallbackIsWarnedOncePerBackendAndReason) {
  json open = {{"type", "object"}, {"properties", {{"x", {{"type", "string"}}}}}};
  testing::internal::CaptureStderr();
  SanitisedSchema first = outgoing_schema(open, k_allow, "test/warn-once");
  SanitisedSchema second = outgoing_schema(open, k_allow, "test/warn-once");
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(first.strict);
  EXPECT_FALSE(second.strict);
  auto count = [&](const std::string& s) {
    std::size_t n = 0;
    for (auto p = log.find(s); p != std::string::npos; p = log.find(s, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("test/warn-once: the reply schema cannot be sent in strict mode"), 1u) << log;
  EXPECT_NE(log.find("strict: false"), std::string::npos) << log;
}

// Every backend that sends a schema declares a dialect; the reply schema keeps every property
// and stays closed in all of them, so strict modes hold and our own validation still applies.
TEST(SchemaDialect, EveryHttpBackendHasADialectThatKeepsTheReplySchemaWhole) {
  for (const auto& spec : backends()) {
    SCOPED_TRACE(spec.name);
    if (spec.name == "manual" || spec.name == "builtin") {
      EXPECT_FALSE(spec.schema_dialect);
      continue;
    }
    ASSERT_TRUE(spec.schema_dialect);
    const SchemaDialect& dialect = spec.schema_dialect("");
    EXPECT_FALSE(dialect.name.empty());
    EXPECT_TRUE(dialect.source.starts_with("https://")) << dialect.source;
    EXPECT_TRUE(dialect.declared_in.starts_with("src/llm/")) << dialect.declared_in;
    SanitisedSchema out = sanitise_schema(optimas::prompt::reply_schema(), dialect);
    EXPECT_EQ(out.schema["required"], optimas::prompt::reply_schema()["required"]);
    EXPECT_EQ(out.schema["properties"]["edits"]["items"]["required"].size(), 10u);
    EXPECT_FALSE(out.schema.contains("$schema"));
    if (dialect.strict_mode) {
      EXPECT_TRUE(out.strict) << out.not_strict_because;
    }
    // A reply that follows the full schema follows what was sent.
    json reply = json::parse(R"({"summary": "s", "edits": [], "withheld": []})");
    EXPECT_TRUE(optimas::prompt::validate(reply, out.schema).empty());
    EXPECT_FALSE(describe(dialect).empty());
  }
}
