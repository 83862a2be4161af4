// Shared by the LLM backend tests: a local stand-in for a provider's HTTP API (cpp-httplib on
// 127.0.0.1 and a free port), a scoped environment variable, and a caller that runs requests
// through the retry layer with a recorded (fake) sleep and collects every text a key could leak
// into. One test executable includes it once.
#pragma once

#include "llm/backend.hpp"
#include "llm/retry.hpp"

#include "strict_fakes.hpp"
#include "test_helpers.hpp"

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

using optimas::test::ScopedEnv;

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
  // Runs the provider's own request checks (strict_fakes.hpp) first: a request the real API
  // refuses gets the provider's status and error body, anything else gets `answer`.
  static Reply checked(std::function<strict_fakes::Verdict(const json& body)> check, Reply answer) {
    return [check, answer](const httplib::Request& req, httplib::Response& res) {
      if (auto refused = check(json::parse(req.body, nullptr, false))) {
        res.status = refused->status;
        res.set_content(refused->body.dump(), "application/json");
        return;
      }
      answer(req, res);
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

// A schema carrying keywords that providers' subsets leave out (identifiers, a title, string
// constraints, a format no provider lists, examples, a default), and properties whose names are
// keywords: what each backend strips from it, and keeps, is in its own test file.
const json k_loaded_schema = json::parse(R"({
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://optimas.invalid/schemas/loaded.json",
  "title": "loaded",
  "type": "object",
  "properties": {
    "kernel": {"type": "string", "minLength": 1, "format": "uri", "examples": ["stencil3d"]},
    "format": {"type": "string", "title": "a property called format", "default": "csv"},
    "title": {"type": "string", "pattern": "^[a-z]+$"}
  },
  "required": ["kernel", "format", "title"],
  "additionalProperties": false
})");

// An answer that follows the reply schema (docs/reply.schema.json).
const std::string k_reply_answer = R"({"summary":"the halo loads stall; nothing to change","edits":[],"withheld":[]})";

// The message of a fake's refusal, "" when it took the request.
inline std::string refusal(const strict_fakes::Verdict& verdict) {
  if (!verdict) return "";
  const json& e = verdict->body.at("error");
  return e.is_string() ? e.get<std::string>() : e.at("message").get<std::string>();
}

[[maybe_unused]] Request sample_request() {
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

[[maybe_unused]] const Failure& failure_of(const Result& r) {
  return std::get<Failure>(r);
}
[[maybe_unused]] const Response& response_of(const Result& r) {
  return std::get<Response>(r);
}

} // namespace
