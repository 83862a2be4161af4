// Anthropic Messages. The API has no JSON response format, so a JSON answer is obtained by
// forcing the model to call one tool whose input_schema is the requested schema: the tool call's
// input is the answer.
#include "llm/backend.hpp"

#include "llm/http.hpp"
#include "llm/schema_dialect.hpp"

#include <fmt/format.h>

namespace optimas::llm {

using nlohmann::json;

namespace {

const OptionSpec k_version = {"anthropic_version", "anthropic-version header", "2023-06-01"};

// A tool's input_schema is a JSON Schema (draft 2020-12) whose root is an object, per
// https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use and the
// Messages reference: every keyword of that draft is accepted, so all are sent but the
// identifiers. The API reads the schema as 2020-12 whatever "$schema" says, and one naming
// another draft makes it "JSON schema is invalid"; "$id" and "$comment" mean nothing to the model.
// Forced tool use has no strict switch (the answer is checked against the full schema here).
const SchemaDialect k_anthropic = {
    .name = "anthropic-tool-input",
    .source = "https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use",
    .declared_in = "src/llm/anthropic.cpp",
    .stripped = {"$schema", "$id", "$comment"},
    .keep_unlisted = true,
};

class AnthropicBackend final : public Backend {
public:
  explicit AnthropicBackend(BackendConfig config) : m_config(std::move(config)) {}

  std::string name() const override { return m_config.provider + "/" + m_config.model; }

  Result complete(const Request& request) override {
    const std::string who = name();
    auto key = require_api_key("anthropic", who);
    if (auto* f = std::get_if<Failure>(&key)) return *f;
    HttpHeaders headers = {{"x-api-key", std::get<std::string>(key)},
                           {"anthropic-version", option_value(m_config, k_version)}};
    const std::string url = base_url_or_default(m_config.base_url, "anthropic") + "/messages";
    auto sent = post_json_api(who, url, headers, request_body(request), request.timeout_s,
                              "check that ANTHROPIC_API_KEY holds a valid key");
    if (auto* f = std::get_if<Failure>(&sent)) return *f;
    return read_reply(who, request, std::get<ApiReply>(std::move(sent)));
  }

private:
  json request_body(const Request& request) const {
    json body = {{"model", m_config.model},
                 {"max_tokens", request.max_tokens},
                 {"messages", json::array({{{"role", "user"}, {"content", request.prompt}}})},
                 {"temperature", request.temperature}};
    if (!request.system.empty()) body["system"] = request.system;
    if (!request.response_schema.is_null()) {
      body["tools"] =
          json::array({{{"name", request.schema_name},
                        {"description", "Record the answer. Call this exactly once; its input is the "
                                        "complete answer in the required shape."},
                        {"input_schema", outgoing_schema(request.response_schema, k_anthropic, name()).schema}}});
      body["tool_choice"] = {{"type", "tool"}, {"name", request.schema_name}};
    }
    return body;
  }

  Result read_reply(const std::string& who, const Request& request, const ApiReply& reply) const {
    return read_api_reply(who, reply, [&](const json& body) -> Result {
      std::string stop = body.value("stop_reason", "");
      // A tool call cut off by max_tokens has a partial input, so it is never taken as the answer.
      if (stop == "max_tokens")
        return make_failure(FailureKind::schema_violation, who,
                            fmt::format("the answer was cut off at max_tokens ({}); raise max_tokens or shorten the "
                                        "prompt",
                                        request.max_tokens));
      if (stop == "refusal")
        return make_failure(FailureKind::schema_violation, who, "the model refused to answer (stop_reason refusal)");

      const json& content = body.at("content");
      std::string text;
      const json* tool_input = nullptr;
      for (const auto& block : content) {
        std::string type = block.value("type", "");
        if (type == "text") text += block.value("text", "");
        if (type == "tool_use" && !tool_input && block.value("name", "") == request.schema_name)
          tool_input = &block.at("input");
      }

      Response r;
      if (request.response_schema.is_null()) {
        r.text = text;
      } else if (!tool_input) {
        return make_failure(FailureKind::schema_violation, who,
                            fmt::format("the model did not call the {} tool, so there is no JSON answer; it wrote: "
                                        "\"{}\"",
                                        request.schema_name, excerpt(text)));
      } else {
        r.text = tool_input->dump(-1, ' ', false, json::error_handler_t::replace);
      }
      r.model = body.value("model", m_config.model);
      if (auto usage = body.find("usage"); usage != body.end() && usage->is_object()) {
        r.usage.input_tokens = usage->value("input_tokens", std::uint64_t{0});
        r.usage.output_tokens = usage->value("output_tokens", std::uint64_t{0});
      }
      return r;
    });
  }

  BackendConfig m_config;
};

} // namespace

std::unique_ptr<Backend> make_anthropic(const BackendConfig& config) {
  return std::make_unique<AnthropicBackend>(config);
}

const SchemaDialect& anthropic_schema_dialect(std::string_view) {
  return k_anthropic;
}

BackendSpec anthropic_backend() {
  return {.name = "anthropic",
          .description = "Anthropic Messages, JSON through forced tool use",
          .key_env = {"ANTHROPIC_API_KEY"},
          .default_base_url = "https://api.anthropic.com/v1",
          .options = {k_version},
          .make = make_anthropic,
          .schema_dialect = anthropic_schema_dialect};
}

} // namespace optimas::llm
