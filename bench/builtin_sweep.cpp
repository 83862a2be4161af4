// The builtin rules on code nobody here wrote: for each CUDA file named, diagnostics that
// provoke every rule on every kernel (a stall on each body line, taking each kind in turn;
// uncoalesced access, bank conflicts, local memory and a register-limited occupancy), then the
// reply applied and the guardrails run, as `optimas optimize` would. Where edits apply and pass,
// the variant is written beside the file as FILE.sweep.cu (and its diff as FILE.sweep.diff), for
// scripts/builtin-sweep.sh to compile. The tuning stage's knob search runs on the file too (every
// kernel latency-bound, registers limiting it, long_scoreboard dominant): where it finds knobs,
// the tunable file is FILE.tune.cu and FILE.tune.flags the -D of a point other than the
// program's own, for the script to compile both ways. As in a run, the builtin also reads the
// other files of the file's folder that launch or declare kernels (propose::read_host_sources,
// the folder taken for the application). The application rules run too (optimize.scope:
// application), on a timeline whose copies of both directions are all pageable, 50 each, AP1 and
// AP2; the guardrails then check that scope where an edit cites them. What it withheld, and why,
// is FILE.sweep.withheld.
// One tab-separated line per file:
//   file  kernels  edits  applied  withheld  rules  violations  knobs
// No GPU is needed: the rules rewrite text, and the text must still build.
//
//   builtin_sweep FILE.cu ...
#include "analysis/application.hpp"
#include "cuda/source.hpp"
#include "edit/apply.hpp"
#include "edit/guardrails.hpp"
#include "llm/backend.hpp"
#include "prompt/reply.hpp"
#include "propose/prepare.hpp"
#include "tune/discover.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

using namespace optimas;
using nlohmann::json;

namespace {

const char* k_stalls[] = {"stall_long_scoreboard",  "stall_wait",        "stall_mio_throttle",
                          "stall_short_scoreboard", "stall_lg_throttle", "stall_math_pipe_throttle",
                          "stall_barrier"};

// Every kernel of the file, hot, with evidence for every rule; `ids` collects the evidence IDs.
// The file's __device__ functions' lines are the first kernel's too (the rules that edit one run).
json diagnostics(const cuda::SourceFile& f, const std::string& name, std::set<std::string>& ids) {
  json kernels = json::array();
  int pc = 0;
  // The file's __device__ functions' lines count as the first kernel's (a helper it calls).
  std::vector<std::pair<int, int>> helpers;
  for (const auto& fn : f.functions)
    if (!fn.kernel) helpers.push_back({fn.body_first_line, fn.last_line});
  for (const auto& fn : f.functions) {
    if (!fn.kernel) continue;
    json lines = json::array();
    std::vector<int> body;
    for (int l = fn.body_first_line; l <= fn.last_line; ++l) body.push_back(l);
    if (kernels.empty())
      for (auto [first, last] : helpers)
        for (int l = first; l <= last; ++l) body.push_back(l);
    for (int l : body) {
      std::string id = "PC" + std::to_string(++pc);
      ids.insert(id);
      lines.push_back({{"id", id}, {"file", name}, {"line", l}, {"stall", k_stalls[l % 7]}, {"fraction", 0.8}});
      // And a wait on a global load of the line itself (odd lines) or the line above (even):
      // loads_in_flight's evidence, the root cause of a long_scoreboard stall.
      id = "PC" + std::to_string(++pc);
      ids.insert(id);
      json cause = {{"status", "found"},
                    {"kind", "producer"},
                    {"operation", "global load (32-bit)"},
                    {"file", name},
                    {"line", l - (l % 2 == 0)}};
      lines.push_back({{"id", id},
                       {"file", name},
                       {"line", l},
                       {"stall", "stall_long_scoreboard"},
                       {"fraction", 0.8},
                       {"kernel_share", 0.01},
                       {"cause", cause}});
    }
    std::string rf = "RF" + std::to_string(kernels.size() + 1);
    ids.insert(rf);
    json access = {{"global_load_sectors_per_request", 16.0},
                   {"global_store_sectors_per_request", 16.0},
                   {"shared_bank_conflicts", 3.0e6},
                   {"shared_wavefronts", 3.2e6},
                   {"local_load_requests", 5.0e6},
                   {"local_store_requests", 5.1e6},
                   {"local_sectors", 2.0e7},
                   {"shared_excessive_wavefronts", 1.0e6},
                   {"shared_ideal_wavefronts", 2.0e6},
                   {"summary", ""}};
    kernels.push_back(
        {{"kernel", fn.name},
         {"roofline", {{"id", rf}, {"occupancy", {{"limiter", "registers"}, {"block_size", 256}}}, {"access", access}}},
         {"stalls", {{"lines", lines}}}});
  }
  return kernels;
}

// A timeline whose copies of both directions are 50 synchronous pageable ones, with their AP
// items (pinned_host's evidence); adds AP1 and AP2 to `ids`.
void add_pageable_copies(json& diagnostics, std::set<std::string>& ids) {
  json traffic = json::array(), items = json::array();
  for (const char* direction : {"HtoD", "DtoH"}) {
    profile::Traffic t{direction, 50, 50u << 22, 50, 50, 5e7, 5e7};
    traffic.push_back(profile::to_json(t));
    std::string id = "AP" + std::to_string(items.size() + 1);
    ids.insert(id);
    items.push_back({{"id", id}, {"kind", "application"}, {"kernel", ""}, {"text", analysis::traffic_text(t)}});
  }
  diagnostics["timeline"] = {{"traffic", traffic}};
  diagnostics["evidence"] = items;
}

// The knob search on one file, with evidence that lets every knob fire; writes FILE.tune.cu and
// FILE.tune.flags where it finds knobs and returns their names, then echo:LINE:KNOBS for each
// printf that prints one (tune/config_echo.hpp).
std::vector<std::string> knobs(const std::string& path, const std::string& name, const std::string& text,
                               const cuda::SourceFile& f) {
  analysis::Diagnostics d;
  for (const auto& fn : f.functions) {
    if (!fn.kernel) continue;
    analysis::KernelDiagnostics k;
    k.time.kernel = fn.name;
    analysis::Roofline r;
    r.id = "RF" + std::to_string(d.kernels.size() + 1);
    r.bound = "latency-bound";
    r.occupancy_limiter = "registers";
    r.occupancy_limits = {{"registers", 3}};
    r.block_size = 256;
    k.roofline = r;
    analysis::StallSummary st;
    st.kernel_stalls = {{profile::Stall::long_scoreboard, 100}};
    k.stalls = st;
    d.kernels.push_back(std::move(k));
  }
  auto found = tune::discover({{name, text}}, d, tune::k_discovered_budget);
  std::vector<std::string> names, flags;
  for (const auto& p : found.settings.params) {
    names.push_back(p.name);
    if (p.kind != config::TuneParam::Kind::macro) continue;
    for (const auto& v : p.values) // the first value that is not the program's own
      if (v != found.defaults[p.name]) {
        flags.push_back("-D" + p.name + "=" + v);
        break;
      }
  }
  for (const auto& e : found.echoes) // lines its validation would drop: the program printing a knob
    names.push_back(fmt::format("echo:{}:{}", e.line, util::join(e.knobs, "+")));
  if (!names.empty()) {
    auto edited = found.edited.find(name);
    std::ofstream(path + ".tune.cu", std::ios::binary) << (edited != found.edited.end() ? edited->second : text);
    std::ofstream(path + ".tune.flags", std::ios::binary) << util::join(flags, " ");
  }
  return names;
}

} // namespace

