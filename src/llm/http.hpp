// HTTP for the model backends: one libcurl POST, one mapping of HTTP statuses to failure kinds,
// and the few steps every HTTP backend shares (key look-up, JSON body, JSON answer check).
#pragma once

#include "llm/backend.hpp"

#include <nlohmann/json.hpp>

#include <ctime>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace optimas::llm {

using HttpHeaders = std::map<std::string, std::string>;

struct HttpResponse {
  int status = 0;
  HttpHeaders headers; // names lower-cased; repeated headers joined with ", "
  std::string body;
};

// POSTs `body` as application/json. Any HTTP status is a response; a Failure means no complete
// response arrived: timeout (nothing or too little within `timeout_s`), network (refused, DNS,
// TLS), server (truncated body or a broken reply), bad_request (a malformed URL). Messages name
// the URL and are redacted.
std::variant<HttpResponse, Failure> http_post_json(const std::string& url, const HttpHeaders& headers,
                                                   const std::string& body, double timeout_s);

// The one place HTTP statuses become failure kinds: 401/403 auth, 429 rate_limit,
// 408 timeout, 400/404/422 and other 4xx bad_request, 5xx and anything else server.
FailureKind failure_kind_for_status(int status);

// A Retry-After value in seconds from now: delta-seconds ("7", "1.5") or an HTTP-date.
// nullopt when it is neither. A date in the past gives 0.
std::optional<double> parse_retry_after(std::string_view value, std::time_t now);

// The Failure for a non-2xx response: kind from failure_kind_for_status, retry_after_s from
// Retry-After (or OpenAI's retry-after-ms), the provider's own error text and a hint on what
// to do. `auth_hint` is the sentence shown for 401/403 ("check that OPENAI_API_KEY ...").
Failure http_status_failure(const HttpResponse& response, std::string_view url, std::string_view auth_hint);

// --- Shared by the HTTP backends -------------------------------------------------------------

// The provider's default base URL from the registry when `configured` is empty; no trailing '/'.
std::string base_url_or_default(const std::string& configured, std::string_view provider);

// The key from the first set variable of the provider's spec, or an auth Failure naming them.
std::variant<std::string, Failure> require_api_key(std::string_view provider, std::string_view who);

// "OPENAI_API_KEY" / "GEMINI_API_KEY or GOOGLE_API_KEY": the key variables, for messages.
std::string key_variable_names(std::string_view provider);

struct ApiReply {
  nlohmann::json body; // the parsed response body
  std::string raw;     // the body as received, redacted
  double latency_s = 0;
};

// One call of a JSON API: POST, then a non-2xx status or a body that is not JSON becomes a
// Failure. Every message starts with `who` ("openai/gpt-5") and is redacted.
std::variant<ApiReply, Failure> post_json_api(std::string_view who, const std::string& url, const HttpHeaders& headers,
                                              const nlohmann::json& body, double timeout_s, std::string_view auth_hint);

// Reads a provider's answer with `read`, which may throw on a body of another shape: that
// becomes a server Failure with an excerpt. The Response gets the raw body and the latency.
Result read_api_reply(std::string_view who, const ApiReply& reply,
                      const std::function<Result(const nlohmann::json& body)>& read);

// When a schema was requested, the answer must at least be one JSON document (the reply parser
// checks the schema itself); otherwise a schema_violation naming `who` with an excerpt.
std::optional<Failure> check_json_answer(std::string_view who, const std::string& text, const nlohmann::json& schema);

// A Failure of `kind` whose message is "who: what", redacted.
Failure make_failure(FailureKind kind, std::string_view who, std::string_view what, int http_status = 0);

// The first `max_chars` of `text` on one line, for messages; never cuts a UTF-8 character.
std::string excerpt(std::string_view text, std::size_t max_chars = 200);

} // namespace optimas::llm
