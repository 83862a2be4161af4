// Tests of llm/check (`optimas backends --check`): one real request per backend against the
// strict fakes (strict_fakes.hpp), for each provider: success, a bad key, a rejected schema and a
// rate limit. Each report says what to change and never shows the key.
#include "llm/backend.hpp"
#include "llm/check.hpp"
#include "llm/pricing.hpp"
#include "llm/schema_dialect.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <ostream>
#include <string>

#include "fake_api.hpp"

namespace {

constexpr const char* k_proxy_key = "litellm-test-SECRET-778899";

// Each provider's answer to the check, in its documented response shape, with 812 tokens in and
// 36 out.
json openai_answer(const std::string& text) {
  return {{"id", "chatcmpl-check"},
          {"object", "chat.completion"},
          {"created", 1764547200},
          {"model", "gpt-4.1-2025-04-14"},
          {"choices",
           {{{"index", 0},
             {"message", {{"role", "assistant"}, {"content", text}, {"refusal", nullptr}}},
             {"finish_reason", "stop"}}}},
          {"usage", {{"prompt_tokens", 812}, {"completion_tokens", 36}, {"total_tokens", 848}}}};
}
json gemini_answer(const std::string& text) {
  return {{"candidates",
           {{{"content", {{"parts", {{{"text", text}}}}, {"role", "model"}}}, {"finishReason", "STOP"}, {"index", 0}}}},
          {"usageMetadata", {{"promptTokenCount", 812}, {"candidatesTokenCount", 36}, {"totalTokenCount", 848}}},
          {"modelVersion", "gemini-2.5-pro"}};
}
json anthropic_answer(const std::string& text) {
  return {{"id", "msg_01Check"},
          {"type", "message"},
          {"role", "assistant"},
          {"model", "claude-sonnet-4-5-20250929"},
          {"content",
           {{{"type", "tool_use"}, {"id", "toolu_01Check"}, {"name", "optimas_reply"}, {"input", json::parse(text)}}}},
          {"stop_reason", "tool_use"},
          {"stop_sequence", nullptr},
          {"usage", {{"input_tokens", 812}, {"output_tokens", 36}}}};
}
json ollama_answer(const std::string& text) {
  return {{"model", "qwen2.5-coder:32b"},
          {"created_at", "2025-12-01T10:00:00Z"},
          {"message", {{"role", "assistant"}, {"content", text}}},
          {"done_reason", "stop"},
          {"done", true},
          {"prompt_eval_count", 812},
          {"eval_count", 36}};
}

using strict_fakes::Rejection;

struct Provider {
  std::string name; // the provider, and the test's name
  std::string model;
  std::string path;    // where the fake listens
  std::string key_var; // the variable the key is in ("" for none)
  std::function<bool(const httplib::Request&)> authorised;
  Rejection refused_key; // the provider's answer to a wrong key
  std::function<strict_fakes::Verdict(const json&, const strict_fakes::Extra&)> rules;
  std::function<json(const std::string&)> answer;
  Rejection rate_limited; // the provider's 429
  std::string dialect;
  bool priced = true; // in the built-in price table
};

// gtest prints a parameter in messages and test lists: the provider's name is enough.
[[maybe_unused]] void PrintTo(const Provider& p, std::ostream* os) {
  *os << p.name;
}

std::function<bool(const httplib::Request&)> header_is(std::string name, std::string value) {
  return [name, value](const httplib::Request& req) { return req.get_header_value(name) == value; };
}

Rejection with_status(int status, Rejection r) {
  r.status = status;
  return r;
}

std::vector<Provider> providers() {
  std::vector<Provider> list;
  Provider p;
  p.name = "openai";
  p.model = "gpt-4.1";
  p.path = "/v1/chat/completions";
  p.key_var = "OPENAI_API_KEY";
  p.authorised = header_is("Authorization", std::string("Bearer ") + k_key);
  p.refused_key = with_status(401, strict_fakes::openai_error("Incorrect API key provided: sk-wrong. You can find "
                                                              "your API key at "
                                                              "https://platform.openai.com/account/api-keys.",
                                                              nullptr, "invalid_api_key"));
  p.rules = [](const json& b, const strict_fakes::Extra& e) { return strict_fakes::openai_chat(b, false, e); };
  p.answer = openai_answer;
  p.rate_limited = with_status(429, strict_fakes::openai_error("Rate limit reached for gpt-4.1 in organization org-x "
                                                               "on requests per min (RPM): Limit 3",
                                                               nullptr, "rate_limit_exceeded"));
  p.dialect = "openai-strict";
  list.push_back(p);

  p.name = "openai_compatible";
  p.model = "Qwen/Qwen2.5-Coder-32B-Instruct";
  p.key_var = "OPTIMAS_TEST_PROXY_KEY";
  p.authorised = header_is("Authorization", std::string("Bearer ") + k_proxy_key);
  p.refused_key = with_status(401, strict_fakes::openai_error("Authentication Error, Invalid proxy server token "
                                                              "passed."));
  p.rules = [](const json& b, const strict_fakes::Extra& e) { return strict_fakes::openai_chat(b, true, e); };
  p.rate_limited = with_status(429, strict_fakes::openai_error("Rate limit exceeded for model group."));
  p.dialect = "openai-compatible-strict";
  list.push_back(p);

  p.name = "gemini";
  p.model = "gemini-2.5-pro";
  p.path = "/v1beta/models/gemini-2.5-pro:generateContent";
  p.key_var = "GEMINI_API_KEY";
  p.authorised = header_is("x-goog-api-key", k_key);
  p.refused_key = strict_fakes::gemini_error("API key not valid. Please pass a valid API key.");
  p.rules = [](const json& b, const strict_fakes::Extra& e) { return strict_fakes::gemini_generate_content(b, e); };
  p.answer = gemini_answer;
  p.rate_limited = strict_fakes::gemini_error(
      "You exceeded your current quota, please check your plan and billing details.", 429, "RESOURCE_EXHAUSTED");
  p.dialect = "gemini-json-schema";
  list.push_back(p);

  p.name = "anthropic";
  p.model = "claude-sonnet-4-5";
  p.path = "/v1/messages";
  p.key_var = "ANTHROPIC_API_KEY";
  p.authorised = header_is("x-api-key", k_key);
  p.refused_key = strict_fakes::anthropic_error("invalid x-api-key", 401, "authentication_error");
  p.rules = [](const json& b, const strict_fakes::Extra& e) { return strict_fakes::anthropic_messages(b, e); };
  p.answer = anthropic_answer;
  p.rate_limited = strict_fakes::anthropic_error("Number of requests has exceeded your per-minute rate limit", 429,
                                                 "rate_limit_error");
  p.dialect = "anthropic-tool-input";
  list.push_back(p);

  // Ollama takes no key; a proxy in front of it may refuse us (its "wrong key").
  p.name = "ollama";
  p.model = "qwen2.5-coder:32b";
  p.path = "/api/chat";
  p.key_var = "";
  p.authorised = [](const httplib::Request&) { return true; };
  p.refused_key = strict_fakes::ollama_error("unauthorized", 401);
  p.rules = [](const json& b, const strict_fakes::Extra& e) { return strict_fakes::ollama_chat(b, e); };
  p.answer = ollama_answer;
  p.rate_limited = strict_fakes::ollama_error("too many requests", 429);
  p.dialect = "ollama-format";
  list.push_back(p);
  return list;
}

class Check : public testing::TestWithParam<Provider> {
protected:
  void SetUp() override {
    ASSERT_TRUE(m_api.running());
    const Provider& p = GetParam();
    m_config = parse_model(p.name == "openai_compatible" ? "openai-compatible/" + p.model : p.name + "/" + p.model);
    m_config.base_url = m_api.url() + (p.name == "gemini" ? "/v1beta" : p.name == "ollama" ? "" : "/v1");
    if (p.name == "openai_compatible") m_config.options["api_key_env"] = "OPTIMAS_TEST_PROXY_KEY";
  }
  void TearDown() override {
    const std::string all = to_json(m_report).dump() + m_report.advice;
    EXPECT_EQ(all.find(k_key), std::string::npos) << all;
    EXPECT_EQ(all.find(k_proxy_key), std::string::npos) << all;
  }

