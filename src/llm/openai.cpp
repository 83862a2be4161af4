// OpenAI Chat Completions, and the same protocol against any OpenAI-compatible server (vLLM,
// llama.cpp server, LiteLLM). JSON answers through response_format json_schema, strict where the
// schema allows it; the schema goes out in this file's dialects.
#include "llm/backend.hpp"

#include "llm/http.hpp"
#include "llm/schema_dialect.hpp"
#include "util/secrets.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace optimas::llm {

using nlohmann::json;

namespace {

// OpenAI's Structured Outputs subset of JSON Schema, from "Supported schemas" in
// https://platform.openai.com/docs/guides/structured-outputs#supported-schemas: the types (string,
// number, boolean, integer, object, array, null), enum, anyOf, definitions ($defs and $ref),
// descriptions, string pattern and format (the formats listed there), number multipleOf, minimum,
// maximum and their exclusive forms, array minItems and maxItems. With strict: true the page
// promises an error for a schema outside the subset (and "$schema" has drawn "400 Invalid schema"
// in practice), as for an object that is not closed or does not require all its properties; so
// the rest ($schema, $id, title, minLength, allOf, ...) stays home.
// clang-format off
const SchemaDialect k_openai = {
    .name = "openai-strict",
    .source = "https://platform.openai.com/docs/guides/structured-outputs#supported-schemas",
    .declared_in = "src/llm/openai.cpp",
    .kept = {"type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "$defs",
             "definitions", "$ref", "description", "pattern", "format", "multipleOf", "minimum", "maximum",
             "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems"},
    .formats = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"},
    .strict_mode = true,
};
// clang-format on

// The structural core of JSON Schema that every strict validator takes.
// clang-format off
const KeywordSet k_structural_core = {"type", "properties", "required", "additionalProperties", "items", "enum",
                                      "const", "anyOf", "$defs", "definitions", "$ref", "description"};
// clang-format on

// Fine-tuned models ("ft:..."): the same page lists the string, number and array constraints as
// not supported for them.
// clang-format off
const SchemaDialect k_openai_fine_tuned = {
    .name = "openai-strict-fine-tuned",
    .source = k_openai.source,
    .declared_in = k_openai.declared_in,
    .kept = k_structural_core,
    .strict_mode = true,
};
// clang-format on

// Servers that copy the API check schemas with their own engines (vLLM's guided decoding,
// llama.cpp's grammars, Vertex AI's and other strict compatible endpoints), and they part ways
// beyond the structural core: format and bounds have been refused there with "400 Invalid
// schema". The core is what all of them take; our own validation enforces the rest.
// clang-format off
const SchemaDialect k_openai_compatible = {
    .name = "openai-compatible-strict",
    .source = k_openai.source,
    .declared_in = k_openai.declared_in,
    .kept = k_structural_core,
    .strict_mode = true,
};
// clang-format on

// Reasoning models (o-series, GPT-5) accept only the default temperature and answer HTTP 400 to
// any other value, so for them the setting is left out rather than failing every call.
bool accepts_temperature(const std::string& model) {
  bool reasoning =
      model.starts_with("o1") || model.starts_with("o3") || model.starts_with("o4") || model.starts_with("gpt-5");
  return !reasoning || model.find("-chat") != std::string::npos;
}

// The options of both backends in this file, read below.
const OptionSpec k_organization = {"organization", "OpenAI-Organization header", ""};
const OptionSpec k_base_url = {"base_url", "the server's URL, e.g. http://localhost:8000/v1 (or --base-url)", ""};
const OptionSpec k_api_key_env = {"api_key_env",
                                  "environment variable holding the server's key; without it no key is sent", "",
                                  true};

class OpenAiBackend final : public Backend {
public:
  OpenAiBackend(BackendConfig config, bool compatible) : m_config(std::move(config)), m_compatible(compatible) {}

  std::string name() const override { return m_config.provider + "/" + m_config.model; }

  Result complete(const Request& request) override {
    const std::string who = name();
    std::string base = base_url();
    if (base.empty())
      return make_failure(FailureKind::bad_request, who,
                          "no base_url: an OpenAI-compatible server needs its address, e.g. base_url "
                          "http://localhost:8000/v1 (vLLM) or http://localhost:8080/v1 (llama.cpp server) in the "
                          "model settings");

    HttpHeaders headers;
    std::string auth_hint;
    if (auto key = find_key(who, auth_hint); std::holds_alternative<Failure>(key)) {
      return std::get<Failure>(key);
    } else if (!std::get<std::string>(key).empty()) {
      headers["Authorization"] = "Bearer " + std::get<std::string>(key);
    }
    if (std::string org = option_value(m_config, k_organization); !m_compatible && !org.empty())
      headers["OpenAI-Organization"] = org;

    const std::string url = base + "/chat/completions";
    auto sent = post_json_api(who, url, headers, request_body(request), request.timeout_s, auth_hint);
    if (auto* f = std::get_if<Failure>(&sent)) return *f;
    return read_reply(who, request, std::get<ApiReply>(std::move(sent)));
  }

private:
  std::string base_url() const {
    if (!m_compatible) return base_url_or_default(m_config.base_url, "openai");
    std::string url = m_config.base_url.empty() ? option_value(m_config, k_base_url) : m_config.base_url;
    while (!url.empty() && url.back() == '/') url.pop_back();
    return url;
  }

