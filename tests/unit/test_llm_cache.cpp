// Tests of llm/cache: replays make no network call, failures are not stored, no key reaches a
// cache file. (The price table and run totals: test_llm_pricing.cpp.)
#include "llm/backend.hpp"
#include "llm/cache.hpp"
#include "llm/pricing.hpp"
#include "llm/retry.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

json chat_answer(const std::string& content) {
  return {{"id", "chatcmpl-local-1"},
          {"object", "chat.completion"},
          {"model", "Qwen/Qwen2.5-Coder-32B-Instruct"},
          {"choices",
           {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", content}}}, {"finish_reason", "stop"}}}},
          {"usage", {{"prompt_tokens", 900}, {"completion_tokens", 40}, {"total_tokens", 940}}}};
}

BackendConfig config_for(const std::string& url) {
  BackendConfig c;
  c.provider = "openai-compatible";
  c.model = "Qwen/Qwen2.5-Coder-32B-Instruct";
  c.base_url = url + "/v1";
  return c;
}

std::vector<std::filesystem::path> files_under(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::exists(dir)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path());
  return out;
}

class Cache : public testing::Test {
protected:
  void SetUp() override { ASSERT_TRUE(m_api.running()); }

  Result call(Backend& backend, const BackendConfig& config, const Request& request, ResponseCache* cache,
              int max_attempts = 1) {
    RetryPolicy policy;
    policy.max_attempts = max_attempts;
    policy.seed = 1;
    testing::internal::CaptureStderr();
    Result r = complete_cached(backend, config, request, cache, policy, [](double) {});
    m_logs += testing::internal::GetCapturedStderr();
    return r;
  }

  ScopedEnv m_key{"OPENAI_API_KEY", k_key};
  FakeApi m_api{"/v1/chat/completions"};
  optimas::test::TempDir m_dir;
  std::string m_logs;
};

} // namespace

TEST_F(Cache, AReplayMakesNoNetworkCall) {
  m_api.reply_with(FakeApi::json_reply(200, chat_answer(k_json_answer)));
  auto config = config_for(m_api.url());
  auto backend = make_backend(config);
  ResponseCache cache(m_dir.path() / "responses");

  Result first = call(*backend, config, sample_request(), &cache);
  ASSERT_TRUE(ok(first)) << failure_of(first).message;
  EXPECT_FALSE(response_of(first).from_cache);
  EXPECT_EQ(m_api.requests(), 1);

  Result again = call(*backend, config, sample_request(), &cache);
  ASSERT_TRUE(ok(again));
  EXPECT_EQ(m_api.requests(), 1) << "the replay must not reach the server";
  const Response& replay = response_of(again);
  EXPECT_TRUE(replay.from_cache);
  EXPECT_EQ(replay.text, response_of(first).text);
  EXPECT_EQ(replay.model, "Qwen/Qwen2.5-Coder-32B-Instruct");
  EXPECT_EQ(replay.usage.input_tokens, 900u);
  EXPECT_EQ(replay.usage.output_tokens, 40u);
  EXPECT_EQ(replay.raw, response_of(first).raw);

  Request other = sample_request();
  other.prompt += " Consider register pressure too.";
  ASSERT_TRUE(ok(call(*backend, config, other, &cache)));
  EXPECT_EQ(m_api.requests(), 2) << "another prompt is another entry";

  ASSERT_TRUE(ok(call(*backend, config, sample_request(), nullptr)));
  EXPECT_EQ(m_api.requests(), 3) << "no cache (--no-cache) always calls";
}

TEST_F(Cache, EntriesLieUnderTheirKeyPrefixAndNoTemporaryFileRemains) {
  m_api.reply_with(FakeApi::json_reply(200, chat_answer(k_json_answer)));
  auto config = config_for(m_api.url());
  auto backend = make_backend(config);
  ResponseCache cache(m_dir.path());
  ASSERT_TRUE(ok(call(*backend, config, sample_request(), &cache)));

  std::string key = ResponseCache::key(config, sample_request());
  ASSERT_EQ(key.size(), 64u);
  auto expected = m_dir.path() / key.substr(0, 2) / (key + ".json");
  EXPECT_EQ(cache.path_for(key), expected);
  auto files = files_under(m_dir.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0], expected);
  json entry = json::parse(optimas::test::read_all(expected.string()));
  EXPECT_EQ(entry.at("key"), key);
  EXPECT_EQ(entry.at("response").at("text"), k_json_answer);
}

TEST_F(Cache, FailuresAreNotStored) {
  m_api.reply_with(FakeApi::json_reply(500, {{"error", {{"message", "internal error"}}}}));
  auto config = config_for(m_api.url());
  auto backend = make_backend(config);
  ResponseCache cache(m_dir.path());
  Result r = call(*backend, config, sample_request(), &cache, 2);
  ASSERT_FALSE(ok(r));
  EXPECT_EQ(m_api.requests(), 2);
  EXPECT_TRUE(files_under(m_dir.path()).empty());
  call(*backend, config, sample_request(), &cache, 1);
  EXPECT_EQ(m_api.requests(), 3) << "a failure is asked again";
}