  // The provider: its key check, then its request checks, then `reply`.
  void serve(FakeApi::Reply reply, strict_fakes::Extra extra = {}) {
    const Provider p = GetParam();
    m_api.reply_with([p, reply, extra](const httplib::Request& req, httplib::Response& res) {
      if (!p.authorised(req)) {
        res.status = p.refused_key.status;
        res.set_content(p.refused_key.body.dump(), "application/json");
        return;
      }
      FakeApi::checked([p, extra](const json& body) { return p.rules(body, extra); }, reply)(req, res);
    });
  }
  CheckReport check() {
    testing::internal::CaptureStderr();
    m_report = check_backend(m_config, PriceTable::builtin());
    m_log = testing::internal::GetCapturedStderr();
    return m_report;
  }

  ScopedEnv m_openai{"OPENAI_API_KEY", k_key};
  ScopedEnv m_gemini{"GEMINI_API_KEY", k_key};
  ScopedEnv m_google{"GOOGLE_API_KEY", nullptr};
  ScopedEnv m_anthropic{"ANTHROPIC_API_KEY", k_key};
  ScopedEnv m_proxy{"OPTIMAS_TEST_PROXY_KEY", k_proxy_key};
  ScopedEnv m_host{"OLLAMA_HOST", nullptr};
  FakeApi m_api{GetParam().path};
  BackendConfig m_config;
  CheckReport m_report;
  std::string m_log;
};

} // namespace

