// analysis/json.cpp: `optimas analyze --json` (schema optimas.diagnostics/1) holds to
// docs/diagnostics.schema.json on the recorded profiles, writes what n/a becomes as null, and
// reads back as it was written.
#include "analysis/json.hpp"

#include "analysis/diagnostics.hpp"
#include "profile/importer.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

using namespace optimas::analysis;
using nlohmann::json;
using optimas::test::data_path;

namespace {

json load_schema() {
  std::ifstream in(std::filesystem::path(OPTIMAS_TEST_DATA).parent_path().parent_path() / "docs" /
                   "diagnostics.schema.json");
  return json::parse(in);
}

bool has_type(const json& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "string") return v.is_string();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  if (type == "number") return v.is_number();
  if (type == "integer") return v.is_number_integer() || (v.is_number_float() && std::trunc(v.get<double>()) == v.get<double>());
  return false;
}

// The part of JSON Schema that diagnostics.schema.json uses (type, required, properties,
// additionalProperties, items, $ref into $defs, enum, const, oneOf, bounds, pattern). Returns the
// first violation as "path: what", or empty. (The scenario test analyze_recorded validates with
// Python's jsonschema as well; this one runs where that is not installed and on hand-made input.)
std::string violation(const json& v, const json& s, const json& root, const std::string& path) {
  if (s.contains("$ref")) {
    const std::string ref = s["$ref"];
    return violation(v, root["$defs"][ref.substr(ref.rfind('/') + 1)], root, path);
  }
  if (s.contains("oneOf")) {
    int matches = 0;
    for (const auto& alt : s["oneOf"]) matches += violation(v, alt, root, path).empty();
    if (matches != 1) return path + ": matches " + std::to_string(matches) + " of oneOf";
  }
  if (s.contains("type")) {
    bool ok = false;
    for (const auto& t : s["type"].is_array() ? s["type"] : json::array({s["type"]})) ok = ok || has_type(v, t);
    if (!ok) return path + ": not of type " + s["type"].dump();
  }
  if (s.contains("const") && v != s["const"]) return path + ": not " + s["const"].dump();
  if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end())
    return path + ": " + v.dump() + " not in " + s["enum"].dump();
  if (v.is_number()) {
    const double x = v.get<double>();
    if (s.contains("minimum") && x < s["minimum"].get<double>()) return path + ": below minimum";
    if (s.contains("maximum") && x > s["maximum"].get<double>()) return path + ": above maximum";
    if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>()) return path + ": not above minimum";
  }
  if (v.is_string() && s.contains("pattern") &&
      !std::regex_search(v.get<std::string>(), std::regex(s["pattern"].get<std::string>())))
    return path + ": " + v.dump() + " does not match " + s["pattern"].dump();
  if (v.is_array() && s.contains("items"))
    for (std::size_t i = 0; i < v.size(); ++i)
      if (auto e = violation(v[i], s["items"], root, path + "[" + std::to_string(i) + "]"); !e.empty()) return e;
  if (v.is_object()) {
    for (const auto& key : s.value("required", json::array()))
      if (!v.contains(key)) return path + ": no \"" + key.get<std::string>() + "\"";
    const json props = s.value("properties", json::object());
    for (const auto& [key, value] : v.items()) {
      if (props.contains(key)) {
        if (auto e = violation(value, props[key], root, path + "." + key); !e.empty()) return e;
      } else if (s.contains("additionalProperties")) {
        const json& extra = s["additionalProperties"];
        if (extra.is_boolean() && !extra.get<bool>()) return path + ": unexpected \"" + key + "\"";
        if (extra.is_object())
          if (auto e = violation(value, extra, root, path + "." + key); !e.empty()) return e;
      }
    }
  }
  return {};
}

std::string violation(const json& doc) {
  static const json schema = load_schema();
  return violation(doc, schema, schema, "$");
}

// A hot kernel whose profile had n/a for most of its numbers.
Diagnostics with_missing_numbers() {
  Diagnostics d;
  d.config = "default";
  d.hot.total_ns = 1000;
  d.hot.kernels.push_back({"k", "k(int)", 1000, 1, 1.0, true});
  KernelDiagnostics kd;
  kd.time = d.hot.kernels[0];
  Roofline r;
  r.id = "RF1";
  r.kernel = "k";
  r.launches = 1;
  r.compute.push_back({"FP64", optimas::profile::k_nan, optimas::profile::k_nan, optimas::profile::k_nan});
  r.bound = "latency-bound";
  r.summary = "Compute underutilized (0%), memory bandwidth underutilized (0%)";
  r.occupancy_limits.push_back({"registers", optimas::profile::k_nan});
  kd.roofline = r;
  kd.notes.push_back("no PC samples for k");
  d.kernels.push_back(kd);
  d.evidence.push_back({"RF1", "roofline", "k", "[RF1] Roofline: ..."});
  return d;
}

} // namespace

TEST(AnalysisJson, RecordedProfilesHoldToTheSchema) {
  for (const char* name : {"h200/stream", "h200/stencil", "h200/windows", "ncu-samples"}) {
    auto prof = optimas::profile::import_profile(data_path(name));
    json j = to_json(analyze(prof, {}));
    EXPECT_EQ(violation(j), "") << name;
    EXPECT_EQ(j["schema"], "optimas.diagnostics/1");
  }
}

