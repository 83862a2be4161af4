// optimas corpus export: the optimization corpus (store/corpus.hpp, docs/corpus.md).
#include "cli/commands.hpp"

#include "cli/options.hpp"
#include "store/corpus.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <iostream>

namespace optimas::cli {

void add_corpus_command(CLI::App& app) {
  auto root = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>("-");
  auto opts = std::make_shared<store::CorpusOptions>();
  auto* cmd = app.add_subcommand("corpus", "The optimization corpus (docs/corpus.md)");
  cmd->require_subcommand(1);
  auto* ex = cmd->add_subcommand("export", "Write one JSON line per run, variant and input configuration");
  add_option(ex, "runs_dir", *root);
  ex->add_option("runs", opts->runs, "Run ids or prefixes (default: every run)");
  ex->add_option("-o,--out", *out, "Output file (- for stdout)")->capture_default_str();
  ex->add_flag("--all-variants", opts->all_variants, "Every measured variant, not only each run's best");
  ex->callback([=] {
    store::RunStore st(*root);
    if (*out == "-") {
      log::info("{} record(s)", store::export_corpus(st, *opts, std::cout));
      return;
    }
    std::cout << fmt::format("{} record(s) in {}\n", store::export_corpus_file(st, *opts, *out), *out);
  });
}

} // namespace optimas::cli
