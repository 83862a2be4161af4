#include "llm/retry.hpp"

#include "util/log.hpp"
#include "util/secrets.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

namespace optimas::llm {

namespace {

double backoff_s(const RetryPolicy& policy, int retry, double retry_after_s, std::mt19937_64& rng) {
  double cap = std::max(0.0, policy.max_s);
  if (retry_after_s >= 0) return std::min(retry_after_s, cap);
  double ceiling = std::min(cap, policy.initial_s * std::pow(policy.factor, retry - 1));
  if (!(ceiling > 0)) return 0;
  return std::uniform_real_distribution<double>(0, ceiling)(rng);
}

std::string attempts_word(int n) {
  return n == 1 ? "1 attempt" : fmt::format("{} attempts", n);
}

} // namespace

Result complete_with_retry(Backend& backend, const Request& request, const RetryPolicy& policy,
                           const std::function<void(double)>& sleep) {
  std::mt19937_64 rng(policy.seed ? policy.seed : std::random_device{}());
  const int max_attempts = std::max(1, policy.max_attempts);
  for (int attempt = 1;; ++attempt) {
    Result result = backend.complete(request);
    if (auto* response = std::get_if<Response>(&result)) {
      // Every answer passes here: a server that echoes the key into it (a proxy, a test
      // server) must not hand it to the parser, the cache or the run store.
      response->text = util::redact(response->text);
      response->raw = util::redact(response->raw);
      response->model = util::redact(response->model);
      response->attempts = attempt;
      return result;
    }
    Failure failure = std::get<Failure>(std::move(result));
    if (!is_retryable(failure.kind)) {
      failure.message = util::redact(fmt::format("{} (attempt {} of {}; {} failures are not retried)", failure.message,
                                                 attempt, max_attempts, failure_kind_name(failure.kind)));
      return failure;
    }
    if (attempt >= max_attempts) {
      failure.message = util::redact(fmt::format("{} (gave up after {})", failure.message, attempts_word(attempt)));
      return failure;
    }
    double wait = backoff_s(policy, attempt, failure.retry_after_s, rng);
    log::warn("{}", util::redact(fmt::format("{} ({}); retrying in {:.1f} s, attempt {} of {}", failure.message,
                                             failure_kind_name(failure.kind), wait, attempt + 1, max_attempts)));
    sleep(wait);
  }
}

Result complete_with_retry(Backend& backend, const Request& request, const RetryPolicy& policy) {
  return complete_with_retry(backend, request, policy, sleep_seconds);
}

void sleep_seconds(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

} // namespace optimas::llm