int main(int argc, char** argv) {
  log::set_level(log::Level::quiet);
  auto backend = llm::make_backend(llm::parse_model("builtin"));
  for (int a = 1; a < argc; ++a) {
    std::string path = argv[a];
    std::string name = std::filesystem::path(path).filename().string();
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto f = cuda::parse_source(name, text);
    std::set<std::string> ids;
    json kernels = diagnostics(f, name, ids);
    std::vector<std::string> hot;
    for (const auto& k : kernels) hot.push_back(k["kernel"]);
    if (hot.empty()) {
      std::printf("%s\t0\n", path.c_str());
      continue;
    }
    config::AppConfig app_config;
    app_config.dir = std::filesystem::path(path).parent_path().string();
    app_config.sources = {name};
    llm::Request r;
    json d = {{"kernels", kernels}};
    add_pageable_copies(d, ids);
    r.context = {{"diagnostics", d}, {"sources", {{name, text}}}, {"scope", "application"}};
    if (auto host = propose::read_host_sources(app_config, app_config.dir); !host.empty())
      r.context["host_sources"] = host;
    auto result = backend->complete(r);
    auto parsed = llm::ok(result) ? prompt::parse_reply(std::get<llm::Response>(result).text) : prompt::ParsedReply{};
    if (!parsed.ok()) {
      std::printf("%s\t%zu\treply failed\n", path.c_str(), hot.size());
      continue;
    }
    auto app = edit::apply_edits({{name, text}}, *parsed.reply, ids);
    std::vector<std::string> rules, violations;
    bool host_edits = false;
    for (const auto& e : parsed.reply->edits) {
      rules.push_back(e.rule);
      host_edits = host_edits || e.rule == "pinned_host";
    }
    edit::GuardrailOptions go{edit::Scope::kernel, hot};
    if (host_edits) { // the scope the application rules ran under, as a run checks it
      go.scope = edit::Scope::application;
      go.host_calls = {"cudaMemcpy"};
    }
    for (const auto& v : edit::check_guardrails(app, go)) violations.push_back(v.message);
    std::printf("%s\t%zu\t%zu\t%zu\t%zu\t%s\t%s\t%s\n", path.c_str(), hot.size(), parsed.reply->edits.size(),
                app.applied(), parsed.reply->withheld.size(), util::join(rules, ",").c_str(),
                util::join(violations, " | ").c_str(), util::join(knobs(path, name, text, f), ",").c_str());
    if (!parsed.reply->withheld.empty()) { // what a rule could not argue, one line each
      std::ofstream out(path + ".sweep.withheld", std::ios::binary);
      for (const auto& w : parsed.reply->withheld) out << w.suggestion << '\t' << w.reason << '\n';
    }
    if (app.applied() > 0 && violations.empty()) {
      std::ofstream(path + ".sweep.cu", std::ios::binary) << app.result.at(name);
      std::ofstream(path + ".sweep.diff", std::ios::binary) << edit::unified_diff(text, app.result.at(name), name);
    }
  }
  return 0;
}
