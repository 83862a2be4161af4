#include "prompt/reply.hpp"

#include "util/json_text.hpp"

#include <fmt/format.h>

#include <cmath>

namespace optimas::embedded {
std::string_view reply_schema_json();
}

namespace optimas::prompt {

using nlohmann::json;

const json& reply_schema() {
  static const json k_schema = json::parse(embedded::reply_schema_json());
  return k_schema;
}

namespace {

bool has_type(const json& v, const std::string& type) {
  if (type == "string") return v.is_string();
  // A float with no fraction is an integer (JSON Schema); 4e125 is one, and casting it to long
  // long to find out was undefined behaviour.
  if (type == "integer")
    return v.is_number_integer() ||
           (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::trunc(v.get<double>()));
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  if (type == "null") return v.is_null();
  return false;
}

std::string type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_string()) return "a string";
  if (v.is_number()) return "a number";
  if (v.is_boolean()) return "a boolean";
  if (v.is_array()) return "an array";
  return "an object";
}

std::string at(const std::string& path) {
  return path.empty() ? "reply" : path;
}

} // namespace

std::vector<std::string> validate(const json& doc, const json& schema, const std::string& path) {
  std::vector<std::string> errors;
  if (schema.contains("type")) {
    const json& t = schema["type"];
    bool ok = false;
    std::string wanted;
    for (const auto& one : t.is_array() ? t : json::array({t})) {
      ok = ok || has_type(doc, one.get<std::string>());
      wanted += (wanted.empty() ? "" : " or ") + one.get<std::string>();
    }
    if (!ok) {
      errors.push_back(fmt::format("{}: expected {}, found {}", at(path), wanted, type_name(doc)));
      return errors;
    }
  }
  if (schema.contains("enum")) {
    bool found = false;
    for (const auto& e : schema["enum"]) found = found || e == doc;
    if (!found) errors.push_back(fmt::format("{}: {} is not one of {}", at(path), doc.dump(), schema["enum"].dump()));
  }
  if (schema.contains("minimum") && doc.is_number() && doc.get<double>() < schema["minimum"].get<double>())
    errors.push_back(fmt::format("{}: {} is below the minimum {}", at(path), doc.dump(), schema["minimum"].dump()));
  if (doc.is_object()) {
    for (const auto& r : schema.value("required", json::array()))
      if (!doc.contains(r.get<std::string>()))
        errors.push_back(fmt::format("{}: missing \"{}\"", at(path), r.get<std::string>()));
    const json props = schema.value("properties", json::object());
    for (const auto& [key, value] : doc.items()) {
      std::string sub = path.empty() ? key : path + "." + key;
      if (props.contains(key)) {
        auto more = validate(value, props[key], sub);
        errors.insert(errors.end(), more.begin(), more.end());
      } else if (schema.contains("additionalProperties") && schema["additionalProperties"] == false) {
        errors.push_back(fmt::format("{}: unexpected property \"{}\"", at(path), key));
      }
    }
  }
  if (doc.is_array() && schema.contains("items")) {
    for (std::size_t i = 0; i < doc.size(); ++i) {
      auto more = validate(doc[i], schema["items"], fmt::format("{}[{}]", path, i));
      errors.insert(errors.end(), more.begin(), more.end());
    }
  }
  return errors;
}

namespace {

std::optional<std::string> opt_string(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<std::string>();
}

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  for (const auto& s : j.value(key, json::array())) out.push_back(s.get<std::string>());
  return out;
}

// A line number as the reply gives it: an integer in range, or -1 (which the form check reports)
// for anything else (a fraction, a number past k_max_line or past 64 bits, a negative one).
std::int64_t line_number(const json& e, const char* key) {
  if (!e.contains(key) || e[key].is_null()) return 0;
  const json& v = e[key];
  if (v.is_number_unsigned())
    return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(k_max_line) ? v.get<std::int64_t>() : -1;
  if (v.is_number_integer()) return v.get<std::int64_t>() >= 1 ? v.get<std::int64_t>() : -1;
  return -1;
}

// A line number that line_number() turned into -1, said as the reply gave it (10**12 read as
// "line range -1..-1").
void check_line_numbers(const json& doc, std::vector<std::string>& errors) {
  const auto& edits = doc.value("edits", json::array());
  auto shown = [](const json& e, const char* key) { return e.contains(key) ? e[key].dump().substr(0, 40) : "null"; };
  for (std::size_t i = 0; i < edits.size(); ++i)
    if (edits[i].is_object() && (line_number(edits[i], "line_start") < 0 || line_number(edits[i], "line_end") < 0))
      errors.push_back(fmt::format("edits[{}]: line range {}..{} is not valid (line numbers are whole numbers from 1 "
                                   "to {})",
                                   i, shown(edits[i], "line_start"), shown(edits[i], "line_end"), k_max_line));
}

