#include "serve/run_page.hpp"

#include "serve/charts.hpp"
#include "serve/html.hpp"
#include "serve/sections.hpp"
#include "util/json_text.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace optimas::serve {

using nlohmann::json;

namespace {

using util::member;
using util::member_string;

// The edits of a variant: the reply's (with their find/replace text) or, without reply.json,
// the applied edits recorded in run.json.
const json& edits_of(const VariantData& v) {
  const json& reply_edits = member(v.reply, "edits");
  return reply_edits.is_array() ? reply_edits : member(v.result, "applied_edits");
}

Citations citations_of(const RunData& d) {
  Citations c;
  for (const auto& v : d.variants) {
    const json& edits = edits_of(v);
    if (!edits.is_array()) continue;
    for (std::size_t i = 0; i < edits.size(); ++i)
      for (const auto& e : member(edits[i], "evidence"))
        if (e.is_string()) c[e.get<std::string>()].push_back(edit_anchor(member_string(v.result, "key"), i));
  }
  return c;
}

std::string row(const std::string& key, const std::string& value_html) {
  return fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", escape(key), value_html);
}

std::string file_link(const RunData& d, const std::string& relative, const PageOptions& o) {
  if (o.report || relative.empty()) return escape(relative);
  return fmt::format("<a href=\"/runs/{}/files/{}\">{}</a>", attr(d.id), attr(relative), escape(relative));
}

std::string summary_section(const RunData& d) {
  const json& r = d.run;
  std::string s = "<section><table class=\"kv\">\n";
  s += row("status", status_badge(member_string(r, "status")) + " " + status_badge(member_string(r, "outcome")));
  s += row("application", escape(member_string(r, "app")) + " <span class=\"muted\">" +
                              escape(member_string(r, "config_path")) + "</span>");
  s += row("backend", escape(member_string(r, "model")));
  s += row("best variant", escape(text_of(member(r, "best"))) + " " + escape(speedup_text(member(r, "speedup"))) +
                               (member(r, "ci").is_array() && member(r, "ci").size() == 2
                                    ? " [" + escape(text_of(r["ci"][0])) + ", " + escape(text_of(r["ci"][1])) + "]"
                                    : "") +
                               (member(r, "p_value").is_number() ? ", p = " + escape(text_of(r["p_value"])) : ""));
  s += row("hardware", escape(member_string(r, "hw")));
  s += row("software", escape(member_string(r, "sw")));
  s += row("diagnostics", escape(member_string(r, "diagnostics")));
  s += row("started / finished", escape(member_string(r, "started")) + " / " + escape(text_of(member(r, "finished"))));
  if (!member_string(r, "not_executed_because").empty())
    s += row("not executed", escape(member_string(r, "not_executed_because")));
  if (!member_string(r, "error").empty()) s += row("error", "<pre>" + escape(member_string(r, "error")) + "</pre>");
  for (const auto& w : member(r, "warnings")) s += row("warning", escape(text_of(w)));
  for (const auto& p : d.problems) s += row("not read", escape(p));
  return s + "</table></section>\n";
}

// "12.3 s" for a recorded time, "" when the run did not record it (older runs, or a step not taken).
std::string seconds(const json& times, const char* key) {
  const json& t = member(times, key);
  return t.is_number() ? fmt::format("{:.1f} s", t.get<double>()) : "";
}

std::string steps_section(const RunData& d) {
  std::string s = "<h2 id=\"steps\">Steps</h2><section><table><tr><th>step</th><th>what</th><th>time</th></tr>\n";
  const json& base = member(d.run, "baseline");
  const json& times = member(d.run, "times");
  std::string build =
      member(base, "build_s").is_number() ? fmt::format("build {:.1f} s", base["build_s"].get<double>()) : "";
  std::string all = seconds(times, "baseline_s"); // the build and one run of each configuration
  if (!all.empty()) build += (build.empty() ? "" : ", ") + ("with its runs " + all);
  s += fmt::format("<tr><td>baseline</td><td>{}</td><td>{}</td></tr>\n", escape(member_string(base, "compile")),
                   build.empty() ? "&ndash;" : build);
  s += fmt::format("<tr><td>profile</td><td>{}</td><td>{}</td></tr>\n", escape(member_string(d.run, "profile_gpu")),
                   seconds(times, "profile_s"));
  s += fmt::format("<tr><td>analysis</td><td>{} evidence item(s) on {} hot kernel(s)</td><td>{}</td></tr>\n",
                   member(d.diagnostics, "evidence").size(), member(d.diagnostics, "kernels").size(),
                   seconds(times, "analysis_s"));
  for (const auto& v : d.variants) {
    const json& vt = member(v.result, "times");
    std::vector<std::string> phases;
    for (const auto& [key, label] : {std::pair{"ask_s", "ask"},
                                     {"build_s", "build"},
                                     {"validate_s", "validate"},
                                     {"measure_s", "measure"},
                                     {"confirm_s", "of which confirm"},
                                     {"ear_s", "re-profile"}}) {
      std::string t = seconds(vt, key);
      if (!t.empty()) phases.push_back(std::string(label) + " " + t);
    }
    if (phases.empty() && member(v.build, "wall_s").is_number())
      phases.push_back(fmt::format("build {:.1f} s", v.build["wall_s"].get<double>()));
    s += fmt::format("<tr><td><a href=\"#variant-{}\">{}</a></td><td>{} {}</td><td>{}</td></tr>\n",
                     anchor(member_string(v.result, "key")), escape(member_string(v.result, "key")),
                     status_badge(member_string(v.result, "status")), escape(member_string(v.result, "reason")),
                     util::join(phases, ", "));
  }
  return s + "</table></section>\n";
}

// The search tree of a run with several rounds or candidates (run.json's search): each variant
// under its parent, with its status, speedup and cost; the budgets and what ended the search.
std::string search_node(const json& nodes, const std::string& parent, int depth) {
  if (depth > 100) return ""; // a parent loop in a damaged run.json
  std::string s;
  for (const auto& n : nodes) {
    if (member_string(n, "parent") != parent) continue;
    const std::string key = member_string(n, "key");
    std::string measured;
    if (member(n, "speedup").is_number()) {
      measured = fmt::format(" {:.3f}x", n["speedup"].get<double>());
      const json& ci = member(n, "ci");
      if (ci.is_array() && ci.size() == 2 && ci[0].is_number() && ci[1].is_number())
        measured += fmt::format(" [{:.3f}, {:.3f}]", ci[0].get<double>(), ci[1].get<double>());
    }
    std::string cost = member(n, "cost_usd").is_number() && n["cost_usd"].get<double>() > 0
                           ? fmt::format(", ${:.4f}", n["cost_usd"].get<double>())
                           : "";
    s += fmt::format("<li id=\"node-{}\"><a href=\"#variant-{}\">{}</a> {}{} <span class=\"muted\">round {}, "
                     "candidate {}; {}{}</span>",
                     anchor(key), anchor(key), escape(key), status_badge(member_string(n, "status")), escape(measured),
                     escape(text_of(member(n, "round"))), escape(text_of(member(n, "candidate"))),
                     seconds(n, "seconds"), escape(cost));
    std::string children = search_node(nodes, key, depth + 1);
    if (!children.empty()) s += "<ul>" + children + "</ul>";
    s += "</li>\n";
  }
  return s;
}

std::string search_section(const RunData& d) {
  const json& search = member(d.run, "search");
  const json& nodes = member(search, "nodes");
  if (!nodes.is_array() || nodes.empty()) return "";
  std::string s = fmt::format("<h2 id=\"search\">Search</h2><section><p>{} round(s) x {} candidate(s); best {}</p>\n",
                              escape(text_of(member(search, "rounds"))), escape(text_of(member(search, "candidates"))),
                              escape(member_string(search, "best")));
  for (const auto& [name, b] : member(search, "budget").items())
    s += fmt::format("<p>budget {}: {} of {}</p>\n", escape(name), escape(text_of(member(b, "spent"))),
                     escape(text_of(member(b, "limit"))));
  if (!member_string(search, "stopped").empty())
    s += "<p>stopped: " + escape(member_string(search, "stopped")) + "</p>\n";
  s += "<ul class=\"tree\"><li>baseline<ul>" + search_node(nodes, "baseline", 0) + "</ul></li></ul>\n";
  for (const auto& [round, shown] : member(d.run, "memory").items())
    for (const auto& m : shown)
      s += fmt::format("<p>round {}: worked example {} of run <code>{}</code> ({}x) for {}, because {}</p>\n",
                       escape(round), escape(member_string(m, "kernel")), escape(member_string(m, "run")),
                       escape(text_of(member(m, "speedup"))), escape(member_string(m, "for_kernel")),
                       escape(text_of(member(m, "shared"))));
  return s + "</section>\n";
}

// The tuning stage (run.json's tune): the knobs found where there was no tune: block, and every
// point with what it was built with and what it measured.
std::string tune_section(const RunData& d, const PageOptions& o) {
  const json& t = member(d.run, "tune");
  if (!t.is_object()) return "";
  std::string s = "<h2 id=\"tune\">Tuning</h2><section>\n";
  if (!member_string(t, "skipped").empty()) return s + "<p>" + escape(member_string(t, "skipped")) + "</p></section>\n";
  const json& found = member(t, "discovered");
  if (found.is_object()) {
    s += "<p>No tune: block; knobs found in the sources where the evidence points:</p><ul>\n";
    for (const auto& k : member(found, "knobs")) s += "<li>" + escape(text_of(k)) + "</li>\n";
    s += "</ul>\n";
    for (const auto& p : member(found, "passed")) s += "<p class=\"muted\">" + escape(text_of(p)) + "</p>\n";
  }
  if (!member(t, "method").is_null())
    s += fmt::format("<p>{} search over {} allowed point(s) of {}, budget {}, on {}'s sources; best {}</p>\n",
                     escape(member_string(t, "method")), escape(text_of(member(t, "allowed"))),
                     escape(text_of(member(t, "grid"))), escape(text_of(member(t, "budget"))),
                     escape(member_string(t, "parent")), escape(text_of(member(t, "best"))));
  if (!member_string(t, "stopped").empty()) s += "<p>stopped: " + escape(member_string(t, "stopped")) + "</p>\n";
  const json& points = member(t, "points");
  if (points.is_array() && !points.empty()) {
    s += "<table><tr><th>point</th><th>built with</th><th>status</th><th>speedup</th></tr>\n";
    for (const auto& p : points) {
      const json& ci = member(p, "ci");
      std::string speed = member(p, "speedup").is_number() && ci.is_array() && ci.size() == 2
                              ? fmt::format("{:.3f}x [{:.3f}, {:.3f}]", member(p, "speedup").get<double>(),
                                            ci[0].get<double>(), ci[1].get<double>())
                              : "";
      s += fmt::format("<tr><td>{}</td><td><code>{}</code></td><td>{}{}</td><td>{}</td></tr>\n",
                       file_link(d, "tune/" + member_string(p, "key") + "/result.json", o),
                       escape(member_string(p, "flags")), escape(member_string(p, "status")),
                       member(p, "cached").is_boolean() && member(p, "cached").get<bool>() ? " (cached)" : "", speed);
    }
    s += "</table>\n";
  }
  for (const auto& o : member(t, "passed_over"))
    s += "<p>" + escape(member_string(o, "point")) + ": " + escape(member_string(o, "reason")) + "</p>\n";
  return s + "</section>\n";
}

// The re-profile drawn as the "after" point: the best variant's, else the first that has one.
const VariantData* after_variant(const RunData& d) {
  std::string best = member_string(d.run, "best");
  for (const auto& v : d.variants)
    if (!v.after.is_null() && member_string(v.result, "key") == best) return &v;
  for (const auto& v : d.variants)
    if (!v.after.is_null()) return &v;
  return nullptr;
}

const json& kernel_in(const json& diagnostics, const std::string& name) {
  static const json null;
  for (const auto& k : member(diagnostics, "kernels"))
    if (member_string(k, "kernel") == name) return k;
  return null;
}

std::string evidence_list(const json& diagnostics, const std::string& kernel, const Citations& cites) {
  std::string s = "<table class=\"evidence\">\n";
  for (const auto& e : member(diagnostics, "evidence")) {
    if (member_string(e, "kernel") != kernel) continue;
    std::string id = member_string(e, "id"), back;
    if (cites.count(id))
      for (const auto& a : cites.at(id))
        back += fmt::format(" <a class=\"cited-by\" href=\"#{}\">&larr; {}</a>", a, escape(a));
    s += fmt::format("<tr class=\"ev\" id=\"{}\"><td>{}</td><td>{}{}</td></tr>\n", evidence_anchor(id),
                     evidence_badge(id, cites), escape(member_string(e, "text")), back);
  }
  return s + "</table>\n";
}

std::string kernels_section(const RunData& d, const Citations& cites) {
  std::string s = "<h2 id=\"kernels\">Hot kernels</h2>\n";
  const json& kernels = member(d.diagnostics, "kernels");
  if (!kernels.is_array() || kernels.empty())
    return s + "<section><p class=\"muted\">No diagnostics.json in this run.</p></section>\n";
  const VariantData* after = after_variant(d);
  for (const auto& k : kernels) {
    std::string name = member_string(k, "kernel");
    s +=
        fmt::format("<section class=\"kernel\" id=\"kernel-{}\"><h3>{} <span class=\"muted\">{:.1f}% of the time, {} "
                    "launch(es)</span></h3>\n",
                    anchor(name), escape(name), 100 * member(k, "share").get<double>(), text_of(member(k, "launches")));
    const json& rf = member(k, "roofline");
    if (rf.is_object()) {
      const json& rf_after = after ? member(kernel_in(after->after, name), "roofline") : json();
      s += fmt::format(
          "<p>{} {}{}</p>\n", evidence_badge(member_string(rf, "id"), cites), escape(member_string(rf, "summary")),
          rf_after.is_object() ? " <span class=\"muted\">(after: " + escape(member_string(after->result, "key")) +
                                     "'s re-profile)</span>"
                               : "");
      s += roofline_svg(roofline_chart(name, rf, rf_after));
    }
    const json& stalls = member(k, "stalls");
    if (stalls.is_object()) {
      const json& lines = member(stalls, "lines");
      std::string file = lines.is_array() && !lines.empty() ? member_string(lines[0], "file") : "";
      std::string base = std::filesystem::path(file).filename().string();
      s +=
          fmt::format("<h4>Source, shaded by share of PC samples <span class=\"muted\">{}</span></h4>\n", escape(base));
      s += stall_source(d.sources.count(base) ? d.sources.at(base) : "", lines, cites);
    }
    s += evidence_list(d.diagnostics, name, cites);
    for (const auto& n : member(k, "notes")) s += "<p class=\"muted\">" + escape(text_of(n)) + "</p>\n";
    s += "</section>\n";
  }
  return s;
}

// The run's timeline and its application (AP) items, where its profile's trace had one.
std::string application_section(const RunData& d, const Citations& cites) {
  const json& t = member(d.diagnostics, "timeline");
  if (!t.is_object()) return {};
  auto ms = [&](const char* key) { return member(t, key).is_number() ? member(t, key).get<double>() / 1e6 : 0.0; };
  const json& busy = member(t, "busy_fraction");
  return fmt::format("<h2 id=\"application\">The application</h2>\n<section><p>GPU busy {:.1f}% of {:.3f} ms "
                     "(kernels {:.3f} ms, copies {:.3f} ms); {:.3f} ms idle between GPU work.</p>\n",
                     busy.is_number() ? 100 * busy.get<double>() : 0.0, ms("wall_ns"), ms("kernel_ns"),
                     ms("transfer_ns"), ms("gap_ns")) +
         evidence_list(d.diagnostics, "", cites) + "</section>\n";
}

std::string edits_html(const VariantData& v, const Citations& cites) {
  const json& edits = edits_of(v);
  std::string key = member_string(v.result, "key"), s;
  if (!edits.is_array() || edits.empty()) return "<p class=\"muted\">No edits.</p>\n";
  for (std::size_t i = 0; i < edits.size(); ++i) {
    const json& e = edits[i];
    std::string badges;
    for (const auto& id : member(e, "evidence"))
      if (id.is_string()) badges += evidence_badge(id.get<std::string>(), cites);
    s += fmt::format("<div class=\"edit\" id=\"{}\"><b>edit {}</b> {} <code>{}</code> cites {}<br>{}\n",
                     edit_anchor(key, i), i + 1, escape(member_string(e, "file")), escape(member_string(e, "kernel")),
                     badges.empty() ? "nothing" : badges, escape(member_string(e, "rationale")));
    if (member(e, "find").is_string() && member(e, "replace").is_string())
      s += edit_pair(member_string(e, "find"), member_string(e, "replace"));
    else if (member(e, "new_text").is_string())
      s += fmt::format("<p class=\"muted\">lines {}-{} become:</p>", text_of(member(e, "line_start")),
                       text_of(member(e, "line_end"))) +
           edit_pair("", member_string(e, "new_text"));
    s += "</div>\n";
  }
  for (const auto& ig : member(v.result, "ignored"))
    s += "<p class=\"muted\">not applied: " + escape(member_string(ig, "suggestion")) + " &mdash; " +
         escape(member_string(ig, "reason")) + "</p>\n";
  // Where the time is that the edits act on (issue #50); older runs have none.
  if (std::string c = member_string(member(v.result, "coverage"), "text"); !c.empty())
    s += "<p class=\"coverage\">The edits " + escape(c) + "</p>\n";
  return s;
}

std::string validation_html(const json& result) {
  const json& checks = member(member(result, "validation"), "checks");
  if (!checks.is_array() || checks.empty()) return "";
  std::string s = "<h4>Validation</h4><table><tr><th>check</th><th>held out</th><th>passed</th><th>detail</th></tr>\n";
  for (const auto& c : checks)
    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", escape(member_string(c, "label")),
                     escape(text_of(member(c, "held_out"))), escape(text_of(member(c, "passed"))),
                     escape(member_string(c, "detail")));
  return s + "</table>\n";
}

