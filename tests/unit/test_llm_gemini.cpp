// Tests of llm/gemini: the gemini backend against a local stand-in for generateContent.
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

// What generativelanguage.googleapis.com answers to generateContent.
json gemini_answer(json parts, const std::string& finish = "STOP") {
  return {
      {"candidates", {{{"content", {{"parts", parts}, {"role", "model"}}}, {"finishReason", finish}, {"index", 0}}}},
      {"usageMetadata",
       {{"promptTokenCount", 1203},
        {"candidatesTokenCount", 38},
        {"totalTokenCount", 1668},
        {"thoughtsTokenCount", 427},
        {"promptTokensDetails", {{{"modality", "TEXT"}, {"tokenCount", 1203}}}}}},
      {"modelVersion", "gemini-2.5-pro"},
      {"responseId", "dXJvc2VfcmVzcG9uc2VfaWQ"}};
}
json text_parts(const std::string& text) {
  return json::array({{{"text", text}}});
}

// The API as the fake plays it: the x-goog-api-key header (a wrong key is a 400
// INVALID_ARGUMENT with reason API_KEY_INVALID), then the API's own request checks
// (strict_fakes.hpp), then the answer.
FakeApi::Reply gemini_like(json answer, strict_fakes::Extra extra = {}) {
  FakeApi::Reply checked =
      FakeApi::checked([extra](const json& body) { return strict_fakes::gemini_generate_content(body, extra); },
                       FakeApi::json_reply(200, answer));
  return [checked](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("x-goog-api-key") != k_key) {
      res.status = 400;
      res.set_content(
          R"({"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}})",
          "application/json");
      return;
    }
    checked(req, res);
  };
}

class Gemini : public testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(m_api.running());
    m_config.provider = "gemini";
    m_config.model = "gemini-2.5-pro";
    m_config.base_url = m_api.url() + "/v1beta";
  }
  void TearDown() override { m_calls.expect_no_key(); }

  ScopedEnv m_google{"GOOGLE_API_KEY", nullptr};
  ScopedEnv m_key{"GEMINI_API_KEY", k_key};
  FakeApi m_api{"/v1beta/models/gemini-2.5-pro:generateContent"};
  BackendConfig m_config;
  CallRecorder m_calls;
};

} // namespace

TEST_F(Gemini, SendsGenerateContentAndReadsTheAnswer) {
  m_api.reply_with(gemini_like(gemini_answer(text_parts(k_json_answer))));
  auto backend = make_gemini(m_config);
  EXPECT_EQ(backend->name(), "gemini/gemini-2.5-pro");
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  const Response& answer = response_of(r);
  EXPECT_EQ(answer.text, k_json_answer);
  EXPECT_EQ(answer.model, "gemini-2.5-pro");
  EXPECT_EQ(answer.usage.input_tokens, 1203u);
  EXPECT_EQ(answer.usage.output_tokens, 38u + 427u) << "thinking tokens are billed as output";
  EXPECT_NE(answer.raw.find("dXJvc2VfcmVzcG9uc2VfaWQ"), std::string::npos);

  Seen seen = m_api.last();
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.path, "/v1beta/models/gemini-2.5-pro:generateContent");
  EXPECT_EQ(seen.header("x-goog-api-key"), k_key);
  EXPECT_FALSE(seen.has_header("Authorization"));
  const json& body = seen.body;
  ASSERT_FALSE(body.is_discarded());
  EXPECT_EQ(body.at("systemInstruction"), (json{{"parts", {{{"text", sample_request().system}}}}}));
  EXPECT_EQ(body.at("contents"), (json::array({{{"role", "user"}, {"parts", {{{"text", sample_request().prompt}}}}}})));
  const json& config = body.at("generationConfig");
  EXPECT_EQ(config.at("temperature"), 0.15);
  EXPECT_EQ(config.at("maxOutputTokens"), 8192);
  EXPECT_EQ(config.at("seed"), 7);
  EXPECT_EQ(config.at("responseMimeType"), "application/json");
  EXPECT_EQ(config.at("responseJsonSchema"), k_schema);
  EXPECT_FALSE(config.contains("responseSchema")) << "the two schema fields exclude each other";
}

TEST_F(Gemini, GoogleApiKeyIsTheFallbackAndModelsPrefixIsAccepted) {
  ScopedEnv no_gemini("GEMINI_API_KEY", nullptr);
  ScopedEnv google("GOOGLE_API_KEY", k_key);
  m_api.reply_with(gemini_like(gemini_answer(text_parts(k_json_answer))));
  m_config.model = "models/gemini-2.5-pro";
  auto backend = make_gemini(m_config);
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  EXPECT_EQ(m_api.last().header("x-goog-api-key"), k_key);
}

