#include "edit/guardrails.hpp"

#include "cuda/source.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>

namespace optimas::edit {

std::string comparable_signature(std::string_view signature) {
  auto tokens = cuda::lex(signature);
  std::string out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string_view t = tokens[i].text;
    if (t == "__restrict__" || t == "__restrict" || t == "const") continue;
    if (t == "__launch_bounds__" && i + 1 < tokens.size() && tokens[i + 1].text == "(") {
      int depth = 0;
      for (++i; i < tokens.size(); ++i) {
        if (tokens[i].text == "(") ++depth;
        if (tokens[i].text == ")" && --depth == 0) break;
      }
      continue;
    }
    if (!out.empty() && (std::isalnum(static_cast<unsigned char>(out.back())) || out.back() == '_') &&
        (std::isalnum(static_cast<unsigned char>(t.front())) || t.front() == '_'))
      out += ' ';
    out += t;
  }
  return out;
}

namespace {

std::string balance_problem(const std::string& text) {
  int paren = 0, brace = 0, bracket = 0, pp_if = 0;
  for (const auto& t : cuda::lex(text)) {
    if (t.kind == cuda::TokenKind::preprocessor) {
      auto words = cuda::normalise(t.text.substr(1));
      if (words.rfind("if", 0) == 0)
        ++pp_if;
      else if (words.rfind("endif", 0) == 0)
        --pp_if;
      continue;
    }
    if (t.kind != cuda::TokenKind::punct) continue;
    switch (t.text[0]) {
    case '(':
      ++paren;
      break;
    case ')':
      --paren;
      break;
    case '{':
      ++brace;
      break;
    case '}':
      --brace;
      break;
    case '[':
      ++bracket;
      break;
    case ']':
      --bracket;
      break;
    }
    if (paren < 0 || brace < 0 || bracket < 0)
      return fmt::format("a closing bracket without its opening one at line {}", t.line);
  }
  if (brace) return fmt::format("{} unclosed brace(s)", brace);
  if (paren) return fmt::format("{} unclosed parenthesis(es)", paren);
  if (bracket) return fmt::format("{} unclosed square bracket(s)", bracket);
  if (pp_if) return fmt::format("#if/#endif do not pair up ({} open)", pp_if);
  return {};
}

} // namespace

Scope parse_scope(const std::string& value) {
  if (value == "file") return Scope::file;
  if (value == "application") return Scope::application;
  return Scope::kernel;
}

namespace {

// Whether the applied edit `oc` falls inside code its scope allows: a hot kernel or a device
// function of its file, or (Scope::application) a host function that launches a hot kernel or
// calls one of o.host_calls.
bool inside_scope(const EditOutcome& oc, const std::string& original, const GuardrailOptions& o) {
  auto f = cuda::parse_source(oc.file, original);
  auto within = [&](const cuda::Function& fn) {
    return oc.first_line >= fn.first_line && oc.last_line <= fn.last_line;
  };
  for (const auto& fn : f.functions) {
    bool allowed = !fn.kernel || o.hot_kernels.empty() ||
                   std::find(o.hot_kernels.begin(), o.hot_kernels.end(), fn.name) != o.hot_kernels.end();
    if (allowed && within(fn)) return true;
  }
  if (o.scope != Scope::application) return false;
  for (const auto& k : o.hot_kernels)
    for (const auto& fn : cuda::launching_functions(f, k))
      if (within(fn)) return true;
  for (const auto& fn : cuda::calling_functions(f, o.host_calls))
    if (within(fn)) return true;
  return false;
}

// Whether the applied edit `oc` covers a cause line of a PC item it cites.
bool on_cited_cause(const EditOutcome& oc, const GuardrailOptions& o) {
  for (const auto& c : o.cause_lines) {
    if (std::filesystem::path(c.file).filename() != std::filesystem::path(oc.file).filename()) continue;
    if (c.line < oc.first_line || c.line > oc.last_line) continue;
    if (std::find(oc.cited.begin(), oc.cited.end(), c.id) != oc.cited.end()) return true;
  }
  return false;
}

} // namespace

namespace {

// A kernel's name as an edit may give it: "k", "void k<256u, true>(const float *, float *)", "ns::k".
std::string base_name_of(const std::string& named) {
  std::string n = named.substr(0, std::min(named.find('('), named.find('<')));
  while (!n.empty() && std::isspace(static_cast<unsigned char>(n.back()))) n.pop_back();
  if (auto space = n.find_last_of(" \t*&"); space != std::string::npos) n.erase(0, space + 1);
  if (auto colons = n.rfind("::"); colons != std::string::npos) n.erase(0, colons + 2);
  return n;
}

} // namespace

