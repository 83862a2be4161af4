// Tests of llm/openai: the openai and openai-compatible backends against a local stand-in for
// the Chat Completions API.
#include "llm/backend.hpp"
#include "llm/retry.hpp"
#include "llm/schema_dialect.hpp"
#include "prompt/reply.hpp"
#include "util/secrets.hpp"

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

// What api.openai.com answers to a chat completion with a JSON-schema response format.
json openai_answer(const std::string& content, const std::string& finish = "stop") {
  return {{"id", "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG"},
          {"object", "chat.completion"},
          {"created", 1741570283},
          {"model", "gpt-4.1-2025-04-14"},
          {"choices",
           {{{"index", 0},
             {"message",
              {{"role", "assistant"}, {"content", content}, {"refusal", nullptr}, {"annotations", json::array()}}},
             {"logprobs", nullptr},
             {"finish_reason", finish}}}},
          {"usage",
           {{"prompt_tokens", 1117},
            {"completion_tokens", 46},
            {"total_tokens", 1163},
            {"prompt_tokens_details", {{"cached_tokens", 0}, {"audio_tokens", 0}}},
            {"completion_tokens_details", {{"reasoning_tokens", 0}, {"audio_tokens", 0}}}}},
          {"service_tier", "default"},
          {"system_fingerprint", "fp_b8a3f5b9d3"}};
}

const std::string k_json_answer = R"({"kernel":"stencil3d","speedup":1.8})";

// The API as the fake plays it: a Bearer key (OpenAI checks it before anything else), then the
// API's own request checks (strict_fakes.hpp), then the answer. A compatible server takes no key.
FakeApi::Reply openai_like(const std::string& content, bool compatible = false, strict_fakes::Extra extra = {}) {
  FakeApi::Reply answer = FakeApi::checked(
      [compatible, extra](const json& body) { return strict_fakes::openai_chat(body, compatible, extra); },
      FakeApi::json_reply(200, openai_answer(content)));
  return [answer, compatible](const httplib::Request& req, httplib::Response& res) {
    if (!compatible && req.get_header_value("Authorization") != std::string("Bearer ") + k_key) {
      res.status = 401;
      res.set_content(json{{"error",
                            {{"message", "Incorrect API key provided: " + req.get_header_value("Authorization")},
                             {"type", "invalid_request_error"},
                             {"param", nullptr},
                             {"code", "invalid_api_key"}}}}
                          .dump(),
                      "application/json");
      return;
    }
    answer(req, res);
  };
}

BackendConfig openai_config(const FakeApi& api, const std::string& model = "gpt-4.1") {
  BackendConfig c;
  c.provider = "openai";
  c.model = model;
  c.base_url = api.url() + "/v1";
  return c;
}

class OpenAi : public testing::Test {
protected:
  void SetUp() override { ASSERT_TRUE(m_api.running()); }
  void TearDown() override { m_calls.expect_no_key(); }

  ScopedEnv m_key{"OPENAI_API_KEY", k_key};
  FakeApi m_api{"/v1/chat/completions"};
  CallRecorder m_calls;
};

} // namespace

