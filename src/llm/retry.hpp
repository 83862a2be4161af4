// Retries a backend call on the failures worth retrying (is_retryable), with exponential backoff
// and full jitter, so that many workers hitting the same rate limit do not retry in step.
#pragma once

#include "llm/backend.hpp"

#include <cstdint>
#include <functional>

namespace optimas::llm {

struct RetryPolicy {
  int max_attempts = 5;   // attempts in all, the first included
  double initial_s = 1;   // the backoff ceiling before the first retry
  double factor = 2;      // the ceiling grows by this much after each retry
  double max_s = 30;      // no wait is longer, Retry-After included
  std::uint64_t seed = 0; // jitter seed; 0 = a random one, so that parallel workers differ
};

// Calls backend.complete() until it succeeds, fails with a kind that is not retried, or
// max_attempts are used. Before retry n (1-based) it waits Retry-After when the failure gave one,
// else a uniform random time in [0, min(max_s, initial_s * factor^(n-1))]; both capped by max_s.
// Sets Response::attempts; a Failure's message ends with how many attempts were made.
// `sleep` is called with each wait in seconds (tests record the waits instead of sleeping).
Result complete_with_retry(Backend& backend, const Request& request, const RetryPolicy& policy,
                           const std::function<void(double)>& sleep);
// The same, sleeping for real.
Result complete_with_retry(Backend& backend, const Request& request, const RetryPolicy& policy = {});

// Sleeps the calling thread for `seconds` (the default `sleep` above).
void sleep_seconds(double seconds);

} // namespace optimas::llm
