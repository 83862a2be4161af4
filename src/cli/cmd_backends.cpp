// optimas backends: the registered model backends, their key variables, options and schema
// dialects (llm::describe_backends, from each backend's spec); with --check, one real request
// to a backend (llm/check.hpp) and what to change.
#include "cli/commands.hpp"

#include "cli/common.hpp"
#include "llm/backend.hpp"
#include "llm/check.hpp"
#include "llm/pricing.hpp"
#include "util/error.hpp"
#include "util/secrets.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <iostream>
#include <memory>

namespace optimas::cli {

namespace {

struct BackendsArgs {
  bool check = false;
  BackendChoice backend;
  llm::CheckOptions options;
  std::string prices;
  bool json = false;
};

void print_report(const llm::CheckReport& r) {
  std::string out = fmt::format("{}: check {}\n", r.backend, r.passed ? "passed" : "FAILED");
  auto line = [&out](std::string_view label, const std::string& text) {
    out += fmt::format("  {:<8} {}\n", label, text);
  };
  line("key", r.key + (r.key_variables.empty() ? "" : " (" + r.key_variables + ")"));
  if (r.dialect.empty())
    line("schema", r.schema);
  else
    line("schema", fmt::format("{} (dialect {}, strict: {}{})", r.schema, r.dialect, r.strict ? "true" : "false",
                               r.stripped.empty() ? "" : "; left out: " + util::join(r.stripped, ", ")));
  if (!r.answer.empty()) line("answer", r.answer);
  if (r.latency_s > 0) line("latency", fmt::format("{:.2f} s", r.latency_s));
  if (r.usage)
    line("tokens", fmt::format("{} in / {} out, {}", r.usage->input_tokens, r.usage->output_tokens,
                               r.usage->cost_known ? fmt::format("${:.4f}", r.usage->cost_usd)
                                                   : "cost unknown (not in the price table)"));
  if (r.failure) line("error", fmt::format("{}: {}", llm::failure_kind_name(r.failure->kind), r.failure->message));
  if (!r.advice.empty()) line(r.passed ? "note" : "to do", r.advice);
  // Every message is redacted where it is made; once more here, because this is what leaves.
  std::cout << util::redact(out);
}

void run_check(const BackendsArgs& a) {
  llm::BackendConfig config = backend_config(a.backend);
  llm::PriceTable prices = a.prices.empty() ? llm::PriceTable::builtin() : llm::PriceTable::with_overrides(a.prices);
  llm::CheckReport report = llm::check_backend(config, prices, a.options);
  if (a.json)
    std::cout << util::redact(llm::to_json(report).dump(2)) << "\n";
  else
    print_report(report);
  if (!report.passed) command_exit_code() = k_exit_error;
}

} // namespace

void add_backends_command(CLI::App& app) {
  auto a = std::make_shared<BackendsArgs>();
  auto* cmd = app.add_subcommand("backends", "List the model backends (name models provider/model), or check one");
  cmd->add_flag("--check", a->check,
                "Send one small real request with the reply schema to the backend named by -m: does the key work, "
                "does the API take the schema, how long, what cost; exits 1 when it fails");
  add_model_options(cmd, a->backend);
  cmd->add_option("--timeout", a->options.timeout_s, "Seconds for the check's request")->capture_default_str();
  cmd->add_option("--max-tokens", a->options.max_tokens, "Longest answer of the check, in tokens")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--prices", a->prices, "A price table (YAML) overriding the built-in one")->check(CLI::ExistingFile);
  cmd->add_flag("--json", a->json, "Print the check as JSON");
  cmd->callback([a] {
    if (a->check)
      run_check(*a);
    else
      std::cout << llm::describe_backends();
  });
}

} // namespace optimas::cli
