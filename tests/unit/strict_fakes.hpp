// The providers' own checks of a request, for the local fakes in the backend tests: a request
// the real API refuses is refused here, with the provider's HTTP status and the shape of its
// error body. The rules are written from the providers' API references and structured-output
// pages (cited at each function), not from our dialects in src/llm, so that a dialect sending
// too much fails against them. Where a real API silently ignores a mistake (Ollama drops unknown
// fields and options), the fake refuses it: a field the provider never reads is a bug to catch.
// Needs only nlohmann::json.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace strict_fakes {

using nlohmann::json;

struct Rejection {
  int status = 400;
  json body;
};
using Verdict = std::optional<Rejection>;

// What a test adds to a provider's documented rules: keywords refused on top of them, to play a
// provider whose validator has moved on (a check must then report the rejection and the dialect).
struct Extra {
  std::set<std::string> refused_keywords;
};

using Path = std::vector<std::string>;
using Keywords = std::set<std::string>;

// Calls `visit` on `schema` and on every schema inside it, with the keys leading there. Stops at
// the first visit that returns a Rejection.
inline Verdict walk_schemas(const json& schema, const Path& path,
                            const std::function<Verdict(const json&, const Path&)>& visit) {
  if (auto v = visit(schema, path)) return v;
  if (!schema.is_object()) return std::nullopt;
  static const Keywords maps = {"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"};
  static const Keywords lists = {"anyOf", "oneOf", "allOf", "prefixItems"};
  static const Keywords single = {
      "items",         "additionalProperties", "additionalItems",      "not", "if", "then", "else", "contains",
      "propertyNames", "unevaluatedItems",     "unevaluatedProperties"};
  for (const auto& [key, value] : schema.items()) {
    Path here = path;
    here.push_back(key);
    if (maps.count(key) && value.is_object()) {
      for (const auto& [name, sub] : value.items()) {
        Path inner = here;
        inner.push_back(name);
        if (auto v = walk_schemas(sub, inner, visit)) return v;
      }
    } else if ((lists.count(key) || key == "items") && value.is_array()) {
      for (std::size_t i = 0; i < value.size(); ++i) {
        Path inner = here;
        inner.push_back(std::to_string(i));
        if (auto v = walk_schemas(value[i], inner, visit)) return v;
      }
    } else if (single.count(key) && value.is_object()) {
      if (auto v = walk_schemas(value, here, visit)) return v;
    }
  }
  return std::nullopt;
}

inline std::string dotted(const Path& path) {
  std::string out;
  for (const auto& p : path) out += (out.empty() ? "" : ".") + p;
  return out;
}

inline bool is_object_type(const json& schema) {
  if (!schema.is_object()) return false;
  if (schema.contains("properties")) return true;
  const json type = schema.value("type", json());
  return type == "object" || (type.is_array() && std::count(type.begin(), type.end(), json("object")));
}

// --- OpenAI Chat Completions ------------------------------------------------------------------

// The request fields of POST /v1/chat/completions
// (https://platform.openai.com/docs/api-reference/chat/create).
inline const Keywords& openai_request_fields() {
  static const Keywords k = {"audio",
                             "frequency_penalty",
                             "function_call",
                             "functions",
                             "logit_bias",
                             "logprobs",
                             "max_completion_tokens",
                             "max_tokens",
                             "messages",
                             "metadata",
                             "modalities",
                             "model",
                             "n",
                             "parallel_tool_calls",
                             "prediction",
                             "presence_penalty",
                             "prompt_cache_key",
                             "reasoning_effort",
                             "response_format",
                             "safety_identifier",
                             "seed",
                             "service_tier",
                             "stop",
                             "store",
                             "stream",
                             "stream_options",
                             "temperature",
                             "tool_choice",
                             "tools",
                             "top_logprobs",
                             "top_p",
                             "user",
                             "verbosity",
                             "web_search_options"};
  return k;
}

// Keywords strict mode accepts, from "Supported schemas" in
// https://platform.openai.com/docs/guides/structured-outputs#supported-schemas; fine-tuned models
// take none of the string, number and array constraints listed there.
inline Keywords openai_strict_keywords(bool fine_tuned) {
  Keywords k = {"type",  "properties", "required", "additionalProperties", "items", "enum",
                "const", "anyOf",      "$defs",    "definitions",          "$ref",  "description"};
  if (!fine_tuned)
    k.insert({"pattern", "format", "multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
              "minItems", "maxItems"});
  return k;
}

