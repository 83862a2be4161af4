#include "propose/propose.hpp"

#include "analysis/application.hpp"

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

namespace optimas::propose {

std::string with_feedback(const std::string& user, const std::string& feedback) {
  if (feedback.empty()) return user;
  return user + "\n\n## Your previous reply was rejected\n\n" + feedback +
         "\n\nReply again in the same JSON format, with edits that fix these problems.\n";
}

Asked ask_backend(const std::vector<prompt::Prompt>& prompts, const std::string& feedback,
                  const nlohmann::json& context, llm::Backend& backend, const llm::BackendConfig& config,
                  llm::ResponseCache* cache, const AskSettings& settings) {
  const llm::PriceTable& prices = settings.prices ? *settings.prices : llm::PriceTable::builtin();
  Asked asked;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const auto& p = prompts[i];
    llm::Request req;
    req.system = p.system;
    req.prompt = with_feedback(p.user, feedback);
    req.response_schema = prompt::reply_schema();
    req.temperature = settings.temperature;
    req.max_tokens = settings.max_tokens;
    req.seed = settings.seed;
    req.timeout_s = settings.timeout_s;
    req.context = context;
    if (settings.before_each) settings.before_each(i, p);
    log::debug("asking {} ({}, {} kernel(s))", backend.name(), p.label, p.kernels.size());
    auto r = llm::complete_cached(backend, config, req, cache, settings.retry);
    if (auto* f = std::get_if<llm::Failure>(&r)) {
      if (f->kind == llm::FailureKind::awaiting_reply) throw PendingError(f->message);
      if (!settings.keep_going)
        throw Error(fmt::format("{} failed ({}): {}", backend.name(), llm::failure_kind_name(f->kind), f->message));
      log::error("{}: {} failure: {}", p.label, llm::failure_kind_name(f->kind), f->message);
      asked.replies.emplace_back();
      asked.results.push_back(std::move(r));
      continue;
    }
    auto& response = std::get<llm::Response>(r);
    // Priced here, once, for every caller: what a call costs is the table's business, not the caller's.
    llm::price(response.usage, config.provider, config.model, prices);
    asked.usage.add(response);
    asked.replies.push_back(response.text);
    asked.model = response.model;
    asked.results.push_back(std::move(r));
  }
  return asked;
}

std::vector<std::string> unknown_evidence(const prompt::Reply& reply, const analysis::Diagnostics& diagnostics) {
  std::set<std::string> known;
  for (const auto& e : diagnostics.evidence) known.insert(e.id);
  std::vector<std::string> unknown;
  for (const auto& e : reply.edits)
    for (const auto& id : e.evidence)
      if (!known.count(id)) unknown.push_back(id);
  return unknown;
}

namespace {

namespace fs = std::filesystem;

// Whether an applied edit of `app` changes line `line` of `file` (compared by file name; with one
// source file, any of its edits).
bool changed(const edit::Application& app, const std::string& file, int line) {
  const std::string name = fs::path(file).filename().string();
  for (const auto& o : app.outcomes) {
    if (!o.applied || line < o.first_line || line > o.last_line) continue;
    if (fs::path(o.file).filename().string() == name || app.original.size() == 1) return true;
  }
  return false;
}

// Whether an applied edit says it acts on item `id` (the builtin's `addresses`).
bool addressed(const prompt::Reply& reply, const edit::Application& app, const std::string& id) {
  for (const auto& o : app.outcomes)
    if (o.applied && o.index < reply.edits.size()) {
      const auto& a = reply.edits[o.index].addresses;
      if (std::find(a.begin(), a.end(), id) != a.end()) return true;
    }
  return false;
}

} // namespace

