// Tests of llm/http: the libcurl transport against a local server, the status and Retry-After
// mapping, and the helpers the backends share.
#include "llm/http.hpp"
#include "util/secrets.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

using namespace optimas::llm;
using nlohmann::json;

namespace {

// A local HTTP server on 127.0.0.1 and a free port, serving from a thread for the test's life.
class FakeServer {
public:
  httplib::Server svr;

  void start() {
    m_port = svr.bind_to_any_port("127.0.0.1");
    ASSERT_GT(m_port, 0);
    m_thread = std::thread([this] { svr.listen_after_bind(); });
    // The socket listens already; waiting for is_running() makes stop() reliable. Bounded.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!svr.is_running() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    ASSERT_TRUE(svr.is_running());
  }
  ~FakeServer() {
    release();
    svr.stop();
    if (m_thread.joinable()) m_thread.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port); }

  // Blocks a handler until the test ends, like a server that accepted and never answered.
  void stall() {
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [this] { return m_released; });
  }
  void release() {
    {
      std::lock_guard lock(m_mutex);
      m_released = true;
    }
    m_cv.notify_all();
  }

private:
  int m_port = 0;
  std::thread m_thread;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_released = false;
};

using optimas::test::ScopedEnv;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// 2015-10-21 07:28:00 UTC, to test HTTP dates against a fixed "now".
constexpr std::time_t k_now = 1445412480;

} // namespace

TEST(HttpPost, SendsJsonAndReturnsStatusHeadersAndBody) {
  FakeServer server;
  std::string seen_type, seen_custom, seen_body;
  server.svr.Post("/echo", [&](const httplib::Request& req, httplib::Response& res) {
    seen_type = req.get_header_value("Content-Type");
    seen_custom = req.get_header_value("X-Custom");
    seen_body = req.body;
    res.status = 201;
    res.set_header("X-Request-Id", "req-42");
    res.set_content(R"({"ok":true})", "application/json");
  });
  server.start();

  auto r = http_post_json(server.url() + "/echo", {{"X-Custom", "yes"}}, R"({"a":1})", 5);
  ASSERT_TRUE(std::holds_alternative<HttpResponse>(r)) << std::get<Failure>(r).message;
  const auto& response = std::get<HttpResponse>(r);
  EXPECT_EQ(response.status, 201);
  EXPECT_EQ(response.body, R"({"ok":true})");
  ASSERT_TRUE(response.headers.count("x-request-id")) << "header names are lower-cased";
  EXPECT_EQ(response.headers.at("x-request-id"), "req-42");
  EXPECT_EQ(seen_type, "application/json");
  EXPECT_EQ(seen_custom, "yes");
  EXPECT_EQ(seen_body, R"({"a":1})");
}

TEST(HttpPost, AnErrorStatusIsAResponseNotAFailure) {
  FakeServer server;
  server.svr.Post("/x", [](const httplib::Request&, httplib::Response& res) {
    res.status = 503;
    res.set_content("overloaded", "text/plain");
  });
  server.start();
  auto r = http_post_json(server.url() + "/x", {}, "{}", 5);
  ASSERT_TRUE(std::holds_alternative<HttpResponse>(r));
  EXPECT_EQ(std::get<HttpResponse>(r).status, 503);
  EXPECT_EQ(std::get<HttpResponse>(r).body, "overloaded");
}