std::vector<double> kernel_times(const json& samples) {
  std::vector<double> out;
  for (const auto& x : samples)
    if (member(x, "kernel_ms").is_number()) out.push_back(x["kernel_ms"].get<double>());
  return out;
}

std::string measurement_html(const VariantData& v) {
  const json& m = member(v.result, "measurement");
  if (!m.is_object()) return "";
  MeasurementChart chart;
  const json& configs = member(m, "configs");
  if (configs.is_object())
    for (const auto& [config, c] : configs.items()) {
      chart.groups.push_back(SampleGroup{config + ": baseline", kernel_times(member(c, "base"))});
      chart.groups.push_back(
          SampleGroup{config + ": " + member_string(v.result, "key"), kernel_times(member(c, "variant"))});
    }
  const json& ci = member(m, "ci");
  if (ci.is_array() && ci.size() == 2 && ci[0].is_number() && ci[1].is_number()) {
    chart.ci_low = ci[0].get<double>(), chart.ci_high = ci[1].get<double>();
    const json& sp = member(m, "speedup").is_number() ? m["speedup"] : member(v.result, "speedup");
    chart.speedup = sp.is_number() ? sp.get<double>() : 0;
  }
  return "<h4>Measurement</h4>\n" + measurement_svg(chart) + "<p>" + escape(member_string(m, "decision")) + "</p>\n";
}