  // The key, "" when none is needed (a local server), or an auth Failure. Sets the hint shown
  // when the server rejects the key.
  std::variant<std::string, Failure> find_key(const std::string& who, std::string& auth_hint) const {
    if (!m_compatible) {
      auth_hint = "check that OPENAI_API_KEY holds a valid key with access to this model";
      return require_api_key("openai", who);
    }
    if (std::string named = option_value(m_config, k_api_key_env); !named.empty()) {
      auth_hint = fmt::format("check that {} holds a key this server accepts", named);
      util::register_secret_variable(named); // set_option did, unless the config was built by hand
      const char* v = std::getenv(named.c_str());
      if (v && *v) return std::string(v);
      return make_failure(FailureKind::auth, who,
                          fmt::format("no API key: the api_key_env option names {}, which is not set (export {}=...)",
                                      named, named));
    }
    // No key unless the user names its variable: an OpenAI key must not go to whatever server
    // base_url points at (a proxy, a colleague's vLLM).
    auth_hint = "the server wants a key: name the variable that holds it with the api_key_env option "
                "(--option api_key_env=VAR)";
    return std::string();
  }

  json request_body(const Request& request) const {
    json messages = json::array();
    if (!request.system.empty()) messages.push_back({{"role", "system"}, {"content", request.system}});
    messages.push_back({{"role", "user"}, {"content", request.prompt}});
    json body = {{"model", m_config.model}, {"messages", std::move(messages)}};
    if (m_compatible || accepts_temperature(m_config.model)) body["temperature"] = request.temperature;
    // OpenAI renamed max_tokens; servers that copy the API (llama.cpp, older vLLM) know only the
    // old name.
    body[m_compatible ? "max_tokens" : "max_completion_tokens"] = request.max_tokens;
    if (request.seed) body["seed"] = *request.seed;
    if (!request.response_schema.is_null()) {
      const SchemaDialect& dialect =
          m_compatible ? openai_compatible_schema_dialect(m_config.model) : openai_schema_dialect(m_config.model);
      SanitisedSchema schema = outgoing_schema(request.response_schema, dialect, name());
      body["response_format"] = {
          {"type", "json_schema"},
          {"json_schema",
           {{"name", request.schema_name}, {"schema", std::move(schema.schema)}, {"strict", schema.strict}}}};
    }
    return body;
  }

  Result read_reply(const std::string& who, const Request& request, const ApiReply& reply) const {
    return read_api_reply(who, reply, [&](const json& body) -> Result {
      const auto& choices = body.at("choices");
      if (!choices.is_array() || choices.empty())
        return make_failure(FailureKind::server, who, "the reply has no choices: " + excerpt(reply.raw));
      const json& choice = choices.at(0);
      const json& message = choice.at("message");
      if (auto refusal = message.find("refusal"); refusal != message.end() && refusal->is_string())
        return make_failure(FailureKind::schema_violation, who,
                            "the model refused to answer: " + excerpt(refusal->get<std::string>()));
      std::string finish = choice.value("finish_reason", "");
      if (finish == "length")
        return make_failure(FailureKind::schema_violation, who,
                            fmt::format("the answer was cut off at max_tokens ({}); raise max_tokens or shorten the "
                                        "prompt",
                                        request.max_tokens));
      if (finish == "content_filter")
        return make_failure(FailureKind::schema_violation, who, "the provider's content filter stopped the answer");
      auto content = message.find("content");
      if (content == message.end() || !content->is_string())
        return make_failure(FailureKind::schema_violation, who,
                            "the reply holds no text answer: " + excerpt(reply.raw));

      Response r;
      r.text = content->get<std::string>();
      if (auto bad = check_json_answer(who, r.text, request.response_schema)) return *bad;
      r.model = body.value("model", m_config.model);
      if (auto usage = body.find("usage"); usage != body.end() && usage->is_object()) {
        r.usage.input_tokens = usage->value("prompt_tokens", std::uint64_t{0});
        r.usage.output_tokens = usage->value("completion_tokens", std::uint64_t{0});
      }
      return r;
    });
  }

  BackendConfig m_config;
  bool m_compatible;
};

} // namespace

std::unique_ptr<Backend> make_openai(const BackendConfig& config) {
  return std::make_unique<OpenAiBackend>(config, false);
}

std::unique_ptr<Backend> make_openai_compatible(const BackendConfig& config) {
  return std::make_unique<OpenAiBackend>(config, true);
}

const SchemaDialect& openai_schema_dialect(std::string_view model) {
  return model.starts_with("ft:") ? k_openai_fine_tuned : k_openai;
}

const SchemaDialect& openai_compatible_schema_dialect(std::string_view) {
  return k_openai_compatible;
}

BackendSpec openai_backend() {
  return {.name = "openai",
          .description = "OpenAI Chat Completions with a JSON-schema response format",
          .key_env = {"OPENAI_API_KEY"},
          .default_base_url = "https://api.openai.com/v1",
          .options = {k_organization},
          .make = make_openai,
          .schema_dialect = openai_schema_dialect};
}

BackendSpec openai_compatible_backend() {
  return {.name = "openai-compatible",
          .description = "Any OpenAI-compatible server (vLLM, llama.cpp server, LiteLLM proxy); needs base_url",
          .options = {k_base_url, k_api_key_env},
          .make = make_openai_compatible,
          .schema_dialect = openai_compatible_schema_dialect};
}

} // namespace optimas::llm