TEST(HttpPost, AStalledConnectionEndsAsATimeout) {
  FakeServer server;
  server.svr.Post("/slow", [&](const httplib::Request&, httplib::Response& res) {
    server.stall();
    res.set_content("{}", "application/json");
  });
  server.start();
  auto t0 = std::chrono::steady_clock::now();
  auto r = http_post_json(server.url() + "/slow", {}, "{}", 0.5);
  double took = seconds_since(t0);
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  const auto& f = std::get<Failure>(r);
  EXPECT_EQ(f.kind, FailureKind::timeout);
  EXPECT_NE(f.message.find("/slow"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("0.5 s"), std::string::npos) << f.message;
  EXPECT_GE(took, 0.4);
  EXPECT_LT(took, 5.0) << "the timeout must end the call, not the server";
}

TEST(HttpPost, ATruncatedBodyIsAServerFailure) {
  FakeServer server;
  const std::string body = R"({"choices":[{"message":{"content":"a long answer that never arrives in full"}}]})";
  server.svr.Post("/cut", [&](const httplib::Request&, httplib::Response& res) {
    // Content-Length announces the whole body; half of it is sent, then the connection closes.
    res.set_content_provider(body.size(), "application/json", [&](std::size_t, std::size_t, httplib::DataSink& sink) {
      sink.write(body.data(), body.size() / 2);
      return false;
    });
  });
  server.start();
  auto r = http_post_json(server.url() + "/cut", {}, "{}", 5);
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  EXPECT_EQ(std::get<Failure>(r).kind, FailureKind::server);
  EXPECT_NE(std::get<Failure>(r).message.find("cut off"), std::string::npos) << std::get<Failure>(r).message;
  EXPECT_TRUE(is_retryable(std::get<Failure>(r).kind));
}

TEST(HttpPost, ARefusedConnectionIsANetworkFailure) {
  // A socket bound but not listening: connecting to its port is refused, and no other test can
  // take the port while it is held.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/v1/chat/completions";

  auto r = http_post_json(url, {}, "{}", 5);
  ::close(fd);
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  EXPECT_EQ(std::get<Failure>(r).kind, FailureKind::network);
  EXPECT_NE(std::get<Failure>(r).message.find(url), std::string::npos);
  EXPECT_NE(std::get<Failure>(r).message.find("cannot connect"), std::string::npos) << std::get<Failure>(r).message;
}

TEST(HttpPost, AnUnusableUrlIsABadRequest) {
  auto r = http_post_json("htp://localhost/v1", {}, "{}", 5);
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  EXPECT_EQ(std::get<Failure>(r).kind, FailureKind::bad_request);
  EXPECT_NE(std::get<Failure>(r).message.find("http://"), std::string::npos) << std::get<Failure>(r).message;
}

// Issue #52: a base URL of another protocol reads nothing: file:// would hand a local file's
// text back as the model's answer.
TEST(HttpPost, OnlyHttpAndHttpsAreSpoken) {
  optimas::test::TempDir dir;
  const std::string secret = dir.file("secret.json", "{\"choices\": \"local file\"}");
  for (const std::string url :
       {"file://" + secret, std::string("gopher://localhost:1/x"), std::string("dict://localhost:1/x")}) {
    auto r = http_post_json(url, {}, "{}", 5);
    ASSERT_TRUE(std::holds_alternative<Failure>(r)) << url << ": " << std::get<HttpResponse>(r).body;
    EXPECT_EQ(std::get<Failure>(r).kind, FailureKind::bad_request) << url;
    EXPECT_EQ(std::get<Failure>(r).message.find("local file"), std::string::npos) << url;
  }
}

TEST(HttpStatus, OneTableMapsStatusesToKinds) {
  EXPECT_EQ(failure_kind_for_status(401), FailureKind::auth);
  EXPECT_EQ(failure_kind_for_status(403), FailureKind::auth);
  EXPECT_EQ(failure_kind_for_status(429), FailureKind::rate_limit);
  EXPECT_EQ(failure_kind_for_status(400), FailureKind::bad_request);
  EXPECT_EQ(failure_kind_for_status(404), FailureKind::bad_request);
  EXPECT_EQ(failure_kind_for_status(422), FailureKind::bad_request);
  EXPECT_EQ(failure_kind_for_status(408), FailureKind::timeout);
  EXPECT_EQ(failure_kind_for_status(500), FailureKind::server);
  EXPECT_EQ(failure_kind_for_status(502), FailureKind::server);
  EXPECT_EQ(failure_kind_for_status(503), FailureKind::server);
  EXPECT_EQ(failure_kind_for_status(529), FailureKind::server); // Anthropic's "overloaded"
  EXPECT_FALSE(is_retryable(failure_kind_for_status(401)));
  EXPECT_FALSE(is_retryable(failure_kind_for_status(400)));
  EXPECT_TRUE(is_retryable(failure_kind_for_status(429)));
  EXPECT_TRUE(is_retryable(failure_kind_for_status(500)));
}

TEST(HttpStatus, RetryAfterReadsSecondsAndHttpDates) {
  EXPECT_EQ(parse_retry_after("7", k_now), 7.0);
  EXPECT_EQ(parse_retry_after(" 1.5 ", k_now), 1.5);
  EXPECT_EQ(parse_retry_after("0", k_now), 0.0);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", k_now), 30.0);
  EXPECT_EQ(parse_retry_after("Wednesday, 21-Oct-15 07:29:00 GMT", k_now), 60.0); // RFC 850
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", k_now), 0.0);      // in the past
  EXPECT_EQ(parse_retry_after("soon", k_now), std::nullopt);
  EXPECT_EQ(parse_retry_after("-5", k_now), std::nullopt);
  EXPECT_EQ(parse_retry_after("", k_now), std::nullopt);
  EXPECT_EQ(parse_retry_after("1.2.3", k_now), std::nullopt);
}

TEST(HttpStatus, FailureCarriesKindRetryAfterProviderTextAndHint) {
  HttpResponse r;
  r.status = 429;
  r.headers = {{"retry-after", "12"}};
  r.body = R"({"error":{"message":"Rate limit reached for gpt-5 on tokens per min","type":"tokens"}})";
  Failure f = http_status_failure(r, "https://api.example/v1/chat/completions", "check the key");
  EXPECT_EQ(f.kind, FailureKind::rate_limit);
  EXPECT_EQ(f.http_status, 429);
  EXPECT_EQ(f.retry_after_s, 12.0);
  EXPECT_NE(f.message.find("HTTP 429"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("https://api.example/v1/chat/completions"), std::string::npos);
  EXPECT_NE(f.message.find("Rate limit reached for gpt-5"), std::string::npos);
  EXPECT_NE(f.message.find("parallel requests"), std::string::npos) << "says what to do";

  HttpResponse page;
  page.status = 502;
  page.body = "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>";
  Failure g = http_status_failure(page, "u", "");
  EXPECT_EQ(g.kind, FailureKind::server);
  EXPECT_NE(g.message.find(": 502 Bad Gateway 502 Bad Gateway nginx;"), std::string::npos) << g.message;

  r.headers = {{"retry-after", "12"}, {"retry-after-ms", "1500"}};
  EXPECT_EQ(http_status_failure(r, "u", "").retry_after_s, 1.5) << "the finer retry-after-ms wins";

  HttpResponse denied;
  denied.status = 401;
  denied.body = R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})";
  Failure a = http_status_failure(denied, "u", "check that ANTHROPIC_API_KEY holds a valid key");
  EXPECT_EQ(a.kind, FailureKind::auth);
  EXPECT_EQ(a.retry_after_s, -1);
  EXPECT_NE(a.message.find("invalid x-api-key"), std::string::npos) << a.message;
  EXPECT_NE(a.message.find("check that ANTHROPIC_API_KEY holds a valid key"), std::string::npos);

  HttpResponse ollama;
  ollama.status = 404;
  ollama.body = R"({"error":"model \"llama9\" not found, try pulling it first"})";
  Failure o = http_status_failure(ollama, "u", "");
  EXPECT_EQ(o.kind, FailureKind::bad_request);
  EXPECT_NE(o.message.find("model \"llama9\" not found"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("check the model name"), std::string::npos) << o.message;
}

