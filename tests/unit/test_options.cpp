// The option table (config/options.hpp) and its CLI11 side (cli/options.hpp): one default, one
// check and one message per setting, whether it comes from optimas.yml, the command line, an
// environment variable or a resumed run's overrides.
#include "analysis/diagnostics.hpp"
#include "cli/options.hpp"
#include "config/app_config.hpp"
#include "config/options.hpp"
#include "loop/settings.hpp"
#include "profile/hot_kernels.hpp"
#include "profile/json.hpp"
#include "profile/ncu_agent.hpp"
#include "test_helpers.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <set>

using namespace optimas;
using optimas::test::ScopedEnv;
using optimas::test::TempDir;

namespace {

const char* k_app = "name: demo\n"
                    "build:\n  command: make\n"
                    "run:\n  command: ./demo --n {n}\n  needs_gpu: false\n"
                    "configs:\n  - {name: small, n: 16}\n";

// What load_app_config says about `section` holding `yml_line` (empty: it loads).
std::string yml_error(const TempDir& dir, const std::string& section, const std::string& yml_line) {
  std::string path = dir.file("optimas.yml", std::string(k_app) + section + ":\n  " + yml_line + "\n");
  try {
    config::load_app_config(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return {};
}

// Parses `args` as a subcommand holding every override row, then applies the overrides to a
// loaded application; what it says, or empty.
std::string cli_error(const TempDir& dir, std::vector<std::string> args) {
  CLI::App app;
  loop::Overrides o = loop::Overrides::object();
  for (const auto& row : config::options())
    if (!row.flags.empty()) cli::add_override(&app, row.name, o);
  std::reverse(args.begin(), args.end()); // CLI11 takes them last first
  try {
    app.parse(args);
    auto loaded = config::load_app_config(dir.file("optimas.yml", k_app));
    loop::apply_overrides(loaded, o);
  } catch (const CLI::ParseError& e) {
    return std::string("cli11: ") + e.what();
  } catch (const UsageError& e) {
    return e.what();
  }
  return {};
}

// The message the table gives, found in what yml, the command line (CLI11's validator) and the
// overrides of a resumed run (apply_overrides on the JSON value alone) say.
void same_message(const char* name, const nlohmann::json& value, const std::string& section,
                  const std::string& yml_line, const std::string& arg) {
  SCOPED_TRACE(name);
  TempDir dir;
  dir.file("demo.cu", "");
  std::string why = config::check(name, value);
  ASSERT_FALSE(why.empty()) << "the table accepts " << value.dump();
  std::string from_yml = yml_error(dir, section, yml_line);
  EXPECT_NE(from_yml.find("optimas.yml:10: " + why), std::string::npos) << from_yml;
  std::string from_cli = cli_error(dir, {arg});
  EXPECT_NE(from_cli.find(why), std::string::npos) << from_cli;
  auto loaded = config::load_app_config(dir.file("optimas.yml", k_app));
  try {
    loop::apply_overrides(loaded, loop::Overrides{{name, value}});
    ADD_FAILURE() << "apply_overrides accepts " << value.dump();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), why);
  }
}

} // namespace

TEST(Options, ABadValueReadsTheSameFromYmlAndCommandLine) {
  same_message("tolerance", "rel=-1", "validate", "tolerance: {rel: -1}", "--tolerance=rel=-1");
  same_message("tolerance", "approx=1", "validate", "tolerance: {approx: 1}", "--tolerance=approx=1");
  same_message("runs", 1, "measure", "runs: 1", "--runs=1");
  same_message("warmup", -1, "measure", "warmup: -1", "--warmup=-1");
  same_message("min_speedup", 0.5, "measure", "min_speedup: 0.5", "--min-speedup=0.5");
  same_message("timing", "cycles", "measure", "timing: cycles", "--timing=cycles");
  same_message("scope", "program", "optimize", "scope: program", "--scope=program");
  same_message("iterations", 0, "optimize", "iterations: 0", "--iterations=0");
  same_message("retries", -2, "optimize", "retries: -2", "--retries=-2");
  same_message("fresh_seeds", -1, "validate", "fresh_seeds: -1", "--fresh-seeds=-1");
  same_message("tune_budget", 0, "tune", "budget: 0", "--tune-budget=0");
  same_message("tune_search", "bayes", "tune", "search: bayes", "--tune-search=bayes");
  // Upper bounds: 2147483648 warm-ups ran as -2147483648 (an int), 18446744069414584330 programs.
  same_message("warmup", 2147483648LL, "measure", "warmup: 2147483648", "--warmup=2147483648");
  same_message("runs", 1001, "measure", "runs: 1001", "--runs=1001");
  same_message("iterations", 101, "optimize", "iterations: 101", "--iterations=101");
  same_message("retries", 101, "optimize", "retries: 101", "--retries=101");
  same_message("fresh_seeds", 101, "validate", "fresh_seeds: 101", "--fresh-seeds=101");
  same_message("tune_budget", 10001, "tune", "budget: 10001", "--tune-budget=10001");
  // Names that become file names, in a configuration list.
  same_message("measure_configs", nlohmann::json{"../../x"}, "measure", "configs: [../../x]",
               "--measure-configs=../../x");
}

