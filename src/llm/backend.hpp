// Model backends: one interface, one registry (registry.cpp). A backend turns a Request into
// a Response or a typed Failure; the retry policy (retry.hpp) decides from the failure's kind.
// Adding a backend is one file and one registry line (docs/prompts-and-backends.md shows one).
#pragma once

#include "util/option_spec.hpp"
#include "util/registry.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace optimas::llm {

struct SchemaDialect; // schema_dialect.hpp

// Every way a call can fail, so that policy (retry or not, what to tell the user) lives in one place.
enum class FailureKind {
  auth,             // 401/403, missing key: do not retry
  rate_limit,       // 429: retry after Retry-After or backoff
  timeout,          // no complete answer in time (stalled connection): retry
  bad_request,      // 400/404/422: our request is wrong, do not retry
  server,           // 5xx, truncated or unparseable body: retry
  schema_violation, // the model answered, but not in the required shape
  network,          // connection refused, DNS: retry
  awaiting_reply,   // manual backend: the answer file is not there yet
};
std::string_view failure_kind_name(FailureKind kind);
bool is_retryable(FailureKind kind);

struct Failure {
  FailureKind kind = FailureKind::server;
  std::string message;       // says what happened; never contains a secret
  int http_status = 0;       // 0 when no HTTP status was received
  double retry_after_s = -1; // from a Retry-After header, when given
};

struct Usage {
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;
  double cost_usd = 0; // filled from the price table (pricing.hpp); 0 when unknown
  bool cost_known = false;
};

struct Request {
  std::string system;             // role and guardrails
  std::string prompt;             // the user message
  nlohmann::json response_schema; // JSON Schema the reply must follow; null for free text. Backends
                                  // send it in their provider's dialect (schema_dialect.hpp)
  std::string schema_name = "optimas_reply";
  double temperature = 0.15;
  int max_tokens = 8192;
  std::optional<std::int64_t> seed; // where the provider supports one
  double timeout_s = 300;           // per HTTP attempt
  // Structured inputs for backends that are not language models (builtin): the diagnostics
  // JSON ("diagnostics"), the sources by file name ("sources") and switches. Models ignore it,
  // and it is not part of the cache key (the prompt carries the same content as text).
  nlohmann::json context;
};

struct Response {
  std::string text;  // the model's answer (the JSON document when a schema was given)
  std::string model; // as the provider reported it
  Usage usage;
  std::string raw; // the provider's response body (secrets redacted)
  int attempts = 1;
  bool from_cache = false;
  double latency_s = 0;
};

using Result = std::variant<Response, Failure>;
inline bool ok(const Result& r) {
  return std::holds_alternative<Response>(r);
}

// Settings a backend is made with. Keys never appear here: a backend reads its key from the
// environment variable named in its spec, at call time.
struct BackendConfig {
  std::string provider;                       // "openai"
  std::string model;                          // "gpt-5"
  std::string base_url;                       // empty: the provider's default (OLLAMA_HOST for ollama)
  std::map<std::string, std::string> options; // provider-specific, declared in the spec
  std::string work_dir;                       // where file-based backends (manual) read and write
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0; // "openai/gpt-5"
  // One attempt, no retries (retry.hpp wraps this).
  virtual Result complete(const Request& request) = 0;
};

// A declared option of a backend, written in the backend's own file (util/option_spec.hpp).
using util::OptionSpec;

// Everything the rest of optimas knows about a backend. Each backend's file defines a function
// returning its spec (`BackendSpec openai_backend()`), and registry.cpp lists those functions.
struct BackendSpec {
  // Every member has an initializer, so that a backend's file names only what it has.
  std::string name = {};                 // "openai"
  std::string description = {};          // one line for `optimas backends`
  std::vector<std::string> key_env = {}; // environment variables holding the key, first found wins
  std::string default_base_url = {};
  std::vector<OptionSpec> options = {};
  std::function<std::unique_ptr<Backend>(const BackendConfig&)> make = {};
  // The JSON Schema subset the provider's API takes for a model (schema_dialect.hpp), declared
  // in the backend's own file; empty for backends that send no schema (manual, builtin).
  std::function<const SchemaDialect&(std::string_view model)> schema_dialect = {};
  // Whether answers go through the response cache: not for a backend that keeps its own files
  // (manual) or answers instantly and deterministically (builtin).
  bool cache_answers = true;
};