TEST_F(OpenAi, SendsTheChatCompletionsRequestAndReadsTheAnswer) {
  m_api.reply_with(openai_like(k_json_answer));
  auto config = openai_config(m_api);
  config.options["organization"] = "org-optimas";
  auto backend = make_openai(config);
  EXPECT_EQ(backend->name(), "openai/gpt-4.1");

  Result r = m_calls.call(*backend, sample_request());
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  const Response& answer = response_of(r);
  EXPECT_EQ(answer.text, k_json_answer);
  EXPECT_EQ(answer.model, "gpt-4.1-2025-04-14");
  EXPECT_EQ(answer.usage.input_tokens, 1117u);
  EXPECT_EQ(answer.usage.output_tokens, 46u);
  EXPECT_NE(answer.raw.find("chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG"), std::string::npos);
  EXPECT_EQ(answer.attempts, 1);
  EXPECT_FALSE(answer.from_cache);
  EXPECT_GT(answer.latency_s, 0);

  Seen seen = m_api.last();
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.path, "/v1/chat/completions");
  EXPECT_EQ(seen.header("Authorization"), std::string("Bearer ") + k_key);
  EXPECT_EQ(seen.header("OpenAI-Organization"), "org-optimas");
  EXPECT_EQ(seen.header("Content-Type"), "application/json");
  const json& body = seen.body;
  ASSERT_FALSE(body.is_discarded());
  EXPECT_EQ(body.at("model"), "gpt-4.1");
  ASSERT_EQ(body.at("messages").size(), 2u);
  EXPECT_EQ(body["messages"][0], (json{{"role", "system"}, {"content", sample_request().system}}));
  EXPECT_EQ(body["messages"][1], (json{{"role", "user"}, {"content", sample_request().prompt}}));
  EXPECT_EQ(body.at("temperature"), 0.15);
  EXPECT_EQ(body.at("max_completion_tokens"), 8192);
  EXPECT_FALSE(body.contains("max_tokens")) << "deprecated on OpenAI";
  EXPECT_EQ(body.at("seed"), 7);
  const json& format = body.at("response_format");
  EXPECT_EQ(format.at("type"), "json_schema");
  EXPECT_EQ(format.at("json_schema").at("name"), "optimas_reply");
  EXPECT_EQ(format.at("json_schema").at("schema"), k_schema);
  EXPECT_EQ(format.at("json_schema").at("strict"), true);
}

TEST_F(OpenAi, ReasoningModelsAreSentNoTemperature) {
  m_api.reply_with(openai_like(k_json_answer));
  auto backend = make_openai(openai_config(m_api, "gpt-5"));
  ASSERT_TRUE(ok(m_calls.call(*backend, sample_request())));
  EXPECT_FALSE(m_api.last().body.contains("temperature")) << "gpt-5 answers HTTP 400 to temperature 0.15";
  EXPECT_EQ(m_api.last().body.at("max_completion_tokens"), 8192);
}

TEST_F(OpenAi, WithoutASchemaTheAnswerIsPlainText) {
  m_api.reply_with(openai_like("Use shared memory for the halo."));
  auto backend = make_openai(openai_config(m_api));
  Request request = sample_request();
  request.response_schema = nullptr;
  request.seed.reset();
  Result r = m_calls.call(*backend, request);
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  EXPECT_EQ(response_of(r).text, "Use shared memory for the halo.");
  EXPECT_FALSE(m_api.last().body.contains("response_format"));
  EXPECT_FALSE(m_api.last().body.contains("seed"));
}

TEST_F(OpenAi, AMissingKeyIsAnAuthFailureNamingTheVariable) {
  ScopedEnv no_key("OPENAI_API_KEY", nullptr);
  auto backend = make_openai(openai_config(m_api));
  Result r = m_calls.call(*backend, sample_request(), 5);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::auth);
  EXPECT_NE(failure_of(r).message.find("OPENAI_API_KEY"), std::string::npos) << failure_of(r).message;
  EXPECT_EQ(m_api.requests(), 0) << "no request without a key";
}

