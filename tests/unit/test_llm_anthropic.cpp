// Tests of llm/anthropic: the anthropic backend against a local stand-in for the Messages API.
#include "llm/backend.hpp"
#include "llm/retry.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace optimas::llm;
using nlohmann::json;

#include "fake_api.hpp"

namespace {

const std::string k_json_answer = R"({"kernel":"stencil3d","speedup":1.8})";

// What api.anthropic.com answers to a Messages request with a forced tool.
json anthropic_answer(json content, const std::string& stop = "tool_use") {
  return {{"id", "msg_01XFDUDYJgAACzvnptvVoYEL"},
          {"type", "message"},
          {"role", "assistant"},
          {"model", "claude-sonnet-4-5-20250929"},
          {"content", content},
          {"stop_reason", stop},
          {"stop_sequence", nullptr},
          {"usage",
           {{"input_tokens", 1480},
            {"cache_creation_input_tokens", 0},
            {"cache_read_input_tokens", 0},
            {"output_tokens", 73},
            {"service_tier", "standard"}}}};
}
json tool_use(json input, const std::string& name = "optimas_reply") {
  return {{"type", "tool_use"}, {"id", "toolu_01A09q90qw90lq917835lq9"}, {"name", name}, {"input", input}};
}
json text_block(const std::string& text) {
  return {{"type", "text"}, {"text", text}};
}

// The API's own checks: x-api-key, anthropic-version, max_tokens; else the errors it sends.
FakeApi::Reply anthropic_like(json answer) {
  return [answer](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("x-api-key") != k_key) {
      res.status = 401;
      res.set_content(R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})",
                      "application/json");
      return;
    }
    json body = json::parse(req.body, nullptr, false);
    if (!req.has_header("anthropic-version") || body.is_discarded() || !body.contains("max_tokens")) {
      res.status = 400;
      res.set_content(
          R"({"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}})",
          "application/json");
      return;
    }
    res.set_content(answer.dump(), "application/json");
  };
}

class Anthropic : public testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(m_api.running());
    m_config.provider = "anthropic";
    m_config.model = "claude-sonnet-4-5";
    m_config.base_url = m_api.url() + "/v1";
  }
  void TearDown() override { m_calls.expect_no_key(); }

  ScopedEnv m_key{"ANTHROPIC_API_KEY", k_key};
  FakeApi m_api{"/v1/messages"};
  BackendConfig m_config;
  CallRecorder m_calls;
};

} // namespace

TEST_F(Anthropic, ForcesTheToolAndTakesItsInputAsTheAnswer) {
  m_api.reply_with(anthropic_like(anthropic_answer(json::array({tool_use(json::parse(k_json_answer))}))));
  auto backend = make_anthropic(m_config);
  EXPECT_EQ(backend->name(), "anthropic/claude-sonnet-4-5");
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  const Response& answer = response_of(r);
  EXPECT_EQ(json::parse(answer.text), json::parse(k_json_answer));
  EXPECT_EQ(answer.model, "claude-sonnet-4-5-20250929");
  EXPECT_EQ(answer.usage.input_tokens, 1480u);
  EXPECT_EQ(answer.usage.output_tokens, 73u);
  EXPECT_NE(answer.raw.find("msg_01XFDUDYJgAACzvnptvVoYEL"), std::string::npos);

  Seen seen = m_api.last();
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.path, "/v1/messages");
  EXPECT_EQ(seen.header("x-api-key"), k_key);
  EXPECT_EQ(seen.header("anthropic-version"), "2023-06-01");
  EXPECT_FALSE(seen.has_header("Authorization"));
  const json& body = seen.body;
  ASSERT_FALSE(body.is_discarded());
  EXPECT_EQ(body.at("model"), "claude-sonnet-4-5");
  EXPECT_EQ(body.at("max_tokens"), 8192);
  EXPECT_EQ(body.at("system"), sample_request().system);
  EXPECT_EQ(body.at("messages"), (json::array({{{"role", "user"}, {"content", sample_request().prompt}}})));
  EXPECT_EQ(body.at("temperature"), 0.15);
  ASSERT_EQ(body.at("tools").size(), 1u);
  EXPECT_EQ(body["tools"][0].at("name"), "optimas_reply");
  EXPECT_FALSE(body["tools"][0].at("description").get<std::string>().empty());
  EXPECT_EQ(body["tools"][0].at("input_schema"), k_schema);
  EXPECT_EQ(body.at("tool_choice"), (json{{"type", "tool"}, {"name", "optimas_reply"}}));
}

