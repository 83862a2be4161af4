#include "loop/propose.hpp"

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <set>

namespace optimas::loop {

std::string with_feedback(const std::string& user, const std::string& feedback) {
  if (feedback.empty()) return user;
  return user + "\n\n## Your previous reply was rejected\n\n" + feedback +
         "\n\nReply again in the same JSON format, with edits that fix these problems.\n";
}

Asked ask_backend(const std::vector<prompt::Prompt>& prompts, const std::string& feedback,
                  const nlohmann::json& context, llm::Backend& backend, const llm::BackendConfig& config,
                  llm::ResponseCache* cache) {
  Asked asked;
  for (const auto& p : prompts) {
    llm::Request req;
    req.system = p.system;
    req.prompt = with_feedback(p.user, feedback);
    req.response_schema = prompt::reply_schema();
    req.context = context;
    log::debug("asking {} ({}, {} kernel(s))", backend.name(), p.label, p.kernels.size());
    auto r = llm::complete_cached(backend, config, req, cache, {});
    if (!llm::ok(r)) {
      const auto& f = std::get<llm::Failure>(r);
      if (f.kind == llm::FailureKind::awaiting_reply) throw PendingError(f.message);
      throw Error(fmt::format("{} failed ({}): {}", backend.name(), llm::failure_kind_name(f.kind), f.message));
    }
    const auto& response = std::get<llm::Response>(r);
    asked.replies.push_back(response.text);
    asked.usage.input_tokens += response.usage.input_tokens;
    asked.usage.output_tokens += response.usage.output_tokens;
    asked.usage.cost_usd += response.usage.cost_usd;
    asked.usage.cost_known = asked.usage.cost_known || response.usage.cost_known;
    asked.model = response.model;
  }
  return asked;
}

std::vector<std::string> hot_kernel_names(const analysis::Diagnostics& d) {
  std::vector<std::string> out;
  for (const auto& k : d.kernels) out.push_back(k.time.kernel.substr(0, k.time.kernel.find('<')));
  return out;
}

Proposal make_proposal(const std::vector<std::string>& replies, const analysis::Diagnostics& diagnostics,
                       const std::map<std::string, std::string>& sources,
                       const std::map<std::string, std::string>& paths, edit::Scope scope) {
  Proposal p;
  for (std::size_t i = 0; i < replies.size(); ++i) {
    auto parsed = prompt::parse_reply(replies[i]);
    std::string where = replies.size() > 1 ? fmt::format("reply {}: ", i + 1) : "";
    if (!parsed.ok()) {
      for (const auto& e : parsed.errors) p.parse_errors.push_back(where + e);
      if (parsed.errors.empty()) p.parse_errors.push_back(where + "the reply holds no JSON document");
      continue;
    }
    if (parsed.reply->full_source) {
      p.parse_errors.push_back(where + "the reply is a whole source file, not structured edits citing evidence");
      continue;
    }
    for (auto& e : parsed.reply->edits) p.reply.edits.push_back(std::move(e));
    for (auto& w : parsed.reply->withheld) p.reply.withheld.push_back(std::move(w));
    p.reply.summary += (p.reply.summary.empty() ? "" : " ") + parsed.reply->summary;
  }
  std::set<std::string> known;
  for (const auto& e : diagnostics.evidence) known.insert(e.id);
  p.application = edit::apply_edits(sources, p.reply, known);
  edit::GuardrailOptions go;
  go.scope = scope;
  go.hot_kernels = hot_kernel_names(diagnostics);
  p.violations = edit::check_guardrails(p.application, go);
  for (const auto& [name, text] : p.application.result) {
    auto path = paths.find(name);
    p.diff += edit::unified_diff(p.application.original.at(name), text, path == paths.end() ? name : path->second);
  }
  return p;
}

std::string Proposal::feedback() const {
  std::vector<std::string> lines;
  for (const auto& e : parse_errors) lines.push_back("- reply: " + e);
  for (const auto& v : violations) lines.push_back(fmt::format("- guardrail {}: {}", v.rule, v.message));
  for (const auto& o : application.outcomes)
    if (!o.applied) lines.push_back(fmt::format("- edit {} was not applied: {}", o.index + 1, o.reason));
  if (lines.empty() && application.applied() == 0) lines.push_back("- the reply has no edit that could be applied");
  if (usable()) return {};
  return util::join(lines, "\n");
}

nlohmann::json outcomes_json(const Proposal& p) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& o : p.application.outcomes) {
    const auto& e = p.reply.edits[o.index];
    out.push_back({{"edit", o.index + 1},
                   {"applied", o.applied},
                   {"reason", o.reason},
                   {"file", o.file},
                   {"kernel", e.kernel},
                   {"lines", {o.first_line, o.last_line}},
                   {"evidence", e.evidence},
                   {"rationale", e.rationale},
                   {"unknown_evidence", o.unknown_evidence}});
  }
  return out;
}

} // namespace optimas::loop