// Every integer row has bounds, and the message says them; the command line reads decimal digits
// only (CLI11 itself would take 1e9, 0x10 and 010 as 8).
TEST(Options, IntegersAreBounded) {
  for (const auto& row : config::options()) {
    if (row.kind != config::Kind::integer) continue;
    EXPECT_LT(row.range.min, row.range.max) << row.name;
    EXPECT_NE(config::check(row.name, row.range.max + 1).find(fmt::format("must be at most {}", row.range.max)),
              std::string::npos)
        << row.name;
    EXPECT_NE(config::check(row.name, row.range.min - 1).find(fmt::format("must be at least {}", row.range.min)),
              std::string::npos)
        << row.name;
    EXPECT_EQ(config::check(row.name, row.range.max), "") << row.name;
    EXPECT_NE(config::check(row.name, 18446744073709551615ULL), "") << row.name; // not wrapped to -1
  }
  TempDir dir;
  dir.file("demo.cu", "");
  for (const char* text : {"1e9", "0x10", "010", "99999999999999999999", "-99999999999999999999", "2.0"}) {
    std::string why = cli_error(dir, {"--iterations", text});
    EXPECT_NE(why.find("optimize.iterations (--iterations) must be"), std::string::npos) << text << ": " << why;
  }
  EXPECT_EQ(cli_error(dir, {"--iterations", "100"}), "");
  EXPECT_EQ(cli_error(dir, {"--warmup", "0"}), "");
  EXPECT_NE(cli_error(dir, {"--seed", "4294967296"}).find("--seed must be at most 4294967295"), std::string::npos);
}

// docs/options.md shows each integer row's bounds in its line of the table.
TEST(Options, TheDocsShowTheBounds) {
  std::ifstream in(std::string(OPTIMAS_TEST_DATA) + "/../../docs/options.md");
  ASSERT_TRUE(in) << "docs/options.md";
  std::map<std::string, std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("| ", 0) == 0) lines[line.substr(2, line.find(' ', 2) - 2)] = line;
  for (const auto& row : config::options()) {
    ASSERT_TRUE(lines.count(row.name)) << row.name << " has no line in docs/options.md";
    if (row.kind == config::Kind::integer) {
      EXPECT_NE(lines[row.name].find(fmt::format("| {} to {} |", row.range.min, row.range.max)), std::string::npos)
          << lines[row.name];
    }
  }
}

// Names that become file names (a campaign's, a cell's, an input configuration's) are refused on
// the command line as in the files.
TEST(Options, NamesThatBecomePathsAreChecked) {
  for (const char* name : {"campaign", "cell", "input", "measure_configs", "validate_configs"}) {
    for (const char* bad : {"../../x", "a/b", "..", "."})
      EXPECT_NE(config::check(name, name == std::string("campaign") || name == std::string("cell")
                                        ? nlohmann::json(bad)
                                        : nlohmann::json{bad}),
                "")
          << name << " " << bad;
    EXPECT_NE(config::check(name, std::string("x\0y", 3)), "") << name;
    EXPECT_EQ(config::check(name, "stream-pc_ia-builtin-s1"), "") << name;
  }
  TempDir dir;
  dir.file("demo.cu", "");
  EXPECT_NE(cli_error(dir, {"--cell", "../../../x"}).find("--cell takes 1 to 128 letters"), std::string::npos);
}

