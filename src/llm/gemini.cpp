// Google Gemini generateContent. JSON answers through responseMimeType application/json with
// responseJsonSchema (plain JSON Schema, unlike the older OpenAPI-subset responseSchema).
#include "llm/backend.hpp"

#include "llm/http.hpp"
#include "llm/schema_dialect.hpp"

#include <fmt/format.h>

namespace optimas::llm {

using nlohmann::json;

namespace {

// responseJsonSchema takes the subset of JSON Schema listed under "JSON Schema support" in
// https://ai.google.dev/gemini-api/docs/structured-output#json-schema: type (null included),
// title, description, properties, required, additionalProperties, enum, format (date-time, date,
// time), minimum, maximum, items, prefixItems, minItems, maxItems, and anyOf, $ref and $defs.
// The page says other keywords are ignored, yet "$schema" has been refused by Google's clients
// ("Unknown field for Schema"), so this is an allow-list. There is no strict switch: the API
// constrains decoding to what it accepted.
// clang-format off
const SchemaDialect k_gemini = {
    .name = "gemini-json-schema",
    .source = "https://ai.google.dev/gemini-api/docs/structured-output#json-schema",
    .declared_in = "src/llm/gemini.cpp",
    .kept = {"type", "title", "description", "properties", "required", "additionalProperties", "enum", "format",
             "minimum", "maximum", "items", "prefixItems", "minItems", "maxItems", "anyOf", "$ref", "$defs"},
    .formats = {"date-time", "date", "time"},
};
// clang-format on

class GeminiBackend final : public Backend {
public:
  explicit GeminiBackend(BackendConfig config) : m_config(std::move(config)) {
    // The API names models "models/gemini-2.5-pro"; accept either spelling.
    if (m_config.model.starts_with("models/")) m_config.model.erase(0, 7);
  }

  std::string name() const override { return m_config.provider + "/" + m_config.model; }

  Result complete(const Request& request) override {
    const std::string who = name();
    auto key = require_api_key("gemini", who);
    if (auto* f = std::get_if<Failure>(&key)) return *f;
    HttpHeaders headers = {{"x-goog-api-key", std::get<std::string>(key)}};
    const std::string url =
        fmt::format("{}/models/{}:generateContent", base_url_or_default(m_config.base_url, "gemini"), m_config.model);
    const std::string auth_hint =
        "check that " + key_variable_names("gemini") + " holds a valid key for the Gemini API";
    auto sent = post_json_api(who, url, headers, request_body(request), request.timeout_s, auth_hint);
    if (auto* f = std::get_if<Failure>(&sent)) {
      // Gemini answers a wrong key with 400 INVALID_ARGUMENT ("API key not valid"), not 401:
      // that is an auth failure, not a request to fix.
      if (f->http_status == 400 && f->message.find("API key not valid") != std::string::npos)
        return make_failure(FailureKind::auth, who, "HTTP 400: API key not valid; " + auth_hint, 400);
      return *f;
    }
    return read_reply(who, request, std::get<ApiReply>(std::move(sent)));
  }

private:
  json request_body(const Request& request) const {
    json config = {{"temperature", request.temperature}, {"maxOutputTokens", request.max_tokens}};
    if (request.seed) config["seed"] = *request.seed;
    if (!request.response_schema.is_null()) {
      config["responseMimeType"] = "application/json";
      config["responseJsonSchema"] = outgoing_schema(request.response_schema, k_gemini, name()).schema;
    }
    json body = {{"contents", json::array({{{"role", "user"}, {"parts", json::array({{{"text", request.prompt}}})}}})},
                 {"generationConfig", std::move(config)}};
    if (!request.system.empty()) body["systemInstruction"] = {{"parts", json::array({{{"text", request.system}}})}};
    return body;
  }

  Result read_reply(const std::string& who, const Request& request, const ApiReply& reply) const {
    return read_api_reply(who, reply, [&](const json& body) -> Result {
      auto candidates = body.find("candidates");
      if (candidates == body.end() || !candidates->is_array() || candidates->empty()) {
        // A blocked prompt gets no candidate at all, only the reason.
        std::string reason = "";
        if (auto fb = body.find("promptFeedback"); fb != body.end() && fb->is_object())
          reason = fb->value("blockReason", "");
        if (!reason.empty())
          return make_failure(FailureKind::schema_violation, who,
                              fmt::format("the prompt was blocked (blockReason {}); no answer was produced", reason));
        return make_failure(FailureKind::server, who, "the reply has no candidates: " + excerpt(reply.raw));
      }
      const json& candidate = candidates->at(0);
      std::string finish = candidate.value("finishReason", "STOP");
      if (finish == "MAX_TOKENS")
        return make_failure(FailureKind::schema_violation, who,
                            fmt::format("the answer was cut off at maxOutputTokens ({}; thinking counts too); raise "
                                        "max_tokens or shorten the prompt",
                                        request.max_tokens));
      if (finish != "STOP" && finish != "FINISH_REASON_UNSPECIFIED")
        return make_failure(FailureKind::schema_violation, who,
                            fmt::format("the model stopped without a usable answer (finishReason {})", finish));

      Response r;
      if (auto content = candidate.find("content"); content != candidate.end() && content->contains("parts")) {
        for (const auto& part : content->at("parts")) {
          // Thought summaries are not part of the answer.
          if (part.value("thought", false)) continue;
          if (auto text = part.find("text"); text != part.end() && text->is_string())
            r.text += text->get<std::string>();
        }
      }
      if (r.text.empty())
        return make_failure(FailureKind::schema_violation, who,
                            "the reply holds no text answer: " + excerpt(reply.raw));
      if (auto bad = check_json_answer(who, r.text, request.response_schema)) return *bad;
      r.model = body.value("modelVersion", m_config.model);
      if (auto usage = body.find("usageMetadata"); usage != body.end() && usage->is_object()) {
        r.usage.input_tokens = usage->value("promptTokenCount", std::uint64_t{0});
        // Thinking tokens are billed as output.
        r.usage.output_tokens = usage->value("candidatesTokenCount", std::uint64_t{0}) +
                                usage->value("thoughtsTokenCount", std::uint64_t{0});
      }
      return r;
    });
  }

  BackendConfig m_config;
};

} // namespace

std::unique_ptr<Backend> make_gemini(const BackendConfig& config) {
  return std::make_unique<GeminiBackend>(config);
}

BackendSpec gemini_backend() {
  return {.name = "gemini",
          .description = "Google Gemini generateContent with a response schema",
          .key_env = {"GEMINI_API_KEY", "GOOGLE_API_KEY"},
          .default_base_url = "https://generativelanguage.googleapis.com/v1beta",
          .make = make_gemini,
          .schema_dialect = gemini_schema_dialect};
}

const SchemaDialect& gemini_schema_dialect(std::string_view) {
  return k_gemini;
}

} // namespace optimas::llm