// Checks the schema cannot express: each edit uses exactly one of its two forms, and no text
// carries a NUL byte.
void check_edit_forms(const Reply& r, std::vector<std::string>& errors) {
  for (std::size_t i = 0; i < r.edits.size(); ++i) {
    const Edit& e = r.edits[i];
    bool text = e.find.has_value();
    bool range = e.line_start != 0 || e.line_end != 0;
    if (text == range)
      errors.push_back(fmt::format("edits[{}]: give either find/replace or line_start/line_end/new_text, not {}", i,
                                   text ? "both" : "neither"));
    if (text && !e.replace) errors.push_back(fmt::format("edits[{}]: find without replace", i));
    if (text && e.find->empty()) errors.push_back(fmt::format("edits[{}]: find is empty", i));
    // A number that is no line number at all is said by check_line_numbers.
    bool numbers = e.line_start >= 0 && e.line_end >= 0;
    if (range && numbers && (e.line_start < 1 || e.line_end < e.line_start || e.line_end > k_max_line))
      errors.push_back(fmt::format("edits[{}]: line range {}..{} is not valid (lines 1 to {})", i, e.line_start,
                                   e.line_end, k_max_line));
    if (range && !e.new_text) errors.push_back(fmt::format("edits[{}]: a line range needs new_text", i));
    // JSON can carry "\u0000"; no source text holds one, and it would be written into the file.
    auto no_nul = [&](const char* field, const std::string* value) {
      if (value && value->find('\0') != std::string::npos)
        errors.push_back(
            fmt::format("edits[{}].{}: contains a NUL byte (\\u0000), which no source text holds", i, field));
    };
    no_nul("file", &e.file);
    no_nul("kernel", &e.kernel);
    no_nul("find", e.find ? &*e.find : nullptr);
    no_nul("replace", e.replace ? &*e.replace : nullptr);
    no_nul("new_text", e.new_text ? &*e.new_text : nullptr);
  }
}

Reply from_json(const json& j) {
  Reply r;
  r.summary = j.value("summary", "");
  for (const auto& e : j.value("edits", json::array())) {
    Edit x;
    x.file = e.value("file", "");
    x.kernel = e.value("kernel", "");
    x.find = opt_string(e, "find");
    x.replace = opt_string(e, "replace");
    x.line_start = line_number(e, "line_start");
    x.line_end = line_number(e, "line_end");
    x.new_text = opt_string(e, "new_text");
    x.evidence = strings(e, "evidence");
    x.rationale = e.value("rationale", "");
    if (auto r = e.find("rule"); r != e.end() && r->is_string()) x.rule = r->get<std::string>();
    if (auto a = e.find("addresses"); a != e.end() && a->is_array())
      for (const auto& id : *a)
        if (id.is_string()) x.addresses.push_back(id.get<std::string>());
    for (const auto& fx : e.value("expected_effect", json::array()))
      x.expected_effect.push_back({fx.value("metric", ""), fx.value("direction", "")});
    r.edits.push_back(std::move(x));
  }
  for (const auto& w : j.value("withheld", json::array()))
    r.withheld.push_back({w.value("suggestion", ""), w.value("reason", ""), strings(w, "evidence")});
  return r;
}

// Candidate JSON documents in a reply: the whole text, fenced blocks, the outermost {...}.
struct Candidate {
  std::string text;
  std::string format;
};

std::vector<Candidate> candidates(std::string_view text) {
  std::vector<Candidate> out;
  out.push_back({std::string(text), "json"});
  for (std::size_t pos = 0; (pos = text.find("```", pos)) != std::string_view::npos;) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) break;
    std::size_t close = text.find("```", nl);
    if (close == std::string_view::npos) break;
    out.push_back({std::string(text.substr(nl + 1, close - nl - 1)), "fenced-json"});
    pos = close + 3;
  }
  std::size_t open = text.find('{');
  std::size_t last = text.rfind('}');
  if (open != std::string_view::npos && last != std::string_view::npos && last > open)
    out.push_back({std::string(text.substr(open, last - open + 1)), "prose+json"});
  return out;
}

