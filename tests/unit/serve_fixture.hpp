// Shared by the dashboard's tests: a run store in a temporary folder holding one small run whose
// reply carries markup, with diagnostics, a snapshot of the source, a diff and samples.
#pragma once

#include "store/run_store.hpp"
#include "test_helpers.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace optimas::test {

inline constexpr const char* k_run_id = "0123abcd-0000-4000-8000-000000000001";

inline nlohmann::json fixture_diagnostics() {
  using nlohmann::json;
  json roofline = {{"id", "RF1"},
                   {"class", "memory-bound"},
                   {"summary", "memory bandwidth saturated"},
                   {"flops", 3.6e11},
                   {"intensity", {{"dram", 0.0847}}},
                   {"memory", json::array({{{"name", "DRAM"}, {"achieved", 4.29e12}, {"peak", 4.8e12}, {"rho", 0.89}}})},
                   {"compute", json::array({{{"name", "FP64"}, {"achieved", 3.6e11}, {"peak", 3.3e13}, {"rho", 0.01}}})}};
  json lines = json::array({{{"id", "PC1"}, {"file", "/somewhere/else/main.cu"}, {"line", 3},
                             {"code", "a[i] = b[i] + s * c[i];"}, {"kernel_share", 0.9}, {"stall", "stall_long_scoreboard"},
                             {"fraction", 0.97}},
                            {{"id", "PC2"}, {"file", "/somewhere/else/main.cu"}, {"line", 2},
                             {"code", "int i = threadIdx.x;"}, {"kernel_share", 0.05}, {"stall", "stall_short_scoreboard"},
                             {"fraction", 0.7}}});
  json kernel = {{"kernel", "triad_kernel"}, {"share", 0.6}, {"launches", 3}, {"roofline", roofline},
                 {"stalls", {{"lines", lines}, {"kernel_stalls", {{"stall_long_scoreboard", 900}}}}}, {"notes", json::array()}};
  json evidence = json::array({{{"id", "RF1"}, {"kind", "roofline"}, {"kernel", "triad_kernel"}, {"text", "DRAM 89% <b>of peak</b>"}},
                               {{"id", "PC1"}, {"kind", "pc"}, {"kernel", "triad_kernel"}, {"text", "main.cu:3 stall"}},
                               {{"id", "PC2"}, {"kind", "pc"}, {"kernel", "triad_kernel"}, {"text", "main.cu:2 stall"}}});
  return {{"schema", "optimas.diagnostics/1"}, {"config", "default"}, {"kernels", json::array({kernel})}, {"evidence", evidence}};
}

// root/k_run_id with run.json, diagnostics.json, snapshot/main.cu and one measured variant.
inline void write_fixture_run(const TempDir& dir) {
  using nlohmann::json;
  std::string run = (dir.path() / k_run_id).string();
  dir.file(std::string(k_run_id) + "/snapshot/main.cu", "__global__ void triad_kernel() {\n  int i = threadIdx.x;\n"
                                                        "  a[i] = b[i] + s * c[i];\n}\n");
  std::filesystem::create_directories(run + "/iterations/1/attempt-1");
  store::write_json_atomic(run + "/diagnostics.json", fixture_diagnostics());
  json reply = {{"summary", "<img src=x onerror=alert(2)>"},
                {"edits", json::array({{{"file", "main.cu"}, {"kernel", "triad_kernel"}, {"evidence", {"PC1", "RF1"}},
                                        {"rationale", "Faster <script>alert(1)</script>"},
                                        {"find", "a[i] = b[i] + s * c[i];"}, {"replace", "a[i] = fma(s, c[i], b[i]);"}}})}};
  store::write_json_atomic(run + "/iterations/1/attempt-1/reply.json", reply);
  dir.file(std::string(k_run_id) + "/iterations/1/attempt-1/diff.patch",
           "--- a/main.cu\n+++ b/main.cu\n@@ -1,4 +1,4 @@\n __global__ void triad_kernel() {\n   int i = threadIdx.x;\n"
           "-  a[i] = b[i] + s * c[i];\n+  a[i] = fma(s, c[i], b[i]);\n }\n");
  json base = json::array(), var = json::array();
  for (int r = 0; r < 5; ++r) {
    base.push_back({{"kernel_ms", 10.0 + r}, {"round", r}});
    var.push_back({{"kernel_ms", 5.0 + r * 0.5}, {"round", r}});
  }
  json variant = {{"key", "i1a1"},
                  {"dir", "iterations/1/attempt-1"},
                  {"status", "accepted"},
                  {"reason", "faster <by far>"},
                  {"parent", "baseline"},
                  {"measurement", {{"ci", {1.7, 2.3}}, {"speedup", 2.0}, {"configs", {{"default", {{"base", base}, {"variant", var}}}}}}},
                  {"ear", {{"evidence_coverage", 1.0}, {"hallucinations", 0}}}};
  json doc = {{"schema", "optimas.run/1"}, {"id", k_run_id},   {"app", "stream"},       {"status", "finished"},
              {"outcome", "improved"},     {"best", "i1a1"},   {"speedup", 2.0},        {"started", "2026-12-01T10:00:00Z"},
              {"model", "test/model"},     {"backend", "test"}, {"variants", json::array({variant})}};
  store::write_json_atomic(run + "/run.json", doc);
}

// The campaign of tests/data/campaign (32 cells, 16 rows) copied to root/campaigns/, as
// `optimas campaign` leaves it in a run store.
inline constexpr const char* k_campaign_id = "examples-ablation";

inline std::string write_fixture_campaign(const TempDir& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir.path() / "campaigns");
  fs::copy(fs::path(OPTIMAS_TEST_DATA) / "campaign" / "campaigns" / k_campaign_id, dir.path() / "campaigns" / k_campaign_id,
           fs::copy_options::recursive);
  return (dir.path() / "campaigns" / k_campaign_id).string();
}

} // namespace optimas::test