// The validator above is what makes the test above mean anything: it must reject.
TEST(AnalysisJson, TheSchemaCheckRejectsWhatTheSchemaForbids) {
  json good = to_json(analyze(optimas::profile::import_profile(data_path("h200/stream")), {}));
  ASSERT_EQ(violation(good), "");
  json j = good;
  j.erase("evidence");
  EXPECT_NE(violation(j), "");
  j = good;
  j["kernels"][0]["roofline"]["rho_memory"] = 1.5;
  EXPECT_NE(violation(j), "");
  j = good;
  j["kernels"][0]["roofline"]["class"] = "fast";
  EXPECT_NE(violation(j), "");
  j = good;
  j["evidence"][0]["id"] = "XX1";
  EXPECT_NE(violation(j), "");
}

TEST(AnalysisJson, MissingNumbersAreNull) {
  json j = to_json(with_missing_numbers());
  EXPECT_EQ(violation(j), "");
  const json& r = j["kernels"][0]["roofline"];
  EXPECT_TRUE(r["duration_ns"].is_null());
  EXPECT_TRUE(r["flops"].is_null());
  EXPECT_TRUE(r["rho_compute"].is_null());
  EXPECT_TRUE(r["intensity"]["dram"].is_null());
  EXPECT_TRUE(r["compute"][0]["achieved"].is_null());
  EXPECT_TRUE(r["occupancy"]["blocks_per_sm_limits"]["registers"].is_null());
  EXPECT_TRUE(j["kernels"][0]["stalls"].is_null());
  EXPECT_TRUE(j["kernels"][0]["counters"].is_null());
  EXPECT_EQ(j["kernels"][0]["notes"], json({"no PC samples for k"}));
  EXPECT_EQ(j.dump().find("nan"), std::string::npos);
}

TEST(AnalysisJson, OptionsAndEvidenceAreEchoed) {
  AnalysisOptions o;
  o.alpha = 0.9;
  o.eomp.seed = 7;
  auto d = analyze(optimas::profile::import_profile(data_path("h200/stream")), o);
  json j = to_json(d);
  EXPECT_EQ(j["options"]["alpha"], 0.9);
  EXPECT_EQ(j["options"]["seed"], 7);
  EXPECT_EQ(j["sources"], "PC+IA+Roofline");
  ASSERT_EQ(j["evidence"].size(), d.evidence.size());
  for (std::size_t i = 0; i < d.evidence.size(); ++i) {
    EXPECT_EQ(j["evidence"][i]["id"], d.evidence[i].id);
    EXPECT_EQ(j["evidence"][i]["text"], d.evidence[i].text);
  }
  ASSERT_FALSE(d.kernels.empty());
  ASSERT_TRUE(d.kernels[0].stalls);
  const json& stalls = j["kernels"][0]["stalls"];
  EXPECT_EQ(stalls["summary"], d.kernels[0].stalls->text);
  EXPECT_EQ(stalls["summary_bytes"], d.kernels[0].stalls->text.size());
  // A stall reason the dictionary explains carries its explanation.
  ASSERT_FALSE(stalls["lines"].empty());
  EXPECT_TRUE(stalls["lines"][0].contains("explanation")) << stalls["lines"][0].dump();
  EXPECT_EQ(j["all_kernels"].size(), d.hot.kernels.size());
}

TEST(AnalysisJson, ReadsBackAsWritten) {
  json j = to_json(analyze(optimas::profile::import_profile(data_path("h200/stencil")), {}));
  EXPECT_EQ(json::parse(j.dump()), j);
}

// roofline.access: every member present, a number where the profile has its counters and null
// where it does not (the recorded H200 profiles predate them; the --set full sample has them).
TEST(AnalysisJson, AccessFiguresAreNumbersOrNull) {
  json old = to_json(analyze(optimas::profile::import_profile(data_path("h200/shmem")), {}));
  const json& a = old["kernels"][0]["roofline"]["access"];
  for (const char* key : {"global_load_sectors_per_request", "global_store_sectors_per_request", "shared_bank_conflicts",
                          "shared_wavefronts", "local_load_requests", "local_store_requests", "local_sectors"})
    EXPECT_TRUE(a.contains(key) && a[key].is_null()) << key;
  EXPECT_TRUE(a["shared_excessive_wavefronts"].is_number());
  EXPECT_TRUE(a["summary"].is_string());
  EXPECT_EQ(violation(old), "");
  json full = to_json(analyze(optimas::profile::import_profile(data_path("ncu-samples")), {}));
  const json& b = full["kernels"][0]["roofline"]["access"];
  EXPECT_DOUBLE_EQ(b["global_load_sectors_per_request"].get<double>(), 8.0); // dloop, the hot kernel
  EXPECT_TRUE(b["local_sectors"].is_number());
  json broken = full;
  broken["kernels"][0]["roofline"]["access"]["shared_wavefronts"] = "many";
  EXPECT_NE(violation(broken), "");
}