TEST_F(OpenAi, ARejectedKeyIsAnAuthFailureThatIsNotRetriedAndNeverShown) {
  ScopedEnv wrong_key("OPENAI_API_KEY", "sk-test-WRONG-654321");
  m_api.reply_with(openai_like(k_json_answer)); // echoes the key it got, as the real API does in part
  auto backend = make_openai(openai_config(m_api));
  Result r = m_calls.call(*backend, sample_request(), 5);
  ASSERT_FALSE(ok(r));
  const Failure& f = failure_of(r);
  EXPECT_EQ(f.kind, FailureKind::auth);
  EXPECT_EQ(f.http_status, 401);
  EXPECT_EQ(m_api.requests(), 1);
  EXPECT_TRUE(m_calls.waits.empty());
  EXPECT_NE(f.message.find("Incorrect API key provided"), std::string::npos) << f.message;
  EXPECT_EQ(f.message.find("sk-test-WRONG-654321"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("[REDACTED]"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("check that OPENAI_API_KEY"), std::string::npos) << f.message;
}

TEST_F(OpenAi, RateLimitsWaitForRetryAfterThenSucceed) {
  int calls = 0;
  m_api.reply_with([&calls](const httplib::Request& req, httplib::Response& res) {
    if (++calls <= 2) {
      FakeApi::json_reply(429,
                          {{"error",
                            {{"message", "Rate limit reached for gpt-4.1 on tokens per min (TPM): Limit 30000"},
                             {"type", "tokens"},
                             {"code", "rate_limit_exceeded"}}}},
                          {{"Retry-After", "3"}})(req, res);
      return;
    }
    openai_like(k_json_answer)(req, res);
  });
  auto backend = make_openai(openai_config(m_api));
  Result r = m_calls.call(*backend, sample_request(), 5);
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  EXPECT_EQ(response_of(r).attempts, 3);
  EXPECT_EQ(m_api.requests(), 3);
  EXPECT_EQ(m_calls.waits, (std::vector<double>{3, 3}));
}

TEST_F(OpenAi, ServerErrorsAreRetriedThenReported) {
  m_api.reply_with(FakeApi::json_reply(
      500,
      {{"error", {{"message", "The server had an error while processing your request."}, {"type", "server_error"}}}}));
  auto backend = make_openai(openai_config(m_api));
  Result r = m_calls.call(*backend, sample_request(), 3);
  ASSERT_FALSE(ok(r));
  const Failure& f = failure_of(r);
  EXPECT_EQ(f.kind, FailureKind::server);
  EXPECT_EQ(f.http_status, 500);
  EXPECT_EQ(m_api.requests(), 3);
  EXPECT_EQ(m_calls.waits.size(), 2u);
  EXPECT_TRUE(f.message.starts_with("openai/gpt-4.1: HTTP 500 from POST " + m_api.url() + "/v1/chat/completions"))
      << f.message;
  EXPECT_NE(f.message.find("The server had an error"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("gave up after 3 attempts"), std::string::npos) << f.message;
}

TEST_F(OpenAi, AStalledConnectionTimesOutAndIsRetried) {
  m_api.reply_with(m_api.stalled());
  auto backend = make_openai(openai_config(m_api));
  Request request = sample_request();
  request.timeout_s = 0.5;
  Result r = m_calls.call(*backend, request, 2);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::timeout);
  EXPECT_EQ(m_api.requests(), 2);
  EXPECT_EQ(m_calls.waits.size(), 1u);
  EXPECT_NE(failure_of(r).message.find("0.5 s"), std::string::npos) << failure_of(r).message;
}

TEST_F(OpenAi, ATruncatedBodyIsAServerFailure) {
  m_api.reply_with(FakeApi::truncated(openai_answer(k_json_answer)));
  auto backend = make_openai(openai_config(m_api));
  Result r = m_calls.call(*backend, sample_request(), 2);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::server);
  EXPECT_EQ(m_api.requests(), 2) << "retried";
}

TEST_F(OpenAi, ABodyThatIsNotJsonIsAServerFailure) {
  m_api.reply_with(
      FakeApi::text_reply(200, R"({"id":"chatcmpl-1","choices":[{"message":{"content":"{\"ker)", "application/json"));
  auto backend = make_openai(openai_config(m_api));
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::server);
  EXPECT_NE(failure_of(r).message.find("not JSON"), std::string::npos) << failure_of(r).message;
}

TEST_F(OpenAi, AnHtmlErrorPageIsAServerFailure) {
  m_api.reply_with(FakeApi::text_reply(502, "<html><head><title>502 Bad Gateway</title></head></html>", "text/html"));
  auto backend = make_openai(openai_config(m_api));
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::server);
  EXPECT_NE(failure_of(r).message.find("502 Bad Gateway"), std::string::npos) << failure_of(r).message;
}