inline Rejection openai_error(const std::string& message, json param = nullptr, json code = nullptr) {
  return {400,
          {{"error", {{"message", message}, {"type", "invalid_request_error"}, {"param", param}, {"code", code}}}}};
}

// OpenAI names the place in a schema as a Python tuple: (), ('properties', 'edits'), ...
inline std::string openai_context(const Path& path) {
  std::string out = "(";
  for (std::size_t i = 0; i < path.size(); ++i) out += (i ? ", '" : "'") + path[i] + "'";
  return out + (path.size() == 1 ? ",)" : ")");
}

inline bool openai_reasoning_model(const std::string& model) {
  bool reasoning =
      model.starts_with("o1") || model.starts_with("o3") || model.starts_with("o4") || model.starts_with("gpt-5");
  return reasoning && model.find("-chat") == std::string::npos;
}

// The schema checks of strict mode: a closed object at the root, every object closed and
// requiring all its properties, and only the supported keywords (and formats).
inline Verdict openai_strict_schema(const json& schema, const std::string& name, const Keywords& allowed) {
  auto invalid = [&](const Path& path, const std::string& what) {
    return openai_error("Invalid schema for response_format '" + name + "': In context=" + openai_context(path) + ", " +
                            what,
                        "response_format");
  };
  if (!is_object_type(schema) || schema.contains("anyOf"))
    return openai_error("Invalid schema for response_format '" + name +
                            "': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"" +
                            schema.value("type", json("none")).dump() + "\"'.",
                        "response_format");
  static const Keywords formats = {"date-time", "time", "date", "duration", "email",
                                   "hostname",  "ipv4", "ipv6", "uuid"};
  return walk_schemas(schema, {}, [&](const json& node, const Path& path) -> Verdict {
    if (!node.is_object()) return std::nullopt;
    for (const auto& [key, value] : node.items()) {
      if (!allowed.count(key)) return invalid(path, "'" + key + "' is not permitted.");
      if (key == "format" && (!value.is_string() || !formats.count(value.get<std::string>())))
        return invalid(path, "'format' " + value.dump() + " is not a supported format.");
    }
    if (is_object_type(node)) {
      if (node.value("additionalProperties", json(true)) != json(false))
        return invalid(path, "'additionalProperties' is required to be supplied and to be false.");
      const json required = node.value("required", json::array());
      const json properties = node.value("properties", json::object());
      for (const auto& [prop, sub] : properties.items())
        if (!required.is_array() || !std::count(required.begin(), required.end(), json(prop)))
          return invalid(path, "'required' is required to be supplied and to be an array including every key in "
                               "properties. Missing '" +
                                   prop + "'.");
    }
    return std::nullopt;
  });
}

