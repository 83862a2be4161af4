// Tests of llm/gemini: the gemini backend against a local stand-in for generateContent.
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

namespace {

using namespace std::chrono_literals;

// A recognisable fake key: no message, raw body, log line or cache file may contain it.
constexpr const char* k_key = "sk-test-SECRET-123456";

class ScopedEnv {
public:
  ScopedEnv(std::string name, const char* value) : m_name(std::move(name)) {
    if (const char* old = std::getenv(m_name.c_str())) m_old = old;
    if (value)
      setenv(m_name.c_str(), value, 1);
    else
      unsetenv(m_name.c_str());
  }
  ~ScopedEnv() {
    if (m_old)
      setenv(m_name.c_str(), m_old->c_str(), 1);
    else
      unsetenv(m_name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
  std::string m_name;
  std::optional<std::string> m_old;
};

struct Seen {
  std::string method, path;
  httplib::Headers headers;
  json body; // discarded when the request body was not JSON
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
  bool has_header(const std::string& name) const { return headers.count(name) > 0; }
};

// The provider, played by a cpp-httplib server on 127.0.0.1 and a free port: it records every
// request and answers with whatever the test set.
class FakeApi {
public:
  using Reply = std::function<void(const httplib::Request&, httplib::Response&)>;

  explicit FakeApi(const std::string& path) {
    m_svr.Post(path, [this](const httplib::Request& req, httplib::Response& res) {
      Reply reply;
      {
        std::lock_guard lock(m_mutex);
        m_seen.push_back({req.method, req.path, req.headers, json::parse(req.body, nullptr, false)});
        reply = m_reply;
      }
      if (reply) reply(req, res);
    });
    m_port = m_svr.bind_to_any_port("127.0.0.1");
    if (m_port <= 0) return;
    m_thread = std::thread([this] { m_svr.listen_after_bind(); });
    // The socket listens already; waiting until the accept loop runs makes stop() reliable.
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!m_svr.is_running() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  }
  ~FakeApi() {
    release();
    m_svr.stop();
    if (m_thread.joinable()) m_thread.join();
  }
  FakeApi(const FakeApi&) = delete;
  FakeApi& operator=(const FakeApi&) = delete;

  bool running() const { return m_port > 0 && m_svr.is_running(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port); }
  void reply_with(Reply reply) {
    std::lock_guard lock(m_mutex);
    m_reply = std::move(reply);
  }
  int requests() const {
    std::lock_guard lock(m_mutex);
    return static_cast<int>(m_seen.size());
  }
  Seen last() const {
    std::lock_guard lock(m_mutex);
    return m_seen.empty() ? Seen{} : m_seen.back();
  }

  // Replies a test can give besides a normal answer.
  static Reply json_reply(int status, json body, httplib::Headers headers = {}) {
    return [=](const httplib::Request&, httplib::Response& res) {
      res.status = status;
      for (const auto& [k, v] : headers) res.set_header(k, v);
      res.set_content(body.dump(), "application/json");
    };
  }
  static Reply text_reply(int status, std::string body, std::string type) {
    return [=](const httplib::Request&, httplib::Response& res) {
      res.status = status;
      res.set_content(body, type);
    };
  }
  // Accepts the request and never answers, until the test ends.
  Reply stalled() {
    return [this](const httplib::Request&, httplib::Response& res) {
      std::unique_lock lock(m_stall_mutex);
      m_stall_cv.wait(lock, [this] { return m_released; });
      res.set_content("{}", "application/json");
    };
  }
  // Announces the whole body in Content-Length, sends half of it and closes the connection.
  static Reply truncated(json body) {
    auto text = std::make_shared<std::string>(body.dump());
    return [text](const httplib::Request&, httplib::Response& res) {
      res.set_content_provider(text->size(), "application/json",
                               [text](std::size_t, std::size_t, httplib::DataSink& sink) {
                                 sink.write(text->data(), text->size() / 2);
                                 return false;
                               });
    };
  }

private:
  void release() {
    {
      std::lock_guard lock(m_stall_mutex);
      m_released = true;
    }
    m_stall_cv.notify_all();
  }

  httplib::Server m_svr;
  int m_port = 0;
  std::thread m_thread;
  mutable std::mutex m_mutex;
  std::vector<Seen> m_seen;
  Reply m_reply;
  std::mutex m_stall_mutex;
  std::condition_variable m_stall_cv;
  bool m_released = false;
};

const json k_schema = json::parse(R"({
  "type": "object",
  "properties": {"kernel": {"type": "string"}, "speedup": {"type": "number"}},
  "required": ["kernel", "speedup"],
  "additionalProperties": false
})");

Request sample_request() {
  Request r;
  r.system = "You are a CUDA performance engineer. Answer only with the JSON object asked for.";
  r.prompt = "Kernel stencil3d: 61% of stalls are long_scoreboard on the halo loads. Suggest one change.";
  r.response_schema = k_schema;
  r.seed = 7;
  r.timeout_s = 5;
  return r;
}

// Calls through the retry layer, as the program does, with a fake sleep; keeps every text the
// call produced (messages, raw bodies, log lines) for the no-key check at the end of each test.
class CallRecorder {
public:
  Result call(Backend& backend, const Request& request, int max_attempts = 1) {
    RetryPolicy policy;
    policy.max_attempts = max_attempts;
    policy.seed = 1;
    testing::internal::CaptureStderr();
    Result r = complete_with_retry(backend, request, policy, [this](double s) { waits.push_back(s); });
    texts.push_back(testing::internal::GetCapturedStderr());
    if (const auto* f = std::get_if<Failure>(&r)) texts.push_back(f->message);
    if (const auto* answer = std::get_if<Response>(&r)) {
      texts.push_back(answer->raw);
      texts.push_back(answer->text);
    }
    return r;
  }
  void expect_no_key() const {
    for (const auto& t : texts) EXPECT_EQ(t.find(k_key), std::string::npos) << "the key leaked into: " << t;
  }
  std::vector<double> waits;
  std::vector<std::string> texts;
};

const Failure& failure_of(const Result& r) {
  return std::get<Failure>(r);
}
const Response& response_of(const Result& r) {
  return std::get<Response>(r);
}

} // namespace

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

// The API's own checks: the x-goog-api-key header, contents; else the errors it really sends.
FakeApi::Reply gemini_like(json answer) {
  return [answer](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("x-goog-api-key") != k_key) {
      res.status = 400; // Gemini answers a bad key with 400 INVALID_ARGUMENT, a missing one with 403
      res.set_content(
          R"({"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}})",
          "application/json");
      return;
    }
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.contains("contents")) {
      res.status = 400;
      res.set_content(
          R"({"error":{"code":400,"message":"* GenerateContentRequest.contents: contents is not specified","status":"INVALID_ARGUMENT"}})",
          "application/json");
      return;
    }
    res.set_content(answer.dump(), "application/json");
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