TEST_F(OpenAi, AnAnswerThatIsNotJsonViolatesTheSchema) {
  m_api.reply_with(openai_like("Sure! The kernel is stencil3d and it could be 1.8x faster."));
  auto backend = make_openai(openai_config(m_api));
  Result r = m_calls.call(*backend, sample_request(), 5);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::schema_violation);
  EXPECT_EQ(m_api.requests(), 1) << "not retried";
  EXPECT_NE(failure_of(r).message.find("Sure! The kernel"), std::string::npos) << failure_of(r).message;
}

TEST_F(OpenAi, ARefusalViolatesTheSchema) {
  json answer = openai_answer("");
  answer["choices"][0]["message"]["content"] = nullptr;
  answer["choices"][0]["message"]["refusal"] = "I'm sorry, I cannot help with that request.";
  m_api.reply_with(FakeApi::json_reply(200, answer));
  auto backend = make_openai(openai_config(m_api));
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::schema_violation);
  EXPECT_NE(failure_of(r).message.find("refused"), std::string::npos) << failure_of(r).message;
  EXPECT_NE(failure_of(r).message.find("I cannot help"), std::string::npos) << failure_of(r).message;
}

TEST_F(OpenAi, AnAnswerCutAtMaxTokensViolatesTheSchema) {
  m_api.reply_with(FakeApi::json_reply(200, openai_answer(R"({"kernel":"sten)", "length")));
  auto backend = make_openai(openai_config(m_api));
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::schema_violation);
  EXPECT_NE(failure_of(r).message.find("max_tokens (8192)"), std::string::npos) << failure_of(r).message;
}

TEST_F(OpenAi, AnUnknownModelIsABadRequest) {
  m_api.reply_with(
      FakeApi::json_reply(404, {{"error",
                                 {{"message", "The model `gpt-99` does not exist or you do not have access to it."},
                                  {"type", "invalid_request_error"},
                                  {"code", "model_not_found"}}}}));
  auto backend = make_openai(openai_config(m_api, "gpt-99"));
  Result r = m_calls.call(*backend, sample_request(), 5);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::bad_request);
  EXPECT_EQ(m_api.requests(), 1);
  EXPECT_NE(failure_of(r).message.find("gpt-99` does not exist"), std::string::npos) << failure_of(r).message;
  EXPECT_NE(failure_of(r).message.find("check the model name"), std::string::npos) << failure_of(r).message;
}

// --- openai-compatible: the same protocol against a server of the user's (vLLM, llama.cpp) ---

namespace {

BackendConfig compatible_config(const FakeApi& api) {
  BackendConfig c;
  c.provider = "openai-compatible";
  c.model = "Qwen/Qwen2.5-Coder-32B-Instruct";
  c.base_url = api.url() + "/v1/";
  return c;
}

} // namespace

TEST_F(OpenAi, CompatibleNeedsABaseUrlAndSaysHowToSetIt) {
  BackendConfig c = compatible_config(m_api);
  c.base_url.clear();
  auto backend = make_openai_compatible(c);
  Result r = m_calls.call(*backend, sample_request(), 5);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::bad_request);
  EXPECT_NE(failure_of(r).message.find("base_url"), std::string::npos) << failure_of(r).message;
  EXPECT_NE(failure_of(r).message.find("http://localhost:8000/v1"), std::string::npos) << failure_of(r).message;
  EXPECT_EQ(m_api.requests(), 0);
}

TEST_F(OpenAi, CompatibleWorksWithoutAKey) {
  ScopedEnv no_key("OPENAI_API_KEY", nullptr);
  m_api.reply_with(openai_like(k_json_answer, true));
  auto backend = make_openai_compatible(compatible_config(m_api));
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  EXPECT_EQ(response_of(r).text, k_json_answer);
  Seen seen = m_api.last();
  EXPECT_EQ(seen.path, "/v1/chat/completions") << "a trailing / on base_url is dropped";
  EXPECT_FALSE(seen.has_header("Authorization"));
  EXPECT_EQ(seen.body.at("model"), "Qwen/Qwen2.5-Coder-32B-Instruct");
  EXPECT_EQ(seen.body.at("temperature"), 0.15);
  EXPECT_EQ(seen.body.at("max_tokens"), 8192) << "the name every compatible server knows";
  EXPECT_EQ(seen.body.at("response_format").at("json_schema").at("schema"), k_schema);
}