// The longest fenced code block that is not JSON: a whole source file as the fallback.
std::optional<std::string> code_block(std::string_view text) {
  std::optional<std::string> best;
  for (std::size_t pos = 0; (pos = text.find("```", pos)) != std::string_view::npos;) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) break;
    std::string lang(text.substr(pos + 3, nl - pos - 3));
    std::size_t close = text.find("```", nl);
    if (close == std::string_view::npos) break;
    std::string body(text.substr(nl + 1, close - nl - 1));
    if (lang != "json" && body.find("__global__") != std::string::npos && (!best || body.size() > best->size()))
      best = body;
    pos = close + 3;
  }
  return best;
}

// An edit's "rule" and "addresses" (the builtin optimizer's, see Edit) are checked here and
// removed from the copy checked against the schema, so the schema models are held to stays
// closed; from_json reads them from the reply itself.
std::vector<std::string> take_rules_aside(json& doc) {
  std::vector<std::string> errors;
  auto edits = doc.find("edits");
  if (edits == doc.end() || !edits->is_array()) return errors;
  for (std::size_t i = 0; i < edits->size(); ++i) {
    json& e = (*edits)[i];
    if (!e.is_object()) continue;
    if (e.contains("addresses")) {
      if (!e["addresses"].is_array())
        errors.push_back(fmt::format("edits[{}].addresses: expected an array, found {}", i, type_name(e["addresses"])));
      e.erase("addresses");
    }
    if (!e.contains("rule")) continue;
    if (!e["rule"].is_string() && !e["rule"].is_null())
      errors.push_back(fmt::format("edits[{}].rule: expected string or null, found {}", i, type_name(e["rule"])));
    e.erase("rule");
  }
  return errors;
}

} // namespace

ParsedReply parse_reply(std::string_view text) {
  ParsedReply p;
  p.format = "none";
  if (text.size() > k_max_reply_bytes) {
    p.errors.push_back(fmt::format("the reply is {:.1f} MB; replies over {} MB are refused (edits to a kernel are "
                                   "kilobytes)",
                                   static_cast<double>(text.size()) / 1e6, k_max_reply_bytes / 1'000'000));
    return p;
  }
  std::vector<std::string> first_errors;
  for (const auto& c : candidates(text)) {
    json doc = util::parse_json(c.text, false);
    if (doc.is_discarded() || !doc.is_object()) continue;
    json checked = doc;
    auto errors = take_rules_aside(checked);
    for (auto& e : validate(checked, reply_schema())) errors.push_back(std::move(e));
    if (errors.empty()) {
      Reply r = from_json(doc);
      check_line_numbers(doc, errors);
      check_edit_forms(r, errors);
      p.reply = std::move(r);
      p.format = c.format;
      p.errors = std::move(errors);
      return p;
    }
    if (first_errors.empty()) {
      first_errors = std::move(errors);
      p.format = c.format;
    }
  }
  if (!first_errors.empty()) {
    p.errors = std::move(first_errors);
    return p;
  }
  if (auto code = code_block(text)) {
    Reply r;
    r.full_source = std::move(code);
    p.reply = std::move(r);
    p.format = "code-block";
    return p;
  }
  p.errors.push_back(text.empty() ? "the reply is empty"
                                  : "the reply holds no JSON object and no CUDA code block (expected the JSON of "
                                    "docs/reply.schema.json)");
  return p;
}

json to_json(const Reply& r) {
  json edits = json::array();
  for (const auto& e : r.edits) {
    json effects = json::array();
    for (const auto& fx : e.expected_effect) effects.push_back({{"metric", fx.metric}, {"direction", fx.direction}});
    auto opt = [](const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); };
    edits.push_back({{"file", e.file},
                     {"kernel", e.kernel},
                     {"find", opt(e.find)},
                     {"replace", opt(e.replace)},
                     {"line_start", e.line_start > 0 ? json(e.line_start) : json(nullptr)},
                     {"line_end", e.line_end > 0 ? json(e.line_end) : json(nullptr)},
                     {"new_text", opt(e.new_text)},
                     {"evidence", e.evidence},
                     {"rationale", e.rationale},
                     {"expected_effect", effects}});
    if (!e.rule.empty()) edits.back()["rule"] = e.rule;
    if (!e.addresses.empty()) edits.back()["addresses"] = e.addresses;
  }
  json withheld = json::array();
  for (const auto& w : r.withheld)
    withheld.push_back({{"suggestion", w.suggestion}, {"reason", w.reason}, {"evidence", w.evidence}});
  return {{"summary", r.summary}, {"edits", edits}, {"withheld", withheld}};
}

} // namespace optimas::prompt
