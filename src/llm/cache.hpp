// A content-addressed cache of model responses: the same request to the same model replays the
// stored answer without a network call, which makes runs repeatable and re-runs free.
#pragma once

#include "llm/backend.hpp"
#include "llm/retry.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace optimas::llm {

class ResponseCache {
public:
  explicit ResponseCache(std::filesystem::path dir);
  const std::filesystem::path& dir() const { return m_dir; }

  // SHA-256 (hex) of a canonical JSON of everything that shapes the answer: provider, model,
  // base URL (the provider's default when empty), temperature, max_tokens, seed, schema name
  // and schema, system prompt and the SHA-256 of the prompt. Not the timeout.
  static std::string key(const BackendConfig& config, const Request& request);

  // <dir>/<first two hex digits>/<key>.json
  std::filesystem::path path_for(const std::string& key) const;

  // The stored response with from_cache = true; nullopt when absent. A damaged entry is a miss
  // (with a warning), never an error: the call is simply made again.
  std::optional<Response> get(const std::string& key) const;

  // Stores a response atomically (a temporary file renamed into place), so a reader never sees
  // half an entry. Returns what went wrong when it could not be written; the caller still has
  // the answer, so that is a warning, not a failure.
  std::optional<std::string> put(const std::string& key, const Response& response) const;

private:
  std::filesystem::path m_dir;
};

// Looks the request up in `cache`; on a miss calls the backend with retries and stores the
// answer (successes only). `cache` == nullptr (--no-cache) always calls.
Result complete_cached(Backend& backend, const BackendConfig& config, const Request& request, ResponseCache* cache,
                       const RetryPolicy& policy, const std::function<void(double)>& sleep);
Result complete_cached(Backend& backend, const BackendConfig& config, const Request& request, ResponseCache* cache,
                       const RetryPolicy& policy = {});

} // namespace optimas::llm