TEST_P(Check, PassesWhenTheKeyWorksAndTheSchemaIsAccepted) {
  const Provider& p = GetParam();
  serve(FakeApi::json_reply(200, p.answer(k_reply_answer)));
  CheckReport r = check();
  EXPECT_TRUE(r.passed) << to_json(r).dump(2);
  EXPECT_EQ(r.key, p.key_var.empty() ? "not needed" : "ok");
  EXPECT_EQ(r.key_variables, p.key_var);
  EXPECT_EQ(r.schema, "accepted");
  EXPECT_EQ(r.dialect, p.dialect);
  EXPECT_EQ(r.answer, "follows the reply schema");
  EXPECT_GT(r.latency_s, 0);
  ASSERT_TRUE(r.usage);
  EXPECT_EQ(r.usage->input_tokens, 812u);
  EXPECT_EQ(r.usage->output_tokens, 36u);
  EXPECT_EQ(r.usage->cost_known, p.priced);
  EXPECT_FALSE(r.failure);
  EXPECT_TRUE(r.advice.empty()) << r.advice;
  EXPECT_EQ(m_api.requests(), 1);
  // The real reply schema went out, in the provider's dialect.
  EXPECT_EQ(m_api.last().body.dump().find("\"$schema\""), std::string::npos);
  EXPECT_NE(m_api.last().body.dump().find("expected_effect"), std::string::npos);

  json j = to_json(r);
  EXPECT_EQ(j["passed"], true);
  EXPECT_EQ(j["key"]["status"], r.key);
  EXPECT_EQ(j["schema"]["status"], "accepted");
  EXPECT_EQ(j["schema"]["dialect"], p.dialect);
  EXPECT_EQ(j["usage"]["input_tokens"], 812);
  EXPECT_TRUE(j["failure"].is_null());
}

TEST_P(Check, ABadKeySaysWhichVariableToSet) {
  const Provider& p = GetParam();
  ScopedEnv wrong(p.key_var.empty() ? "OPTIMAS_TEST_UNUSED" : p.key_var, "sk-test-WRONG-12345678");
  serve(FakeApi::json_reply(200, p.answer(k_reply_answer)));
  if (p.key_var.empty()) m_api.reply_with(FakeApi::json_reply(p.refused_key.status, p.refused_key.body));
  CheckReport r = check();
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.key, "rejected");
  EXPECT_EQ(r.schema, "not checked");
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->kind, FailureKind::auth);
  if (!p.key_var.empty()) {
    EXPECT_NE(r.advice.find("refused the key in " + p.key_var), std::string::npos) << r.advice;
    EXPECT_NE(r.advice.find("export " + p.key_var + "="), std::string::npos) << r.advice;
  } else {
    EXPECT_NE(r.advice.find("proxy"), std::string::npos) << r.advice;
  }
  EXPECT_EQ(to_json(r).dump().find("sk-test-WRONG-12345678"), std::string::npos) << "a wrong key is a key too";
  EXPECT_EQ(m_api.requests(), 1) << "not retried";
}