TEST_F(Anthropic, TheVersionHeaderIsAnOption) {
  m_api.reply_with(anthropic_like(anthropic_answer(json::array({tool_use(json::parse(k_json_answer))}))));
  m_config.options["anthropic_version"] = "2024-01-01";
  auto backend = make_anthropic(m_config);
  ASSERT_TRUE(ok(m_calls.call(*backend, sample_request())));
  EXPECT_EQ(m_api.last().header("anthropic-version"), "2024-01-01");
}

TEST_F(Anthropic, WithoutASchemaTheTextBlocksAreTheAnswer) {
  m_api.reply_with(anthropic_like(anthropic_answer(
      json::array({text_block("Stage the halo in shared memory"), text_block(" and unroll the z loop.")}),
      "end_turn")));
  auto backend = make_anthropic(m_config);
  Request request = sample_request();
  request.response_schema = nullptr;
  Result r = m_calls.call(*backend, request);
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  EXPECT_EQ(response_of(r).text, "Stage the halo in shared memory and unroll the z loop.");
  EXPECT_FALSE(m_api.last().body.contains("tools"));
  EXPECT_FALSE(m_api.last().body.contains("tool_choice"));
}

TEST_F(Anthropic, AMissingKeyNamesTheVariable) {
  ScopedEnv no_key("ANTHROPIC_API_KEY", nullptr);
  auto backend = make_anthropic(m_config);
  Result r = m_calls.call(*backend, sample_request(), 5);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::auth);
  EXPECT_NE(failure_of(r).message.find("ANTHROPIC_API_KEY"), std::string::npos) << failure_of(r).message;
  EXPECT_EQ(m_api.requests(), 0);
}

TEST_F(Anthropic, AnInvalidKeyIsAnAuthFailureThatIsNotRetried) {
  ScopedEnv wrong("ANTHROPIC_API_KEY", "sk-ant-test-WRONG-0000");
  m_api.reply_with(anthropic_like(anthropic_answer(json::array())));
  auto backend = make_anthropic(m_config);
  Result r = m_calls.call(*backend, sample_request(), 5);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::auth);
  EXPECT_EQ(failure_of(r).http_status, 401);
  EXPECT_EQ(m_api.requests(), 1);
  EXPECT_NE(failure_of(r).message.find("invalid x-api-key"), std::string::npos) << failure_of(r).message;
  EXPECT_NE(failure_of(r).message.find("check that ANTHROPIC_API_KEY"), std::string::npos) << failure_of(r).message;
}

TEST_F(Anthropic, AKeyEchoedByAProxyIsRedacted) {
  // A misconfigured gateway that reflects the request headers in its error page.
  m_api.reply_with([](const httplib::Request& req, httplib::Response& res) {
    res.status = 400;
    res.set_content("bad request; headers seen: x-api-key=" + req.get_header_value("x-api-key"), "text/plain");
  });
  auto backend = make_anthropic(m_config);
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::bad_request);
  EXPECT_NE(failure_of(r).message.find("x-api-key=[REDACTED]"), std::string::npos) << failure_of(r).message;
}

