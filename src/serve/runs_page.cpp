#include "serve/runs_page.hpp"

#include "serve/html.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace optimas::serve {

using nlohmann::json;

namespace {

using util::member;
using util::member_string;

// Counters of one kernel, in the order the Compare page shows them.
json kernel_counters(const json& k) {
  const json& rf = member(k, "roofline");
  const json& st = member(k, "stalls");
  double dram = 0;
  for (const auto& m : member(rf, "memory"))
    if (member_string(m, "name") == "DRAM" && member(m, "achieved").is_number()) dram = m["achieved"].get<double>();
  std::string top_stall;
  std::int64_t top = -1;
  const json& stalls = member(st, "kernel_stalls");
  if (stalls.is_object())
    for (const auto& [name, count] : stalls.items())
      if (count.is_number_integer() && count.template get<std::int64_t>() > top)
        top = count.template get<std::int64_t>(), top_stall = name;
  return {{"time share", member(k, "share")},
          {"total ns", member(k, "total_ns")},
          {"class", member(rf, "class")},
          {"compute utilisation", member(rf, "rho_compute")},
          {"memory utilisation", member(rf, "rho_memory")},
          {"FLOP/s", member(rf, "flops")},
          {"DRAM byte/s", rf.is_object() ? json(dram) : json(nullptr)},
          {"achieved occupancy %", member(member(rf, "occupancy"), "achieved_pct")},
          {"dominant stall", top_stall.empty() ? json(nullptr) : json(top_stall)}};
}

std::string cell(const json& v) {
  if (v.is_number_float()) return escape(si(v.get<double>()));
  return escape(text_of(v));
}

// An A/A run's backend proposed nothing: the badge says what the run was.
std::string aa_badge(const json& run) {
  if (member(run, "aa") != true) return "";
  return " <span class=\"badge\" title=\"the baseline measured against itself: a calibration, not the backend's "
         "result\">A/A</span>";
}

} // namespace

std::vector<json> runs_now(const store::RunStore& store) {
  return store.list_runs_now();
}

std::vector<json> select_runs(std::vector<json> runs, const RunsQuery& q) {
  std::string needle = util::to_lower(q.filter);
  if (!needle.empty())
    std::erase_if(runs, [&](const json& r) {
      for (const char* key : {"id", "app", "status", "outcome", "backend", "model"})
        if (util::contains(util::to_lower(member_string(r, key)), needle)) return false;
      return true;
    });
  std::string key = q.sort;
  std::stable_sort(runs.begin(), runs.end(), [&](const json& a, const json& b) {
    const json &x = member(a, key.c_str()), &y = member(b, key.c_str());
    // Missing values last, whatever the direction.
    if (x.is_null() != y.is_null()) return y.is_null();
    if (x.is_null()) return false;
    bool less = x.is_number() && y.is_number() ? x.get<double>() < y.get<double>() : text_of(x) < text_of(y);
    bool greater = x.is_number() && y.is_number() ? y.get<double>() < x.get<double>() : text_of(y) < text_of(x);
    return q.ascending ? less : greater;
  });
  return runs;
}

std::string runs_page(const std::vector<json>& runs, const RunsQuery& q, const std::string& campaigns) {
  auto shown = select_runs(runs, q);
  bool running =
      std::any_of(runs.begin(), runs.end(), [](const json& r) { return member_string(r, "status") == "running"; });
  std::string s = "<h1>Runs</h1>\n<form method=\"get\" action=\"/\"><input name=\"q\" placeholder=\"filter\" value=\"" +
                  attr(q.filter) + "\"> sort <select name=\"sort\">";
  for (const char* k : {"started", "app", "status", "backend", "speedup"})
    s += fmt::format("<option{}>{}</option>", q.sort == k ? " selected" : "", k);
  s += fmt::format("</select> <label><input type=\"checkbox\" name=\"asc\" value=\"1\"{}> ascending</label> "
                   "<button>show</button></form>\n",
                   q.ascending ? " checked" : "");
  if (running) s += "<p class=\"muted\">A run is in progress: this page reloads every 5 seconds.</p>\n";
  s += campaigns;
  s += fmt::format("<section><p class=\"muted\">{} of {} run(s)</p><table class=\"runs\">\n<tr><th>run</th><th>app</th>"
                   "<th>backend</th><th>status</th><th>best speedup</th><th>variants</th><th>started</th></tr>\n",
                   shown.size(), runs.size());
  for (const auto& r : shown) {
    std::string id = member_string(r, "id");
    std::string ci = member(r, "ci_low").is_number() && member(r, "ci_high").is_number()
                         ? fmt::format(" [{:.3g}, {:.3g}]", r["ci_low"].get<double>(), r["ci_high"].get<double>())
                         : "";
    s += fmt::format(
        "<tr><td><a href=\"/runs/{}\"><code>{}</code></a></td><td>{}</td><td>{}</td><td>{} {}</td>"
        "<td>{}{}</td><td>{}</td><td>{}</td></tr>\n",
        attr(id), escape(id.substr(0, 8)), escape(member_string(r, "app")),
        escape(member_string(r, "model").empty() ? member_string(r, "backend") : member_string(r, "model")) +
            aa_badge(r),
        status_badge(member_string(r, "status")),
        member_string(r, "outcome").empty() ? "" : status_badge(member_string(r, "outcome")),
        escape(speedup_text(member(r, "speedup"))), escape(ci), escape(text_of(member(r, "variants"))),
        escape(member_string(r, "started")));
  }
  s += "</table></section>\n";
  std::string html = page("Runs - Optimas", s);
  if (running) html.replace(html.find("<title>"), 0, "<meta http-equiv=\"refresh\" content=\"5\">");
  return html;
}