TEST_F(OpenAi, CompatibleSendsOnlyTheNamedVariable) {
  m_api.reply_with(openai_like(k_json_answer, true));
  // OPENAI_API_KEY is set (by the fixture) but not named: it must not reach another server.
  auto backend = make_openai_compatible(compatible_config(m_api));
  ASSERT_TRUE(ok(m_calls.call(*backend, sample_request())));
  EXPECT_EQ(m_api.last().header("Authorization"), "");

  ScopedEnv proxy_key("OPTIMAS_TEST_PROXY_KEY", "litellm-test-key-777");
  BackendConfig c = compatible_config(m_api);
  c.base_url.clear();
  c.options["base_url"] = m_api.url() + "/v1";
  c.options["api_key_env"] = "OPTIMAS_TEST_PROXY_KEY";
  auto proxied = make_openai_compatible(c);
  ASSERT_TRUE(ok(m_calls.call(*proxied, sample_request())));
  EXPECT_EQ(m_api.last().header("Authorization"), "Bearer litellm-test-key-777");
}

// The api_key_env variable need not look like a key: naming it makes it one, so a server that
// echoes the Authorization header gets its key replaced in everything the call returns or logs.
TEST_F(OpenAi, ThePlainlyNamedKeyOfAnEchoingServerIsRedacted) {
  ScopedEnv plain("OPTIMAS_TEST_VLLM_ACCESS", "vllm-access-value-31");
  m_api.reply_with([](const httplib::Request& req, httplib::Response& res) {
    const std::string echo = req.get_header_value("Authorization");
    res.set_content(openai_answer(R"({"kernel":")" + echo + R"(","speedup":1.5})").dump(), "application/json");
  });
  BackendConfig c = parse_model("openai-compatible/test");
  c.base_url = m_api.url() + "/v1";
  set_option(c, "api_key_env", "OPTIMAS_TEST_VLLM_ACCESS");
  EXPECT_TRUE(optimas::util::is_secret_variable("OPTIMAS_TEST_VLLM_ACCESS"));
  auto backend = make_backend(c);
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  EXPECT_EQ(m_api.last().header("Authorization"), "Bearer vllm-access-value-31"); // it was sent
  for (const auto& text : m_calls.texts) EXPECT_EQ(text.find("vllm-access-value-31"), std::string::npos) << text;
  EXPECT_NE(response_of(r).text.find("Bearer [REDACTED]"), std::string::npos) << response_of(r).text;
}

TEST_F(OpenAi, CompatibleWithANamedButUnsetVariableIsAnAuthFailure) {
  ScopedEnv unset("OPTIMAS_TEST_UNSET_KEY", nullptr);
  BackendConfig c = compatible_config(m_api);
  c.options["api_key_env"] = "OPTIMAS_TEST_UNSET_KEY";
  auto backend = make_openai_compatible(c);
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::auth);
  EXPECT_NE(failure_of(r).message.find("OPTIMAS_TEST_UNSET_KEY"), std::string::npos) << failure_of(r).message;
  EXPECT_EQ(m_api.requests(), 0);
}

// --- What the API receives: its documented request shape and its Structured Outputs subset ---

namespace {

// A request in the shape the Chat Completions reference and the Structured Outputs guide show
// (https://platform.openai.com/docs/api-reference/chat/create,
// https://platform.openai.com/docs/guides/structured-outputs): system and user messages and a
// strict json_schema response format with a closed schema.
const json k_documented_request = json::parse(R"({
  "model": "gpt-4o-2024-08-06",
  "messages": [
    {"role": "system", "content": "Name the kernel's main stall reason."},
    {"role": "user", "content": "stencil3d: 61% long_scoreboard, 12% math_pipe_throttle"}
  ],
  "response_format": {
    "type": "json_schema",
    "json_schema": {
      "name": "stall_report",
      "strict": true,
      "schema": {
        "type": "object",
        "properties": {
          "kernel": {"type": "string", "description": "The kernel's name"},
          "stall": {"type": "string", "enum": ["long_scoreboard", "math_pipe_throttle", "other"]},
          "share": {"type": ["number", "null"], "minimum": 0, "maximum": 1}
        },
        "required": ["kernel", "stall", "share"],
        "additionalProperties": false
      }
    }
  }
})");

