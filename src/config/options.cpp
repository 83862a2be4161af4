#include "config/options.hpp"

#include "util/error.hpp"
#include "util/names.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>

namespace optimas::config {

using nlohmann::json;

namespace {

std::string shown(const json& v) {
  // JSON has no NaN or infinity (dump() writes null): the value as the user gave it.
  if (v.is_number_float() && !std::isfinite(v.get<double>()))
    return std::isnan(v.get<double>()) ? "nan" : v.get<double>() > 0 ? "inf" : "-inf";
  return v.is_string() ? "\"" + v.get<std::string>() + "\"" : v.dump();
}

// A whole number within `r`.
std::string within(const json& v, Range r) {
  if (!v.is_number_integer()) return "must be a whole number, got " + shown(v);
  // An unsigned value past long long's range is over any maximum (get<long long> would wrap it).
  if (v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(r.max))
    return fmt::format("must be at most {}, got {}", r.max, shown(v));
  long long x = v.get<long long>();
  if (x < r.min) return fmt::format("must be at least {}, got {}", r.min, shown(v));
  if (x > r.max) return fmt::format("must be at most {}, got {}", r.max, shown(v));
  return {};
}

std::string share(const json& v) {
  double x = v.is_number() ? v.get<double>() : NAN;
  if (!(x > 0 && x <= 1)) return "must be a share of the time in (0, 1], got " + shown(v);
  return {};
}

std::string probability(const json& v) {
  double x = v.is_number() ? v.get<double>() : NAN;
  if (!(x > 0 && x < 1)) return "must lie between 0 and 1, got " + shown(v);
  return {};
}

std::string positive(const json& v) {
  double x = v.is_number() ? v.get<double>() : NAN;
  if (!(x > 0 && x < 1e9)) return "must be a positive number, got " + shown(v);
  return {};
}

std::string ratio(const json& v) {
  double x = v.is_number() ? v.get<double>() : NAN;
  if (!(x >= 1 && x < 10)) return "is a ratio such as 1.01 (at least 1, below 10), got " + shown(v);
  return {};
}

std::string one_of(const json& v, std::initializer_list<const char*> allowed) {
  std::string known;
  for (const char* a : allowed) {
    if (v.is_string() && v.get<std::string>() == a) return {};
    known += std::string(known.empty() ? "" : ", ") + a;
  }
  return fmt::format("is one of {}, got {}", known, shown(v));
}

std::string scope(const json& v) {
  return one_of(v, {"kernel", "file", "application"});
}
std::string fp_reassociation(const json& v) {
  return one_of(v, {"forbidden", "allowed"});
}
std::string timing(const json& v) {
  return one_of(v, {"auto", "trace", "kernel_time", "wall"});
}
std::string verdict(const json& v) {
  return one_of(v, {"fixed", "sequential"});
}
std::string memory(const json& v) {
  return one_of(v, {"corpus", "off"});
}
std::string end_after_kernels(const json& v) {
  return one_of(v, {"auto", "off"});
}
std::string search(const json& v) {
  return one_of(v, {"auto", "exhaustive", "nlopt"});
}
std::string execute(const json& v) {
  return one_of(v, {"auto", "yes", "no"});
}
std::string sandbox(const json& v) {
  return one_of(v, {"auto", "bwrap", "unshare", "watch"});
}
std::string build_jobs(const json& v) {
  if (v.is_string()) {
    const std::string t = v.get<std::string>();
    if (t == "auto") return {};
    if (!t.empty() && t.size() <= 4 && t.find_first_not_of("0123456789") == std::string::npos) return {};
  }
  return "is auto or a number of builds from 0 (none ahead: one build at a time, before its measurement) to 9999, "
         "got " +
         shown(v);
}
std::string gpus(const json& v) {
  if (v.is_string()) {
    const std::string t = v.get<std::string>();
    bool ids = !t.empty();
    for (auto id : util::split(t, ',')) ids = ids && !util::trim(id).empty();
    if (ids) return {};
  }
  return "is auto, all, a number of GPUs or their ids (\"0,2\"), got " + shown(v);
}

std::string tolerance(const json& v) {
  if (!v.is_string()) return "takes exact, abs=X, rel=X or ulp=N, got " + shown(v);
  std::string t = v.get<std::string>();
  auto eq = t.find('=');
  std::string mode = t.substr(0, eq);
  if (mode == "exact" && eq == std::string::npos) return {};
  if (mode != "abs" && mode != "rel" && mode != "ulp")
    return fmt::format("takes exact, abs=X, rel=X or ulp=N: unknown tolerance \"{}\"", mode);
  std::string number = eq == std::string::npos ? "" : t.substr(eq + 1);
  char* end = nullptr;
  double x = std::strtod(number.c_str(), &end);
  if (number.empty() || *end != '\0' || !(x >= 0) || !std::isfinite(x))
    return fmt::format("{} needs a number at least 0 ({}=X), got {}", mode, mode, shown(v));
  return {};
}

std::string key_values(const json& v) {
  for (const auto& kv : v.is_array() ? v : json::array({v}))
    if (!kv.is_string() || kv.get<std::string>().find('=') == std::string::npos)
      return "takes key=value, got " + shown(kv);
  return {};
}

std::string existing_file(const json& v) {
  if (!v.is_string() || !std::filesystem::is_regular_file(v.get<std::string>()))
    return "names no file here: " + shown(v);
  return {};
}

// A name that becomes part of a file name (a campaign's, a cell's, a configuration's), or a list of
// them: util::name_problem's rule.
std::string file_name(const json& v) {
  for (const auto& x : v.is_array() ? v : json::array({v})) {
    if (!x.is_string()) return "takes names, got " + shown(x);
    if (std::string why = util::name_problem(x.get<std::string>()); !why.empty()) return why;
  }
  return {};
}

std::vector<Option> make_table() {
  // clang-format off
  return {
    // Which backend, and how it is called.
    {"model", "-m,--model", "provider/model (openai/gpt-5, ollama/llama3.1:70b), manual or builtin; see optimas backends",
     "OPTIMAS_MODEL", Kind::text, "builtin", "optimize.backend", nullptr, {}},
    {"base_url", "--base-url", "Server URL (openai-compatible, ollama, or a proxy)", "OPTIMAS_BASE_URL", Kind::text,
     nullptr, "", nullptr, {}},
    {"options", "--option", "Backend option key=value (repeatable; see optimas backends)", "", Kind::list, nullptr, "",
     key_values, {}},
    {"cache_dir", "--cache-dir", "Response cache", "OPTIMAS_CACHE_DIR", Kind::text, ".optimas/cache", "", nullptr, {}},
    {"no_cache", "--no-cache", "Always call the backend, and measure tuning points again", "", Kind::flag, false, "", nullptr, {}},
    {"work_dir", "--work-dir", "Manual backend: where prompt and reply files go", "", Kind::text, "optimas-manual", "",
     nullptr, {}},
    // What the backend is shown and may change. The diagnostics are checked where they are used
    // (analysis::parse_diagnostics), since the sources are the analysis's to name.
    {"diagnostics", "--diagnostics",
     "Evidence to include: any of pc, ia, roofline (comma-separated), all, or code-only (the kernels alone: the "
     "paper's baseline)", "",
     Kind::text, "pc,ia,roofline", "optimize.diagnostics", nullptr, {}},
    {"template", "--template", "A prompt template file (default: the built-in one)", "", Kind::text, nullptr, "",
     existing_file, {}},
    {"token_budget", "--token-budget", "Split prompts larger than this many tokens (about 4 characters each)", "",
     Kind::integer, 32000, "", nullptr, {1, 10000000}},
    {"scope", "--scope",
     "Where edits may go: kernel (the implicated kernels), application (also the host code that launches them or "
     "makes the copies and synchronisations the AP items are about) or file", "", Kind::text, "kernel",
     "optimize.scope", scope, {}},
    {"fp_reassociation", "--fp-reassociation",
     "allowed: the prompt lets the model reorder floating-point sums (the compared output is the program's own "
     "check); forbidden: it asks for the same bits. Validation stays as validate: says", "", Kind::text,
     "forbidden", "optimize.fp_reassociation", fp_reassociation, {}},
    // Where the profile comes from, and which kernels are hot.
    {"app", "--app", "The application's optimas.yml or its folder", "", Kind::text, nullptr, "", nullptr, {}},
    {"input", "-i,--input",
     "Input configuration: for profile, one to profile (repeatable; default: every visible one); elsewhere the one "
     "whose run is analysed (default: \"default\" or the first)", "", Kind::list, nullptr, "", file_name, {}},
    {"alpha", "--alpha", "Hot kernels: the smallest set with at least this share of the GPU time", "", Kind::real, 0.8,
     "", share, {}},
    {"import", "--import",
     "Import a recorded profile instead of profiling: a profile directory, a folder of ncu CSV pages, or a .ncu-rep",
     "", Kind::text, nullptr, "", nullptr, {}},
    {"ncu", "--ncu", "The ncu executable", "OPTIMAS_NCU", Kind::text, "ncu", "", nullptr, {}},
    {"tracer", "--tracer",
     "Kernel tracer for the timing pass: auto (liboptimas-trace.so beside optimas), a path, or none (ncu times "
     "every launch)", "OPTIMAS_TRACER", Kind::text, "auto", "", nullptr, {}},
    {"full_profile", "--full", "One --set full pass over every kernel (the paper's mode) instead of two passes", "",
     Kind::flag, false, "", nullptr, {}},
    // The loop (optimas run).
    {"runs_dir", "--runs-dir", "Where runs are stored", "OPTIMAS_RUNS", Kind::text, "runs", "", nullptr, {}},
    {"rounds", "--rounds",
     "Rounds of asking, each from the best variant so far with its profile, told what earlier candidates measured",
     "", Kind::integer, 1, "optimize.rounds", nullptr, {1, 100}},
    {"iterations", "--iterations", "The older name of rounds (the same setting)", "", Kind::integer, 1,
     "optimize.iterations", nullptr, {1, 100}},
    {"memory", "--memory",
     "corpus (the prompt shows up to 3 accepted edits of earlier runs in the store whose kernels' evidence resembles "
     "a hot kernel's, with their speedups) or off",
     "", Kind::text, "corpus", "optimize.memory", memory, {}},
    {"memory_file", "--memory-file",
     "An exported corpus (optimas corpus export, e.g. from another machine) whose accepted edits join the store's as "
     "worked examples (with optimize.memory corpus)",
     "", Kind::text, nullptr, "", nullptr, {}},
    {"budget_usd", "--budget-usd",
     "Ask no further candidate once the model's answers of this run have cost this much (US dollars)", "", Kind::real,
     nullptr, "", positive, {}},
    {"budget_minutes", "--budget-minutes",
     "Ask no further candidate, and tune no further point, once the run has taken this long (minutes)", "",
     Kind::real, nullptr, "", positive, {}},
    {"budget_verdicts", "--budget-verdicts", "Ask no further candidate once this many variants were measured", "",
     Kind::integer, nullptr, "", nullptr, {1, 10000}},
    {"candidates", "--candidates",
     "Replies asked per round, each told how the earlier ones differ, each validated and measured", "",
     Kind::integer, 1, "optimize.candidates", nullptr, {1, 16}},
    {"retries", "--retries", "Further attempts after a build failure or guardrail rejection", "", Kind::integer, 3,
     "optimize.retries", nullptr, {0, 100}},
    {"runs", "--runs", "Timed runs of baseline and variant each (a comparison needs at least 2)", "", Kind::integer, 5,
     "measure.runs", nullptr, {2, 1000}},
    {"warmup", "--warmup", "Untimed runs of each first", "", Kind::integer, 1, "measure.warmup", nullptr, {0, 100}},
    {"timing", "--timing",
     "trace (the kernels' traced GPU time), kernel_time (the printed time), wall, or auto (trace for CUDA programs "
     "where the tracer exists, else kernel_time when configured, else wall)", "", Kind::text, "auto",
     "measure.timing", timing, {}},
    {"measure_configs", "--measure-configs", "Configurations to measure (default: all)", "", Kind::names, nullptr,
     "measure.configs", file_name, {}},
    {"confidence", "", "The speedup interval's confidence", "", Kind::real, 0.95, "measure.confidence", probability, {}},
    {"significance", "", "The acceptance test's significance, before correction for every comparison", "", Kind::real,
     0.05, "measure.significance", probability, {}},
    {"min_speedup", "--min-speedup", "Accept only when the speedup's interval lies above this", "", Kind::real, 1.01,
     "measure.min_speedup", ratio, {}},
    {"confirm", "!--no-confirm", "Accept without a confirmation round of fresh runs", "", Kind::flag, true,
     "measure.confirm", nullptr, {}},
    {"verdict", "--verdict",
     "fixed (screening, then confirming, on whole runs) or sequential (each run's time in the hot kernels from its "
     "traced launches, judged after 3, 5, 8, ... runs until clear; where runs are not traced, the fixed rule)", "",
     Kind::text, "sequential",
     "measure.verdict", verdict, {}},
    {"end_after_kernels", "--end-after-kernels",
     "auto (a measurement run ends once its hot kernels have launched as often as in the baseline's validation "
     "runs, where the variant's validation runs launched them as often; the tracer ends it) or off (whole runs)", "",
     Kind::text, "auto", "measure.end_after_kernels", end_after_kernels, {}},
    {"validate_configs", "--validate-configs", "Configurations to validate on (default: all)", "", Kind::names,
     nullptr, "validate.configs", file_name, {}},
    {"fresh_seeds", "--fresh-seeds", "Extra validation runs per configuration with new seeds", "", Kind::integer, 1,
     "validate.fresh_seeds", nullptr, {0, 100}},
    {"tolerance", "--tolerance", "exact, abs=X, rel=X or ulp=N", "", Kind::text, "exact", "validate.tolerance",
     tolerance, {}},
    {"execute", "--execute", "Run programs: auto (when a GPU is present), yes, no", "", Kind::text, "auto", "",
     execute, {}},
    {"keep_work", "--keep-work", "Keep the scratch builds (runs/<id>/work) after the run", "", Kind::flag, false, "",
     nullptr, {}},
    {"build_jobs", "--build-jobs",
     "Builds made ahead at once while variants are measured (the tuning stage's points): auto (the cores less one; "
     "one where builds cannot have folders of their own), N, or 0 (none ahead; docs/pipeline.md)", "", Kind::text,
     "auto", "", build_jobs, {}},
    {"gpus", "--gpus",
     "The GPUs that measure a tuning stage's points at once, one point at a time on each against its own baseline "
     "runs: auto or all (CUDA_VISIBLE_DEVICES where set, else the GPUs nvidia-smi lists), N (the first N of those) "
     "or ids \"0,2\" (docs/pipeline.md)", "", Kind::text, "auto", "", gpus, {}},
    {"sandbox", "--sandbox",
     "The walls around every build and run: auto (bwrap, else unshare, else watch), bwrap or unshare (each program "
     "writes only its scratch folders and a private /tmp, no network), watch (no walls: a variant that changes the "
     "application folder or the run store fails; docs/sandbox.md)",
     "", Kind::text, "auto", "", sandbox, {}},
    // The tuning stage (tune: in optimas.yml; docs/tuning.md).
    {"tune", "!--no-tune", "Skip the tuning stage that follows the edit step", "", Kind::flag, true, "", nullptr, {}},
    {"tune_discover", "!--no-tune-discover",
     "Without a tune: block, skip the knobs found in the sources where the evidence points (block-size macros, "
     "min blocks per SM, -dlcm; docs/tuning.md)", "", Kind::flag, true, "", nullptr, {}},
    {"tune_only", "--tune-only", "Only the tuning stage: baseline, then the points of tune: (no profile, no edits)",
     "", Kind::flag, false, "", nullptr, {}},
    {"tune_point", "--tune-point",
     "Measure this one point of the tuning space alone, named as the run's progress and run.json's \"point\" name it "
     "(\"BLOCK_SIZE=128 dlcm=-Xptxas -dlcm=ca\"): a point an earlier run found, measured afresh", "", Kind::text,
     nullptr, "", nullptr, {}},
    {"tune_search", "--tune-search",
     "How to search the tuning space: auto (exhaustive up to 64 points, else nlopt), exhaustive, or nlopt (NLopt's "
     "Sbplx on the grid)", "", Kind::text, "auto", "tune.search", search, {}},
    {"tune_budget", "--tune-budget", "Most tuning points built and measured", "", Kind::integer, 32, "tune.budget",
     nullptr, {1, 10000}},
    {"allow_fp_changes", "", "Let tune.flags hold flags that change floating-point results (fast math)", "",
     Kind::flag, false, "tune.allow_fp_changes", nullptr, {}},
    // A campaign's cell (optimas campaign passes them; kept out of optimas.yml, they describe a run).
    {"campaign", "--campaign", "The campaign this run is a cell of, recorded in run.json and the index", "",
     Kind::text, nullptr, "", file_name, {}},
    {"cell", "--cell", "The campaign cell this run is (its id), recorded in run.json", "", Kind::text, nullptr, "",
     file_name, {}},
    {"seed", "--seed", "The repeat's seed: recorded, and sent to backends whose API takes one (builtin ignores it)",
     "", Kind::integer, nullptr, "", nullptr, {0, 4294967295}},
    {"aa", "--aa",
     "Calibration: measure a second build of the unchanged baseline against it (nothing is asked or edited)", "",
     Kind::flag, false, "", nullptr, {}},
  };
  // clang-format on
}

} // namespace

const std::vector<Option>& options() {
  static const std::vector<Option> k_table = make_table();
  return k_table;
}

const Option& option(std::string_view name) {
  for (const auto& o : options())
    if (o.name == name) return o;
  throw std::logic_error("no option named \"" + std::string(name) + "\" in the option table");
}

const Option* option_for_yml(std::string_view yml) {
  for (const auto& o : options())
    if (!o.yml.empty() && o.yml == yml) return &o;
  return nullptr;
}

std::string label(const Option& o) {
  // "!--no-confirm" -> "--no-confirm"; "-m,--model" -> "--model".
  std::string flag =
      o.flags.substr(o.flags.find_last_of(",!") == std::string::npos ? 0 : o.flags.find_last_of(",!") + 1);
  if (o.yml.empty()) return flag;
  if (flag.empty()) return o.yml;
  return fmt::format("{} ({})", o.yml, flag);
}

std::string check(std::string_view name, const json& value) {
  const Option& o = option(name);
  std::string why = o.kind == Kind::integer ? within(value, o.range) : "";
  if (why.empty() && o.check) why = o.check(value);
  return why.empty() ? why : label(o) + " " + why;
}

void check_or_throw(std::string_view name, const json& value) {
  if (std::string why = check(name, value); !why.empty()) throw UsageError(why);
}

Tolerance parse_tolerance(const std::string& text) {
  check_or_throw("tolerance", text);
  Tolerance t;
  auto eq = text.find('=');
  t.mode = text.substr(0, eq);
  if (eq != std::string::npos) t.value = std::strtod(text.c_str() + eq + 1, nullptr);
  return t;
}

} // namespace optimas::config
