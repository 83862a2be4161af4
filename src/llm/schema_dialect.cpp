#include "llm/schema_dialect.hpp"

#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <mutex>

namespace optimas::llm {

using nlohmann::json;

namespace {

// Where JSON Schema (2020-12, and the older drafts providers still read) puts subschemas. Only
// these are walked into: the value of any other keyword is data (enum values, required names,
// a default) and is sent untouched.
constexpr std::string_view k_schema_maps[] = {"properties", "$defs", "definitions", "patternProperties",
                                              "dependentSchemas"};
constexpr std::string_view k_schema_lists[] = {"anyOf", "oneOf", "allOf", "prefixItems"};
constexpr std::string_view k_schema_values[] = {
    "items",         "additionalProperties", "additionalItems",      "not", "if", "then", "else", "contains",
    "propertyNames", "unevaluatedItems",     "unevaluatedProperties"};

template <std::size_t N> bool one_of(const std::string_view (&list)[N], std::string_view key) {
  return std::find(std::begin(list), std::end(list), key) != std::end(list);
}

// A JSON Pointer token: "~" and "/" escaped, so places in messages are unambiguous.
std::string token(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string place(const std::string& at) {
  return at.empty() ? "/" : at;
}

json sanitise(const json& node, const SchemaDialect& dialect, const std::string& at,
              std::vector<std::string>& stripped) {
  // true/false schemas and anything malformed go out as they are; the provider judges them.
  if (!node.is_object()) return node;
  json out = json::object();
  for (const auto& [key, value] : node.items()) {
    if (!dialect.keeps(key)) {
      stripped.push_back(fmt::format("{} at {}", key, place(at)));
      continue;
    }
    if (key == "format" && !dialect.formats.empty() &&
        !(value.is_string() && dialect.formats.contains(value.get<std::string>()))) {
      stripped.push_back(fmt::format("format {} at {}", value.dump(), place(at)));
      continue;
    }
    const std::string here = at + "/" + token(key);
    if (one_of(k_schema_maps, key) && value.is_object()) {
      json map = json::object();
      for (const auto& [name, sub] : value.items())
        map[name] = sanitise(sub, dialect, here + "/" + token(name), stripped);
      out[key] = std::move(map);
    } else if ((one_of(k_schema_lists, key) || key == "items") && value.is_array()) {
      json list = json::array();
      for (std::size_t i = 0; i < value.size(); ++i)
        list.push_back(sanitise(value[i], dialect, here + "/" + std::to_string(i), stripped));
      out[key] = std::move(list);
    } else if (one_of(k_schema_values, key)) {
      out[key] = sanitise(value, dialect, here, stripped);
    } else {
      out[key] = value;
    }
  }
  return out;
}

bool is_object_schema(const json& node) {
  if (!node.is_object()) return false;
  if (node.contains("properties")) return true;
  auto type = node.find("type");
  if (type == node.end()) return false;
  if (type->is_string()) return *type == "object";
  if (type->is_array()) return std::find(type->begin(), type->end(), json("object")) != type->end();
  return false;
}

// The first reason a strict mode cannot hold for `node` and what it contains; "" when it can.
std::string strict_problem(const json& node, const std::string& at) {
  if (!node.is_object()) return "";
  if (is_object_schema(node)) {
    if (node.value("additionalProperties", json(true)) != json(false))
      return fmt::format("the object at {} does not have \"additionalProperties\": false", place(at));
    const json required = node.value("required", json::array());
    const json properties = node.value("properties", json::object());
    for (const auto& [name, sub] : properties.items())
      if (!required.is_array() || std::find(required.begin(), required.end(), json(name)) == required.end())
        return fmt::format("the object at {} does not list its property \"{}\" in \"required\"", place(at), name);
  }
  for (const auto& [key, value] : node.items()) {
    const std::string here = at + "/" + token(key);
    std::string problem;
    if (one_of(k_schema_maps, key) && value.is_object()) {
      for (const auto& [name, sub] : value.items())
        if (problem.empty()) problem = strict_problem(sub, here + "/" + token(name));
    } else if ((one_of(k_schema_lists, key) || key == "items") && value.is_array()) {
      for (std::size_t i = 0; i < value.size() && problem.empty(); ++i)
        problem = strict_problem(value[i], here + "/" + std::to_string(i));
    } else if (one_of(k_schema_values, key)) {
      problem = strict_problem(value, here);
    }
    if (!problem.empty()) return problem;
  }
  return "";
}

std::string root_problem(const json& schema) {
  if (!is_object_schema(schema)) return "the root of the schema is not an object";
  if (schema.contains("anyOf")) return "the root of the schema is an anyOf";
  return "";
}

} // namespace

bool SchemaDialect::keeps(std::string_view keyword) const {
  if (keep_unlisted) return !stripped.contains(keyword);
  return kept.contains(keyword);
}

SanitisedSchema sanitise_schema(const json& schema, const SchemaDialect& dialect) {
  SanitisedSchema out;
  out.schema = sanitise(schema, dialect, "", out.stripped);
  if (dialect.strict_mode) {
    out.not_strict_because = root_problem(out.schema);
    if (out.not_strict_because.empty()) out.not_strict_because = strict_problem(out.schema, "");
    out.strict = out.not_strict_because.empty();
  }
  return out;
}

SanitisedSchema outgoing_schema(const json& schema, const SchemaDialect& dialect, std::string_view who) {
  SanitisedSchema out = sanitise_schema(schema, dialect);
  if (!out.stripped.empty())
    log::debug("{}: schema dialect {} left out {}", who, dialect.name, util::join(out.stripped, ", "));
  if (dialect.strict_mode && !out.strict) {
    // Every call of a run would say the same; once per backend and reason is enough.
    static std::mutex mutex;
    static std::set<std::string> warned;
    std::lock_guard lock(mutex);
    if (warned.insert(fmt::format("{}\n{}", who, out.not_strict_because)).second)
      log::warn("{}: the reply schema cannot be sent in strict mode ({}), so it goes out with strict: false and the "
                "model may answer outside it; every reply is still checked against the full schema. To keep strict "
                "mode, close every object (\"additionalProperties\": false) and list all its properties in "
                "\"required\" (nullable where optional)",
                who, out.not_strict_because);
  }
  return out;
}

std::string describe(const SchemaDialect& dialect) {
  std::vector<std::string> keywords;
  for (const auto& k : dialect.keep_unlisted ? dialect.stripped : dialect.kept) keywords.push_back(k);
  std::string text = dialect.keep_unlisted
                         ? fmt::format("{}: sends every keyword but {}", dialect.name, util::join(keywords, ", "))
                         : fmt::format("{}: sends only {}", dialect.name, util::join(keywords, ", "));
  if (!dialect.formats.empty()) {
    std::vector<std::string> formats(dialect.formats.begin(), dialect.formats.end());
    text += fmt::format(" (format: {})", util::join(formats, ", "));
  }
  if (dialect.strict_mode) text += "; strict mode when every object is closed";
  return text;
}

} // namespace optimas::llm