json with_schema(json request, const json& schema) {
  request["response_format"]["json_schema"]["schema"] = schema;
  return request;
}

} // namespace

// The fake is as strict as the API: it takes the documented shape and refuses, with OpenAI's
// status and error body, what the API refuses.
TEST(OpenAiFake, TakesTheDocumentedRequestAndRefusesWhatTheApiRefuses) {
  EXPECT_EQ(refusal(strict_fakes::openai_chat(k_documented_request)), "");

  json unknown = k_documented_request;
  unknown["max_output_tokens"] = 100; // the Responses API's name for it
  auto v = strict_fakes::openai_chat(unknown);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->status, 400);
  EXPECT_EQ(v->body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(refusal(v), "Unrecognized request argument supplied: max_output_tokens");

  json schema = k_documented_request["response_format"]["json_schema"]["schema"];
  json dollar = schema;
  dollar["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  EXPECT_EQ(refusal(strict_fakes::openai_chat(with_schema(k_documented_request, dollar))),
            "Invalid schema for response_format 'stall_report': In context=(), '$schema' is not permitted.");
  json open = schema;
  open.erase("additionalProperties");
  EXPECT_NE(refusal(strict_fakes::openai_chat(with_schema(k_documented_request, open)))
                .find("'additionalProperties' is required to be supplied and to be false"),
            std::string::npos);
  json optional = schema;
  optional["required"] = {"kernel", "stall"};
  EXPECT_NE(refusal(strict_fakes::openai_chat(with_schema(k_documented_request, optional))).find("Missing 'share'"),
            std::string::npos);
  json nested = schema;
  nested["properties"]["kernel"]["minLength"] = 1;
  EXPECT_EQ(refusal(strict_fakes::openai_chat(with_schema(k_documented_request, nested))),
            "Invalid schema for response_format 'stall_report': In context=('properties', 'kernel'), 'minLength' is "
            "not permitted.");
  json not_strict = with_schema(k_documented_request, open);
  not_strict["response_format"]["json_schema"]["strict"] = false;
  EXPECT_EQ(refusal(strict_fakes::openai_chat(not_strict)), "") << "without strict mode any schema goes";

  json reasoning = k_documented_request;
  reasoning["model"] = "gpt-5";
  reasoning["temperature"] = 0.15;
  EXPECT_NE(refusal(strict_fakes::openai_chat(reasoning)).find("'temperature' does not support 0.15"),
            std::string::npos);
}

// What OpenAI receives for the reply schema. Its Structured Outputs subset
// (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas) has descriptions
// and minimum but not $schema, $id or title; the reply schema is closed, so strict mode holds.
TEST_F(OpenAi, TheReplySchemaGoesOutInTheStructuredOutputsSubset) {
  m_api.reply_with(openai_like(k_reply_answer));
  Request request = sample_request();
  request.response_schema = optimas::prompt::reply_schema();
  Result r = m_calls.call(*make_openai(openai_config(m_api)), request);
  ASSERT_TRUE(ok(r)) << failure_of(r).message; // the strict fake took it

  json expected = optimas::prompt::reply_schema();
  for (const char* k : {"$schema", "$id", "title"}) expected.erase(k);
  const json sent = m_api.last().body.at("response_format").at("json_schema");
  EXPECT_EQ(sent.at("schema"), expected);
  EXPECT_EQ(sent.at("strict"), true);
  EXPECT_EQ(sent["schema"]["properties"]["edits"]["items"]["properties"]["line_start"]["minimum"], 1);
  EXPECT_FALSE(sent["schema"]["properties"]["summary"]["description"].get<std::string>().empty());
}