TEST_F(Gemini, ThoughtPartsAreNotPartOfTheAnswerAndPartsJoin) {
  json parts = json::array({{{"text", "Let me think about the halo loads"}, {"thought", true}},
                            {{"text", R"({"kernel":"stencil3d",)"}},
                            {{"text", R"("speedup":1.8})"}}});
  m_api.reply_with(gemini_like(gemini_answer(parts)));
  auto backend = make_gemini(m_config);
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  EXPECT_EQ(response_of(r).text, k_json_answer);
}

TEST_F(Gemini, WithoutASchemaTheAnswerIsPlainText) {
  m_api.reply_with(gemini_like(gemini_answer(text_parts("Tile the halo into shared memory."))));
  auto backend = make_gemini(m_config);
  Request request = sample_request();
  request.response_schema = nullptr;
  Result r = m_calls.call(*backend, request);
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  EXPECT_EQ(response_of(r).text, "Tile the halo into shared memory.");
  EXPECT_FALSE(m_api.last().body.at("generationConfig").contains("responseMimeType"));
  EXPECT_FALSE(m_api.last().body.at("generationConfig").contains("responseJsonSchema"));
}

TEST_F(Gemini, AMissingKeyNamesBothVariables) {
  ScopedEnv no_key("GEMINI_API_KEY", nullptr);
  auto backend = make_gemini(m_config);
  Result r = m_calls.call(*backend, sample_request(), 5);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::auth);
  EXPECT_NE(failure_of(r).message.find("GEMINI_API_KEY or GOOGLE_API_KEY"), std::string::npos) << failure_of(r).message;
  EXPECT_EQ(m_api.requests(), 0);
}

TEST_F(Gemini, AForbiddenKeyIsAnAuthFailure) {
  m_api.reply_with(FakeApi::json_reply(
      403, {{"error",
             {{"code", 403},
              {"message", "Method doesn't allow unregistered callers (callers without established identity)."},
              {"status", "PERMISSION_DENIED"}}}}));
  auto backend = make_gemini(m_config);
  Result r = m_calls.call(*backend, sample_request(), 5);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::auth);
  EXPECT_EQ(m_api.requests(), 1);
  EXPECT_NE(failure_of(r).message.find("GEMINI_API_KEY or GOOGLE_API_KEY"), std::string::npos) << failure_of(r).message;
}

TEST_F(Gemini, AKeyEchoedByAProxyIsRedacted) {
  // A misconfigured gateway that reflects the request headers in its error page.
  m_api.reply_with([](const httplib::Request& req, httplib::Response& res) {
    res.status = 502;
    res.set_content("<html>upstream failed for x-goog-api-key " + req.get_header_value("x-goog-api-key") + "</html>",
                    "text/html");
  });
  auto backend = make_gemini(m_config);
  Result r = m_calls.call(*backend, sample_request(), 2);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::server);
  EXPECT_NE(failure_of(r).message.find("x-goog-api-key [REDACTED]"), std::string::npos) << failure_of(r).message;
}

TEST_F(Gemini, ResourceExhaustedWaitsForRetryAfter) {
  int calls = 0;
  m_api.reply_with([&calls](const httplib::Request& req, httplib::Response& res) {
    if (++calls == 1) {
      FakeApi::json_reply(
          429,
          {{"error",
            {{"code", 429},
             {"message", "You exceeded your current quota, please check your plan and billing details."},
             {"status", "RESOURCE_EXHAUSTED"}}}},
          {{"Retry-After", "20"}})(req, res);
      return;
    }
    gemini_like(gemini_answer(text_parts(k_json_answer)))(req, res);
  });
  auto backend = make_gemini(m_config);
  Result r = m_calls.call(*backend, sample_request(), 5);
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  EXPECT_EQ(response_of(r).attempts, 2);
  EXPECT_EQ(m_calls.waits, (std::vector<double>{20}));
}

TEST_F(Gemini, ServerErrorsAreRetried) {
  m_api.reply_with(FakeApi::json_reply(
      503,
      {{"error",
        {{"code", 503}, {"message", "The model is overloaded. Please try again later."}, {"status", "UNAVAILABLE"}}}}));
  auto backend = make_gemini(m_config);
  Result r = m_calls.call(*backend, sample_request(), 4);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::server);
  EXPECT_EQ(m_api.requests(), 4);
  EXPECT_NE(failure_of(r).message.find("The model is overloaded"), std::string::npos) << failure_of(r).message;
  EXPECT_NE(failure_of(r).message.find("gave up after 4 attempts"), std::string::npos) << failure_of(r).message;
}

