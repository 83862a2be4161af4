#include "llm/http.hpp"

#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/secrets.hpp"
#include "util/strings.hpp"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>

namespace optimas::llm {

using nlohmann::json;

namespace {

// A model that answers slowly is still answering, but connecting takes seconds at most; a
// separate connect limit makes an unreachable host fail fast even under a long request timeout.
constexpr double k_connect_timeout_s = 30;
// With no overall limit (timeout_s <= 0), a connection that moves less than one byte per
// second for this long is stalled.
constexpr long k_stall_s = 600;

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  HttpResponse response;
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  static_cast<Transfer*>(user)->response.body.append(data, size * n);
  return size * n;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto& headers = static_cast<Transfer*>(user)->response.headers;
  std::string_view line(data, size * n);
  // A new status line starts a new header block (after "100 Continue" or a proxy's CONNECT).
  if (line.starts_with("HTTP/")) {
    headers.clear();
    return size * n;
  }
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;
  std::string name = util::to_lower(util::trim(line.substr(0, colon)));
  std::string value(util::trim(line.substr(colon + 1)));
  auto [it, inserted] = headers.emplace(name, value);
  if (!inserted) it->second += ", " + value;
  return size * n;
}

FailureKind failure_kind_for_curl(CURLcode code, long http_status) {
  switch (code) {
  case CURLE_OPERATION_TIMEDOUT:
    return FailureKind::timeout;
  case CURLE_PARTIAL_FILE:
  case CURLE_GOT_NOTHING:
  case CURLE_WEIRD_SERVER_REPLY:
  case CURLE_BAD_CONTENT_ENCODING:
    return FailureKind::server;
  case CURLE_URL_MALFORMAT:
  case CURLE_UNSUPPORTED_PROTOCOL:
    return FailureKind::bad_request;
  // The connection broke after the status line: the answer was cut off, as with a short body.
  case CURLE_RECV_ERROR:
    return http_status > 0 ? FailureKind::server : FailureKind::network;
  default:
    return FailureKind::network;
  }
}

std::string curl_failure_text(CURLcode code, const char* detail, double timeout_s) {
  std::string what = *detail ? detail : curl_easy_strerror(code);
  switch (code) {
  case CURLE_OPERATION_TIMEDOUT:
    return fmt::format("no complete answer within {:g} s ({}); the connection stalled or the model is slow: "
                       "raise the request timeout if the model needs longer",
                       timeout_s, what);
  case CURLE_PARTIAL_FILE:
    return fmt::format("the answer was cut off before its end ({}); the server or a proxy closed the connection", what);
  case CURLE_GOT_NOTHING:
    return fmt::format("the server closed the connection without answering ({})", what);
  case CURLE_COULDNT_CONNECT:
    return fmt::format("cannot connect ({}); check that the server is running and the base URL is right", what);
  case CURLE_COULDNT_RESOLVE_HOST:
    return fmt::format("cannot resolve the host ({}); check the base URL and the network", what);
  case CURLE_URL_MALFORMAT:
  case CURLE_UNSUPPORTED_PROTOCOL:
    return fmt::format("the URL is not usable ({}); check the base URL (it needs http:// or https://)", what);
  default:
    return what;
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The words of an HTML error page from a proxy ("502 Bad Gateway nginx"), without its markup.
std::string strip_tags(std::string_view html) {
  std::string out;
  bool in_tag = false;
  for (char c : html) {
    if (c == '<') {
      in_tag = true;
      out += ' ';
    } else if (c == '>') {
      in_tag = false;
    } else if (!in_tag) {
      out += c;
    }
  }
  return out;
}

// The provider's error text: OpenAI, Gemini and Anthropic put it in error.message, Ollama in
// error, some proxies in message; anything else is shown as an excerpt of the body.
std::string provider_error_text(const std::string& body) {
  json j = util::parse_json(body, false);
  if (j.is_object()) {
    if (auto e = j.find("error"); e != j.end()) {
      if (e->is_string()) return e->get<std::string>();
      if (e->is_object()) {
        if (auto m = e->find("message"); m != e->end() && m->is_string()) return m->get<std::string>();
      }
    }
    if (auto m = j.find("message"); m != j.end() && m->is_string()) return m->get<std::string>();
  }
  if (util::trim(body).starts_with("<")) return excerpt(strip_tags(body));
  return excerpt(body);
}

std::string status_hint(FailureKind kind, int status, std::string_view auth_hint) {
  switch (kind) {
  case FailureKind::auth:
    return std::string(auth_hint);
  case FailureKind::rate_limit:
    return "the provider is rate limiting: lower the number of parallel requests, or "
           "wait and run again";
  case FailureKind::timeout:
    return "the server gave up waiting for the request";
  case FailureKind::bad_request:
    if (status == 404) return "check the model name and the base URL";
    return "the provider rejected the request; check the model name and that the model supports these settings";
  default:
    return "the provider had an internal error or is overloaded: try again later";
  }
}

} // namespace

std::variant<HttpResponse, Failure> http_post_json(const std::string& url, const HttpHeaders& headers,
                                                   const std::string& body, double timeout_s) {
  init_curl_once();
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) return Failure{FailureKind::network, fmt::format("POST {}: libcurl could not start a transfer", url)};

  curl_slist* list = nullptr;
  list = curl_slist_append(list, "Content-Type: application/json");
  list = curl_slist_append(list, "Accept: application/json");
  // Without this, curl waits for "100 Continue" before sending bodies over 1 KiB: a round trip
  // that some proxies never answer.
  list = curl_slist_append(list, "Expect:");
  for (const auto& [name, value] : headers) list = curl_slist_append(list, (name + ": " + value).c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(list, &curl_slist_free_all);

  Transfer transfer;
  char error_detail[CURL_ERROR_SIZE] = "";
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  // http and https only, for the request and any redirect: a base URL of file:// or gopher://
  // must not make libcurl read local files or speak another protocol.
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, header_list.get());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_detail);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "optimas/0.1");
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, ""); // whatever curl can decode
  // Signals cannot be used for timeouts in a threaded program; the threaded resolver does not
  // need them.
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  if (timeout_s > 0) {
    auto timeout_ms = std::max(1L, std::lround(timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, std::lround(k_connect_timeout_s * 1000)));
  }
  // A non-streamed answer sends nothing while the model thinks, so the stall window cannot be
  // shorter than the whole request's limit; with no limit it is what ends a dead connection.
  long stall_s = timeout_s > 0 ? std::max(1L, std::lround(std::ceil(timeout_s))) : k_stall_s;
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall_s);

  CURLcode code = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  if (code != CURLE_OK) {
    Failure f;
    f.kind = failure_kind_for_curl(code, status);
    // A stall caught by the low-speed limit is CURLE_OPERATION_TIMEDOUT as well: a timeout.
    f.message = util::redact(fmt::format("POST {}: {}", url, curl_failure_text(code, error_detail, timeout_s)));
    f.http_status = static_cast<int>(status);
    return f;
  }
  transfer.response.status = static_cast<int>(status);
  return std::move(transfer.response);
}