TEST_P(Check, AMissingKeySendsNothingAndSaysWhatToSet) {
  const Provider& p = GetParam();
  if (p.key_var.empty()) GTEST_SKIP() << "no key to miss";
  ScopedEnv none(p.key_var, nullptr);
  CheckReport r = check();
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.key, "missing");
  EXPECT_NE(r.advice.find("export "), std::string::npos) << r.advice;
  EXPECT_EQ(m_api.requests(), 0);
}

TEST_P(Check, ARejectedSchemaNamesTheProvidersMessageAndTheDialect) {
  const Provider& p = GetParam();
  // A provider whose validator no longer takes "enum" (the reply schema's expected_effect uses it).
  serve(FakeApi::json_reply(200, p.answer(k_reply_answer)), {{"enum"}});
  CheckReport r = check();
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.key, p.key_var.empty() ? "not needed" : "ok") << "the key got through";
  EXPECT_EQ(r.schema, "rejected");
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->kind, FailureKind::bad_request);
  std::string said = refusal(p.rules(m_api.last().body, {{"enum"}}));
  while (!said.empty() && said.back() == '.') said.pop_back();
  EXPECT_NE(r.failure->message.find(said), std::string::npos) << "the provider's own words: " << r.failure->message;
  EXPECT_NE(r.advice.find(p.dialect), std::string::npos) << r.advice;
  EXPECT_NE(r.advice.find(find_backend(m_config.provider)->schema_dialect("").declared_in), std::string::npos)
      << r.advice;
  EXPECT_EQ(m_api.requests(), 1);
}

TEST_P(Check, ARateLimitSaysToRetryLater) {
  const Provider& p = GetParam();
  serve(FakeApi::json_reply(p.rate_limited.status, p.rate_limited.body, {{"Retry-After", "20"}}));
  CheckReport r = check();
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.schema, "not checked");
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->kind, FailureKind::rate_limit);
  EXPECT_EQ(r.failure->retry_after_s, 20);
  EXPECT_NE(r.advice.find("retry later"), std::string::npos) << r.advice;
  EXPECT_NE(r.advice.find("Retry-After 20 s"), std::string::npos) << r.advice;
  EXPECT_EQ(m_api.requests(), 1) << "one request, no retries";
  EXPECT_EQ(to_json(r)["failure"]["retry_after_s"], 20);
}

TEST_P(Check, AnAnswerOutsideTheSchemaPassesWithANote) {
  const Provider& p = GetParam();
  std::string off = R"({"summary": "check ok", "edits": [], "withheld": [], "extra": 1})";
  serve(FakeApi::json_reply(200, p.answer(off)));
  CheckReport r = check();
  EXPECT_TRUE(r.passed) << "key and schema were accepted";
  EXPECT_EQ(r.schema, "accepted");
  EXPECT_NE(r.answer.find("does not follow the reply schema"), std::string::npos) << r.answer;
  EXPECT_NE(r.advice.find("structured output"), std::string::npos) << r.advice;
}

INSTANTIATE_TEST_SUITE_P(Providers, Check, testing::ValuesIn(providers()),
                         [](const testing::TestParamInfo<Provider>& info) { return info.param.name; });

TEST(CheckWithoutApi, BuiltinAndManualHaveNothingToCheck) {
  for (const char* model : {"builtin", "manual"}) {
    CheckReport r = check_backend(parse_model(model), PriceTable::builtin());
    EXPECT_TRUE(r.passed) << model;
    EXPECT_EQ(r.schema, "not used");
    EXPECT_NE(r.advice.find("nothing to check"), std::string::npos) << r.advice;
  }
}

TEST(CheckWithoutApi, AServerThatIsNotThereIsANetworkFailure) {
  BackendConfig config = parse_model("ollama/qwen2.5-coder:32b");
  config.base_url = "http://127.0.0.1:9"; // the discard port: nothing listens
  CheckOptions options;
  options.timeout_s = 5;
  CheckReport r = check_backend(config, PriceTable::builtin(), options);
  EXPECT_FALSE(r.passed);
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->kind, FailureKind::network);
  EXPECT_EQ(r.key, "not needed");
  EXPECT_NE(r.advice.find("base URL"), std::string::npos) << r.advice;
}