TEST_F(Gemini, AStalledConnectionTimesOut) {
  m_api.reply_with(m_api.stalled());
  auto backend = make_gemini(m_config);
  Request request = sample_request();
  request.timeout_s = 0.5;
  Result r = m_calls.call(*backend, request);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::timeout);
}

TEST_F(Gemini, ATruncatedBodyIsAServerFailure) {
  m_api.reply_with(FakeApi::truncated(gemini_answer(text_parts(k_json_answer))));
  auto backend = make_gemini(m_config);
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::server);
}

TEST_F(Gemini, ABodyThatIsNotJsonIsAServerFailure) {
  m_api.reply_with(FakeApi::text_reply(200, "{\"candidates\": [{\"content\": ", "application/json"));
  auto backend = make_gemini(m_config);
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::server);
}

TEST_F(Gemini, SafetyAndMaxTokensStopsViolateTheSchema) {
  auto backend = make_gemini(m_config);
  m_api.reply_with(gemini_like(gemini_answer(text_parts(R"({"kernel":"st)"), "MAX_TOKENS")));
  Result cut = m_calls.call(*backend, sample_request(), 5);
  ASSERT_FALSE(ok(cut));
  EXPECT_EQ(failure_of(cut).kind, FailureKind::schema_violation);
  EXPECT_NE(failure_of(cut).message.find("maxOutputTokens (8192"), std::string::npos) << failure_of(cut).message;

  json blocked = gemini_answer(json::array(), "SAFETY");
  blocked["candidates"][0].erase("content");
  m_api.reply_with(gemini_like(blocked));
  Result safety = m_calls.call(*backend, sample_request(), 5);
  ASSERT_FALSE(ok(safety));
  EXPECT_EQ(failure_of(safety).kind, FailureKind::schema_violation);
  EXPECT_NE(failure_of(safety).message.find("SAFETY"), std::string::npos) << failure_of(safety).message;
  EXPECT_EQ(m_api.requests(), 2) << "neither is retried";
}

TEST_F(Gemini, ABlockedPromptViolatesTheSchema) {
  m_api.reply_with(gemini_like({{"promptFeedback", {{"blockReason", "PROHIBITED_CONTENT"}}},
                                {"usageMetadata", {{"promptTokenCount", 12}, {"totalTokenCount", 12}}}}));
  auto backend = make_gemini(m_config);
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::schema_violation);
  EXPECT_NE(failure_of(r).message.find("PROHIBITED_CONTENT"), std::string::npos) << failure_of(r).message;
}

TEST_F(Gemini, AnAnswerThatIsNotJsonViolatesTheSchema) {
  m_api.reply_with(gemini_like(gemini_answer(text_parts("```json\n{\"kernel\": \"stencil3d\"\n```"))));
  auto backend = make_gemini(m_config);
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::schema_violation);
  EXPECT_NE(failure_of(r).message.find("not a JSON document"), std::string::npos) << failure_of(r).message;
}

TEST_F(Gemini, AWrongKeyIsAnAuthFailureThoughGeminiSays400) {
  ScopedEnv wrong("GEMINI_API_KEY", "AIzaSy-test-WRONG-000000");
  m_api.reply_with(gemini_like(gemini_answer(text_parts(k_json_answer))));
  Result r = m_calls.call(*make_gemini(m_config), sample_request(), 5);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::auth);
  EXPECT_EQ(failure_of(r).http_status, 400);
  EXPECT_EQ(m_api.requests(), 1) << "not retried";
  EXPECT_NE(failure_of(r).message.find("API key not valid"), std::string::npos) << failure_of(r).message;
  EXPECT_NE(failure_of(r).message.find("GEMINI_API_KEY or GOOGLE_API_KEY"), std::string::npos) << failure_of(r).message;
}

// --- What the API receives: its documented request shape and its JSON Schema subset ---

namespace {

// A request in the shape of the generateContent reference and the structured-output guide
// (https://ai.google.dev/api/generate-content,
// https://ai.google.dev/gemini-api/docs/structured-output): contents with parts, a system
// instruction, and a generationConfig asking for JSON with responseJsonSchema.
const json k_documented_request = json::parse(R"({
  "systemInstruction": {"parts": [{"text": "Name the kernel's main stall reason."}]},
  "contents": [{"role": "user", "parts": [{"text": "stencil3d: 61% long_scoreboard, 12% math_pipe_throttle"}]}],
  "generationConfig": {
    "temperature": 0.2,
    "maxOutputTokens": 256,
    "responseMimeType": "application/json",
    "responseJsonSchema": {
      "type": "object",
      "title": "stall report",
      "properties": {
        "kernel": {"type": "string", "description": "The kernel's name"},
        "stall": {"type": "string", "enum": ["long_scoreboard", "math_pipe_throttle", "other"]},
        "share": {"type": ["number", "null"], "minimum": 0, "maximum": 1}
      },
      "required": ["kernel", "stall"]
    }
  }
})");

