// optimas optimize: from a profile and a backend (builtin by default) to a variant source and
// its diff, checked by the guardrails — without running anything. --compile builds the variant
// in its own copy of the application, through the sandbox (propose/variant.hpp).
#include "cli/commands.hpp"

#include "analysis/diagnostics.hpp"
#include "analysis/json.hpp"
#include "cli/common.hpp"
#include "cli/options.hpp"
#include "edit/apply.hpp"
#include "edit/guardrails.hpp"
#include "llm/backend.hpp"
#include "llm/cache.hpp"
#include "llm/retry.hpp"
#include "prompt/builder.hpp"
#include "prompt/reply.hpp"
#include "propose/propose.hpp"
#include "propose/variant.hpp"

#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <set>

namespace optimas::cli {

namespace fs = std::filesystem;

namespace {

struct OptimizeArgs {
  ProfileInput input;
  BackendChoice backend;
  PromptChoice prompt; // prompt.scope: --scope, else optimas.yml's
  std::string out = "optimas-variant";
  bool compile = false;
  bool json = false;
};

void run_optimize(const OptimizeArgs& a) {
  auto prepared = propose::prepare_prompts(a.input, a.prompt);
  const auto& loaded = prepared.loaded;
  const auto& d = prepared.diagnostics;
  const auto& prompts = prepared.prompts;
  if (d.kernels.empty()) throw Error("the profile has no hot kernel to optimize");
  const auto sources = propose::read_sources(loaded.app);
  std::map<std::string, std::string> paths;
  for (const auto& f : loaded.app.sources) paths[fs::path(f).filename().string()] = f;

  llm::BackendConfig bc = backend_config(a.backend);
  auto backend = llm::make_backend(bc);
  std::optional<llm::ResponseCache> cache;
  if (cached(a.backend, bc)) cache.emplace(a.backend.cache_dir);

  // One reply per prompt; their edits are applied together.
  auto asked = propose::ask_backend(prompts, "",
                                    propose::structured_context(d, sources,
                                                                propose::read_host_sources(loaded.app, loaded.app.dir),
                                                                loaded.app.optimize.scope),
                                    *backend, bc, cache ? &*cache : nullptr);
  // The scope the prompt stated is the one the guardrails check.
  auto proposal = propose::make_proposal(asked.replies, d, sources, paths, edit::parse_scope(loaded.app.optimize.scope),
                                         prepared.options.code_only, bc.provider == "builtin");
  if (!proposal.parse_errors.empty())
    throw Error(fmt::format("the reply of {} cannot be used:\n  {}", backend->name(),
                            util::join(proposal.parse_errors, "\n  ")));
  const auto& merged = proposal.reply;
  const auto& app = proposal.application;
  const auto& violations = proposal.violations;
  const std::string& diff = proposal.diff;

  // The variant: a copy of the application folder with the edited sources. The user's tree is
  // not touched.
  fs::path out(a.out);
  fs::path variant = out / "variant";
  fs::create_directories(out);
  std::map<std::string, std::string> edited;
  for (const auto& s : loaded.app.sources) edited[s] = app.result.at(fs::path(s).filename().string());
  propose::write_variant(loaded.app, edited, variant.string());
  util::write_file((out / "diff.patch").string(), diff);
  util::write_file((out / "reply.json").string(), util::json_text(prompt::to_json(merged)) + "\n");

  nlohmann::json result = {{"backend", backend->name()},
                           {"edits", merged.edits.size()},
                           {"applied", app.applied()},
                           {"not_applied", app.not_applied()},
                           {"withheld", merged.withheld.size()}};
  result["outcomes"] = propose::to_json(proposal);
  result["violations"] = edit::to_json(violations);
  result["coverage"] = propose::to_json(proposal.coverage);
  result["time_addressed"] = proposal.coverage.time_addressed;
  result["accepted"] = violations.empty() && app.applied() > 0;
  result["variant"] = variant.string();

  if (a.compile && violations.empty()) {
    auto b = propose::build_variant(loaded.app, variant.string(), (out / "build.log").string());
    result["compiled"] = b.ok;
    result["build"] = {{"command", loaded.app.build_command}, {"result", b.result}, {"log", b.log}};
  }
  util::write_file((out / "result.json").string(), util::json_text(result) + "\n");

  if (a.json) {
    std::cout << util::json_text(result) << "\n";
  } else {
    std::cout << fmt::format("{}: {} edit(s), {} applied, {} not applied, {} withheld\n", backend->name(),
                             merged.edits.size(), app.applied(), app.not_applied(), merged.withheld.size());
    for (const auto& o : app.outcomes) {
      const auto& e = merged.edits[o.index];
      std::cout << fmt::format("  [{}] {} {} cites {}: {}\n", o.index + 1,
                               o.applied ? "applied" : "NOT applied:", o.applied ? o.file : o.reason,
                               e.evidence.empty() ? "nothing" : util::join(e.evidence, ","), e.rationale);
    }
    for (const auto& w : merged.withheld) std::cout << fmt::format("  withheld: {} ({})\n", w.suggestion, w.reason);
    for (const auto& v : violations) std::cout << "  REJECTED (" << v.rule << "): " << v.message << "\n";
    std::cout << "  " << proposal.coverage.text() << "\n";
    std::cout << diff;
    if (result.contains("compiled"))
      std::cout << fmt::format("build: {} ({})\n", result["compiled"].get<bool>() ? "ok" : "FAILED",
                               result["build"]["result"].get<std::string>());
    std::cout << fmt::format("variant in {} (diff.patch, reply.json, result.json beside it)\n", variant.string());
  }
  if (!violations.empty()) throw Error("the reply was rejected by the guardrails (see above)");
  if (app.applied() == 0) {
    // No variant differs from the application: not a success a script should take for one.
    log::warn("no edit was applied ({} proposed, {} withheld): the variant is the application unchanged",
              merged.edits.size(), merged.withheld.size());
    command_exit_code() = k_exit_no_improvement;
  }
  if (result.contains("compiled") && !result["compiled"].get<bool>())
    throw Error(fmt::format("the variant does not build; see {}", (out / "build.log").string()));
}

} // namespace

void add_optimize_command(CLI::App& app) {
  auto a = std::make_shared<OptimizeArgs>();
  auto* cmd = app.add_subcommand("optimize",
                                 "Produce a variant source and its diff from a profile and a backend (runs nothing)");
  add_profile_input_options(cmd, a->input);
  add_backend_options(cmd, a->backend);
  add_prompt_options(cmd, a->prompt);
  // Set only when given, so that optimas.yml's optimize.scope holds otherwise.
  add_option(cmd, "scope", a->prompt.scope);
  a->prompt.scope.clear();
  cmd->add_option("-o,--out", a->out, "Folder for the variant, its diff and the results")->capture_default_str();
  cmd->add_flag("--compile", a->compile,
                "Build the variant with the application's build command, in the sandbox (no API keys)");
  cmd->add_flag("--json", a->json, "Print the result as JSON");
  cmd->callback([a] { run_optimize(*a); });
}

} // namespace optimas::cli