// POST /v1/chat/completions as api.openai.com checks it; with `compatible`, as a strict
// OpenAI-compatible server does (Vertex AI's endpoint and others have refused "format" and
// "pattern" in strict schemas, and such servers know max_tokens rather than reasoning models).
inline Verdict openai_chat(const json& body, bool compatible = false, const Extra& extra = {}) {
  if (!body.is_object())
    return openai_error("We could not parse the JSON body of your request. (HINT: This likely means you aren't "
                        "using your HTTP library correctly.)");
  for (const auto& [key, value] : body.items())
    if (!openai_request_fields().count(key)) return openai_error("Unrecognized request argument supplied: " + key);
  if (!body.contains("model")) return openai_error("you must provide a model parameter");
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty())
    return openai_error("Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
  static const Keywords roles = {"system", "developer", "user", "assistant", "tool", "function"};
  for (std::size_t i = 0; i < body["messages"].size(); ++i) {
    const json& m = body["messages"][i];
    if (!m.is_object() || !roles.count(m.value("role", "")) || !m.contains("content"))
      return openai_error("Invalid value for 'messages[" + std::to_string(i) +
                              "]': each message needs a role "
                              "('system', 'developer', 'user', 'assistant', 'tool') and content.",
                          "messages[" + std::to_string(i) + "]");
  }
  const std::string model = body["model"].get<std::string>();
  if (!compatible && openai_reasoning_model(model)) {
    if (body.contains("temperature") && body["temperature"] != 1)
      return openai_error("Unsupported value: 'temperature' does not support " + body["temperature"].dump() +
                              " with this model. Only the default (1) value is supported.",
                          "temperature", "unsupported_value");
    if (body.contains("max_tokens"))
      return openai_error("Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                          "'max_completion_tokens' instead.",
                          "max_tokens", "unsupported_parameter");
  }
  if (auto rf = body.find("response_format"); rf != body.end()) {
    if (!rf->is_object()) return openai_error("Invalid type for 'response_format': expected an object.");
    const std::string type = rf->value("type", "");
    if (type != "text" && type != "json_object" && type != "json_schema")
      return openai_error("Invalid value: '" + type +
                              "'. Supported values are: 'text', 'json_object', and "
                              "'json_schema'.",
                          "response_format.type", "invalid_value");
    if (type == "json_schema") {
      const json js = rf->value("json_schema", json());
      if (!js.is_object()) return openai_error("Missing required parameter: 'response_format.json_schema'.");
      for (const auto& [key, value] : js.items())
        if (key != "name" && key != "description" && key != "schema" && key != "strict")
          return openai_error("Unrecognized request argument supplied: response_format.json_schema." + key);
      const std::string name = js.value("name", "");
      if (!std::regex_match(name, std::regex("^[a-zA-Z0-9_-]{1,64}$")))
        return openai_error("Invalid 'response_format.json_schema.name': string does not match pattern. Expected a "
                            "string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                            "response_format.json_schema.name", "invalid_value");
      const json schema = js.value("schema", json::object());
      Keywords allowed = openai_strict_keywords(model.starts_with("ft:"));
      if (compatible) {
        allowed.erase("format");
        allowed.erase("pattern");
      }
      for (const auto& k : extra.refused_keywords) allowed.erase(k);
      if (js.value("strict", false)) {
        if (auto v = openai_strict_schema(schema, name, allowed)) return v;
      } else if (auto v = walk_schemas(schema, {}, [&](const json& node, const Path& path) -> Verdict {
                   for (const auto& k : extra.refused_keywords)
                     if (node.is_object() && node.contains(k))
                       return openai_error("Invalid schema for response_format '" + name + "': In context=" +
                                               openai_context(path) + ", '" + k + "' is not permitted.",
                                           "response_format");
                   return std::nullopt;
                 })) {
        return v;
      }
    }
  }
  return std::nullopt;
}

// --- Gemini generateContent ---------------------------------------------------------------------

inline Rejection gemini_error(const std::string& message, int code = 400,
                              const std::string& status = "INVALID_ARGUMENT") {
  return {code, {{"error", {{"code", code}, {"message", message}, {"status", status}}}}};
}

inline Rejection gemini_unknown_field(const std::string& name, const std::string& at) {
  std::string where = at.empty() ? "" : " at '" + at + "'";
  std::string message = "Invalid JSON payload received. Unknown name \"" + name + "\"" + where + ": Cannot find field.";
  Rejection r = gemini_error(message);
  r.body["error"]["details"] = json::array(
      {{{"@type", "type.googleapis.com/google.rpc.BadRequest"}, {"fieldViolations", {{{"description", message}}}}}});
  return r;
}

// Proto JSON accepts a field by its lowerCamel name or its original snake_case name.
inline std::string snake(const std::string& camel) {
  std::string out;
  for (char c : camel) {
    if (c >= 'A' && c <= 'Z') {
      out += '_';
      out += static_cast<char>(c - 'A' + 'a');
    } else {
      out += c;
    }
  }
  return out;
}
inline bool known_field(const Keywords& camel_names, const std::string& name) {
  for (const auto& c : camel_names)
    if (name == c || name == snake(c)) return true;
  return false;
}

// POST /v1beta/models/MODEL:generateContent as generativelanguage.googleapis.com checks it
// (https://ai.google.dev/api/generate-content): unknown fields are refused, the two schema fields
// exclude each other, and responseJsonSchema takes the keywords listed under "JSON Schema support"
// in https://ai.google.dev/gemini-api/docs/structured-output#json-schema.
inline Verdict gemini_generate_content(const json& body, const Extra& extra = {}) {
  if (!body.is_object()) return gemini_error("Invalid JSON payload received. Expected an object.");
  static const Keywords fields = {
      "contents", "tools", "toolConfig", "safetySettings", "systemInstruction", "generationConfig", "cachedContent"};
  for (const auto& [key, value] : body.items())
    if (!known_field(fields, key)) return gemini_unknown_field(key, "");
  if (!body.contains("contents") || !body["contents"].is_array() || body["contents"].empty())
    return gemini_error("* GenerateContentRequest.contents: contents is not specified");
  for (const auto& content : body["contents"])
    if (!content.is_object() || !content.contains("parts") || content["parts"].empty())
      return gemini_error("* GenerateContentRequest.contents.parts: contents.parts must not be empty.");
  const json config = body.value("generationConfig", body.value("generation_config", json::object()));
  static const Keywords config_fields = {"stopSequences",
                                         "responseMimeType",
                                         "responseSchema",
                                         "responseJsonSchema",
                                         "responseModalities",
                                         "candidateCount",
                                         "maxOutputTokens",
                                         "temperature",
                                         "topP",
                                         "topK",
                                         "seed",
                                         "presencePenalty",
                                         "frequencyPenalty",
                                         "responseLogprobs",
                                         "logprobs",
                                         "enableEnhancedCivicAnswers",
                                         "speechConfig",
                                         "thinkingConfig",
                                         "imageConfig",
                                         "mediaResolution"};
  for (const auto& [key, value] : config.items())
    if (!known_field(config_fields, key)) return gemini_unknown_field(key, "generation_config");
  if (double t = config.value("temperature", 1.0); t < 0 || t > 2)
    return gemini_error("* GenerateContentRequest.generation_config.temperature: temperature must be in [0.0, 2.0]");
  const bool has_schema = config.contains("responseSchema") || config.contains("response_schema");
  const json json_schema = config.value("responseJsonSchema", config.value("response_json_schema", json()));
  if (has_schema && !json_schema.is_null())
    return gemini_error("* GenerateContentRequest.generation_config: response_schema and response_json_schema "
                        "cannot both be set.");
  if (json_schema.is_null()) return std::nullopt;
  if (config.value("responseMimeType", config.value("response_mime_type", "")) != "application/json")
    return gemini_error("* GenerateContentRequest.generation_config.response_mime_type: response_json_schema needs "
                        "response_mime_type application/json.");
  Keywords allowed = {"type",     "title",    "description", "properties", "required", "additionalProperties",
                      "enum",     "format",   "minimum",     "maximum",    "items",    "prefixItems",
                      "minItems", "maxItems", "anyOf",       "$ref",       "$defs"};
  for (const auto& k : extra.refused_keywords) allowed.erase(k);
  return walk_schemas(json_schema, {}, [&](const json& node, const Path& path) -> Verdict {
    if (!node.is_object()) return std::nullopt;
    std::string at = "generation_config.response_json_schema" + (path.empty() ? "" : "." + dotted(path));
    for (const auto& [key, value] : node.items()) {
      if (!allowed.count(key)) return gemini_unknown_field(key, at);
      if (key == "format" && value != "date-time" && value != "date" && value != "time")
        return gemini_error("* GenerateContentRequest." + at +
                            ".format: only 'date-time', 'date' and 'time' are "
                            "supported, got " +
                            value.dump());
    }
    return std::nullopt;
  });
}

// --- Anthropic Messages -------------------------------------------------------------------------

inline Rejection anthropic_error(const std::string& message, int status = 400,
                                 const std::string& type = "invalid_request_error") {
  return {status, {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}}};
}

