// Tests of llm/ollama: the ollama backend against a local stand-in for /api/chat.
#include "llm/backend.hpp"
#include "llm/retry.hpp"
#include "prompt/reply.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

// What Ollama answers to /api/chat with stream: false.
json ollama_answer(const std::string& content, const std::string& done_reason = "stop") {
  return {{"model", "qwen2.5-coder:32b"},
          {"created_at", "2025-09-30T12:04:11.52331Z"},
          {"message", {{"role", "assistant"}, {"content", content}}},
          {"done_reason", done_reason},
          {"done", true},
          {"total_duration", 5191566416},
          {"load_duration", 2154458},
          {"prompt_eval_count", 312},
          {"prompt_eval_duration", 383809000},
          {"eval_count", 29},
          {"eval_duration", 4799921000}};
}

// Ollama as the fake plays it: the request checks (strict_fakes.hpp, stricter than Ollama about
// unknown fields), then one JSON object for stream: false, else a stream of lines.
FakeApi::Reply ollama_like(json answer, strict_fakes::Extra extra = {}) {
  return FakeApi::checked([extra](const json& body) { return strict_fakes::ollama_chat(body, extra); },
                          [answer](const httplib::Request& req, httplib::Response& res) {
                            json body = json::parse(req.body, nullptr, false);
                            if (body.value("stream", true)) {
                              res.set_content(answer.dump() + "\n" + answer.dump() + "\n", "application/x-ndjson");
                              return;
                            }
                            res.set_content(answer.dump(), "application/json");
                          });
}

class Ollama : public testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(m_api.running());
    m_config.provider = "ollama";
    m_config.model = "qwen2.5-coder:32b";
  }
  void TearDown() override { m_calls.expect_no_key(); }

  // A key in the environment must not leak through the keyless backend either.
  ScopedEnv m_key{"OLLAMA_API_KEY", k_key};
  ScopedEnv m_host{"OLLAMA_HOST", nullptr};
  FakeApi m_api{"/api/chat"};
  BackendConfig m_config;
  CallRecorder m_calls;
};

} // namespace

TEST_F(Ollama, SendsApiChatAndReadsTheAnswer) {
  m_api.reply_with(ollama_like(ollama_answer(k_json_answer)));
  m_config.base_url = m_api.url();
  auto backend = make_ollama(m_config);
  EXPECT_EQ(backend->name(), "ollama/qwen2.5-coder:32b");
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  const Response& answer = response_of(r);
  EXPECT_EQ(answer.text, k_json_answer);
  EXPECT_EQ(answer.model, "qwen2.5-coder:32b");
  EXPECT_EQ(answer.usage.input_tokens, 312u);
  EXPECT_EQ(answer.usage.output_tokens, 29u);
  EXPECT_NE(answer.raw.find("2025-09-30T12:04:11.52331Z"), std::string::npos);

  Seen seen = m_api.last();
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.path, "/api/chat");
  EXPECT_FALSE(seen.has_header("Authorization"));
  const json& body = seen.body;
  ASSERT_FALSE(body.is_discarded());
  EXPECT_EQ(body.at("model"), "qwen2.5-coder:32b");
  EXPECT_EQ(body.at("stream"), false);
  EXPECT_EQ(body.at("messages"), (json::array({{{"role", "system"}, {"content", sample_request().system}},
                                               {{"role", "user"}, {"content", sample_request().prompt}}})));
  EXPECT_EQ(body.at("format"), k_schema);
  EXPECT_EQ(body.at("options").at("temperature"), 0.15);
  EXPECT_EQ(body.at("options").at("num_predict"), 8192);
  EXPECT_EQ(body.at("options").at("seed"), 7);
}

TEST_F(Ollama, AKeyInTheAnswerIsRedactedFromTheRawBody) {
  m_api.reply_with(ollama_like(ollama_answer(std::string("The environment holds OLLAMA_API_KEY=") + k_key)));
  m_config.base_url = m_api.url();
  Request request = sample_request();
  request.response_schema = nullptr;
  Result r = make_ollama(m_config)->complete(request); // not through m_calls: the answer text holds the key
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  EXPECT_EQ(response_of(r).raw.find(k_key), std::string::npos) << response_of(r).raw;
  EXPECT_NE(response_of(r).raw.find("OLLAMA_API_KEY=[REDACTED]"), std::string::npos) << response_of(r).raw;
}