json with_schema(json request, const json& schema) {
  request["generationConfig"]["responseJsonSchema"] = schema;
  return request;
}

} // namespace

TEST(GeminiFake, TakesTheDocumentedRequestAndRefusesWhatTheApiRefuses) {
  EXPECT_EQ(refusal(strict_fakes::gemini_generate_content(k_documented_request)), "");

  json unknown = k_documented_request;
  unknown["generation_config"] = unknown["generationConfig"]; // proto JSON takes the snake_case name too...
  unknown.erase("generationConfig");
  EXPECT_EQ(refusal(strict_fakes::gemini_generate_content(unknown)), "");
  unknown["response_format"] = {{"type", "json_object"}}; // ...an OpenAI field is not
  auto v = strict_fakes::gemini_generate_content(unknown);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->status, 400);
  EXPECT_EQ(v->body["error"]["status"], "INVALID_ARGUMENT");
  EXPECT_EQ(refusal(v), "Invalid JSON payload received. Unknown name \"response_format\": Cannot find field.");

  json misplaced = k_documented_request;
  misplaced["generationConfig"]["max_tokens"] = 256;
  EXPECT_EQ(refusal(strict_fakes::gemini_generate_content(misplaced)),
            "Invalid JSON payload received. Unknown name \"max_tokens\" at 'generation_config': Cannot find field.");

  json schema = k_documented_request["generationConfig"]["responseJsonSchema"];
  json dollar = schema;
  dollar["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  EXPECT_EQ(refusal(strict_fakes::gemini_generate_content(with_schema(k_documented_request, dollar))),
            "Invalid JSON payload received. Unknown name \"$schema\" at 'generation_config.response_json_schema': "
            "Cannot find field.");
  json both = k_documented_request;
  both["generationConfig"]["responseSchema"] = {{"type", "OBJECT"}};
  EXPECT_NE(refusal(strict_fakes::gemini_generate_content(both)).find("cannot both be set"), std::string::npos);
}

// What Gemini receives for the reply schema. responseJsonSchema's subset
// (https://ai.google.dev/gemini-api/docs/structured-output#json-schema, "JSON Schema support")
// has title, description, minimum and additionalProperties, but not $schema or $id.
TEST_F(Gemini, TheReplySchemaGoesOutInTheResponseJsonSchemaSubset) {
  m_api.reply_with(gemini_like(gemini_answer(text_parts(k_reply_answer))));
  Request request = sample_request();
  request.response_schema = optimas::prompt::reply_schema();
  Result r = m_calls.call(*make_gemini(m_config), request);
  ASSERT_TRUE(ok(r)) << failure_of(r).message; // the strict fake took it

  json expected = optimas::prompt::reply_schema();
  for (const char* k : {"$schema", "$id"}) expected.erase(k);
  const json config = m_api.last().body.at("generationConfig");
  EXPECT_EQ(config.at("responseJsonSchema"), expected);
  EXPECT_EQ(config.at("responseJsonSchema").at("title"), "optimas reply");
  EXPECT_FALSE(config.contains("responseSchema"));
}

TEST_F(Gemini, AForbiddenKeywordIsStrippedBeforeSending) {
  // As written, the API would refuse the schema.
  EXPECT_NE(refusal(strict_fakes::gemini_generate_content(with_schema(k_documented_request, k_loaded_schema))), "");

  m_api.reply_with(gemini_like(gemini_answer(text_parts(R"({"kernel":"k","format":"csv","title":"t"})"))));
  Request request = sample_request();
  request.response_schema = k_loaded_schema;
  Result r = m_calls.call(*make_gemini(m_config), request);
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  EXPECT_EQ(m_api.last().body["generationConfig"]["responseJsonSchema"], json::parse(R"({
    "title": "loaded",
    "type": "object",
    "properties": {
      "kernel": {"type": "string"},
      "format": {"type": "string", "title": "a property called format"},
      "title": {"type": "string"}
    },
    "required": ["kernel", "format", "title"],
    "additionalProperties": false
  })"))
      << "titles are in Gemini's subset; identifiers, string constraints, a format it does not list, examples "
         "and defaults are not";
}