// POST /v1/messages as api.anthropic.com checks it (https://docs.anthropic.com/en/api/messages):
// unknown fields are "Extra inputs", a tool's input_schema must be an object schema of draft
// 2020-12 (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use), and
// a forced tool_choice must name a tool.
inline Verdict anthropic_messages(const json& body, const Extra& extra = {}) {
  if (!body.is_object()) return anthropic_error("Input should be a valid dictionary");
  static const Keywords fields = {
      "model",  "messages", "max_tokens", "system",      "temperature", "top_k",        "top_p",     "stop_sequences",
      "stream", "metadata", "tools",      "tool_choice", "thinking",    "service_tier", "container", "mcp_servers"};
  for (const auto& [key, value] : body.items())
    if (!fields.count(key)) return anthropic_error(key + ": Extra inputs are not permitted");
  for (const char* required : {"model", "max_tokens", "messages"})
    if (!body.contains(required)) return anthropic_error(std::string(required) + ": Field required");
  if (double t = body.value("temperature", 1.0); t < 0 || t > 1)
    return anthropic_error("temperature: Input should be less than or equal to 1");
  if (!body["messages"].is_array() || body["messages"].empty())
    return anthropic_error("messages: Input should be a valid list with at least 1 item");
  for (const auto& m : body["messages"]) {
    std::string role = m.is_object() ? m.value("role", "") : "";
    if (role != "user" && role != "assistant")
      return anthropic_error("messages: Unexpected role \"" + role +
                             "\". The Messages API accepts a top-level `system` parameter, not \"system\" as an "
                             "input message role.");
  }
  Keywords tool_names;
  const json tools = body.value("tools", json::array());
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const json& tool = tools[i];
    const std::string at = "tools." + std::to_string(i) + ".custom.";
    if (!tool.is_object())
      return anthropic_error("tools." + std::to_string(i) + ": Input should be a valid dictionary");
    for (const auto& [key, value] : tool.items())
      if (key != "name" && key != "description" && key != "input_schema" && key != "cache_control" && key != "type")
        return anthropic_error(at + key + ": Extra inputs are not permitted");
    const std::string name = tool.value("name", "");
    if (!std::regex_match(name, std::regex("^[a-zA-Z0-9_-]{1,64}$")))
      return anthropic_error(at + "name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'");
    tool_names.insert(name);
    if (!tool.contains("input_schema")) return anthropic_error(at + "input_schema: Field required");
    const json& schema = tool["input_schema"];
    if (!schema.is_object() || schema.value("type", json()) != "object")
      return anthropic_error(at + "input_schema.type: Input should be 'object'");
    auto invalid = anthropic_error(at + "input_schema: JSON schema is invalid. It must match JSON Schema draft "
                                        "2020-12 (https://json-schema.org/draft/2020-12). Learn more about tool use "
                                        "at https://docs.anthropic.com/en/docs/tool-use.");
    if (schema.contains("$schema") && schema["$schema"] != "https://json-schema.org/draft/2020-12/schema")
      return invalid;
    if (auto v = walk_schemas(schema, {}, [&](const json& node, const Path&) -> Verdict {
          for (const auto& k : extra.refused_keywords)
            if (node.is_object() && node.contains(k)) return invalid;
          return std::nullopt;
        }))
      return v;
  }
  if (auto choice = body.find("tool_choice"); choice != body.end()) {
    if (!choice->is_object()) return anthropic_error("tool_choice: Input should be a valid dictionary");
    std::string type = choice->value("type", "");
    if (type != "auto" && type != "any" && type != "tool" && type != "none")
      return anthropic_error("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'");
    if (type == "tool" && !tool_names.count(choice->value("name", "")))
      return anthropic_error("tool_choice: Tool '" + choice->value("name", "") + "' not found in tools");
  }
  return std::nullopt;
}

