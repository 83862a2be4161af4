// `optimas backends --check`: one minimal real request with the real reply schema, to learn
// before a run whether a backend's key works and whether its API takes the schema as our dialect
// sends it, with the request's latency and cost. Every failure says what to change.
#pragma once

#include "llm/backend.hpp"
#include "llm/pricing.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace optimas::llm {

struct CheckOptions {
  double timeout_s = 120; // the one request's limit (a cold model may take a while)
  // Enough for the short answer asked for, with room for a reasoning model's thinking; an answer
  // cut off here still proves the key and the schema.
  int max_tokens = 2048;
};

struct CheckReport {
  std::string backend; // "openai/gpt-5"
  bool passed = false; // the key works and the API took the request, schema included

  std::string key = "unknown"; // "ok", "missing", "rejected", "not needed", "unknown"
  std::string key_variables;   // where the key comes from: "OPENAI_API_KEY"; "" when none is used

  std::string schema = "not checked"; // "accepted", "rejected", "not checked", "not used"
  std::string dialect;                // the dialect's name; "" for backends without a schema
  bool strict = false;                // strict mode was asked for
  std::vector<std::string> stripped;  // keywords the dialect left out of the reply schema

  std::string answer; // whether the answer follows the reply schema, or why there is none
  double latency_s = 0;
  std::optional<Usage> usage; // tokens and cost, when the API answered

  std::optional<Failure> failure; // what went wrong (redacted)
  std::string advice;             // what to change: after a failure, or about an unusable answer
};

// Sends the check request through `config`'s backend: once, no retries, no cache.
CheckReport check_backend(const BackendConfig& config, const PriceTable& prices, const CheckOptions& options = {});

// The report with stable keys, for --json.
nlohmann::json to_json(const CheckReport& report);

} // namespace optimas::llm
