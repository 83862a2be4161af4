// The one table of model backends. Adding a backend: one file defining its spec (name, keys,
// options, factory, schema dialect), one line here (docs/prompts-and-backends.md).
#include "llm/backend.hpp"

#include "llm/schema_dialect.hpp"

#include "util/error.hpp"
#include "util/secrets.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <set>
#include <stdexcept>

namespace optimas::llm {

// The backends, in the order `optimas backends` lists them, one line each: BACKEND(x) stands for
// BackendSpec x_backend(), defined in the backend's own file (llm/<x>.cpp, built by the glob in
// src/CMakeLists.txt) with its options next to the code that reads them.
#define OPTIMAS_BACKENDS(BACKEND)                                                                                      \
  BACKEND(openai)                                                                                                      \
  BACKEND(openai_compatible)                                                                                           \
  BACKEND(gemini)                                                                                                      \
  BACKEND(anthropic)                                                                                                   \
  BACKEND(ollama)                                                                                                      \
  BACKEND(manual)                                                                                                      \
  BACKEND(builtin)

#define OPTIMAS_DECLARE_BACKEND(x) BackendSpec x##_backend();
OPTIMAS_BACKENDS(OPTIMAS_DECLARE_BACKEND)
#undef OPTIMAS_DECLARE_BACKEND

const Registry& registry() {
#define OPTIMAS_LIST_BACKEND(x) x##_backend(),
  static const Registry k_registry({OPTIMAS_BACKENDS(OPTIMAS_LIST_BACKEND)});
#undef OPTIMAS_LIST_BACKEND
  return k_registry;
}

Registry::Registry(std::vector<BackendSpec> specs) : util::Registry<BackendSpec>(std::move(specs), "backend") {
  for (const auto& b : this->specs())
    if (b.name.find('/') != std::string::npos)
      throw std::logic_error(fmt::format("backend name \"{}\": no '/' (models are provider/model)", b.name));
  // The redactor and the child environments must know every key variable, even one not named
  // like a key: the registry declares its own once.
  for (const auto& b : this->specs())
    for (const auto& var : b.key_env) util::register_secret_variable(var);
}

const std::vector<BackendSpec>& backends() {
  return registry().specs();
}

const BackendSpec* find_backend(std::string_view provider) {
  return registry().find(provider);
}

void set_option(BackendConfig& config, const std::string& key, const std::string& value, const Registry& from) {
  const BackendSpec* spec = from.find(config.provider);
  std::vector<std::string> names;
  const OptionSpec* known = nullptr;
  if (spec)
    for (const auto& o : spec->options) {
      if (o.name == key) known = &o;
      names.push_back(o.name);
    }
  if (!known)
    throw UsageError(fmt::format("the {} backend has no option \"{}\" (its options: {})", config.provider, key,
                                 names.empty() ? "none" : util::join(names, ", ")));
  if (!value.empty())
    if (std::string why = util::option_problem(*known, value); !why.empty())
      throw UsageError(fmt::format("the {} backend's option {} {}", config.provider, key, why));
  config.options[key] = value;
  if (known->names_secret_variable) util::register_secret_variable(value);
}

BackendConfig parse_model(std::string_view spec, const Registry& from) {
  BackendConfig c;
  auto slash = spec.find('/');
  c.provider = std::string(spec.substr(0, slash));
  if (slash != std::string_view::npos) c.model = std::string(spec.substr(slash + 1));
  const BackendSpec* found = from.find(c.provider);
  if (!found)
    throw UsageError(fmt::format("unknown model provider \"{}\" in \"{}\" (known: {}); name models provider/model, "
                                 "e.g. openai/gpt-5",
                                 c.provider, spec, util::join(from.names(), ", ")));
  // A language model's backend needs the model's name (manual and builtin take none).
  if (c.model.empty() && found->schema_dialect)
    throw UsageError(
        fmt::format("\"{}\" names no model: give {}/MODEL (optimas backends lists the providers)", spec, c.provider));
  return c;
}

BackendConfig backend_from(std::string_view model, std::string_view base_url,
                           const std::map<std::string, std::string>& options, const Registry& from) {
  BackendConfig c = parse_model(model, from);
  c.base_url = std::string(base_url);
  for (const auto& [key, value] : options) set_option(c, key, value, from);
  return c;
}

std::pair<std::string, std::string> split_option(std::string_view key_value) {
  auto eq = key_value.find('=');
  if (eq == std::string_view::npos)
    throw UsageError("--option takes key=value, got \"" + std::string(key_value) + "\"");
  return {std::string(key_value.substr(0, eq)), std::string(key_value.substr(eq + 1))};
}

std::unique_ptr<Backend> make_backend(const BackendConfig& config, const Registry& from) {
  const BackendSpec* spec = from.find(config.provider);
  if (!spec) throw UsageError(fmt::format("unknown model provider \"{}\"", config.provider));
  return spec->make(config);
}

std::string option_value(const BackendConfig& config, const OptionSpec& option) {
  return util::option_value(config.options, option);
}

bool caches_answers(const BackendConfig& config, const Registry& from) {
  const BackendSpec* spec = from.find(config.provider);
  return spec && spec->cache_answers;
}

std::string describe_backends(const Registry& from) {
  std::string out;
  for (const auto& b : from.specs()) {
    out += fmt::format("{:<18} {}\n", b.name, b.description);
    for (const auto& var : b.key_env)
      out += fmt::format("{:<18}   key: ${} ({})\n", "", var, std::getenv(var.c_str()) ? "set" : "not set");
    if (!b.default_base_url.empty()) out += fmt::format("{:<18}   base_url: {}\n", "", b.default_base_url);
    for (const auto& o : b.options)
      out += fmt::format("{:<18}   option {}: {}{}\n", "", o.name, o.description,
                         o.default_value.empty() ? "" : " (default " + o.default_value + ")");
    if (b.schema_dialect) out += fmt::format("{:<18}   schema: {}\n", "", describe(b.schema_dialect("")));
  }
  return out;
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
