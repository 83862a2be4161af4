// What the builtin rules' tests share: the builtin backend's reply for one kernel's diagnostics
// and source, the edits and withheld suggestions of one rule, a search candidate's single rule,
// and the source with a reply's edits applied.
#pragma once

#include "edit/apply.hpp"
#include "llm/backend.hpp"
#include "prompt/reply.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace optimas::test {

// The builtin's reply; a search's candidate > 1 gets one firing rule alone.
inline prompt::Reply ask(const nlohmann::json& k, const std::string& file, const std::string& src, int candidate = 1) {
  auto backend = llm::make_backend(llm::parse_model("builtin"));
  llm::Request r;
  r.context = {
      {"diagnostics", {{"kernels", nlohmann::json::array({k})}}}, {"sources", {{file, src}}}, {"candidate", candidate}};
  auto result = backend->complete(r);
  EXPECT_TRUE(llm::ok(result));
  auto parsed = prompt::parse_reply(std::get<llm::Response>(result).text);
  EXPECT_TRUE(parsed.ok()) << (parsed.errors.empty() ? "" : parsed.errors[0]);
  return parsed.reply.value_or(prompt::Reply{});
}

inline std::vector<prompt::Edit> by_rule(const prompt::Reply& r, const std::string& rule) {
  std::vector<prompt::Edit> out;
  for (const auto& e : r.edits)
    if (e.rule == rule) out.push_back(e);
  return out;
}

inline std::vector<prompt::Withheld> withheld_of(const prompt::Reply& r, const std::string& rule) {
  std::vector<prompt::Withheld> out;
  for (const auto& w : r.withheld)
    if (w.suggestion.find("(" + rule + ")") != std::string::npos) out.push_back(w);
  return out;
}

// `s` with the first `from` replaced by `to` (a failure when `from` is absent).
inline std::string replaced(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// The reply of the search candidate that offers `rule` alone (the builtin's alternatives).
inline prompt::Reply alone(const nlohmann::json& k, const std::string& file, const std::string& src,
                           const std::string& rule) {
  for (int c = 2; c <= 6; ++c) {
    auto r = ask(k, file, src, c);
    if (r.summary.find("the " + rule + " rule alone") != std::string::npos) return r;
  }
  ADD_FAILURE() << "no candidate offers " << rule << " alone";
  return {};
}

inline std::string edited_source(const prompt::Reply& r, const std::string& file, const std::string& src) {
  auto app = edit::apply_edits({{file, src}}, r, {});
  EXPECT_EQ(app.not_applied(), 0u);
  return app.result[file];
}

} // namespace optimas::test