// --- Ollama /api/chat ---------------------------------------------------------------------------

inline Rejection ollama_error(const std::string& message, int status = 400) {
  return {status, {{"error", message}}};
}

// POST /api/chat (https://docs.ollama.com/api/chat, https://docs.ollama.com/capabilities/structured-outputs).
// Ollama itself ignores unknown fields and options; this fake refuses them (see the top).
inline Verdict ollama_chat(const json& body, const Extra& extra = {}) {
  if (!body.is_object()) return ollama_error("invalid request body");
  static const Keywords fields = {"model", "messages", "tools", "format", "options", "stream", "keep_alive", "think"};
  for (const auto& [key, value] : body.items())
    if (!fields.count(key)) return ollama_error("json: unknown field \"" + key + "\"");
  if (!body.contains("model") || body["model"] == "") return ollama_error("model is required");
  for (const auto& m : body.value("messages", json::array())) {
    std::string role = m.is_object() ? m.value("role", "") : "";
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      return ollama_error("invalid role \"" + role + "\"");
  }
  static const Keywords options = {"num_keep",    "seed",           "num_predict",      "top_k",
                                   "top_p",       "min_p",          "typical_p",        "repeat_last_n",
                                   "temperature", "repeat_penalty", "presence_penalty", "frequency_penalty",
                                   "stop",        "num_ctx",        "num_batch",        "num_gpu",
                                   "main_gpu",    "use_mmap",       "num_thread"};
  const json given = body.value("options", json::object());
  for (const auto& [key, value] : given.items())
    if (!options.count(key)) return ollama_error("invalid option provided: " + key);
  if (auto format = body.find("format"); format != body.end()) {
    if (!(format->is_string() && *format == "json") && !format->is_object())
      return ollama_error("invalid format: expected \"json\" or a JSON schema object");
    if (format->is_object())
      return walk_schemas(*format, {}, [&](const json& node, const Path& path) -> Verdict {
        for (const auto& k : extra.refused_keywords)
          if (node.is_object() && node.contains(k))
            return ollama_error("invalid JSON schema in format at " + (path.empty() ? "/" : dotted(path)) +
                                ": keyword \"" + k + "\" is not supported");
        return std::nullopt;
      });
  }
  return std::nullopt;
}

} // namespace strict_fakes
