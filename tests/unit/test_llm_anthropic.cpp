// Tests of llm/anthropic: the anthropic backend against a local stand-in for the Messages API.
#include "llm/backend.hpp"
#include "llm/retry.hpp"
#include "prompt/reply.hpp"

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

// The API as the fake plays it: x-api-key, then the anthropic-version header, then the API's own
// request checks (strict_fakes.hpp), then the answer.
FakeApi::Reply anthropic_like(json answer, strict_fakes::Extra extra = {}) {
  FakeApi::Reply checked =
      FakeApi::checked([extra](const json& body) { return strict_fakes::anthropic_messages(body, extra); },
                       FakeApi::json_reply(200, answer));
  return [checked](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("x-api-key") != k_key) {
      res.status = 401;
      res.set_content(R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})",
                      "application/json");
      return;
    }
    if (!req.has_header("anthropic-version")) {
      res.status = 400;
      res.set_content(
          R"({"type":"error","error":{"type":"invalid_request_error","message":"anthropic-version: header is required"}})",
          "application/json");
      return;
    }
    checked(req, res);
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

// --- What the API receives: its documented request shape and the tool's input_schema ---

namespace {

// A request in the shape of the Messages reference and the tool-use guide
// (https://docs.anthropic.com/en/api/messages,
// https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use): a top-level
// system prompt, one tool with an object input_schema, and tool_choice forcing that tool.
const json k_documented_request = json::parse(R"({
  "model": "claude-sonnet-4-5",
  "max_tokens": 1024,
  "system": "Name the kernel's main stall reason.",
  "messages": [{"role": "user", "content": "stencil3d: 61% long_scoreboard, 12% math_pipe_throttle"}],
  "tools": [{
    "name": "stall_report",
    "description": "Record the kernel's main stall reason.",
    "input_schema": {
      "type": "object",
      "properties": {
        "kernel": {"type": "string", "description": "The kernel's name"},
        "stall": {"type": "string", "enum": ["long_scoreboard", "math_pipe_throttle", "other"]}
      },
      "required": ["kernel", "stall"]
    }
  }],
  "tool_choice": {"type": "tool", "name": "stall_report"}
})");

json with_schema(json request, const json& schema) {
  request["tools"][0]["input_schema"] = schema;
  return request;
}

} // namespace

TEST(AnthropicFake, TakesTheDocumentedRequestAndRefusesWhatTheApiRefuses) {
  EXPECT_EQ(refusal(strict_fakes::anthropic_messages(k_documented_request)), "");

  json unknown = k_documented_request;
  unknown["response_format"] = {{"type", "json_object"}};
  auto v = strict_fakes::anthropic_messages(unknown);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->status, 400);
  EXPECT_EQ(v->body["type"], "error");
  EXPECT_EQ(v->body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(refusal(v), "response_format: Extra inputs are not permitted");

  json no_max = k_documented_request;
  no_max.erase("max_tokens");
  EXPECT_EQ(refusal(strict_fakes::anthropic_messages(no_max)), "max_tokens: Field required");
  json system_role = k_documented_request;
  system_role["messages"].insert(system_role["messages"].begin(), json{{"role", "system"}, {"content", "x"}});
  EXPECT_NE(refusal(strict_fakes::anthropic_messages(system_role)).find("Unexpected role \"system\""),
            std::string::npos);
  json array_root = with_schema(k_documented_request, {{"type", "array"}, {"items", {{"type", "string"}}}});
  EXPECT_EQ(refusal(strict_fakes::anthropic_messages(array_root)),
            "tools.0.custom.input_schema.type: Input should be 'object'");
  json draft7 = k_documented_request;
  draft7["tools"][0]["input_schema"]["$schema"] = "http://json-schema.org/draft-07/schema#";
  EXPECT_NE(refusal(strict_fakes::anthropic_messages(draft7)).find("It must match JSON Schema draft 2020-12"),
            std::string::npos);
  json other_tool = k_documented_request;
  other_tool["tool_choice"]["name"] = "optimas_reply";
  EXPECT_NE(refusal(strict_fakes::anthropic_messages(other_tool)), "");
}

// What Anthropic receives for the reply schema: a tool's input_schema is JSON Schema draft
// 2020-12 with an object at the root
// (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use), so every
// keyword goes but the identifiers $schema and $id.
TEST_F(Anthropic, TheReplySchemaGoesOutAsTheToolsInputSchema) {
  json reply = json::parse(k_reply_answer);
  m_api.reply_with(anthropic_like(anthropic_answer(json::array({tool_use(reply)}))));
  Request request = sample_request();
  request.response_schema = optimas::prompt::reply_schema();
  Result r = m_calls.call(*make_anthropic(m_config), request);
  ASSERT_TRUE(ok(r)) << failure_of(r).message; // the strict fake took it

  json expected = optimas::prompt::reply_schema();
  for (const char* k : {"$schema", "$id"}) expected.erase(k);
  const json body = m_api.last().body;
  EXPECT_EQ(body["tools"][0]["input_schema"], expected);
  EXPECT_EQ(body["tool_choice"], (json{{"type", "tool"}, {"name", "optimas_reply"}}));
  EXPECT_EQ(json::parse(response_of(r).text), reply);
}

TEST_F(Anthropic, AForbiddenKeywordIsStrippedBeforeSending) {
  // As written (a draft-07 $schema, as many generators write), the API would refuse the schema.
  EXPECT_NE(refusal(strict_fakes::anthropic_messages(with_schema(k_documented_request, k_loaded_schema))), "");

  json input = {{"kernel", "k"}, {"format", "csv"}, {"title", "t"}};
  m_api.reply_with(anthropic_like(anthropic_answer(json::array({tool_use(input)}))));
  Request request = sample_request();
  request.response_schema = k_loaded_schema;
  Result r = m_calls.call(*make_anthropic(m_config), request);
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  json expected = k_loaded_schema;
  expected.erase("$schema");
  expected.erase("$id");
  EXPECT_EQ(m_api.last().body["tools"][0]["input_schema"], expected);
}
