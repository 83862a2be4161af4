// optimas apply: a run's accepted variant copied into the application's sources
// (store/apply_run.hpp); this file parses and prints.
#include "cli/commands.hpp"

#include "cli/options.hpp"
#include "store/apply_run.hpp"

#include <fmt/format.h>

#include <iostream>

namespace optimas::cli {

namespace {

struct ApplyArgs {
  std::string root;
  std::string id;
  std::string variant;
  bool force = false;
};

void apply_run(const ApplyArgs& a) {
  store::RunStore st(a.root);
  auto applied = store::apply_variant(st, a.id, a.variant, a.force);
  for (const auto& [from, to] : applied.copies) std::cout << fmt::format("applied {} -> {}\n", from, to);
  std::cout << fmt::format("variant {} of run {} is now in {}; the diff is in {}\n", applied.key, applied.run_id,
                           applied.app_dir, applied.diff);
}

} // namespace

void add_apply_command(CLI::App& app) {
  auto a = std::make_shared<ApplyArgs>();
  auto* cmd = app.add_subcommand("apply", "Copy a run's accepted variant into the application's sources");
  add_option(cmd, "runs_dir", a->root);
  cmd->add_option("id", a->id, "Run id or unique prefix")->required();
  cmd->add_option("--variant", a->variant, "Variant key (default: the run's best)");
  cmd->add_flag("--force", a->force, "Apply a variant that was not accepted, or over changed files");
  cmd->callback([a] { apply_run(*a); });
}

} // namespace optimas::cli
