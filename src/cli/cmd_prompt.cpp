// optimas prompt: the prompt(s) for a profiled application, for any diagnostic subset or the
// code-only baseline.
#include "cli/commands.hpp"

#include "analysis/diagnostics.hpp"
#include "cli/common.hpp"
#include "prompt/builder.hpp"

#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

namespace optimas::cli {

namespace fs = std::filesystem;

namespace {

struct PromptArgs {
  ProfileInput input;
  PromptChoice prompt;
  std::string out;
  bool json = false;
};

void run_prompt(const PromptArgs& a) {
  auto prepared = propose::prepare_prompts(a.input, a.prompt);
  const auto& o = prepared.options;
  const auto& prompts = prepared.prompts;
  if (!a.out.empty()) {
    fs::create_directories(a.out);
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      auto base = fs::path(a.out) / fmt::format("prompt-{}", i + 1);
      util::write_file(base.string() + ".system.md", prompts[i].system);
      util::write_file(base.string() + ".user.md", prompts[i].user);
    }
    log::info("{} prompt(s) written to {}", prompts.size(), a.out);
  }
  if (a.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& p : prompts)
      out.push_back({{"label", p.label},
                     {"kind", prompt::prompt_kind(o)},
                     {"kernels", p.kernels},
                     {"evidence_ids", p.evidence_ids},
                     {"tokens_estimate", p.tokens()},
                     {"system", p.system},
                     {"user", p.user}});
    std::cout << util::json_text(out) << "\n";
    return;
  }
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const auto& p = prompts[i];
    std::cout << fmt::format("===== prompt {}/{}: {} ({}, ~{} tokens) =====\n", i + 1, prompts.size(), p.label,
                             prompt::prompt_kind(o), p.tokens());
    std::cout << "----- system -----\n" << p.system << "----- user -----\n" << p.user;
  }
}

} // namespace

void add_prompt_command(CLI::App& app) {
  auto a = std::make_shared<PromptArgs>();
  auto* cmd = app.add_subcommand("prompt", "Build the prompt(s) for a profiled application");
  add_profile_input_options(cmd, a->input);
  add_prompt_options(cmd, a->prompt);
  cmd->add_option("--out", a->out, "Also write each prompt's system and user parts into this folder");
  cmd->add_flag("--json", a->json, "Print the prompts as JSON");
  cmd->callback([a] { run_prompt(*a); });
}

} // namespace optimas::cli
