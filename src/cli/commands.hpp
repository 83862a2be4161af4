// Each subcommand registers itself on the CLI11 app; its handler parses options and calls
// the engine. Exceptions reach main(), the one place that maps them to exit codes.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace optimas::cli {

// The exit code a command asks for when it finishes without an exception (k_exit_ok unless set).
int& command_exit_code();

// The words after `--` on the command line of `optimas init`: the program's run command, never
// our options (main takes them off before CLI11 parses the rest).
std::vector<std::string>& init_run_command();

void add_analyze_command(CLI::App& app);
void add_apply_command(CLI::App& app);
void add_corpus_command(CLI::App& app);
void add_ask_command(CLI::App& app);
void add_backends_command(CLI::App& app);
void add_campaign_command(CLI::App& app);
void add_launchers_command(CLI::App& app);
void add_init_command(CLI::App& app);
void add_optimize_command(CLI::App& app);
void add_prompt_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_runs_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_report_command(CLI::App& app);

} // namespace optimas::cli
