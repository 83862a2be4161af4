// Tests of llm/retry: which failures are retried, the backoff with full jitter, Retry-After,
// and the attempt count. A scripted backend stands in for a provider; a fake sleep records the
// waits instead of sleeping.
#include "llm/retry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>

using namespace optimas::llm;

namespace {

// Answers each call with the next scripted result; the last one repeats.
class ScriptedBackend : public Backend {
public:
  explicit ScriptedBackend(std::deque<Result> script) : m_script(std::move(script)) {}
  std::string name() const override { return "scripted/model"; }
  Result complete(const Request&) override {
    ++calls;
    Result r = m_script.front();
    if (m_script.size() > 1) m_script.pop_front();
    return r;
  }
  int calls = 0;

private:
  std::deque<Result> m_script;
};

Failure failure(FailureKind kind, double retry_after_s = -1) {
  Failure f;
  f.kind = kind;
  f.message = "scripted/model: " + std::string(failure_kind_name(kind));
  f.retry_after_s = retry_after_s;
  return f;
}

Response answer() {
  Response r;
  r.text = R"({"ok":true})";
  return r;
}

struct Waits {
  std::vector<double> seconds;
  std::function<void(double)> sleep() {
    return [this](double s) { seconds.push_back(s); };
  }
};

RetryPolicy seeded(int max_attempts = 5) {
  RetryPolicy p;
  p.max_attempts = max_attempts;
  p.seed = 42;
  return p;
}

} // namespace

TEST(Retry, ASuccessIsReturnedAtOnce) {
  ScriptedBackend backend({answer()});
  Waits waits;
  Result r = complete_with_retry(backend, Request{}, seeded(), waits.sleep());
  ASSERT_TRUE(ok(r));
  EXPECT_EQ(std::get<Response>(r).attempts, 1);
  EXPECT_EQ(backend.calls, 1);
  EXPECT_TRUE(waits.seconds.empty());
}

TEST(Retry, RetryableKindsAreRetriedWithGrowingJitteredWaits) {
  ScriptedBackend backend({failure(FailureKind::server), failure(FailureKind::timeout), failure(FailureKind::network),
                           failure(FailureKind::rate_limit), answer()});
  Waits waits;
  Result r = complete_with_retry(backend, Request{}, seeded(), waits.sleep());
  ASSERT_TRUE(ok(r));
  EXPECT_EQ(std::get<Response>(r).attempts, 5);
  EXPECT_EQ(backend.calls, 5);
  ASSERT_EQ(waits.seconds.size(), 4u);
  const double ceilings[] = {1, 2, 4, 8}; // initial_s * factor^(n-1)
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_GE(waits.seconds[i], 0) << i;
    EXPECT_LE(waits.seconds[i], ceilings[i]) << i;
  }
}

TEST(Retry, GivesUpAfterMaxAttemptsWithTheCountInTheMessage) {
  ScriptedBackend backend({failure(FailureKind::server)});
  Waits waits;
  Result r = complete_with_retry(backend, Request{}, seeded(3), waits.sleep());
  ASSERT_FALSE(ok(r));
  const auto& f = std::get<Failure>(r);
  EXPECT_EQ(f.kind, FailureKind::server);
  EXPECT_EQ(backend.calls, 3);
  EXPECT_EQ(waits.seconds.size(), 2u);
  EXPECT_NE(f.message.find("scripted/model: server"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("gave up after 3 attempts"), std::string::npos) << f.message;
}

TEST(Retry, KindsThatRetryingCannotFixAreNotRetried) {
  for (auto kind :
       {FailureKind::auth, FailureKind::bad_request, FailureKind::schema_violation, FailureKind::awaiting_reply}) {
    ScriptedBackend backend({failure(kind), answer()});
    Waits waits;
    Result r = complete_with_retry(backend, Request{}, seeded(), waits.sleep());
    ASSERT_FALSE(ok(r)) << failure_kind_name(kind);
    EXPECT_EQ(std::get<Failure>(r).kind, kind);
    EXPECT_EQ(backend.calls, 1) << failure_kind_name(kind);
    EXPECT_TRUE(waits.seconds.empty());
    EXPECT_NE(std::get<Failure>(r).message.find("attempt 1 of 5"), std::string::npos) << std::get<Failure>(r).message;
    EXPECT_NE(std::get<Failure>(r).message.find("not retried"), std::string::npos);
  }
}

TEST(Retry, RetryAfterIsHonouredAndCappedByMaxS) {
  ScriptedBackend backend({failure(FailureKind::rate_limit, 7), failure(FailureKind::rate_limit, 120),
                           failure(FailureKind::rate_limit, 0), answer()});
  Waits waits;
  Result r = complete_with_retry(backend, Request{}, seeded(), waits.sleep());
  ASSERT_TRUE(ok(r));
  EXPECT_EQ(waits.seconds, (std::vector<double>{7, 30, 0}));
}

TEST(Retry, TheBackoffCeilingStopsAtMaxS) {
  RetryPolicy p = seeded(12);
  p.initial_s = 1;
  p.factor = 3;
  p.max_s = 5;
  ScriptedBackend backend({failure(FailureKind::server)});
  Waits waits;
  complete_with_retry(backend, Request{}, p, waits.sleep());
  ASSERT_EQ(waits.seconds.size(), 11u);
  for (double w : waits.seconds) EXPECT_LE(w, 5.0);
  // Late waits draw from [0, 5]: some of them must lie above the early ceilings (1, 3).
  EXPECT_GT(*std::max_element(waits.seconds.begin() + 2, waits.seconds.end()), 3.0);
}

TEST(Retry, JitterIsFullAndSeeded) {
  RetryPolicy p = seeded(201);
  p.factor = 1; // a constant ceiling of initial_s = 1 s
  ScriptedBackend a({failure(FailureKind::server)}), b({failure(FailureKind::server)}),
      c({failure(FailureKind::server)});
  Waits wa, wb, wc;
  complete_with_retry(a, Request{}, p, wa.sleep());
  complete_with_retry(b, Request{}, p, wb.sleep());
  p.seed = 7;
  complete_with_retry(c, Request{}, p, wc.sleep());
  ASSERT_EQ(wa.seconds.size(), 200u);
  EXPECT_EQ(wa.seconds, wb.seconds) << "the same seed gives the same waits";
  EXPECT_NE(wa.seconds, wc.seconds) << "another seed gives other waits";
  // Full jitter spreads the waits over the whole [0, ceiling], not around the ceiling.
  EXPECT_LT(*std::min_element(wa.seconds.begin(), wa.seconds.end()), 0.1);
  EXPECT_GT(*std::max_element(wa.seconds.begin(), wa.seconds.end()), 0.9);
  double mean = 0;
  for (double w : wa.seconds) mean += w / 200;
  EXPECT_NEAR(mean, 0.5, 0.1);
}

TEST(Retry, OneAttemptMeansNoRetry) {
  ScriptedBackend backend({failure(FailureKind::timeout)});
  Waits waits;
  Result r = complete_with_retry(backend, Request{}, seeded(1), waits.sleep());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(backend.calls, 1);
  EXPECT_TRUE(waits.seconds.empty());
  EXPECT_NE(std::get<Failure>(r).message.find("gave up after 1 attempt"), std::string::npos)
      << std::get<Failure>(r).message;
}
