#include "llm/check.hpp"

#include "llm/schema_dialect.hpp"
#include "prompt/reply.hpp"
#include "util/secrets.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>

namespace optimas::llm {

using nlohmann::json;

namespace {

constexpr const char* k_system = "You are checking that a model API works for optimas. Answer only with the JSON "
                                 "object the schema asks for.";
constexpr const char* k_prompt = "This is a connectivity check, not a task: there is no code to change. Answer with "
                                 "the summary \"check ok\", an empty list of edits and an empty list of withheld "
                                 "suggestions.";

// The backend's option that names its key variable (openai-compatible's api_key_env), if any.
const OptionSpec* key_option(const BackendSpec& spec) {
  for (const auto& o : spec.options)
    if (o.names_secret_variable) return &o;
  return nullptr;
}

// Where the backend takes its key from: the first of the spec's variables that is set (else all
// of them), or the variable its key option names; "" when no key is sent.
std::string key_source(const BackendConfig& config, const BackendSpec& spec) {
  for (const auto& var : spec.key_env)
    if (const char* v = std::getenv(var.c_str()); v && *v) return var;
  if (!spec.key_env.empty()) return util::join(spec.key_env, " or ");
  if (const OptionSpec* o = key_option(spec))
    if (auto it = config.options.find(o->name); it != config.options.end()) return it->second;
  return "";
}

// Whether a refused request was refused for its schema: the providers name the schema field or
// the keyword in their message ("Invalid schema for response_format", "input_schema", "Unknown
// name \"$schema\" at 'generation_config.response_json_schema'", "'format' is not permitted").
bool about_the_schema(const std::string& message) {
  std::string m = util::to_lower(message);
  for (std::string_view word : {"schema", "response_format", "is not permitted"})
    if (util::contains(m, word)) return true;
  return false;
}

std::string key_advice(const CheckReport& report, const BackendConfig& config, const BackendSpec& spec,
                       const Failure& failure) {
  if (!report.key_variables.empty()) {
    std::string var = spec.key_env.empty() ? report.key_variables : spec.key_env.front();
    if (failure.http_status == 0)
      return fmt::format("set {} to your API key (export {}=...)", report.key_variables, var);
    return fmt::format("the API refused the key in {}: set it to a valid key with access to the model \"{}\" "
                       "(export {}=...)",
                       report.key_variables, config.model, report.key_variables);
  }
  if (const OptionSpec* o = key_option(spec))
    return fmt::format(
        "the server wants a key: put it in an environment variable and name that variable with --option {}=VAR",
        o->name);
  return "the server, or a proxy in front of it, refused the request: check its access settings";
}

std::string schema_advice(const SchemaDialect& dialect) {
  return fmt::format("the API refused the reply schema as the {} dialect sends it; the provider's message above names "
                     "what it refuses. Leave that keyword out in the dialect's table in {} (its kept or stripped "
                     "keywords) and rebuild; the provider's rules: {}",
                     dialect.name, dialect.declared_in, dialect.source);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// An answer came back, so the key and the schema were taken; whether the answer follows the
// schema says whether the model can serve runs.
void read_response(const Response& response, const BackendConfig& config, const PriceTable& prices,
                   const std::string& key_ok, CheckReport& report) {
  report.passed = true;
  report.key = key_ok;
  report.schema = "accepted";
  if (response.latency_s > 0) report.latency_s = response.latency_s;
  Usage usage = response.usage;
  price(usage, config.provider, config.model, prices);
  report.usage = usage;
  prompt::ParsedReply parsed = prompt::parse_reply(response.text);
  if (parsed.ok() && !parsed.reply->full_source) {
    report.answer = "follows the reply schema";
  } else {
    report.answer = "does not follow the reply schema: " +
                    (parsed.errors.empty() ? "format " + parsed.format : parsed.errors.front());
    report.advice = fmt::format("the API took the key and the schema, but the model's answer does not follow the "
                                "schema{}; runs check every reply and ask again, but a model with structured "
                                "output support wastes fewer calls",
                                report.strict ? "" : " (strict mode was off)");
  }
}

// A refusal: what its kind tells of the key and the schema, and what to do about it.
void read_failure(Failure failure, const BackendConfig& config, const BackendSpec& spec, const SchemaDialect& dialect,
                  const CheckOptions& options, const std::string& key_ok, CheckReport& report) {
  failure.message = util::redact(failure.message);
  report.failure = failure;
  switch (failure.kind) {
  case FailureKind::auth:
    report.key = failure.http_status == 0 ? "missing" : "rejected";
    if (failure.http_status == 0) report.latency_s = 0; // nothing was sent
    report.advice = key_advice(report, config, spec, failure);
    break;
  case FailureKind::bad_request:
    report.key = key_ok;
    if (about_the_schema(failure.message)) {
      report.schema = "rejected";
      report.advice = schema_advice(dialect);
    } else if (failure.http_status == 404) {
      report.advice = fmt::format("check the model name \"{}\" and the base URL", config.model);
    } else {
      report.advice = "the API refused the request: check the model name, and that this model supports "
                      "structured output";
    }
    break;
  case FailureKind::rate_limit:
    // A limit is counted against a known caller: the key got through.
    report.key = key_ok;
    report.advice =
        fmt::format("the provider is rate limiting{}: retry later; one small request was sent, so the "
                    "limit is the account's (its quota, or requests or tokens per minute)",
                    failure.retry_after_s >= 0 ? fmt::format(" (Retry-After {:g} s)", failure.retry_after_s) : "");
    break;
  case FailureKind::schema_violation:
    // The API answered: key and schema were taken, only the answer is not usable.
    report.passed = true;
    report.key = key_ok;
    report.schema = "accepted";
    report.answer = failure.message;
    report.advice = "the API took the key and the schema, but this answer was not usable (see above); runs ask again "
                    "after such answers, and if it repeats, try another model or a larger --max-tokens";
    report.failure.reset();
    break;
  case FailureKind::timeout:
    report.advice = fmt::format("no answer within {:g} s: retry later, or give a slow model more time with --timeout",
                                options.timeout_s);
    break;
  case FailureKind::network:
    report.advice = "the API cannot be reached: check the base URL, the network (or proxy) and that the server runs";
    break;
  case FailureKind::server:
  case FailureKind::awaiting_reply:
    report.advice = "the provider had an internal error or is overloaded: retry later";
    break;
  }
}

} // namespace

CheckReport check_backend(const BackendConfig& config, const PriceTable& prices, const CheckOptions& options) {
  CheckReport report;
  const BackendSpec* spec = find_backend(config.provider);
  auto backend = make_backend(config);
  report.backend = backend->name();
  if (!spec || !spec->schema_dialect) {
    report.passed = true;
    report.key = "not needed";
    report.schema = "not used";
    report.advice = fmt::format("the {} backend calls no model API, so there is nothing to check; name a model with "
                                "-m provider/model (see optimas backends)",
                                config.provider);
    return report;
  }

  const SchemaDialect& dialect = spec->schema_dialect(config.model);
  SanitisedSchema sent = sanitise_schema(prompt::reply_schema(), dialect);
  report.dialect = dialect.name;
  report.strict = dialect.strict_mode && sent.strict;
  report.stripped = sent.stripped;
  report.key_variables = key_source(config, *spec);
  if (report.key_variables.empty() && !key_option(*spec)) report.key = "not needed";

  Request request;
  request.system = k_system;
  request.prompt = k_prompt;
  request.response_schema = prompt::reply_schema();
  request.max_tokens = options.max_tokens;
  request.timeout_s = options.timeout_s;
  auto t0 = std::chrono::steady_clock::now();
  Result result = backend->complete(request);
  report.latency_s = seconds_since(t0);
  // Providers check the key before anything else, so any answer past authentication proves it.
  const std::string key_ok = report.key_variables.empty() ? "not needed" : "ok";
  if (auto* response = std::get_if<Response>(&result))
    read_response(*response, config, prices, key_ok, report);
  else
    read_failure(std::get<Failure>(result), config, *spec, dialect, options, key_ok, report);
  return report;
}

json to_json(const CheckReport& r) {
  json usage = nullptr;
  if (r.usage)
    usage = {{"input_tokens", r.usage->input_tokens},
             {"output_tokens", r.usage->output_tokens},
             {"cost_usd", r.usage->cost_known ? json(r.usage->cost_usd) : json(nullptr)}};
  json failure = nullptr;
  if (r.failure)
    failure = {{"kind", std::string(failure_kind_name(r.failure->kind))},
               {"http_status", r.failure->http_status},
               {"message", util::redact(r.failure->message)},
               {"retry_after_s", r.failure->retry_after_s >= 0 ? json(r.failure->retry_after_s) : json(nullptr)}};
  return {{"backend", r.backend},
          {"passed", r.passed},
          {"key", {{"status", r.key}, {"variables", r.key_variables}}},
          {"schema", {{"status", r.schema}, {"dialect", r.dialect}, {"strict", r.strict}, {"stripped", r.stripped}}},
          {"answer", util::redact(r.answer)},
          {"latency_s", r.latency_s},
          {"usage", usage},
          {"failure", failure},
          {"advice", util::redact(r.advice)}};
}

} // namespace optimas::llm
