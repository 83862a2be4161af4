#include "llm/cache.hpp"

#include "llm/http.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/secrets.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>
#include <system_error>

#include <unistd.h>

namespace optimas::llm {

using nlohmann::json;

namespace {

// Bumped when the key's inputs or the entry's layout change, so old entries are not misread.
constexpr int k_format = 1;

bool is_key(const std::string& key) {
  return key.size() == 64 && key.find_first_not_of("0123456789abcdef") == std::string::npos;
}

json to_json(const Response& r) {
  return {{"text", util::redact(r.text)},
          {"model", r.model},
          {"usage", {{"input_tokens", r.usage.input_tokens}, {"output_tokens", r.usage.output_tokens}}},
          {"raw", util::redact(r.raw)},
          {"attempts", r.attempts},
          {"latency_s", r.latency_s}};
}

Response from_json(const json& j) {
  Response r;
  r.text = j.at("text").get<std::string>();
  r.model = j.at("model").get<std::string>();
  r.usage.input_tokens = j.at("usage").at("input_tokens").get<std::uint64_t>();
  r.usage.output_tokens = j.at("usage").at("output_tokens").get<std::uint64_t>();
  r.raw = j.value("raw", "");
  r.attempts = j.value("attempts", 1);
  r.latency_s = j.value("latency_s", 0.0);
  return r;
}

} // namespace

ResponseCache::ResponseCache(std::filesystem::path dir) : m_dir(std::move(dir)) {}

std::string ResponseCache::key(const BackendConfig& config, const Request& request) {
  // nlohmann's objects keep keys sorted and dump() prints numbers in shortest round-trip form,
  // so equal inputs give byte-equal text.
  json canonical = {
      {"format", k_format},
      {"provider", config.provider},
      {"model", config.model},
      {"base_url", base_url_or_default(config.base_url, config.provider)},
      {"temperature", request.temperature},
      {"max_tokens", request.max_tokens},
      {"seed", request.seed ? json(*request.seed) : json(nullptr)},
      {"schema_name", request.schema_name},
      {"schema", request.response_schema},
      {"system", request.system},
      {"prompt_sha256", util::sha256_hex(request.prompt)},
  };
  return util::sha256_hex(canonical.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::filesystem::path ResponseCache::path_for(const std::string& key) const {
  return m_dir / key.substr(0, 2) / (key + ".json");
}

std::optional<Response> ResponseCache::get(const std::string& key) const {
  if (!is_key(key)) return std::nullopt;
  auto path = path_for(key);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  try {
    json entry = util::parse_json(util::read_file(path.string()));
    if (entry.at("format").get<int>() != k_format || entry.at("key").get<std::string>() != key) return std::nullopt;
    Response r = from_json(entry.at("response"));
    r.from_cache = true;
    return r;
  } catch (const std::exception& e) {
    log::warn("{}",
              util::redact(fmt::format("response cache entry {} is damaged ({}); ignoring it and asking the model "
                                       "again",
                                       path.string(), plain_message(e))));
    return std::nullopt;
  }
}

std::optional<std::string> ResponseCache::put(const std::string& key, const Response& response) const {
  if (!is_key(key)) return fmt::format("not a cache key: \"{}\"", key);
  auto path = path_for(key);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec)
    return fmt::format("cannot create the response cache folder {}: {}", path.parent_path().string(), ec.message());
  json entry = {
      {"format", k_format}, {"key", key}, {"created", util::utc_now_iso8601()}, {"response", to_json(response)}};
  // Unique per process and call, so concurrent writers of the same key never share a file.
  static std::atomic<unsigned> counter{0};
  auto tmp = path;
  tmp += fmt::format(".tmp.{}.{}", ::getpid(), counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << util::redact(entry.dump(2, ' ', false, json::error_handler_t::replace)) << '\n';
    out.close();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return fmt::format("cannot write the response cache entry {} (disk full or no permission?)", tmp.string());
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return fmt::format("cannot move the response cache entry into place at {}: {}", path.string(), ec.message());
  }
  return std::nullopt;
}

Result complete_cached(Backend& backend, const BackendConfig& config, const Request& request, ResponseCache* cache,
                       const RetryPolicy& policy, const std::function<void(double)>& sleep) {
  if (!cache) return complete_with_retry(backend, request, policy, sleep);
  const std::string key = ResponseCache::key(config, request);
  if (auto hit = cache->get(key)) {
    log::debug("{}", util::redact(fmt::format("{}: answer replayed from the response cache ({})", backend.name(),
                                              cache->path_for(key).string())));
    return *hit;
  }
  Result result = complete_with_retry(backend, request, policy, sleep);
  if (const auto* response = std::get_if<Response>(&result))
    if (auto problem = cache->put(key, *response))
      log::warn("{}", util::redact(fmt::format("{}: {}; the answer is used but not cached", backend.name(), *problem)));
  return result;
}

Result complete_cached(Backend& backend, const BackendConfig& config, const Request& request, ResponseCache* cache,
                       const RetryPolicy& policy) {
  return complete_cached(backend, config, request, cache, policy, sleep_seconds);
}

} // namespace optimas::llm
