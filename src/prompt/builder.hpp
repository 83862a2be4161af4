// Prompt construction (paper 2.2): the hot kernels' code with line numbers, the selected
// diagnostics with their evidence IDs, the guardrails, and the reply schema, from a template
// file users can override. Large inputs are split per kernel, then per diagnostic source.
#pragma once

#include "analysis/diagnostics.hpp"
#include "config/app_config.hpp"

#include <string>
#include <vector>

namespace optimas::prompt {

struct PromptOptions {
  unsigned sources = analysis::k_all_sources; // which evidence to include
  bool code_only = false;                     // the baseline: kernels, no diagnostics
  std::string template_text;                  // empty: the built-in template (data/prompt-template.md)
  std::size_t token_budget = 32000;           // per prompt, estimated at 4 characters per token
  std::string gpu = "NVIDIA H200";
};

struct Prompt {
  std::string label;  // "all kernels", "rhs_kernel", "rhs_kernel / PC"
  std::string system; // role and rules
  std::string user;   // application, kernels, diagnostics, schema
  std::vector<std::string> kernels;
  std::vector<std::string> evidence_ids;
  std::size_t tokens() const { return (system.size() + user.size() + 3) / 4; }
};

// The built-in template.
std::string default_template();

// Builds the prompts for the diagnosed hot kernels of `app`. Throws Error when a hot kernel
// cannot be found in the application's sources.
std::vector<Prompt> build_prompts(const config::AppConfig& app, const analysis::Diagnostics& diagnostics,
                                  const PromptOptions& options);

// "PC+IA" or "code only".
std::string prompt_kind(const PromptOptions& options);

} // namespace optimas::prompt
