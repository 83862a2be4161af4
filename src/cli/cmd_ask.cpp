// optimas ask: prompt -> backend -> parsed, validated edits, through the engine's ask path
// (propose::ask_backend: cache, retries, prices and totals as `optimize` and `run` have them).
// This file parses options and prints.
#include "cli/commands.hpp"

#include "analysis/diagnostics.hpp"
#include "cli/common.hpp"
#include "llm/backend.hpp"
#include "llm/cache.hpp"
#include "llm/pricing.hpp"
#include "prompt/builder.hpp"
#include "prompt/reply.hpp"
#include "propose/propose.hpp"
#include "util/secrets.hpp"

#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <optional>

namespace optimas::cli {

namespace fs = std::filesystem;

namespace {

// The defaults are the loop's own, so that `ask` asks as `run` does.
const propose::AskSettings k_loop_asks;

struct AskArgs {
  ProfileInput input;
  BackendChoice backend;
  PromptChoice prompt;
  double temperature = k_loop_asks.temperature;
  int max_tokens = k_loop_asks.max_tokens;
  std::int64_t seed = -1;
  double timeout_s = k_loop_asks.timeout_s;
  int attempts = k_loop_asks.retry.max_attempts;
  std::string prices;
  std::string out;
  bool json = false;
};

// One prompt's result as JSON (what --json prints and --out keeps).
nlohmann::json answer_json(const prompt::Prompt& p, const std::string& kind, const std::string& backend,
                           const llm::Result& r, const prompt::ParsedReply* parsed,
                           const std::vector<std::string>& unknown) {
  nlohmann::json entry = {{"prompt", p.label}, {"kind", kind}, {"backend", backend}};
  if (const auto* f = std::get_if<llm::Failure>(&r)) {
    entry["failure"] = {{"kind", std::string(llm::failure_kind_name(f->kind))},
                        {"message", f->message},
                        {"http_status", f->http_status}};
    return entry;
  }
  const auto& response = std::get<llm::Response>(r);
  entry["attempts"] = response.attempts;
  entry["from_cache"] = response.from_cache;
  entry["usage"] = {
      {"input_tokens", response.usage.input_tokens},
      {"output_tokens", response.usage.output_tokens},
      {"cost_usd", response.usage.cost_known ? nlohmann::json(response.usage.cost_usd) : nlohmann::json(nullptr)}};
  entry["format"] = parsed->format;
  entry["errors"] = parsed->errors;
  entry["unknown_evidence_ids"] = unknown;
  if (parsed->reply) entry["reply"] = prompt::to_json(*parsed->reply);
  return entry;
}

void print_answer(std::size_t i, std::size_t n, const prompt::Prompt& p, const std::string& backend,
                  const llm::Response& response, const prompt::ParsedReply& parsed,
                  const std::vector<std::string>& unknown) {
  std::cout << fmt::format("prompt {}/{} ({}): {} answered{} in {} attempt(s); {} in / {} out tokens{}\n", i + 1, n,
                           p.label, response.model.empty() ? backend : response.model,
                           response.from_cache ? " from the cache" : "", response.attempts, response.usage.input_tokens,
                           response.usage.output_tokens,
                           response.usage.cost_known ? fmt::format(", ${:.4f}", response.usage.cost_usd) : "");
  if (!parsed.ok()) {
    std::cout << fmt::format("  the reply does not follow the schema ({}):\n", parsed.format);
    for (const auto& e : parsed.errors) std::cout << "    " << e << "\n";
    return;
  }
  if (parsed.reply->full_source) {
    std::cout << "  the reply is a whole source file in a code block (no structured edits)\n";
    return;
  }
  std::cout << fmt::format("  {} edit(s), {} withheld: {}\n", parsed.reply->edits.size(), parsed.reply->withheld.size(),
                           parsed.reply->summary);
  for (std::size_t k = 0; k < parsed.reply->edits.size(); ++k) {
    const auto& e = parsed.reply->edits[k];
    std::cout << fmt::format("  [{}] {} {} {} cites {}: {}\n", k + 1, e.file, e.kernel,
                             e.is_range() ? fmt::format("lines {}-{}", e.line_start, e.line_end) : "find/replace",
                             e.evidence.empty() ? "nothing" : util::join(e.evidence, ","), e.rationale);
  }
  for (const auto& w : parsed.reply->withheld)
    std::cout << fmt::format("  withheld: {} ({})\n", w.suggestion, w.reason);
  if (!unknown.empty()) std::cout << "  cites unknown evidence IDs: " << util::join(unknown, ", ") << "\n";
}

void write_answer(const std::string& dir, std::size_t i, const prompt::Prompt& p, const llm::Response& response,
                  const nlohmann::json& entry) {
  fs::create_directories(dir);
  auto base = (fs::path(dir) / fmt::format("prompt-{}", i + 1)).string();
  util::write_file(base + ".system.md", p.system);
  util::write_file(base + ".user.md", p.user);
  util::write_file(base + ".reply.txt", util::redact(response.text));
  util::write_file(base + ".result.json", util::json_text(entry) + "\n");
}

void run_ask(const AskArgs& a) {
  auto prepared = propose::prepare_prompts(a.input, a.prompt);
  const auto& prompts = prepared.prompts;
  const std::string kind = prompt::prompt_kind(prepared.options);
  llm::BackendConfig bc = backend_config(a.backend);
  auto backend = llm::make_backend(bc);
  std::optional<llm::ResponseCache> cache;
  if (cached(a.backend, bc)) cache.emplace(a.backend.cache_dir);
  llm::PriceTable prices = a.prices.empty() ? llm::PriceTable::builtin() : llm::PriceTable::with_overrides(a.prices);

  // The engine's ask path (propose/propose.hpp), as `optimize` and `run` take it.
  propose::AskSettings settings;
  settings.temperature = a.temperature;
  settings.max_tokens = a.max_tokens;
  if (a.seed >= 0) settings.seed = a.seed;
  settings.timeout_s = a.timeout_s;
  settings.retry.max_attempts = a.attempts;
  settings.prices = &prices;
  settings.keep_going = true;
  settings.before_each = [&](std::size_t i, const prompt::Prompt& p) {
    log::info("[{}/{}] {}: asking {} ({}, ~{} tokens)", i + 1, prompts.size(), p.label, backend->name(), kind,
              p.tokens());
  };
  const auto context = propose::structured_context(
      prepared.diagnostics, propose::read_sources(prepared.loaded.app),
      propose::read_host_sources(prepared.loaded.app, prepared.loaded.app.dir), prepared.loaded.app.optimize.scope);
  auto asked = propose::ask_backend(prompts, "", context, *backend, bc, cache ? &*cache : nullptr, settings);

  nlohmann::json results = nlohmann::json::array();
  bool all_ok = true;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const auto* response = std::get_if<llm::Response>(&asked.results[i]);
    std::optional<prompt::ParsedReply> parsed;
    std::vector<std::string> unknown;
    if (response) {
      parsed = prompt::parse_reply(response->text);
      if (parsed->reply) unknown = propose::unknown_evidence(*parsed->reply, prepared.diagnostics);
    }
    auto entry = answer_json(prompts[i], kind, backend->name(), asked.results[i], parsed ? &*parsed : nullptr, unknown);
    all_ok = all_ok && parsed && parsed->ok();
    if (response && !a.out.empty()) write_answer(a.out, i, prompts[i], *response, entry);
    if (response && !a.json) print_answer(i, prompts.size(), prompts[i], backend->name(), *response, *parsed, unknown);
    results.push_back(std::move(entry));
  }
  const auto& totals = asked.usage;
  nlohmann::json summary = {
      {"calls", totals.calls},
      {"cached_calls", totals.cached_calls},
      {"input_tokens", totals.input_tokens},
      {"output_tokens", totals.output_tokens},
      {"cost_usd", totals.cost_known ? nlohmann::json(totals.cost_usd) : nlohmann::json(nullptr)}};
  if (a.json)
    std::cout << util::json_text(nlohmann::json{{"results", results}, {"totals", summary}}) << "\n";
  else
    std::cout << fmt::format("total: {} call(s), {} from the cache, {} in / {} out tokens{}\n", totals.calls,
                             totals.cached_calls, totals.input_tokens, totals.output_tokens,
                             totals.cost_known ? fmt::format(", ${:.4f}", totals.cost_usd) : ", cost unknown");
  if (!all_ok) throw Error("not every reply could be used (see above); nothing was applied");
}

} // namespace

void add_ask_command(CLI::App& app) {
  auto a = std::make_shared<AskArgs>();
  auto* cmd = app.add_subcommand("ask", "Ask a backend for evidence-citing edits and check its reply");
  add_profile_input_options(cmd, a->input);
  add_backend_options(cmd, a->backend);
  add_prompt_options(cmd, a->prompt);
  cmd->add_option("--temperature", a->temperature, "Sampling temperature")->capture_default_str();
  cmd->add_option("--max-tokens", a->max_tokens, "Longest answer, in tokens")->capture_default_str();
  cmd->add_option("--seed", a->seed, "Sampling seed, where the provider supports one");
  cmd->add_option("--timeout", a->timeout_s, "Seconds per HTTP attempt")->capture_default_str();
  cmd->add_option("--attempts", a->attempts, "Attempts per call (retries on 429, 5xx, timeouts)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--prices", a->prices, "A price table (YAML) overriding the built-in one")->check(CLI::ExistingFile);
  cmd->add_option("--out", a->out, "Write each prompt, reply and result into this folder");
  cmd->add_flag("--json", a->json, "Print the results as JSON");
  cmd->callback([a] { run_ask(*a); });
}

} // namespace optimas::cli
