// Ollama /api/chat, not streamed. JSON answers through `format`: Ollama constrains decoding to
// the schema.
#include "llm/backend.hpp"

#include "llm/http.hpp"
#include "llm/schema_dialect.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace optimas::llm {

using nlohmann::json;

namespace {

constexpr const char* k_default_port = "11434";

// `format` takes a JSON Schema object (https://docs.ollama.com/capabilities/structured-outputs),
// which Ollama turns into a grammar that constrains decoding; keywords the grammar cannot express
// are ignored there, not refused. So everything is sent but the identifiers, which describe the
// document rather than the answer.
const SchemaDialect k_ollama = {
    .name = "ollama-format",
    .source = "https://docs.ollama.com/capabilities/structured-outputs",
    .declared_in = "src/llm/ollama.cpp",
    .stripped = {"$schema", "$id", "$comment"},
    .keep_unlisted = true,
};

// OLLAMA_HOST is written the way the ollama CLI accepts it: "host", "host:port" or a full URL.
// A bare host gets http:// and Ollama's port, as the CLI does.
std::string normalise_host(std::string host) {
  while (!host.empty() && host.back() == '/') host.pop_back();
  bool has_scheme = host.find("://") != std::string::npos;
  if (!has_scheme) host = "http://" + host;
  auto authority_start = host.find("://") + 3;
  auto authority = host.substr(authority_start, host.find('/', authority_start) - authority_start);
  auto bracket = authority.rfind(']'); // an IPv6 literal, "[::1]:11434"
  auto colon = authority.rfind(':');
  bool has_port = colon != std::string::npos && (bracket == std::string::npos || colon > bracket);
  if (!has_port && host.starts_with("http://"))
    host.insert(authority_start + authority.size(), std::string(":") + k_default_port);
  return host;
}

class OllamaBackend final : public Backend {
public:
  explicit OllamaBackend(BackendConfig config) : m_config(std::move(config)) {}

  std::string name() const override { return m_config.provider + "/" + m_config.model; }

  Result complete(const Request& request) override {
    const std::string who = name();
    const std::string url = base_url() + "/api/chat";
    auto sent = post_json_api(who, url, {}, request_body(request), request.timeout_s,
                              "Ollama itself needs no key; a proxy in front of it refused the request");
    if (auto* f = std::get_if<Failure>(&sent)) {
      if (f->kind == FailureKind::network)
        f->message += "; is Ollama running (`ollama serve`), and does OLLAMA_HOST point to it?";
      else if (f->http_status == 404)
        f->message += fmt::format("; fetch the model with `ollama pull {}`", m_config.model);
      return *f;
    }
    return read_reply(who, request, std::get<ApiReply>(std::move(sent)));
  }

private:
  std::string base_url() const {
    if (!m_config.base_url.empty()) return base_url_or_default(m_config.base_url, "ollama");
    if (const char* host = std::getenv("OLLAMA_HOST"); host && *host) return normalise_host(host);
    return base_url_or_default("", "ollama");
  }

  json request_body(const Request& request) const {
    json messages = json::array();
    if (!request.system.empty()) messages.push_back({{"role", "system"}, {"content", request.system}});
    messages.push_back({{"role", "user"}, {"content", request.prompt}});
    json options = {{"temperature", request.temperature}, {"num_predict", request.max_tokens}};
    if (request.seed) options["seed"] = *request.seed;
    json body = {{"model", m_config.model}, {"messages", std::move(messages)}, {"stream", false}, {"options", options}};
    if (!request.response_schema.is_null())
      body["format"] = outgoing_schema(request.response_schema, k_ollama, name()).schema;
    return body;
  }

  Result read_reply(const std::string& who, const Request& request, const ApiReply& reply) const {
    return read_api_reply(who, reply, [&](const json& body) -> Result {
      if (body.value("done_reason", "") == "length")
        return make_failure(FailureKind::schema_violation, who,
                            fmt::format("the answer was cut off at num_predict ({}); raise max_tokens or shorten "
                                        "the prompt",
                                        request.max_tokens));
      Response r;
      r.text = body.at("message").at("content").get<std::string>();
      if (auto bad = check_json_answer(who, r.text, request.response_schema)) return *bad;
      r.model = body.value("model", m_config.model);
      r.usage.input_tokens = body.value("prompt_eval_count", std::uint64_t{0});
      r.usage.output_tokens = body.value("eval_count", std::uint64_t{0});
      return r;
    });
  }

  BackendConfig m_config;
};

} // namespace

std::unique_ptr<Backend> make_ollama(const BackendConfig& config) {
  return std::make_unique<OllamaBackend>(config);
}

const SchemaDialect& ollama_schema_dialect(std::string_view) {
  return k_ollama;
}

BackendSpec ollama_backend() {
  return {.name = "ollama",
          .description = "Ollama /api/chat (stream: false, format schema); honours OLLAMA_HOST",
          .default_base_url = "http://localhost:11434",
          .make = make_ollama,
          .schema_dialect = ollama_schema_dialect};
}

} // namespace optimas::llm