FailureKind failure_kind_for_status(int status) {
  if (status == 401 || status == 403) return FailureKind::auth;
  if (status == 429) return FailureKind::rate_limit;
  if (status == 408) return FailureKind::timeout;
  if (status >= 400 && status < 500) return FailureKind::bad_request; // 400, 404, 422, 413, ...
  return FailureKind::server;                                         // 5xx, and 3xx/1xx we cannot use
}

std::optional<double> parse_retry_after(std::string_view value, std::time_t now) {
  auto v = util::trim(value);
  if (v.empty()) return std::nullopt;
  if (std::all_of(v.begin(), v.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; })) {
    try {
      std::size_t used = 0;
      double s = std::stod(std::string(v), &used);
      if (used == v.size() && std::isfinite(s)) return s;
    } catch (const std::exception&) {
    }
    return std::nullopt;
  }
  // curl_getdate reads all three HTTP-date forms (IMF-fixdate, RFC 850, asctime).
  std::time_t when = curl_getdate(std::string(v).c_str(), nullptr);
  if (when == -1) return std::nullopt;
  return std::max(0.0, std::difftime(when, now));
}

Failure http_status_failure(const HttpResponse& response, std::string_view url, std::string_view auth_hint) {
  Failure f;
  f.kind = failure_kind_for_status(response.status);
  f.http_status = response.status;
  auto now = std::time(nullptr);
  if (auto it = response.headers.find("retry-after-ms"); it != response.headers.end()) {
    if (auto ms = parse_retry_after(it->second, now)) f.retry_after_s = *ms / 1000;
  }
  if (auto it = response.headers.find("retry-after"); f.retry_after_s < 0 && it != response.headers.end()) {
    if (auto s = parse_retry_after(it->second, now)) f.retry_after_s = *s;
  }
  std::string detail(util::trim(provider_error_text(response.body)));
  while (!detail.empty() && detail.back() == '.') detail.pop_back();
  if (detail.empty()) detail = "(no error text)";
  std::string wait = f.retry_after_s >= 0 ? fmt::format(" (Retry-After: {:g} s)", f.retry_after_s) : "";
  f.message = util::redact(fmt::format("HTTP {} from POST {}{}: {}; {}", response.status, url, wait, detail,
                                       status_hint(f.kind, response.status, auth_hint)));
  return f;
}