TEST(HttpStatus, AnEchoedKeyIsRedactedFromTheMessage) {
  ScopedEnv key("OPENAI_API_KEY", "sk-test-SECRET-123456");
  HttpResponse r;
  r.status = 401;
  r.body = R"({"error":{"message":"Incorrect API key provided: sk-test-SECRET-123456."}})";
  Failure f = http_status_failure(r, "u", "");
  EXPECT_EQ(f.message.find("sk-test-SECRET-123456"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("[REDACTED]"), std::string::npos) << f.message;
}

TEST(PostJsonApi, ParsesAJsonBodyAndTimesTheCall) {
  FakeServer server;
  server.svr.Post("/api", [](const httplib::Request& req, httplib::Response& res) {
    auto body = json::parse(req.body);
    res.set_content(json{{"echo", body.at("q")}}.dump(), "application/json");
  });
  server.start();
  auto r = post_json_api("test/model", server.url() + "/api", {}, json{{"q", "caf\xc3\xa9"}}, 5, "");
  ASSERT_TRUE(std::holds_alternative<ApiReply>(r)) << std::get<Failure>(r).message;
  EXPECT_EQ(std::get<ApiReply>(r).body.at("echo"), "caf\xc3\xa9");
  EXPECT_GT(std::get<ApiReply>(r).latency_s, 0);
}

TEST(PostJsonApi, AnHtmlPageWithStatus200IsAServerFailure) {
  FakeServer server;
  server.svr.Post("/api", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("<html><body>Gateway says hello</body></html>", "text/html");
  });
  server.start();
  auto r = post_json_api("test/model", server.url() + "/api", {}, json::object(), 5, "");
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  const auto& f = std::get<Failure>(r);
  EXPECT_EQ(f.kind, FailureKind::server);
  EXPECT_TRUE(f.message.starts_with("test/model: ")) << f.message;
  EXPECT_NE(f.message.find("not JSON"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("Gateway says hello"), std::string::npos) << f.message;
}

TEST(PostJsonApi, InvalidUtf8InThePromptIsSentNotThrown) {
  FakeServer server;
  std::string seen;
  server.svr.Post("/api", [&](const httplib::Request& req, httplib::Response& res) {
    seen = req.body;
    res.set_content("{}", "application/json");
  });
  server.start();
  auto r = post_json_api("test/model", server.url() + "/api", {}, json{{"q", std::string("bad \xff byte")}}, 5, "");
  ASSERT_TRUE(std::holds_alternative<ApiReply>(r));
  EXPECT_TRUE(json::accept(seen)) << seen;
}

TEST(JsonAnswer, OnlyASchemaRequiresAJsonDocument) {
  json schema = {{"type", "object"}};
  EXPECT_FALSE(check_json_answer("m", R"({"a":1})", schema).has_value());
  EXPECT_FALSE(check_json_answer("m", "Sure! here it is", nullptr).has_value());
  auto f = check_json_answer("m", "Sure! {\"a\":1}", schema);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->kind, FailureKind::schema_violation);
  EXPECT_NE(f->message.find("Sure!"), std::string::npos) << f->message;
  EXPECT_TRUE(check_json_answer("m", R"({"a":)", schema).has_value());
}