TEST_F(Anthropic, RateLimitsWaitForRetryAfterCappedByMaxS) {
  int calls = 0;
  m_api.reply_with([&calls](const httplib::Request& req, httplib::Response& res) {
    if (++calls == 1) {
      FakeApi::json_reply(429,
                          {{"type", "error"},
                           {"error",
                            {{"type", "rate_limit_error"},
                             {"message", "Number of request tokens has exceeded your per-minute rate limit"}}}},
                          {{"retry-after", "45"}})(req, res);
      return;
    }
    anthropic_like(anthropic_answer(json::array({tool_use(json::parse(k_json_answer))})))(req, res);
  });
  auto backend = make_anthropic(m_config);
  Result r = m_calls.call(*backend, sample_request(), 5);
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  EXPECT_EQ(response_of(r).attempts, 2);
  EXPECT_EQ(m_calls.waits, (std::vector<double>{30})) << "Retry-After 45 s capped by max_s = 30";
}

TEST_F(Anthropic, OverloadedIsAServerFailureAndRetried) {
  m_api.reply_with(FakeApi::json_reply(
      529, {{"type", "error"}, {"error", {{"type", "overloaded_error"}, {"message", "Overloaded"}}}}));
  auto backend = make_anthropic(m_config);
  Result r = m_calls.call(*backend, sample_request(), 3);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::server);
  EXPECT_EQ(failure_of(r).http_status, 529);
  EXPECT_EQ(m_api.requests(), 3);
  EXPECT_NE(failure_of(r).message.find("Overloaded"), std::string::npos) << failure_of(r).message;
}

TEST_F(Anthropic, AStalledConnectionTimesOut) {
  m_api.reply_with(m_api.stalled());
  auto backend = make_anthropic(m_config);
  Request request = sample_request();
  request.timeout_s = 0.5;
  Result r = m_calls.call(*backend, request);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::timeout);
}

TEST_F(Anthropic, ATruncatedBodyIsAServerFailure) {
  m_api.reply_with(FakeApi::truncated(anthropic_answer(json::array({tool_use(json::parse(k_json_answer))}))));
  auto backend = make_anthropic(m_config);
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::server);
}

TEST_F(Anthropic, ABodyThatIsNotJsonIsAServerFailure) {
  m_api.reply_with(FakeApi::text_reply(200, "upstream connect error or disconnect/reset before headers", "text/plain"));
  auto backend = make_anthropic(m_config);
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::server);
  EXPECT_NE(failure_of(r).message.find("upstream connect error"), std::string::npos) << failure_of(r).message;
}

TEST_F(Anthropic, NoToolCallViolatesTheSchema) {
  m_api.reply_with(anthropic_like(
      anthropic_answer(json::array({text_block("I'd rather explain: the halo loads are uncoalesced.")}), "end_turn")));
  auto backend = make_anthropic(m_config);
  Result r = m_calls.call(*backend, sample_request(), 5);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::schema_violation);
  EXPECT_EQ(m_api.requests(), 1);
  EXPECT_NE(failure_of(r).message.find("did not call the optimas_reply tool"), std::string::npos)
      << failure_of(r).message;
  EXPECT_NE(failure_of(r).message.find("halo loads are uncoalesced"), std::string::npos) << failure_of(r).message;
}

TEST_F(Anthropic, AToolCallCutAtMaxTokensViolatesTheSchema) {
  m_api.reply_with(
      anthropic_like(anthropic_answer(json::array({tool_use(json{{"kernel", "stencil3d"}})}), "max_tokens")));
  auto backend = make_anthropic(m_config);
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::schema_violation);
  EXPECT_NE(failure_of(r).message.find("max_tokens (8192)"), std::string::npos) << failure_of(r).message;
}

TEST_F(Anthropic, ARefusalViolatesTheSchema) {
  m_api.reply_with(anthropic_like(anthropic_answer(json::array(), "refusal")));
  auto backend = make_anthropic(m_config);
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::schema_violation);
  EXPECT_NE(failure_of(r).message.find("refused"), std::string::npos) << failure_of(r).message;
}