TEST(Options, GoodValuesPassEverywhere) {
  TempDir dir;
  dir.file("demo.cu", "");
  EXPECT_EQ(yml_error(dir, "validate", "tolerance: {rel: 1e-12}"), "");
  EXPECT_EQ(cli_error(dir, {"--tolerance", "rel=1e-12"}), "");
  EXPECT_EQ(cli_error(dir, {"--tolerance", "exact"}), "");
  EXPECT_EQ(cli_error(dir, {"--runs", "2"}), "");
  EXPECT_EQ(cli_error(dir, {"--alpha", "1"}), "");
  EXPECT_NE(cli_error(dir, {"--alpha", "0"}), "");
  EXPECT_NE(cli_error(dir, {"--alpha", "3"}).find(config::check("alpha", 3.0)), std::string::npos);
  auto t = config::parse_tolerance("ulp=4");
  EXPECT_EQ(t.mode, "ulp");
  EXPECT_DOUBLE_EQ(t.value, 4);
  EXPECT_THROW(config::parse_tolerance("rel="), UsageError);
  EXPECT_THROW(config::parse_tolerance("exact=1"), UsageError);
}

TEST(Options, EachOptionIsDeclaredOnce) {
  std::set<std::string> names, flags, ymls, envs;
  for (const auto& row : config::options()) {
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    if (!row.yml.empty()) {
      EXPECT_TRUE(ymls.insert(row.yml).second) << row.yml;
    }
    if (!row.env.empty()) {
      EXPECT_TRUE(envs.insert(row.env).second) << row.env;
    }
    EXPECT_FALSE(row.help.empty()) << row.name;
    for (const auto& f : CLI::detail::split(row.flags, ','))
      if (!f.empty()) {
        EXPECT_TRUE(flags.insert(f).second) << f;
      }
    if (row.kind == config::Kind::flag) {
      EXPECT_TRUE(row.default_value.is_boolean()) << row.name;
    }
    // Every default passes its own check.
    if (!row.default_value.is_null()) {
      EXPECT_EQ(config::check(row.name, row.default_value), "") << row.name;
    }
  }
  EXPECT_THROW(config::option("alhpa"), std::logic_error);
  EXPECT_EQ(config::option_for_yml("measure.runs"), &config::option("runs"));
  EXPECT_EQ(config::option_for_yml("measure.nothing"), nullptr);
}

// docs/options.md has a line for every row, with its default and yml key.
TEST(Options, EveryRowIsInTheDocs) {
  std::string doc = util::read_file(std::string(OPTIMAS_TEST_DATA) + "/../../docs/options.md");
  for (const auto& row : config::options()) {
    auto at = doc.find("\n| " + row.name + " |");
    ASSERT_NE(at, std::string::npos) << row.name << " is not in docs/options.md";
    std::string line = doc.substr(at + 1, doc.find('\n', at + 1) - at - 1);
    if (!row.yml.empty()) {
      EXPECT_NE(line.find("| " + row.yml), std::string::npos) << line;
    }
    if (row.default_value.is_string()) {
      EXPECT_NE(line.find("| " + row.default_value.get<std::string>() + " |"), std::string::npos) << line;
    }
  }
}

// The structs the engine passes around start at the table's defaults: the default is written once.
TEST(Options, DefaultsComeFromTheTable) {
  using config::default_of;
  double alpha = default_of<double>("alpha");
  EXPECT_DOUBLE_EQ(profile::NcuOptions{}.alpha, alpha);
  EXPECT_DOUBLE_EQ(analysis::AnalysisOptions{}.alpha, alpha);
  EXPECT_DOUBLE_EQ(profile::HotKernels{}.alpha, alpha);
  EXPECT_DOUBLE_EQ(profile::JsonOptions{}.alpha, alpha);
  EXPECT_DOUBLE_EQ(loop::Settings{}.alpha, alpha);
  EXPECT_EQ(profile::NcuOptions{}.ncu, default_of<std::string>("ncu"));
  EXPECT_EQ(profile::NcuOptions{}.tracer, default_of<std::string>("tracer"));
  loop::Settings s;
  EXPECT_EQ(s.model, default_of<std::string>("model"));
  EXPECT_EQ(s.token_budget, default_of<std::size_t>("token_budget"));
  EXPECT_EQ(s.cache_dir, default_of<std::string>("cache_dir"));
  EXPECT_EQ(s.execute, default_of<std::string>("execute"));
  config::AppConfig app;
  EXPECT_EQ(app.optimize.backend, default_of<std::string>("model"));
  EXPECT_EQ(app.optimize.scope, default_of<std::string>("scope"));
  EXPECT_EQ(app.measure.runs, default_of<int>("runs"));
  EXPECT_DOUBLE_EQ(app.measure.min_speedup, default_of<double>("min_speedup"));
  EXPECT_EQ(app.measure.confirm, default_of<bool>("confirm"));
  EXPECT_EQ(app.validate.tolerance, default_of<std::string>("tolerance"));
  EXPECT_EQ(app.validate.fresh_seeds, default_of<int>("fresh_seeds"));

  // Settings without overrides are the table's defaults; with one, that value.
  TempDir dir;
  dir.file("demo.cu", "");
  auto loaded = config::load_app_config(dir.file("optimas.yml", k_app));
  auto from = loop::settings_from(loaded, loop::Overrides::object());
  EXPECT_DOUBLE_EQ(from.alpha, alpha);
  EXPECT_EQ(from.ncu, default_of<std::string>("ncu"));
  EXPECT_DOUBLE_EQ(loop::settings_from(loaded, loop::Overrides{{"alpha", 0.5}}).alpha, 0.5);
}