TEST_F(Ollama, OllamaHostWithoutSchemeIsHonoured) {
  m_api.reply_with(ollama_like(ollama_answer(k_json_answer)));
  std::string host_port = m_api.url().substr(std::string("http://").size()); // "127.0.0.1:PORT"
  ScopedEnv host("OLLAMA_HOST", host_port.c_str());
  auto backend = make_ollama(m_config); // no base_url: OLLAMA_HOST decides
  Result r = m_calls.call(*backend, sample_request());
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  EXPECT_EQ(m_api.requests(), 1);

  ScopedEnv with_scheme("OLLAMA_HOST", (m_api.url() + "/").c_str());
  ASSERT_TRUE(ok(m_calls.call(*make_ollama(m_config), sample_request())));
  EXPECT_EQ(m_api.requests(), 2);
}

TEST_F(Ollama, WithoutASchemaThereIsNoFormat) {
  m_api.reply_with(ollama_like(ollama_answer("Stage the halo in shared memory.")));
  m_config.base_url = m_api.url();
  Request request = sample_request();
  request.response_schema = nullptr;
  Result r = m_calls.call(*make_ollama(m_config), request);
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  EXPECT_EQ(response_of(r).text, "Stage the halo in shared memory.");
  EXPECT_FALSE(m_api.last().body.contains("format"));
}

TEST_F(Ollama, AnUnknownModelSaysToPullIt) {
  m_api.reply_with(
      FakeApi::json_reply(404, {{"error", "model \"qwen2.5-coder:32b\" not found, try pulling it first"}}));
  m_config.base_url = m_api.url();
  Result r = m_calls.call(*make_ollama(m_config), sample_request(), 5);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::bad_request);
  EXPECT_EQ(m_api.requests(), 1);
  EXPECT_NE(failure_of(r).message.find("not found, try pulling it first"), std::string::npos) << failure_of(r).message;
  EXPECT_NE(failure_of(r).message.find("ollama pull qwen2.5-coder:32b"), std::string::npos) << failure_of(r).message;
}

TEST_F(Ollama, AProxyDenyingAccessIsAnAuthFailure) {
  m_api.reply_with(FakeApi::text_reply(401, "Unauthorized", "text/plain"));
  m_config.base_url = m_api.url();
  Result r = m_calls.call(*make_ollama(m_config), sample_request(), 5);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::auth);
  EXPECT_EQ(m_api.requests(), 1);
}

TEST_F(Ollama, RateLimitsFromAProxyWaitForRetryAfter) {
  int calls = 0;
  m_api.reply_with([&calls](const httplib::Request& req, httplib::Response& res) {
    if (++calls == 1) {
      FakeApi::json_reply(429, {{"error", "too many requests"}}, {{"Retry-After", "2"}})(req, res);
      return;
    }
    ollama_like(ollama_answer(k_json_answer))(req, res);
  });
  m_config.base_url = m_api.url();
  Result r = m_calls.call(*make_ollama(m_config), sample_request(), 5);
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  EXPECT_EQ(m_calls.waits, (std::vector<double>{2}));
}

TEST_F(Ollama, ServerErrorsAreRetried) {
  m_api.reply_with(FakeApi::json_reply(500, {{"error", "llama runner process has terminated: signal: killed"}}));
  m_config.base_url = m_api.url();
  Result r = m_calls.call(*make_ollama(m_config), sample_request(), 2);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::server);
  EXPECT_EQ(m_api.requests(), 2);
  EXPECT_NE(failure_of(r).message.find("llama runner process has terminated"), std::string::npos)
      << failure_of(r).message;
}

TEST_F(Ollama, AStalledConnectionTimesOut) {
  m_api.reply_with(m_api.stalled());
  m_config.base_url = m_api.url();
  Request request = sample_request();
  request.timeout_s = 0.5;
  Result r = m_calls.call(*make_ollama(m_config), request);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::timeout);
}

TEST_F(Ollama, ATruncatedBodyIsAServerFailure) {
  m_api.reply_with(FakeApi::truncated(ollama_answer(k_json_answer)));
  m_config.base_url = m_api.url();
  Result r = m_calls.call(*make_ollama(m_config), sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::server);
}

TEST_F(Ollama, ABodyThatIsNotJsonIsAServerFailure) {
  m_api.reply_with(FakeApi::text_reply(200, "{\"model\":\"qwen2.5-coder:32b\",\"message\":{", "application/json"));
  m_config.base_url = m_api.url();
  Result r = m_calls.call(*make_ollama(m_config), sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::server);
}

