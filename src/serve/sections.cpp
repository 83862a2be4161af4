#include "serve/sections.hpp"

#include "serve/html.hpp"
#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>

namespace optimas::serve {

using nlohmann::json;

namespace {

constexpr int k_context_lines = 3;

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

std::string base_name(const std::string& file) {
  return std::filesystem::path(file).filename().string();
}

// Under a stalled line, what the analysis found about it (diagnostics.json's memory, cause and
// divergence), one sentence each. Lines of an older diagnostics.json have none: no row.
std::string facts_row(const json& stall) {
  std::string notes;
  for (const auto& [key, label] : {std::pair{"memory", "memory"}, {"cause", "cause"}, {"divergence", "divergence"}}) {
    std::string text = util::member_string(util::member(stall, key), "text");
    if (!text.empty()) notes += fmt::format("<div><b>{}:</b> {}</div>", label, escape(text));
  }
  if (notes.empty()) return "";
  return "<tr class=\"facts\"><td></td><td></td><td colspan=\"2\">" + notes + "</td></tr>\n";
}

// Line number -> what points at it from other lines: "cause of PC1" where a stalled line's wait
// comes from, "warps split here for PC3" where its warps diverge. Only found causes in the
// stalled line's own file (by base name) and on another line are marked.
using Marks = std::map<long, std::vector<std::string>>;

Marks marks_of(const std::map<long, const json*>& by_line, const Citations& citations) {
  Marks marks;
  for (const auto& [n, l] : by_line) {
    std::string file = base_name(util::member_string(*l, "file"));
    std::string id = util::member_string(*l, "id");
    std::string who = id.empty() ? fmt::format("line {}", n) : evidence_badge(id, citations);
    for (const auto& [key, what] : {std::pair{"cause", "cause of "}, {"divergence", "warps split here for "}}) {
      const json& found = util::member(*l, key);
      const json& at = util::member(found, "line");
      if (util::member_string(found, "status") != "found" || !at.is_number_integer()) continue;
      long target = at.get<long>();
      if (target < 1 || target == n || base_name(util::member_string(found, "file")) != file) continue;
      marks[target].push_back(what + who);
    }
  }
  return marks;
}

// One row of the source table; `mark` is the line's marks (see marks_of), "" for none.
std::string source_row(long number, const std::string& code, const json* stall, const std::string& mark,
                       const Citations& citations) {
  if (!stall && mark.empty())
    return fmt::format("<tr><td class=\"n\">{}</td><td></td><td>{}</td></tr>\n", number, escape(code));
  if (!stall)
    return fmt::format("<tr class=\"marked\"><td class=\"n\">{}</td><td></td><td>{}</td><td "
                       "class=\"mark\">{}</td></tr>\n",
                       number, escape(code), mark);
  double share = stall->value("kernel_share", 0.0);
  // A square root keeps lines with a few percent of the samples visible beside a dominant one.
  // At most 0.45, so dark text stays readable on the hottest line.
  double alpha = 0.06 + 0.39 * std::sqrt(std::clamp(share, 0.0, 1.0));
  std::string id = stall->value("id", "");
  return fmt::format(
             "<tr class=\"stalled\" data-share=\"{:.4f}\" style=\"background:rgba(220,38,38,{:.3f})\">"
             "<td class=\"n\">{}</td><td>{}</td><td>{}</td><td class=\"muted\">{:.1f}% {} {:.0f}%{}</td></tr>\n",
             share, alpha, number, id.empty() ? "" : evidence_badge(id, citations), escape(code), 100 * share,
             escape(stall->value("stall", "")), 100 * stall->value("fraction", 0.0),
             mark.empty() ? "" : " <span class=\"mark\">" + mark + "</span>") +
         facts_row(*stall);
}

struct Row {
  char kind; // ' ', '-', '+'
  std::string text;
};

// Pairs a hunk's deleted and added lines row by row, context lines on both sides.
void flush_rows(std::vector<Row>& rows, long& old_n, long& new_n, std::string& out) {
  std::vector<std::string> dels, adds;
  auto emit_change = [&] {
    for (std::size_t k = 0; k < std::max(dels.size(), adds.size()); ++k) {
      out += "<tr>";
      out += k < dels.size() ? fmt::format("<td class=\"n\">{}</td><td class=\"del\">{}</td>", old_n++, escape(dels[k]))
                             : "<td></td><td></td>";
      out += k < adds.size() ? fmt::format("<td class=\"n\">{}</td><td class=\"add\">{}</td>", new_n++, escape(adds[k]))
                             : "<td></td><td></td>";
      out += "</tr>\n";
    }
    dels.clear(), adds.clear();
  };
  for (const auto& r : rows) {
    if (r.kind == '-') {
      if (!adds.empty()) emit_change();
      dels.push_back(r.text);
    } else if (r.kind == '+') {
      adds.push_back(r.text);
    } else {
      emit_change();
      out += fmt::format("<tr><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n", old_n++,
                         escape(r.text), new_n++, escape(r.text));
    }
  }
  emit_change();
  rows.clear();
}

} // namespace

std::string evidence_anchor(const std::string& id) {
  return "ev-" + anchor(id);
}

std::string edit_anchor(const std::string& variant, std::size_t index) {
  return fmt::format("edit-{}-{}", anchor(variant), index);
}

std::string evidence_badge(const std::string& id, const Citations& citations) {
  bool cited = citations.count(id) && !citations.at(id).empty();
  return fmt::format("<a class=\"badge{}\" href=\"#{}\">{}</a>", cited ? " cited" : "", evidence_anchor(id),
                     escape(id));
}

std::string stall_source(const std::string& file_text, const json& lines, const Citations& citations) {
  if (!lines.is_array() || lines.empty()) return "<p class=\"muted\">No PC samples for this kernel.</p>";
  std::map<long, const json*> by_line;
  for (const auto& l : lines)
    if (l.is_object() && l.contains("line") && l["line"].is_number_integer()) by_line[l["line"].get<long>()] = &l;
  auto source = split_lines(file_text);
  std::size_t matching = 0;
  for (const auto& [n, l] : by_line)
    if (n >= 1 && static_cast<std::size_t>(n) <= source.size() &&
        util::trim(source[n - 1]) == util::trim(l->value("code", "")))
      ++matching;
  Marks marks = marks_of(by_line, citations);
  auto mark_of = [&](long n) { return marks.count(n) ? util::join(marks.at(n), ", ") : std::string(); };
  auto stall_at = [&](long n) -> const json* {
    auto it = by_line.find(n);
    return it == by_line.end() ? nullptr : it->second;
  };
  std::string out = "<table class=\"src\">\n";
  if (matching * 2 < by_line.size() || source.empty()) {
    // The snapshot is not the profiled source: the profile's own lines are all there is (a
    // marked line without samples shows without its code).
    std::set<long> rows;
    for (const auto& [n, l] : by_line) rows.insert(n);
    for (const auto& [n, m] : marks) rows.insert(n);
    for (long n : rows) {
      const json* l = stall_at(n);
      out += source_row(n, l ? l->value("code", "") : "", l, mark_of(n), citations);
    }
    return "<p class=\"muted\">The run's copy of this file does not hold the profiled lines; showing the lines as "
           "the profile recorded them.</p>\n" +
           out + "</table>\n";
  }
  std::set<long> shown;
  auto show_around = [&](long n) {
    for (long k = n - k_context_lines; k <= n + k_context_lines; ++k)
      if (k >= 1 && static_cast<std::size_t>(k) <= source.size()) shown.insert(k);
  };
  for (const auto& [n, l] : by_line) show_around(n);
  for (const auto& [n, m] : marks)
    if (static_cast<std::size_t>(n) <= source.size()) show_around(n);
  long previous = 0;
  for (long n : shown) {
    if (previous && n != previous + 1) out += "<tr><td class=\"n\">&#8942;</td><td></td><td></td></tr>\n";
    out += source_row(n, source[n - 1], stall_at(n), mark_of(n), citations);
    previous = n;
  }
  return out + "</table>\n";
}

std::string side_by_side(const std::string& unified_diff) {
  if (unified_diff.empty()) return "<p class=\"muted\">No diff.</p>";
  std::string out =
      "<table class=\"diff\"><colgroup><col style=\"width:3em\"><col><col style=\"width:3em\"><col></colgroup>\n";
  std::vector<Row> rows;
  long old_n = 0, new_n = 0;
  for (const auto& line : split_lines(unified_diff)) {
    if (line.rfind("--- ", 0) == 0 || line.rfind("+++ ", 0) == 0) {
      flush_rows(rows, old_n, new_n, out);
      if (line[0] == '+')
        out += fmt::format("<tr><td colspan=\"4\" class=\"hunk\"><b>{}</b></td></tr>\n", escape(line.substr(4)));
    } else if (line.rfind("@@", 0) == 0) {
      flush_rows(rows, old_n, new_n, out);
      long a = 0, b = 0;
      if (std::sscanf(line.c_str(), "@@ -%ld%*[^+]+%ld", &a, &b) == 2) old_n = a, new_n = b;
      out += fmt::format("<tr><td colspan=\"4\" class=\"hunk\">{}</td></tr>\n", escape(line));
    } else if (!line.empty() && (line[0] == '-' || line[0] == '+' || line[0] == ' ')) {
      rows.push_back({line[0], line.substr(1)});
    } else if (line.empty()) {
      rows.push_back({' ', ""});
    }
  }
  flush_rows(rows, old_n, new_n, out);
  return out + "</table>\n";
}

std::string edit_pair(const std::string& before, const std::string& after) {
  return fmt::format("<table class=\"diff\"><tr><td class=\"del\">{}</td><td class=\"add\">{}</td></tr></table>\n",
                     escape(before), escape(after));
}

} // namespace optimas::serve
