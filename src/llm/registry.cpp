// The one table of model backends. Adding a backend: one file with its factory and its schema
// dialect, one line here.
#include "llm/backend.hpp"

#include "util/error.hpp"
#include "util/secrets.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace optimas::llm {

const std::vector<BackendSpec>& backends() {
  static const std::vector<BackendSpec> k_backends = {
      {"openai",
       "OpenAI Chat Completions with a JSON-schema response format",
       {"OPENAI_API_KEY"},
       "https://api.openai.com/v1",
       {{"organization", "OpenAI-Organization header", ""}},
       make_openai,
       openai_schema_dialect},
      {"openai-compatible",
       "Any OpenAI-compatible server (vLLM, llama.cpp server, LiteLLM proxy); needs base_url",
       {},
       "",
       {{"base_url", "the server's URL, e.g. http://localhost:8000/v1 (or --base-url)", ""},
        {"api_key_env", "environment variable holding the server's key; without it no key is sent", ""}},
       make_openai_compatible,
       openai_compatible_schema_dialect},
      {"gemini",
       "Google Gemini generateContent with a response schema",
       {"GEMINI_API_KEY", "GOOGLE_API_KEY"},
       "https://generativelanguage.googleapis.com/v1beta",
       {},
       make_gemini,
       gemini_schema_dialect},
      {"anthropic",
       "Anthropic Messages, JSON through forced tool use",
       {"ANTHROPIC_API_KEY"},
       "https://api.anthropic.com/v1",
       {{"anthropic_version", "anthropic-version header", "2023-06-01"}},
       make_anthropic,
       anthropic_schema_dialect},
      {"ollama",
       "Ollama /api/chat (stream: false, format schema); honours OLLAMA_HOST",
       {},
       "http://localhost:11434",
       {},
       make_ollama,
       ollama_schema_dialect},
      {"manual",
       "Writes the prompt to a file and reads the answer from a file (a chat window, no API)",
       {},
       "",
       {},
       make_manual},
      {"builtin",
       "Deterministic rule-based optimizer: no model, no network (the default)",
       {},
       "",
       {{"allow_fp_changes", "also apply rules that can change floating-point results", "false"}},
       make_builtin},
  };
  // The redactor and the child environments must know every key variable, even one not named
  // like a key: the registry declares its own once.
  static const bool k_registered = [] {
    for (const auto& b : k_backends)
      for (const auto& var : b.key_env) util::register_secret_variable(var);
    return true;
  }();
  (void)k_registered;
  return k_backends;
}

const BackendSpec* find_backend(std::string_view provider) {
  for (const auto& b : backends())
    if (b.name == provider) return &b;
  return nullptr;
}

void set_option(BackendConfig& config, const std::string& key, const std::string& value) {
  const BackendSpec* spec = find_backend(config.provider);
  std::vector<std::string> names;
  bool known = false;
  for (const auto& o : spec ? spec->options : std::vector<OptionSpec>{}) {
    known = known || o.name == key;
    names.push_back(o.name);
  }
  if (!known)
    throw UsageError(fmt::format("the {} backend has no option \"{}\" (its options: {})", config.provider, key,
                                 names.empty() ? "none" : util::join(names, ", ")));
  config.options[key] = value;
  // Known before any build or program starts, so none of them sees it.
  if (key == "api_key_env") util::register_secret_variable(value);
}

BackendConfig parse_model(std::string_view spec) {
  BackendConfig c;
  auto slash = spec.find('/');
  c.provider = std::string(spec.substr(0, slash));
  if (slash != std::string_view::npos) c.model = std::string(spec.substr(slash + 1));
  if (!find_backend(c.provider)) {
    std::vector<std::string> names;
    for (const auto& b : backends()) names.push_back(b.name);
    throw UsageError(fmt::format("unknown model provider \"{}\" in \"{}\" (known: {}); name models provider/model, "
                                 "e.g. openai/gpt-5",
                                 c.provider, spec, util::join(names, ", ")));
  }
  return c;
}

std::unique_ptr<Backend> make_backend(const BackendConfig& config) {
  const BackendSpec* spec = find_backend(config.provider);
  if (!spec) throw UsageError(fmt::format("unknown model provider \"{}\"", config.provider));
  return spec->make(config);
}

std::optional<std::string> api_key(const BackendSpec& spec) {
  for (const auto& var : spec.key_env)
    if (const char* v = std::getenv(var.c_str()); v && *v) return std::string(v);
  return std::nullopt;
}

std::string_view failure_kind_name(FailureKind kind) {
  switch (kind) {
  case FailureKind::auth:
    return "auth";
  case FailureKind::rate_limit:
    return "rate_limit";
  case FailureKind::timeout:
    return "timeout";
  case FailureKind::bad_request:
    return "bad_request";
  case FailureKind::server:
    return "server";
  case FailureKind::schema_violation:
    return "schema_violation";
  case FailureKind::network:
    return "network";
  case FailureKind::awaiting_reply:
    return "awaiting_reply";
  }
  return "unknown";
}

bool is_retryable(FailureKind kind) {
  return kind == FailureKind::rate_limit || kind == FailureKind::timeout || kind == FailureKind::server ||
         kind == FailureKind::network;
}

} // namespace optimas::llm
