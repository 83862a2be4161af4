// optimas prompt: the prompt(s) for a profiled application, for any diagnostic subset or the
// code-only baseline.
#include "cli/commands.hpp"

#include "analysis/diagnostics.hpp"
#include "cli/common.hpp"
#include "prompt/builder.hpp"

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
  std::string diagnostics = "pc,ia,roofline";
  bool code_only = false;
  std::string template_path;
  std::size_t token_budget = 32000;
  std::string out;
  bool json = false;
};

void run_prompt(const PromptArgs& a) {
  auto loaded = load_profile_and_app(a.input);
  prompt::PromptOptions o;
  o.code_only = a.code_only;
  o.sources = analysis::parse_sources(a.diagnostics);
  o.token_budget = a.token_budget;
  if (!a.template_path.empty()) o.template_text = util::read_file(a.template_path);
  auto d = analysis::analyze(loaded.profile, loaded.analysis);
  auto prompts = prompt::build_prompts(loaded.app, d, o);
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
    std::cout << out.dump(2) << "\n";
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
  cmd->add_option("--diagnostics", a->diagnostics, "Evidence to include: any of pc, ia, roofline, or all")
      ->capture_default_str();
  cmd->add_flag("--code-only", a->code_only, "The baseline: the kernels without diagnostics");
  cmd->add_option("--template", a->template_path, "A prompt template file (default: the built-in one)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--token-budget", a->token_budget,
                  "Split prompts larger than this many tokens (about 4 characters each)")
      ->capture_default_str();
  cmd->add_option("--out", a->out, "Also write each prompt's system and user parts into this folder");
  cmd->add_flag("--json", a->json, "Print the prompts as JSON");
  cmd->callback([a] { run_prompt(*a); });
}

} // namespace optimas::cli