// A table of backends. The one optimas uses is registry() (registry.cpp, one line per
// backend); a test builds its own from the same lines plus a fake, exactly as a new backend is
// added.
// The backends of a registry (util/registry.hpp), with the checks of their own: no '/' in a
// name (models are provider/model), and every key variable registered as a secret when it is
// built, so that the redactor and child environments know it even when not named like a key.
class Registry : public util::Registry<BackendSpec> {
public:
  explicit Registry(std::vector<BackendSpec> specs);
};

// The registry of registry.cpp. Its key variables are registered as secrets when it is built.
const Registry& registry();
const std::vector<BackendSpec>& backends(); // registry().specs()
const BackendSpec* find_backend(std::string_view provider);

// The one way from what a user wrote (-m, --base-url, --option or the optimas.yml) to a
// backend's settings: the model split into provider and model, the provider looked up, every
// option checked against the backend's declared ones. UsageError naming the known providers for
// an unknown one, and naming the backend and its options for an unknown option.
BackendConfig backend_from(std::string_view model, std::string_view base_url,
                           const std::map<std::string, std::string>& options, const Registry& from = registry());

// "key=value" (--option) -> {key, value}; UsageError otherwise.
std::pair<std::string, std::string> split_option(std::string_view key_value);

std::unique_ptr<Backend> make_backend(const BackendConfig& config, const Registry& from = registry());

// The steps of backend_from, for tests and callers that build a config by hand.
// "openai/gpt-5" -> provider "openai", model "gpt-5"; "manual" -> provider "manual", model "".
// Throws UsageError for an unknown provider, naming the known ones.
BackendConfig parse_model(std::string_view spec, const Registry& from = registry());
// Sets one of the backend's declared options; UsageError naming its options for an unknown key.
void set_option(BackendConfig& config, const std::string& key, const std::string& value,
                const Registry& from = registry());

// The value of one of the backend's declared options: the one set, else the declared default.
std::string option_value(const BackendConfig& config, const OptionSpec& option);

// Whether this backend's answers go through the response cache (BackendSpec::cache_answers).
bool caches_answers(const BackendConfig& config, const Registry& from = registry());

// What `optimas backends` prints: each backend, its key variables (set or not), base URL,
// options and schema dialect, from the specs alone.
std::string describe_backends(const Registry& from = registry());

// The first of the spec's key variables that is set, or nullopt.
std::optional<std::string> api_key(const BackendSpec& spec);

// Factories, one per backend file (tests make backends directly from them).
std::unique_ptr<Backend> make_openai(const BackendConfig& config);            // openai.cpp
std::unique_ptr<Backend> make_openai_compatible(const BackendConfig& config); // openai.cpp
std::unique_ptr<Backend> make_gemini(const BackendConfig& config);            // gemini.cpp
std::unique_ptr<Backend> make_anthropic(const BackendConfig& config);         // anthropic.cpp
std::unique_ptr<Backend> make_ollama(const BackendConfig& config);            // ollama.cpp
std::unique_ptr<Backend> make_manual(const BackendConfig& config);            // manual.cpp
std::unique_ptr<Backend> make_builtin(const BackendConfig& config);           // builtin.cpp

// Schema dialects, one per HTTP backend file (tests check them directly).
const SchemaDialect& openai_schema_dialect(std::string_view model);            // openai.cpp
const SchemaDialect& openai_compatible_schema_dialect(std::string_view model); // openai.cpp
const SchemaDialect& gemini_schema_dialect(std::string_view model);            // gemini.cpp
const SchemaDialect& anthropic_schema_dialect(std::string_view model);         // anthropic.cpp
const SchemaDialect& ollama_schema_dialect(std::string_view model);            // ollama.cpp

} // namespace optimas::llm