std::string base_url_or_default(const std::string& configured, std::string_view provider) {
  std::string url = configured;
  if (url.empty())
    if (const BackendSpec* spec = find_backend(provider)) url = spec->default_base_url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

std::string key_variable_names(std::string_view provider) {
  const BackendSpec* spec = find_backend(provider);
  if (!spec || spec->key_env.empty()) return "the provider's key variable";
  return util::join(spec->key_env, " or ");
}

std::variant<std::string, Failure> require_api_key(std::string_view provider, std::string_view who) {
  const BackendSpec* spec = find_backend(provider);
  if (spec)
    if (auto key = api_key(*spec)) return *key;
  return make_failure(FailureKind::auth, who,
                      fmt::format("no API key: set {} in the environment (export {}=...)", key_variable_names(provider),
                                  spec && !spec->key_env.empty() ? spec->key_env.front() : "KEY"));
}

std::variant<ApiReply, Failure> post_json_api(std::string_view who, const std::string& url, const HttpHeaders& headers,
                                              const json& body, double timeout_s, std::string_view auth_hint) {
  auto t0 = std::chrono::steady_clock::now();
  // Prompts may carry bytes from compiler or profiler output that are not UTF-8; replacing them
  // beats failing the call.
  auto sent = http_post_json(url, headers, body.dump(-1, ' ', false, json::error_handler_t::replace), timeout_s);
  if (auto* f = std::get_if<Failure>(&sent)) {
    f->message = util::redact(fmt::format("{}: {}", who, f->message));
    return *f;
  }
  auto& response = std::get<HttpResponse>(sent);
  if (response.status < 200 || response.status > 299) {
    Failure f = http_status_failure(response, url, auth_hint);
    f.message = util::redact(fmt::format("{}: {}", who, f.message));
    return f;
  }
  ApiReply reply;
  reply.latency_s = seconds_since(t0);
  reply.body = util::parse_json(response.body, false);
  if (reply.body.is_discarded())
    return make_failure(FailureKind::server, who,
                        fmt::format("HTTP {} from POST {} but the body is not JSON (truncated, or an error page from "
                                    "a proxy?): {}",
                                    response.status, url, excerpt(response.body)),
                        response.status);
  reply.raw = util::redact(response.body);
  return reply;
}

Result read_api_reply(std::string_view who, const ApiReply& reply,
                      const std::function<Result(const nlohmann::json& body)>& read) {
  try {
    Result result = read(reply.body);
    if (auto* response = std::get_if<Response>(&result)) {
      response->raw = reply.raw;
      response->latency_s = reply.latency_s;
    }
    return result;
  } catch (const nlohmann::json::exception& e) {
    return make_failure(FailureKind::server, who,
                        fmt::format("unexpected reply shape ({}): {}", plain_message(e), excerpt(reply.raw)));
  }
}

std::optional<Failure> check_json_answer(std::string_view who, const std::string& text, const json& schema) {
  if (schema.is_null() || json::accept(text)) return std::nullopt;
  return make_failure(FailureKind::schema_violation, who,
                      fmt::format("a JSON answer was required (schema given) but the model's answer is not a JSON "
                                  "document: \"{}\"; try again or use a model with structured output",
                                  excerpt(text)));
}

Failure make_failure(FailureKind kind, std::string_view who, std::string_view what, int http_status) {
  Failure f;
  f.kind = kind;
  f.http_status = http_status;
  f.message = util::redact(fmt::format("{}: {}", who, what));
  return f;
}

std::string excerpt(std::string_view text, std::size_t max_chars) {
  std::string out;
  bool cut = false, space = false;
  for (char c : util::trim(text)) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = true;
      continue;
    }
    if (out.size() >= max_chars) {
      cut = true;
      break;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  if (cut) {
    // Drop a UTF-8 character that the cut left incomplete, so that the message stays valid text.
    std::size_t start = out.size();
    while (start > 0 && (static_cast<unsigned char>(out[start - 1]) & 0xC0) == 0x80) --start;
    if (start > 0) {
      auto lead = static_cast<unsigned char>(out[start - 1]);
      std::size_t need = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
      if (out.size() - (start - 1) < need) out.resize(start - 1);
    }
    out += "...";
  }
  return out;
}

} // namespace optimas::llm
