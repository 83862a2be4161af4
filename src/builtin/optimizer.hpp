// The builtin optimizer: a deterministic rule-based optimizer that needs no model. Each rule of
// the table (rule_table.cpp) maps evidence to a source transformation, as an expert would; the
// answer is the same reply a model gives, so it flows through the same parser, guardrails and
// metrics. A rule whose evidence is absent stays silent; a rule that fires says why and cites
// the evidence. llm/builtin.cpp is the backend that answers with it.
#pragma once

#include "prompt/reply.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace optimas::builtin {

// The edits the rules propose for every hot kernel of `diagnostics` (the analysis JSON, hottest
// first), in `sources` (file name -> text). Rules that change floating-point results apply only
// with `allow_fp_changes`; otherwise they are listed as withheld.
//
// `alternative` k > 0 is a search's k-th other candidate (optimize.candidates): the k-th rule
// that fires with all of them (in table order, for any kernel), alone, so a combination that
// measured slower can be taken apart. Past the last such rule, or where only one fires: no edit,
// and the summary says so.
//
// `host` holds the application's other files (path -> text), read for the kernels' launches and
// declarations only: nothing in them is edited.
//
// `application`: optimize.scope is application, so the application rules (application_rule_table)
// also run, editing the host code of `sources` where the AP items point.
prompt::Reply propose(const nlohmann::json& diagnostics, const std::map<std::string, std::string>& sources,
                      bool allow_fp_changes, int alternative = 0, const std::map<std::string, std::string>& host = {},
                      bool application = false);

// How many alternatives propose() offers for these diagnostics (0 when fewer than two rules
// fire): a search's later candidates, which cost no model call.
int alternatives(const nlohmann::json& diagnostics, const std::map<std::string, std::string>& sources,
                 bool allow_fp_changes, const std::map<std::string, std::string>& host = {}, bool application = false);

} // namespace optimas::builtin
