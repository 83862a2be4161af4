// optimas ask: prompt -> backend -> parsed, validated edits. Every answer is cached by content,
// so the same question replays offline; every call's tokens and cost are counted.
#include "cli/commands.hpp"

#include "analysis/diagnostics.hpp"
#include "cli/common.hpp"
#include "llm/backend.hpp"
#include "llm/cache.hpp"
#include "llm/pricing.hpp"
#include "llm/retry.hpp"
#include "prompt/builder.hpp"
#include "prompt/reply.hpp"
#include "util/secrets.hpp"

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

struct AskArgs {
  ProfileInput input;
  BackendChoice backend;
  PromptChoice prompt;
  double temperature = 0.15;
  int max_tokens = 8192;
  std::int64_t seed = -1;
  double timeout_s = 300;
  int attempts = 5;
  std::string prices;
  std::string out;
  bool json = false;
};

void run_ask(const AskArgs& a) {
  auto prepared = prepare_prompts(a.input, a.prompt);
  const auto& po = prepared.options;
  const auto& prompts = prepared.prompts;
  const auto& diagnostics = prepared.diagnostics;
  const auto context = structured_context(diagnostics, read_sources(prepared.loaded.app));
  std::set<std::string> known_ids;
  for (const auto& e : diagnostics.evidence) known_ids.insert(e.id);

  llm::BackendConfig bc = backend_config(a.backend);
  auto backend = llm::make_backend(bc);
  std::optional<llm::ResponseCache> cache;
  if (cached(a.backend, bc)) cache.emplace(a.backend.cache_dir);
  llm::PriceTable prices = a.prices.empty() ? llm::PriceTable::builtin() : llm::PriceTable::with_overrides(a.prices);
  llm::RetryPolicy policy;
  policy.max_attempts = a.attempts;

  llm::UsageTotals totals;
  nlohmann::json results = nlohmann::json::array();
  bool all_ok = true;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const auto& p = prompts[i];
    llm::Request req;
    req.system = p.system;
    req.prompt = p.user;
    req.response_schema = prompt::reply_schema();
    req.temperature = a.temperature;
    req.max_tokens = a.max_tokens;
    if (a.seed >= 0) req.seed = a.seed;
    req.timeout_s = a.timeout_s;
    req.context = context;
    log::info("[{}/{}] {}: asking {} ({}, ~{} tokens)", i + 1, prompts.size(), p.label, backend->name(),
              prompt::prompt_kind(po), p.tokens());
    llm::Result r = llm::complete_cached(*backend, bc, req, cache ? &*cache : nullptr, policy);
    nlohmann::json entry = {{"prompt", p.label}, {"kind", prompt::prompt_kind(po)}, {"backend", backend->name()}};
    if (!llm::ok(r)) {
      const auto& f = std::get<llm::Failure>(r);
      if (f.kind == llm::FailureKind::awaiting_reply) throw PendingError(f.message);
      entry["failure"] = {{"kind", std::string(llm::failure_kind_name(f.kind))},
                          {"message", f.message},
                          {"http_status", f.http_status}};
      log::error("{}: {} failure: {}", p.label, llm::failure_kind_name(f.kind), f.message);
      all_ok = false;
      results.push_back(entry);
      continue;
    }
    auto response = std::get<llm::Response>(r);
    llm::price(response.usage, bc.provider, bc.model, prices);
    totals.add(response);
    auto parsed = prompt::parse_reply(response.text);
    std::vector<std::string> unknown;
    if (parsed.reply)
      for (const auto& e : parsed.reply->edits)
        for (const auto& id : e.evidence)
          if (!known_ids.count(id)) unknown.push_back(id);
    entry["attempts"] = response.attempts;
    entry["from_cache"] = response.from_cache;
    entry["usage"] = {
        {"input_tokens", response.usage.input_tokens},
        {"output_tokens", response.usage.output_tokens},
        {"cost_usd", response.usage.cost_known ? nlohmann::json(response.usage.cost_usd) : nlohmann::json(nullptr)}};
    entry["format"] = parsed.format;
    entry["errors"] = parsed.errors;
    entry["unknown_evidence_ids"] = unknown;
    if (parsed.reply) entry["reply"] = prompt::to_json(*parsed.reply);
    all_ok = all_ok && parsed.ok();
    if (!a.out.empty()) {
      fs::create_directories(a.out);
      auto base = (fs::path(a.out) / fmt::format("prompt-{}", i + 1)).string();
      util::write_file(base + ".system.md", p.system);
      util::write_file(base + ".user.md", p.user);
      util::write_file(base + ".reply.txt", util::redact(response.text));
      util::write_file(base + ".result.json", util::json_text(entry) + "\n");
    }
    if (!a.json) {
      std::cout << fmt::format("prompt {}/{} ({}): {} answered{} in {} attempt(s); {} in / {} out tokens{}\n", i + 1,
                               prompts.size(), p.label, response.model.empty() ? backend->name() : response.model,
                               response.from_cache ? " from the cache" : "", response.attempts,
                               response.usage.input_tokens, response.usage.output_tokens,
                               response.usage.cost_known ? fmt::format(", ${:.4f}", response.usage.cost_usd) : "");
      if (!parsed.ok()) {
        std::cout << fmt::format("  the reply does not follow the schema ({}):\n", parsed.format);
        for (const auto& e : parsed.errors) std::cout << "    " << e << "\n";
      } else if (parsed.reply->full_source) {
        std::cout << "  the reply is a whole source file in a code block (no structured edits)\n";
      } else {
        std::cout << fmt::format("  {} edit(s), {} withheld: {}\n", parsed.reply->edits.size(),
                                 parsed.reply->withheld.size(), parsed.reply->summary);
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
    }
    results.push_back(std::move(entry));
  }
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