Coverage coverage(const prompt::Reply& reply, const edit::Application& app, const analysis::Diagnostics& d) {
  Coverage c;
  double hot = 0;
  for (const auto& k : d.kernels)
    if (k.stalls) hot += k.time.share;
  if (hot <= 0) return c;
  std::vector<Coverage::Item> left;
  for (const auto& k : d.kernels) {
    if (!k.stalls) continue;
    std::uint64_t stalled = 0;
    for (const auto& [stall, n] : k.stalls->kernel_stalls)
      if (profile::is_stalled(stall)) stalled += n;
    if (stalled == 0) continue;
    for (const auto& l : k.stalls->lines) {
      const double share = k.time.share / hot * static_cast<double>(l.stalled) / static_cast<double>(stalled);
      bool acted = changed(app, l.file, l.line) || addressed(reply, app, l.id);
      for (const auto& [file, line] : l.cause_lines()) acted = acted || changed(app, file, line);
      if (acted) {
        c.time_addressed += share;
        continue;
      }
      Coverage::Item item{l.id, fmt::format("{}:{}", fs::path(l.file).filename().string(), l.line), share,
                          "no edit acts on it"};
      for (const auto& w : reply.withheld)
        if (std::find(w.evidence.begin(), w.evidence.end(), l.id) != w.evidence.end()) {
          item.why = fmt::format("withheld: {} ({})", w.suggestion, w.reason);
          break;
        }
      left.push_back(std::move(item));
    }
  }
  std::stable_sort(left.begin(), left.end(), [](const auto& a, const auto& b) { return a.share > b.share; });
  if (left.size() > 3) left.resize(3);
  c.unaddressed = std::move(left);
  c.time_addressed = std::min(c.time_addressed, 1.0);
  return c;
}

std::string Coverage::text() const {
  std::string out = fmt::format("addresses {:.0f}% of the stalled samples", 100 * time_addressed);
  for (const auto& i : unaddressed) out += fmt::format("; {} {} ({:.0f}%): {}", i.id, i.where, 100 * i.share, i.why);
  return out;
}

nlohmann::json to_json(const Coverage& c) {
  nlohmann::json left = nlohmann::json::array();
  for (const auto& i : c.unaddressed)
    left.push_back({{"id", i.id}, {"where", i.where}, {"share", i.share}, {"why", i.why}});
  return {{"time_addressed", c.time_addressed}, {"unaddressed", left}, {"text", c.text()}};
}

bool acts_on_application(const Proposal& proposal) {
  for (const auto& oc : proposal.application.outcomes)
    for (const auto& id : oc.cited)
      if (oc.applied && id.rfind("AP", 0) == 0) return true;
  return false;
}

std::vector<std::string> hot_kernel_names(const analysis::Diagnostics& d) {
  std::vector<std::string> out;
  for (const auto& k : d.kernels) out.push_back(k.time.kernel.substr(0, k.time.kernel.find('<')));
  return out;
}

Proposal make_proposal(const std::vector<std::string>& replies, const analysis::Diagnostics& diagnostics,
                       const std::map<std::string, std::string>& sources,
                       const std::map<std::string, std::string>& paths, edit::Scope scope, bool code_only,
                       bool from_builtin) {
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
    for (auto& e : parsed.reply->edits) {
      if (!from_builtin) e.addresses.clear();
      p.reply.edits.push_back(std::move(e));
    }
    for (auto& w : parsed.reply->withheld) p.reply.withheld.push_back(std::move(w));
    p.reply.summary += (p.reply.summary.empty() ? "" : " ") + parsed.reply->summary;
  }
  std::set<std::string> known;
  for (const auto& e : diagnostics.evidence) known.insert(e.id);
  p.application = edit::apply_edits(sources, p.reply, known);
  edit::GuardrailOptions go;
  go.scope = scope;
  go.hot_kernels = hot_kernel_names(diagnostics);
  if (diagnostics.timeline) go.host_calls = analysis::application_calls(*diagnostics.timeline);
  go.code_only = code_only;
  for (const auto& k : diagnostics.kernels)
    if (k.stalls)
      for (const auto& l : k.stalls->lines)
        for (const auto& [file, line] : l.cause_lines()) go.cause_lines.push_back({l.id, file, line});
  p.violations = edit::check_guardrails(p.application, go);
  p.coverage = coverage(p.reply, p.application, diagnostics);
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

nlohmann::json to_json(const Proposal& p) {
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
                   {"rule", e.rule.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.rule)},
                   {"unknown_evidence", o.unknown_evidence}});
  }
  return out;
}

} // namespace optimas::propose