TEST_F(Cache, NoKeyInAnyCacheFile) {
  // The model repeats the key it saw in its prompt (as a careless prompt might carry it).
  m_api.reply_with(FakeApi::json_reply(200, chat_answer(std::string(R"({"kernel":")") + k_key + R"(","speedup":1})")));
  auto config = config_for(m_api.url());
  auto backend = make_backend(config);
  ResponseCache cache(m_dir.path());
  Request request = sample_request();
  request.prompt += std::string(" env: OPENAI_API_KEY=") + k_key;
  Result r = call(*backend, config, request, &cache);
  ASSERT_TRUE(ok(r)) << failure_of(r).message;
  auto files = files_under(m_dir.path());
  ASSERT_EQ(files.size(), 1u);
  std::string stored = optimas::test::read_all(files[0].string());
  EXPECT_EQ(stored.find(k_key), std::string::npos) << stored;
  EXPECT_NE(stored.find("[REDACTED]"), std::string::npos);
  EXPECT_EQ(response_of(r).raw.find(k_key), std::string::npos);
  EXPECT_EQ(m_logs.find(k_key), std::string::npos);
}

TEST_F(Cache, ADamagedEntryIsAMissAndIsReplaced) {
  m_api.reply_with(FakeApi::json_reply(200, chat_answer(k_json_answer)));
  auto config = config_for(m_api.url());
  auto backend = make_backend(config);
  ResponseCache cache(m_dir.path());
  std::string key = ResponseCache::key(config, sample_request());
  std::filesystem::create_directories(cache.path_for(key).parent_path());
  std::ofstream(cache.path_for(key)) << "{\"format\": 1, \"key\": \"" << key << "\", \"respo";

  EXPECT_FALSE(cache.get(key).has_value());
  Result r = call(*backend, config, sample_request(), &cache);
  ASSERT_TRUE(ok(r));
  EXPECT_EQ(m_api.requests(), 1);
  EXPECT_NE(m_logs.find("damaged"), std::string::npos) << m_logs;
  ASSERT_TRUE(cache.get(key).has_value()) << "the fresh answer replaced the damaged entry";
  EXPECT_EQ(cache.get(key)->text, k_json_answer);
}

TEST_F(Cache, GetAndPutRoundTripAndRejectNonKeys) {
  ResponseCache cache(m_dir.path());
  Response r;
  r.text = k_json_answer;
  r.model = "gpt-5-2025-08-07";
  r.usage.input_tokens = 10;
  r.usage.output_tokens = 20;
  r.raw = "{}";
  r.attempts = 3;
  r.latency_s = 1.25;
  std::string key = std::string(64, 'a');
  EXPECT_FALSE(cache.get(key).has_value());
  ASSERT_FALSE(cache.put(key, r).has_value());
  auto back = cache.get(key);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->text, r.text);
  EXPECT_EQ(back->model, r.model);
  EXPECT_EQ(back->usage.input_tokens, 10u);
  EXPECT_EQ(back->usage.output_tokens, 20u);
  EXPECT_EQ(back->attempts, 3);
  EXPECT_EQ(back->latency_s, 1.25);
  EXPECT_TRUE(back->from_cache);

  EXPECT_TRUE(cache.put("../../etc/passwd", r).has_value()) << "only hex keys name files";
  EXPECT_FALSE(cache.get("../../etc/passwd").has_value());
}

TEST(CacheKey, EveryInputThatShapesTheAnswerChangesTheKey) {
  BackendConfig config;
  config.provider = "openai";
  config.model = "gpt-5";
  const Request request = sample_request();
  const std::string base = ResponseCache::key(config, request);
  EXPECT_EQ(ResponseCache::key(config, request), base) << "stable";

  auto differs = [&](BackendConfig c, Request r, const char* what) {
    EXPECT_NE(ResponseCache::key(c, r), base) << what;
  };
  BackendConfig c = config;
  c.provider = "openai-compatible";
  differs(c, request, "provider");
  c = config;
  c.model = "gpt-5-mini";
  differs(c, request, "model");
  c = config;
  c.base_url = "https://proxy.example/v1";
  differs(c, request, "base_url");
  Request r = request;
  r.temperature = 0.2;
  differs(config, r, "temperature");
  r = request;
  r.max_tokens = 4096;
  differs(config, r, "max_tokens");
  r = request;
  r.seed = 8;
  differs(config, r, "seed");
  r = request;
  r.seed.reset();
  differs(config, r, "no seed");
  r = request;
  r.schema_name = "other";
  differs(config, r, "schema name");
  r = request;
  r.response_schema["required"] = json::array({"kernel"});
  differs(config, r, "schema");
  r = request;
  r.system += " Be brief.";
  differs(config, r, "system prompt");
  r = request;
  r.prompt += ".";
  differs(config, r, "prompt");

  r = request;
  r.timeout_s = 1;
  EXPECT_EQ(ResponseCache::key(config, r), base) << "the timeout does not shape the answer";
  c = config;
  c.base_url = "https://api.openai.com/v1/";
  EXPECT_EQ(ResponseCache::key(c, request), base) << "the default base URL, spelled out, is the same server";
}

// --- Pricing (llm/pricing): kept here, next to the replays whose cost it must not count ---