TEST_F(OpenAi, AForbiddenKeywordIsStrippedBeforeSending) {
  Request request = sample_request();
  request.response_schema = k_loaded_schema;
  // As written, the API would refuse the schema.
  EXPECT_NE(refusal(strict_fakes::openai_chat(with_schema(k_documented_request, k_loaded_schema))), "");

  m_api.reply_with(openai_like(R"({"kernel":"stencil3d","format":"csv","title":"halo"})"));
  Result r = m_calls.call(*make_openai(openai_config(m_api)), request);
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  const json sent = m_api.last().body["response_format"]["json_schema"];
  EXPECT_EQ(sent["schema"], json::parse(R"({
    "type": "object",
    "properties": {
      "kernel": {"type": "string"},
      "format": {"type": "string"},
      "title": {"type": "string", "pattern": "^[a-z]+$"}
    },
    "required": ["kernel", "format", "title"],
    "additionalProperties": false
  })"))
      << "only keywords go; properties called format and title stay, and pattern is in the subset";
  EXPECT_EQ(sent["strict"], true);
}

TEST_F(OpenAi, AnOpenSchemaGoesOutWithStrictFalseAndAWarning) {
  m_api.reply_with(openai_like(k_json_answer));
  Request request = sample_request();
  request.response_schema["required"] = {"kernel"}; // speedup optional: strict mode cannot hold
  Result r = m_calls.call(*make_openai(openai_config(m_api, "gpt-4.1-mini")), request);
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  const json sent = m_api.last().body["response_format"]["json_schema"];
  EXPECT_EQ(sent["strict"], false);
  EXPECT_EQ(sent["schema"], request.response_schema);
  const std::string& log = m_calls.texts.at(0);
  EXPECT_NE(log.find("strict: false"), std::string::npos) << log;
  EXPECT_NE(log.find("does not list its property \"speedup\" in \"required\""), std::string::npos) << log;
  // In strict mode the API would have refused it.
  json strict = with_schema(k_documented_request, request.response_schema);
  EXPECT_NE(refusal(strict_fakes::openai_chat(strict)).find("Missing 'speedup'"), std::string::npos);
}

TEST_F(OpenAi, FineTunedModelsGetTheirNarrowerSubset) {
  const std::string model = "ft:gpt-4o-mini-2024-07-18:optimas::B9x2kQ";
  EXPECT_EQ(openai_schema_dialect(model).name, "openai-strict-fine-tuned");
  m_api.reply_with(openai_like(k_reply_answer));
  Request request = sample_request();
  request.response_schema = optimas::prompt::reply_schema();
  Result r = m_calls.call(*make_openai(openai_config(m_api, model)), request);
  ASSERT_TRUE(ok(r)) << failure_of(r).message; // the fake applies the fine-tuned rules
  const json sent = m_api.last().body["response_format"]["json_schema"];
  EXPECT_FALSE(sent["schema"]["properties"]["edits"]["items"]["properties"]["line_start"].contains("minimum"));
  EXPECT_EQ(sent["strict"], true);
}

TEST_F(OpenAi, CompatibleServersGetTheStructuralCore) {
  m_api.reply_with(openai_like(k_reply_answer, true));
  Request request = sample_request();
  request.response_schema = optimas::prompt::reply_schema();
  Result r = m_calls.call(*make_openai_compatible(compatible_config(m_api)), request);
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  json expected = optimas::prompt::reply_schema();
  for (const char* k : {"$schema", "$id", "title"}) expected.erase(k);
  for (const char* k : {"line_start", "line_end"})
    expected["properties"]["edits"]["items"]["properties"][k].erase("minimum");
  const json sent = m_api.last().body["response_format"]["json_schema"];
  EXPECT_EQ(sent["schema"], expected);
  EXPECT_EQ(sent["strict"], true);

  request.response_schema = k_loaded_schema;
  m_api.reply_with(openai_like(R"({"kernel":"k","format":"csv","title":"t"})", true));
  ASSERT_TRUE(ok(m_calls.call(*make_openai_compatible(compatible_config(m_api)), request)));
  EXPECT_FALSE(
      m_api.last().body["response_format"]["json_schema"]["schema"]["properties"]["title"].contains("pattern"));
}