TEST(Excerpt, KeepsOneLineAndWholeCharacters) {
  EXPECT_EQ(excerpt("  a\n\n b \t c  "), "a b c");
  std::string cut = excerpt("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 3); // four "é", two bytes each
  EXPECT_EQ(cut, "\xc3\xa9...");
  EXPECT_EQ(excerpt("\xc3\xa9\xc3\xa9\xc3\xa9", 4), "\xc3\xa9\xc3\xa9...") << "a whole character is kept";
  EXPECT_EQ(excerpt("abc", 3), "abc");
}

TEST(MissingKey, NamesTheVariableToSet) {
  ScopedEnv a("GEMINI_API_KEY", nullptr), b("GOOGLE_API_KEY", nullptr);
  auto r = require_api_key("gemini", "gemini/gemini-2.5-pro");
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  EXPECT_EQ(std::get<Failure>(r).kind, FailureKind::auth);
  EXPECT_NE(std::get<Failure>(r).message.find("GEMINI_API_KEY or GOOGLE_API_KEY"), std::string::npos)
      << std::get<Failure>(r).message;
  ScopedEnv c("GOOGLE_API_KEY", "AIza-test-key-0000");
  auto k = require_api_key("gemini", "gemini/gemini-2.5-pro");
  ASSERT_TRUE(std::holds_alternative<std::string>(k));
  EXPECT_EQ(std::get<std::string>(k), "AIza-test-key-0000");
}