TEST_F(Ollama, AnAnswerThatIsNotJsonViolatesTheSchema) {
  m_api.reply_with(ollama_like(ollama_answer("I think the kernel is memory bound.")));
  m_config.base_url = m_api.url();
  Result r = m_calls.call(*make_ollama(m_config), sample_request(), 5);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::schema_violation);
  EXPECT_EQ(m_api.requests(), 1);
}

TEST_F(Ollama, AnAnswerCutAtNumPredictViolatesTheSchema) {
  m_api.reply_with(ollama_like(ollama_answer(R"({"kernel":"sten)", "length")));
  m_config.base_url = m_api.url();
  Result r = m_calls.call(*make_ollama(m_config), sample_request());
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::schema_violation);
  EXPECT_NE(failure_of(r).message.find("num_predict (8192)"), std::string::npos) << failure_of(r).message;
}

TEST_F(Ollama, NoServerIsANetworkFailureWithAHint) {
  // A socket bound but not listening: connecting to its port is refused, and nothing else can
  // take the port while the test holds it.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  m_config.base_url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  Result r = m_calls.call(*make_ollama(m_config), sample_request());
  ::close(fd);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(failure_of(r).kind, FailureKind::network);
  EXPECT_NE(failure_of(r).message.find("ollama serve"), std::string::npos) << failure_of(r).message;
}

// --- What Ollama receives: its documented request shape and the format schema ---

namespace {

// A request in the shape of the chat reference and the structured-outputs page
// (https://docs.ollama.com/api/chat, https://docs.ollama.com/capabilities/structured-outputs):
// messages, stream: false, options, and a JSON schema in `format`.
const json k_documented_request = json::parse(R"({
  "model": "qwen2.5-coder:32b",
  "messages": [
    {"role": "system", "content": "Name the kernel's main stall reason."},
    {"role": "user", "content": "stencil3d: 61% long_scoreboard, 12% math_pipe_throttle"}
  ],
  "stream": false,
  "options": {"temperature": 0, "num_predict": 256, "seed": 7},
  "format": {
    "type": "object",
    "properties": {
      "kernel": {"type": "string"},
      "stall": {"type": "string", "enum": ["long_scoreboard", "math_pipe_throttle", "other"]}
    },
    "required": ["kernel", "stall"]
  }
})");

} // namespace

TEST(OllamaFake, TakesTheDocumentedRequestAndRefusesWhatOllamaWouldDrop) {
  EXPECT_EQ(refusal(strict_fakes::ollama_chat(k_documented_request)), "");
  json json_mode = k_documented_request;
  json_mode["format"] = "json";
  EXPECT_EQ(refusal(strict_fakes::ollama_chat(json_mode)), "");

  json unknown = k_documented_request;
  unknown["max_tokens"] = 256; // Ollama would silently ignore it
  auto v = strict_fakes::ollama_chat(unknown);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->status, 400);
  EXPECT_EQ(v->body, (json{{"error", "json: unknown field \"max_tokens\""}}));
  json option = k_documented_request;
  option["options"]["max_tokens"] = 256;
  EXPECT_EQ(refusal(strict_fakes::ollama_chat(option)), "invalid option provided: max_tokens");
  json format = k_documented_request;
  format["format"] = "yaml";
  EXPECT_NE(refusal(strict_fakes::ollama_chat(format)), "");
}

// What Ollama receives for the reply schema: `format` takes a JSON schema
// (https://docs.ollama.com/capabilities/structured-outputs), which Ollama turns into a grammar;
// all of it goes but the identifiers $schema and $id.
TEST_F(Ollama, TheReplySchemaGoesOutAsTheFormat) {
  m_api.reply_with(ollama_like(ollama_answer(k_reply_answer)));
  m_config.base_url = m_api.url();
  Request request = sample_request();
  request.response_schema = optimas::prompt::reply_schema();
  Result r = m_calls.call(*make_ollama(m_config), request);
  ASSERT_TRUE(ok(r)) << failure_of(r).message; // the strict fake took it
  json expected = optimas::prompt::reply_schema();
  for (const char* k : {"$schema", "$id"}) expected.erase(k);
  EXPECT_EQ(m_api.last().body["format"], expected);

  request.response_schema = k_loaded_schema;
  m_api.reply_with(ollama_like(ollama_answer(R"({"kernel":"k","format":"csv","title":"t"})")));
  ASSERT_TRUE(ok(m_calls.call(*make_ollama(m_config), request)));
  expected = k_loaded_schema;
  expected.erase("$schema");
  expected.erase("$id");
  EXPECT_EQ(m_api.last().body["format"], expected);
}