TEST(Options, TheCommandLineTakesTheTableDefaultAndEnvironment) {
  ScopedEnv no_ncu("OPTIMAS_NCU", nullptr);
  {
    CLI::App app;
    std::string ncu = "stale";
    cli::add_option(&app, "ncu", ncu);
    EXPECT_EQ(ncu, config::default_of<std::string>("ncu")); // the default, before parsing
    app.parse(std::vector<std::string>{});
    EXPECT_EQ(ncu, "ncu");
  }
  ScopedEnv ncu_env("OPTIMAS_NCU", "/opt/ncu/bin/ncu");
  {
    CLI::App app;
    std::string ncu;
    cli::add_option(&app, "ncu", ncu);
    app.parse(std::vector<std::string>{});
    EXPECT_EQ(ncu, "/opt/ncu/bin/ncu"); // the environment over the default
  }
  {
    CLI::App app;
    std::string ncu;
    cli::add_option(&app, "ncu", ncu);
    app.parse(std::vector<std::string>{"/usr/bin/ncu", "--ncu"});
    EXPECT_EQ(ncu, "/usr/bin/ncu"); // the command line over the environment
  }
  {
    // An override is set by the environment too, and only when something gives it.
    CLI::App app;
    loop::Overrides o = loop::Overrides::object();
    cli::add_override(&app, "ncu", o);
    cli::add_override(&app, "runs", o);
    app.parse(std::vector<std::string>{});
    EXPECT_EQ(o, (loop::Overrides{{"ncu", "/opt/ncu/bin/ncu"}}));
  }
}

TEST(Options, FlagsAndOverridesSetOnlyWhatIsGiven) {
  CLI::App app;
  loop::Overrides o = loop::Overrides::object();
  for (const char* name : {"confirm", "full_profile", "keep_work", "runs", "measure_configs", "options", "tolerance"})
    cli::add_override(&app, name, o);
  app.parse(std::vector<std::string>{});
  EXPECT_TRUE(o.empty());
  app.parse(std::vector<std::string>{"a=b,c", "--option", "small,big", "--measure-configs", "--full", "--no-confirm"});
  EXPECT_EQ(o["confirm"], false);
  EXPECT_EQ(o["full_profile"], true);
  EXPECT_EQ(o["measure_configs"], (nlohmann::json{"small", "big"}));
  EXPECT_EQ(o["options"], (nlohmann::json{"a=b,c"})); // a backend option's value may hold commas
  EXPECT_FALSE(o.contains("keep_work"));
  EXPECT_FALSE(o.contains("runs"));

  CLI::App plain;
  bool confirm = false, no_cache = true;
  cli::add_flag(&plain, "confirm", confirm);
  cli::add_flag(&plain, "no_cache", no_cache);
  EXPECT_TRUE(confirm);   // the default
  EXPECT_FALSE(no_cache); // the default
  plain.parse(std::vector<std::string>{"--no-cache", "--no-confirm"});
  EXPECT_FALSE(confirm);
  EXPECT_TRUE(no_cache);
}

TEST(Options, ADeprecatedAliasWorksAndSaysSo) {
  CLI::App app;
  std::string path;
  cli::add_option(&app, "app", path);
  cli::add_deprecated_alias(&app, "-c,--config", "app", path);
  testing::internal::CaptureStderr();
  app.parse(std::vector<std::string>{"examples/stream", "--config"});
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(path, "examples/stream");
  EXPECT_NE(err.find("-c,--config is deprecated: use --app"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);

  testing::internal::CaptureStderr();
  app.parse(std::vector<std::string>{"other", "--app"});
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(path, "other");
}