std::vector<Violation> check_guardrails(const Application& app, const GuardrailOptions& o) {
  std::vector<Violation> out;
  // The kernels the sources define: an edit must name one of them (as its name, or declared with
  // its return type, template arguments or parameters: `void k<256>(const float*)`).
  std::set<std::string> kernels;
  for (const auto& [file, text] : app.original)
    for (const auto& f : cuda::parse_source(file, text).functions)
      if (f.kernel) kernels.insert(f.name);
  for (const auto& oc : app.outcomes) {
    if (oc.unknown_file) out.push_back({"file", oc.file, fmt::format("edit {}: {}", oc.index + 1, oc.reason)});
    if (const std::string name = base_name_of(oc.kernel);
        !oc.kernel.empty() && !kernels.empty() && !kernels.count(name))
      out.push_back(
          {"kernel", oc.file,
           fmt::format("edit {} names kernel {}, which no source defines (its kernels: {})", oc.index + 1, oc.kernel,
                       util::join(std::vector<std::string>(kernels.begin(), kernels.end()), ", "))});
    std::string unknown = util::join(oc.unknown_evidence, ", ");
    if (!o.code_only && oc.known_evidence == 0)
      out.push_back({"evidence", oc.file,
                     unknown.empty()
                         ? fmt::format("edit {} cites no evidence ID; rule 5: cite the IDs it acts on", oc.index + 1)
                         : fmt::format("edit {} cites {}, none of them an evidence ID of the prompt (rule 5)",
                                       oc.index + 1, unknown)});
  }
  for (const auto& [file, before_text] : app.original) {
    const std::string& after_text = app.result.at(file);
    if (before_text == after_text) continue;
    auto before = cuda::parse_source(file, before_text);
    auto after = cuda::parse_source(file, after_text);
    if (auto why = balance_problem(after_text); !why.empty() && balance_problem(before_text).empty())
      out.push_back({"balance", file, fmt::format("{}: {} after the edits", file, why)});
    std::map<std::string, std::vector<const cuda::Function*>> kb, ka;
    for (const auto& f : before.functions)
      if (f.kernel) kb[f.name].push_back(&f);
    for (const auto& f : after.functions)
      if (f.kernel) ka[f.name].push_back(&f);
    for (const auto& [name, defs] : kb) {
      auto it = ka.find(name);
      if (it == ka.end()) {
        out.push_back({"kernel_removed", file, fmt::format("{}: kernel {} was removed or renamed", file, name)});
        continue;
      }
      if (it->second.size() > defs.size())
        out.push_back(
            {"duplicate_kernel", file,
             fmt::format("{}: kernel {} is defined {} times (was {})", file, name, it->second.size(), defs.size())});
      for (std::size_t k = 0; k < std::min(defs.size(), it->second.size()); ++k) {
        auto s0 = comparable_signature(defs[k]->signature), s1 = comparable_signature(it->second[k]->signature);
        if (s0 != s1)
          out.push_back({"signature", file,
                         fmt::format("{}: the signature of kernel {} changed: `{}` became `{}`", file, name,
                                     defs[k]->signature, it->second[k]->signature)});
      }
    }
    for (const auto& [name, defs] : ka)
      if (!kb.count(name))
        out.push_back({"kernel_added", file, fmt::format("{}: a new kernel {} was added", file, name)});
  }
  if (o.scope != Scope::file) {
    // Each applied edit must fall inside the code its scope allows.
    for (const auto& oc : app.outcomes) {
      if (!oc.applied || inside_scope(oc, app.original.at(oc.file), o) || on_cited_cause(oc, o)) continue;
      out.push_back({"scope", oc.file,
                     fmt::format("{}: edit {} (lines {}-{}) is outside the {}", oc.file, oc.index + 1, oc.first_line,
                                 oc.last_line,
                                 o.scope == Scope::application
                                     ? "implicated kernels and the host code the application items are about"
                                     : "implicated kernels")});
    }
  }
  return out;
}

nlohmann::json to_json(const std::vector<Violation>& violations) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& v : violations) out.push_back({{"rule", v.rule}, {"file", v.file}, {"message", v.message}});
  return out;
}

} // namespace optimas::edit
