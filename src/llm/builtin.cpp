// The builtin backend: the rule-based optimizer of src/builtin/ (builtin/optimizer.hpp; its rules
// in builtin/rule_table.cpp) answering as a model would, from the request's structured
// diagnostics and sources. It needs no model and no network, and is the default.
#include "llm/backend.hpp"

#include "builtin/optimizer.hpp"
#include "prompt/reply.hpp"

#include <map>

namespace optimas::llm {

using nlohmann::json;

namespace {

const OptionSpec k_allow_fp_changes = {"allow_fp_changes", "also apply rules that can change floating-point results",
                                       "false", false, util::OptionKind::flag};

class BuiltinBackend : public Backend {
public:
  explicit BuiltinBackend(const BackendConfig& c) {
    m_allow_fp_changes = util::option_flag(c.options, k_allow_fp_changes);
  }

  std::string name() const override { return "builtin"; }

  Result complete(const Request& request) override {
    const json& ctx = request.context;
    if (!ctx.is_object() || !ctx.contains("diagnostics") || !ctx.contains("sources"))
      return Failure{FailureKind::bad_request,
                     "the builtin optimizer works from the structured diagnostics and sources, which this request "
                     "lacks (use optimas optimize or optimas ask)"};
    auto sources = ctx["sources"].get<std::map<std::string, std::string>>();
    // A search's later candidates (optimize.candidates) get the rules that fire, each alone.
    const int alternative = ctx.value("candidate", 1) - 1;
    // The application's other files, where the kernels' launches and declarations may be.
    std::map<std::string, std::string> host;
    if (ctx.contains("host_sources") && ctx["host_sources"].is_object())
      host = ctx["host_sources"].get<std::map<std::string, std::string>>();
    // optimize.scope application: the application rules edit host code too.
    const bool application = ctx.value("scope", "") == "application";
    prompt::Reply reply =
        builtin::propose(ctx["diagnostics"], sources, m_allow_fp_changes, alternative, host, application);
    Response out;
    out.text = prompt::to_json(reply).dump(2);
    out.model = "builtin";
    out.raw = out.text;
    out.usage.cost_known = true;
    return out;
  }

private:
  // Rules that change floating-point results run only when this is set.
  bool m_allow_fp_changes = false;
};

} // namespace

std::unique_ptr<Backend> make_builtin(const BackendConfig& config) {
  return std::make_unique<BuiltinBackend>(config);
}

BackendSpec builtin_backend() {
  return {.name = "builtin",
          .description = "Deterministic rule-based optimizer: no model, no network (the default)",
          .options = {k_allow_fp_changes},
          .make = make_builtin,
          .cache_answers = false}; // deterministic and instant: a cached answer saves nothing
}

} // namespace optimas::llm
