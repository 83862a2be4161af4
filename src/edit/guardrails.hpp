// Guardrails checked on the edited sources (paper 2.2): each violation is a recorded reason
// for rejecting the reply, which can be sent back to the backend.
#pragma once

#include "edit/apply.hpp"
#include "prompt/reply.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace optimas::edit {

// How far edits may reach.
enum class Scope {
  kernel, // inside the hot kernels named by the edits (signature and body) and the device functions they call
  file,   // anywhere in the application's sources
  // as kernel, and also the host functions that launch the hot kernels or make the calls the
  // application (AP) items are about: copies, memsets, synchronisations (optimize.scope: application)
  application,
};

// optimize.scope's value ("kernel", "file", "application"); config validation has checked it.
Scope parse_scope(const std::string& value);

struct GuardrailOptions {
  Scope scope = Scope::kernel;
  std::vector<std::string> hot_kernels; // kernels the evidence implicates
  // Rule 5 of the prompt: each edit cites an evidence ID the diagnostics have. A code-only
  // prompt shows no evidence, so the rule does not hold there: the baseline measures what a model
  // does without evidence, and the IDs it invents are counted by EAR (hallucinations), not refused,
  // which would turn them into invalid edits and skew the ablation's valid-edit rate.
  bool code_only = false;
  // Scope::application: name prefixes of the runtime calls whose host functions edits may touch
  // (analysis::application_calls).
  std::vector<std::string> host_calls;
  // The lines a PC item's stall waits on (its cause, where its warps split; issue #49): an edit on
  // one that cites that item acts where the evidence points, whatever the scope says of its place.
  struct CauseLine {
    std::string id;   // "PC1"
    std::string file; // as the profile names it; compared by file name
    int line = 0;
  };
  std::vector<CauseLine> cause_lines;
};

struct Violation {
  std::string rule; // "signature", "duplicate_kernel", "kernel_removed", "kernel_added", "scope", "balance",
                    // "file" (not one of the prompt's sources), "evidence" (rule 5), "kernel" (names a
                    // kernel no source defines)
  std::string file;
  std::string message; // says what and where
};

// Checks each edit's file and evidence, and compares original and result. Signatures are compared token by token after
// dropping the qualifiers callers cannot see (__restrict__, const on pointees, __launch_bounds__(...)).
std::vector<Violation> check_guardrails(const Application& application, const GuardrailOptions& options);

// The violations as guardrails.json and `optimas optimize --json` record them: [{rule, file, message}].
nlohmann::json to_json(const std::vector<Violation>& violations);

// The signature as compared by the guardrail.
std::string comparable_signature(std::string_view signature);

} // namespace optimas::edit