std::string ear_html(const json& ear) {
  if (!ear.is_object()) return "";
  std::string s = "<h4>EAR metrics</h4><table class=\"kv ear\">\n";
  for (const auto& [name, value] : ear.items())
    if (!value.is_array() && !value.is_object()) s += row(name, escape(text_of(value)));
  s += "</table>\n";
  const json& effects = member(ear, "effects");
  if (effects.is_array() && !effects.empty()) {
    s += "<table><tr><th>edit</th><th>kernel</th><th>metric</th><th>expected</th><th>before</th><th>after</"
         "th><th>outcome</th></tr>\n";
    for (const auto& e : effects)
      s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       escape(text_of(member(e, "edit"))), escape(member_string(e, "kernel")),
                       escape(member_string(e, "metric")), escape(member_string(e, "direction")),
                       escape(text_of(member(e, "before"))), escape(text_of(member(e, "after"))),
                       escape(member_string(e, "outcome")));
    s += "</table>\n";
  }
  return s;
}

// Each hot kernel's fraction of its roofline before the variant and after (its re-profile).
std::string speed_of_light_html(const json& sol) {
  if (!sol.is_object() || sol.empty()) return "";
  auto pct = [](const json& v) { return v.is_number() ? fmt::format("{:.0f}%", 100 * v.get<double>()) : text_of(v); };
  std::string s = "<h4>Speed of light</h4><table class=\"sol\"><tr><th>kernel</th><th>before</th><th>after</th>"
                  "<th>binding ceiling after</th></tr>\n";
  for (const auto& [kernel, e] : sol.items())
    s += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n", escape(kernel),
                     escape(pct(member(e, "before"))), escape(pct(member(e, "after"))),
                     escape(member_string(e, "limit_after")));
  return s + "</table>\n";
}