CompareSide compare_side(const store::RunStore& store, const std::string& spec) {
  auto colon = spec.find(':');
  std::string id = store.resolve(spec.substr(0, colon));
  CompareSide side;
  side.run = store.load_run(id);
  side.label = id.substr(0, 8);
  auto text = read_run_file(store, id, "diagnostics.json");
  try {
    side.diagnostics = text ? util::parse_json(*text) : json();
  } catch (const json::exception&) {
    throw Error(fmt::format("run {}: diagnostics.json is not JSON", id));
  }
  if (colon == std::string::npos) return side;
  std::string key = spec.substr(colon + 1);
  RunData d = load_run_data(store, id);
  for (const auto& v : d.variants)
    if (member_string(v.result, "key") == key) {
      side.variant = v.result;
      side.label += ":" + key;
      if (!v.after.is_null())
        side.diagnostics = v.after;
      else
        side.label += " (no re-profile: the baseline's counters)";
      return side;
    }
  throw Error(fmt::format("run {} has no variant '{}'", id, key));
}

json compare_json(const CompareSide& a, const CompareSide& b) {
  json kernels = json::object();
  for (const CompareSide* side : {&a, &b}) {
    std::size_t at = side == &a ? 0 : 1;
    for (const auto& k : member(side->diagnostics, "kernels")) {
      json counters = kernel_counters(k); // items() would not keep a temporary alive
      for (const auto& [metric, value] : counters.items()) {
        json& pair = kernels[member_string(k, "kernel")][metric];
        if (!pair.is_array()) pair = json::array({nullptr, nullptr});
        pair[at] = value;
      }
    }
  }
  auto summary = [](const CompareSide& s) {
    return json{{"label", s.label},
                {"run", member(s.run, "id")},
                {"app", member(s.run, "app")},
                {"status", s.variant.is_null() ? member(s.run, "status") : member(s.variant, "status")},
                {"speedup",
                 s.variant.is_null() ? member(s.run, "speedup") : member(member(s.variant, "measurement"), "speedup")}};
  };
  return {{"schema", "optimas.dashboard.compare/1"}, {"a", summary(a)}, {"b", summary(b)}, {"kernels", kernels}};
}

std::string compare_page(const std::vector<json>& runs, const CompareSide* a, const CompareSide* b) {
  std::string s =
      "<h1>Compare</h1>\n<form method=\"get\" action=\"/compare\">a <input name=\"a\" list=\"ids\" value=\"" +
      attr(a ? member_string(a->run, "id") + (a->variant.is_null() ? "" : ":" + member_string(a->variant, "key"))
             : "") +
      "\"> b <input name=\"b\" list=\"ids\" value=\"" +
      attr(b ? member_string(b->run, "id") + (b->variant.is_null() ? "" : ":" + member_string(b->variant, "key"))
             : "") +
      "\"> <button>compare</button><datalist id=\"ids\">";
  for (const auto& r : runs) s += "<option value=\"" + attr(member_string(r, "id")) + "\">";
  s += "</datalist><br><span class=\"muted\">a run id (or a unique prefix), or RUN:VARIANT for a variant's re-profile"
       "</span></form>\n";
  if (a && b) {
    json c = compare_json(*a, *b);
    s += "<section><table class=\"compare\"><tr><th></th><th>" + escape(a->label) + "</th><th>" + escape(b->label) +
         "</th></tr>\n";
    for (const char* key : {"app", "status", "speedup"})
      s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", key, cell(c["a"][key]), cell(c["b"][key]));
    for (const auto& [kernel, metrics] : c["kernels"].items()) {
      s += "<tr><th colspan=\"3\">" + escape(kernel) + "</th></tr>\n";
      for (const auto& [metric, pair] : metrics.items())
        s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", escape(metric), cell(pair[0]), cell(pair[1]));
    }
    s += "</table></section>\n";
  }
  return page("Compare - Optimas", s);
}

} // namespace optimas::serve
