// From prompts to a checked proposal: ask the backend (once per prompt), parse the replies,
// apply their edits to copies of the sources and check the guardrails. Used by `optimas
// optimize` (one shot), by the closed loop (with retries and feedback), and, for the asking
// alone, by `optimas ask`.
#pragma once

#include "analysis/diagnostics.hpp"
#include "edit/apply.hpp"
#include "edit/guardrails.hpp"
#include "llm/backend.hpp"
#include "llm/cache.hpp"
#include "llm/pricing.hpp"
#include "llm/retry.hpp"
#include "prompt/builder.hpp"
#include "prompt/reply.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace optimas::propose {

// How to ask. The defaults are the loop's; `optimas ask` sets them from its options.
struct AskSettings {
  double temperature = 0.15;
  int max_tokens = 8192;
  std::optional<std::int64_t> seed; // where the provider supports one
  double timeout_s = 300;           // per HTTP attempt
  llm::RetryPolicy retry;
  const llm::PriceTable* prices = nullptr; // nullptr: the built-in table (data/prices.yml)
  // Ask the remaining prompts after one fails, recording the failure (optimas ask reports each
  // prompt); otherwise the first failure throws.
  bool keep_going = false;
  std::function<void(std::size_t index, const prompt::Prompt& prompt)> before_each; // progress
};

struct Asked {
  std::vector<std::string> replies; // one raw text per prompt ("" for one that failed, keep_going)
  std::vector<llm::Result> results; // per prompt: the Response (priced) or, with keep_going, the Failure
  llm::UsageTotals usage;           // pricing.hpp's totals: a replayed answer costs nothing, counted apart
  std::string model;                // as the provider reported it
};

// Sends every prompt (with `feedback` appended when retrying) through the cache and the retry
// policy, and prices every answer. Throws PendingError while a manual reply is missing; on any
// other failure Error naming the backend and the failure kind, unless settings.keep_going.
Asked ask_backend(const std::vector<prompt::Prompt>& prompts, const std::string& feedback,
                  const nlohmann::json& context, llm::Backend& backend, const llm::BackendConfig& config,
                  llm::ResponseCache* cache, const AskSettings& settings = {});

// The evidence IDs that a reply's edits cite and the diagnostics do not hold.
std::vector<std::string> unknown_evidence(const prompt::Reply& reply, const analysis::Diagnostics& diagnostics);

// The user message of a prompt on a retry: the prompt, then why the last reply was rejected.
std::string with_feedback(const std::string& user, const std::string& feedback);

// Where the time is that a proposal's applied edits act on (issue #50): each hot kernel's
// stalled PC samples, weighted by the kernel's share of the hot kernels' time, on lines an
// applied edit changes or whose cause line (or split branch, issue #49) it changes.
struct Coverage {
  double time_addressed = 0; // of the hot kernels' stalled samples, in [0, 1]
  struct Item {
    std::string id;    // "PC3"
    std::string where; // "main.cu:41"
    double share = 0;  // of the hot kernels' stalled samples
    std::string why;   // a withheld suggestion citing it and its reason, else that no edit acts there
  };
  std::vector<Item> unaddressed; // the largest items left, at most 3, largest first
  // "addresses 81% of the stalled samples; PC3 (9%): no edit acts on it"
  std::string text() const;
};

// The coverage of `reply`'s edits as applied in `application` (make_proposal sets it).
Coverage coverage(const prompt::Reply& reply, const edit::Application& application,
                  const analysis::Diagnostics& diagnostics);
nlohmann::json to_json(const Coverage& coverage);

struct Proposal {
  std::vector<std::string> parse_errors; // non-empty: a reply could not be used
  prompt::Reply reply;                   // the replies' edits and withheld suggestions, merged
  edit::Application application;
  std::vector<edit::Violation> violations;
  std::string diff; // unified, over every source file
  Coverage coverage;
  bool usable() const { return parse_errors.empty() && violations.empty() && application.applied() > 0; }
  // Why the proposal cannot be built, in words a backend can act on (empty when usable).
  std::string feedback() const;
};

// `sources`: file name -> text (as prompts show them); `paths`: file name -> path relative to
// the application folder (for the diff); `code_only`: the prompts showed no evidence, so edits
// need not cite any (edit::GuardrailOptions::code_only).
// `from_builtin`: the replies are the builtin optimizer's, whose edits' `addresses` (the PC items
// each acts on) coverage reads; a model is not asked for them, and any it gives are dropped.
Proposal make_proposal(const std::vector<std::string>& replies, const analysis::Diagnostics& diagnostics,
                       const std::map<std::string, std::string>& sources,
                       const std::map<std::string, std::string>& paths, edit::Scope scope, bool code_only,
                       bool from_builtin);

// Whether an applied edit cites an application (AP) item: host code acting on copies, gaps or
// synchronisations, whose effect is on the wall time and not on the kernels' time.
bool acts_on_application(const Proposal& proposal);

// The hot kernels' names without template arguments (what the guardrails check scope against).
std::vector<std::string> hot_kernel_names(const analysis::Diagnostics& diagnostics);

// The edit outcomes as JSON (for result files and reports).
nlohmann::json to_json(const Proposal& proposal);

} // namespace optimas::propose