std::string cost_html(const json& replies) {
  if (!replies.is_object()) return "";
  return fmt::format("<p class=\"muted\">model {}: {} input / {} output tokens, cost {}</p>\n",
                     escape(member_string(replies, "model")), escape(text_of(member(replies, "input_tokens"))),
                     escape(text_of(member(replies, "output_tokens"))),
                     member(replies, "cost_usd").is_number()
                         ? escape(fmt::format("${:.4f}", replies["cost_usd"].get<double>()))
                         : "unknown");
}

std::string variant_section(const RunData& d, const VariantData& v, const Citations& cites, const PageOptions& o) {
  const json& r = v.result;
  std::string key = member_string(r, "key"), dir = member_string(r, "dir");
  std::string s =
      fmt::format("<section class=\"variant\" id=\"variant-{}\"><h3>{} {} <span class=\"muted\">from {}</span></h3>\n"
                  "<p>{}</p>\n",
                  anchor(key), escape(key), status_badge(member_string(r, "status")),
                  escape(member_string(r, "parent")), escape(member_string(r, "reason")));
  if (!member_string(r, "errors").empty()) s += "<pre>" + escape(member_string(r, "errors")) + "</pre>\n";
  if (!member(v.reply, "summary").is_null()) s += "<p><i>" + escape(text_of(member(v.reply, "summary"))) + "</i></p>\n";
  s += edits_html(v, cites);
  s += "<h4>Diff</h4>\n" + side_by_side(v.diff);
  s += validation_html(r) + measurement_html(v) + speed_of_light_html(member(r, "speed_of_light")) +
       ear_html(member(r, "ear")) + cost_html(v.replies);
  if (!o.report && !dir.empty())
    s += "<p class=\"muted\">files: " + file_link(d, member_string(r, "prompt"), o) + " " +
         file_link(d, dir + "/build.log", o) + " " + file_link(d, dir + "/reply.json", o) + "</p>\n";
  return s + "</section>\n";
}

} // namespace

std::string run_body(const RunData& d, const PageOptions& o) {
  Citations cites = citations_of(d);
  std::string s = fmt::format("<h1>Run <code>{}</code></h1>\n", escape(d.id));
  s += summary_section(d) + steps_section(d) + search_section(d) + kernels_section(d, cites) +
       application_section(d, cites);
  s += "<h2 id=\"variants\">Variants</h2>\n";
  if (d.variants.empty()) s += "<section><p class=\"muted\">No variant yet.</p></section>\n";
  for (const auto& v : d.variants) s += variant_section(d, v, cites, o);
  return s + tune_section(d, o);
}

std::string run_page(const RunData& d, const PageOptions& o) {
  std::string html = page("Run " + d.id + " - Optimas", run_body(d, o), !o.report);
  // Live progress without script: a running run's page reloads itself.
  if (!o.report && member_string(d.run, "status") == "running")
    html.replace(html.find("<title>"), 0, "<meta http-equiv=\"refresh\" content=\"5\">");
  return html;
}

} // namespace optimas::serve
