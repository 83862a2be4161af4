#include "cli/commands.hpp"

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/secrets.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#ifndef OPTIMAS_VERSION
#define OPTIMAS_VERSION "0.1.0"
#endif

namespace {

// Puts a redacting buffer under std::cout and std::cerr for the life of main, so that nothing a
// command prints (results, --json, CLI11's messages) carries a key.
class RedactedStandardStreams {
public:
  RedactedStandardStreams() : m_out(std::cout.rdbuf()), m_err(std::cerr.rdbuf()) {
    std::cout.rdbuf(&m_out);
    std::cerr.rdbuf(&m_err);
  }
  ~RedactedStandardStreams() {
    std::cout.flush();
    std::cerr.flush();
    std::cout.rdbuf(m_out.target());
    std::cerr.rdbuf(m_err.target());
  }

private:
  optimas::util::RedactingStreambuf m_out, m_err;
};

} // namespace

int main(int argc, char** argv) {
  using namespace optimas;
  RedactedStandardStreams redacted;
  CLI::App app{"Optimas: profile GPU code, distil the evidence, optimize, and prove it"};
  app.set_version_flag("--version", OPTIMAS_VERSION);
  app.require_subcommand(1);
  bool verbose = false, quiet = false;
  app.add_flag("-v,--verbose", verbose, "Log debug details to stderr");
  app.add_flag("-q,--quiet", quiet, "Log only errors to stderr");
  app.parse_complete_callback([&] {
    if (verbose) log::set_level(log::Level::debug);
    if (quiet) log::set_level(log::Level::error);
  });
  cli::add_init_command(app);
  cli::add_profile_command(app);
  cli::add_analyze_command(app);
  cli::add_prompt_command(app);
  cli::add_backends_command(app);
  cli::add_launchers_command(app);
  cli::add_ask_command(app);
  cli::add_optimize_command(app);
  cli::add_run_command(app);
  cli::add_runs_command(app);
  cli::add_campaign_command(app);
  cli::add_apply_command(app);
  cli::add_corpus_command(app);
  cli::add_serve_command(app);
  cli::add_report_command(app);
  // `optimas init DIR -- ./app --n 96`: what follows `--` is the program's command line, kept
  // whole (CLI11 would hand its first word to DIR).
  std::vector<std::string> args(argv + 1, argv + argc);
  auto command = std::find_if(args.begin(), args.end(), [](const std::string& a) { return a.empty() || a[0] != '-'; });
  if (auto init = command; init != args.end() && *init == "init") {
    if (auto dashes = std::find(init, args.end(), "--"); dashes != args.end()) {
      cli::init_run_command().assign(dashes + 1, args.end());
      args.erase(dashes, args.end());
    }
  }
  std::reverse(args.begin(), args.end()); // CLI11 takes a vector in reverse order
  app.name("optimas");
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a bad option is a usage error.
    return app.exit(e) == 0 ? k_exit_ok : k_exit_usage;
  } catch (const PendingError& e) {
    log::info("{}", e.what());
    return k_exit_pending;
  } catch (const UsageError& e) {
    log::error("{}", e.what());
    return k_exit_usage;
  } catch (const ConfigError& e) {
    log::error("{}", e.what());
    return k_exit_usage;
  } catch (const Error& e) {
    log::error("{}", e.what());
    return k_exit_error;
  } catch (const std::exception& e) {
    // A library's error (a file of the wrong shape read deep inside) in our words; anything else
    // is ours to fix.
    const std::string plain = plain_message(e);
    log::error("{}{}", plain == e.what() ? "internal error: " : "", plain);
    return k_exit_error;
  }
  return cli::command_exit_code();
}

int& optimas::cli::command_exit_code() {
  static int code = optimas::k_exit_ok;
  return code;
}
