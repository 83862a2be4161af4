// optimas init [DIR] [-- RUN COMMAND...]: writes DIR/optimas.yml for an application Optimas has
// never seen (init/init.hpp, docs/getting-started.md), then checks it with `optimas run --dry-run`.
#include "cli/commands.hpp"

#include "init/init.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>

namespace optimas::cli {
namespace {

struct InitCommand {
  init::InitOptions options;
  bool json = false;
};

// `optimas run --app FILE --dry-run` on what init wrote, by this same binary: what a user who
// runs it next would see.
util::ProcessResult dry_run(const std::string& yml) {
  util::ProcessSpec spec;
  spec.argv = {std::filesystem::read_symlink("/proc/self/exe").string(), "run", "--app", yml, "--dry-run"};
  spec.timeout_s = 120;
  spec.stderr_to_stdout = true;
  return util::run_process(spec);
}

nlohmann::json to_json(const init::InitResult& r, const util::ProcessResult& check) {
  const init::Proposal& p = r.proposal;
  nlohmann::json j = {
      {"path", r.path},
      {"built", r.built},
      {"runs", r.runs},
      {"build",
       {{"kind", p.build.kind},
        {"command", p.build.command.value},
        {"clean", p.build.clean.value},
        {"dir", p.build.dir.value},
        {"binary", p.build.binary.value}}},
      {"sources", p.sources},
      {"run", {{"command", p.run.command.value}, {"output", p.run.outputs}}},
      {"findings", p.findings},
      {"todo", p.todo},
      {"dry_run", {{"ok", check.ok()}, {"verdict", init::check_verdict(check)}, {"output", check.out}}}};
  if (p.kernel_time)
    j["kernel_time"] = {{"pattern", p.kernel_time->pattern},
                        {"unit", p.kernel_time->unit},
                        {"per", p.kernel_time->per_call ? "call" : "run"},
                        {"calls", p.kernel_time->calls}};
  j["ignore"] = j["ignore_todo"] = nlohmann::json::array(); // ignore_todo: varying lines likely results, not ignored
  for (const auto& i : p.ignore) j[i.active ? "ignore" : "ignore_todo"].push_back(i.pattern);
  return j;
}

void print_summary(const init::InitResult& r, const util::ProcessResult& check) {
  const init::Proposal& p = r.proposal;
  std::cout << fmt::format("wrote {}\n", r.path);
  std::cout << fmt::format("  build    {}{}\n", p.build.command.value, r.built ? "  (built a copy: it works)" : "");
  std::cout << fmt::format("  binary   {}\n", p.build.binary.value.empty() ? "TODO" : p.build.binary.value);
  std::cout << fmt::format("  sources  {}\n", p.sources.empty() ? "TODO" : util::join(p.sources, ", "));
  std::cout << fmt::format("  run      {}\n", p.run.command.value);
  if (p.kernel_time) std::cout << fmt::format("  time     '{}' ({})\n", p.kernel_time->pattern, p.kernel_time->unit);
  for (const auto& f : p.findings) std::cout << "  found:   " << f << "\n";
  for (const auto& t : p.todo) std::cout << "  TODO:    " << t << "\n";
  std::cout << fmt::format("checked with: optimas run --app {} --dry-run: {}\n", r.path, init::check_verdict(check));
  if (!check.ok())
    for (auto line : util::split(check.out, '\n'))
      if (!line.empty()) std::cout << "  " << line << "\n";
}

} // namespace

void add_init_command(CLI::App& app) {
  auto c = std::make_shared<InitCommand>();
  auto* cmd = app.add_subcommand(
      "init", "Write optimas.yml for an application: detect its build, find its kernels, run it and read what it "
              "prints (optimas init [DIR] [-- RUN COMMAND...])");
  cmd->add_option("dir", c->options.dir, "The application's folder")->capture_default_str();
  cmd->add_flag("--force", c->options.force, "Replace an existing optimas.yml");
  cmd->add_flag("--cpu", c->options.cpu, "A host program (a CPU stand-in): run it here without a GPU");
  cmd->add_flag("--no-run", c->options.no_run, "Read the folder only: no build, no runs");
  cmd->add_option("--runs", c->options.runs, "How many times to run the program")
      ->check(CLI::Range(2, 10))
      ->capture_default_str();
  cmd->add_option("--timeout", c->options.run_timeout_s, "Seconds one run of the program may take")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--tracer", c->options.tracer, "The kernel tracer: auto, none or a path")->capture_default_str();
  cmd->add_flag("--json", c->json, "Print what was decided as JSON");
  cmd->callback([c] {
    c->options.run_argv = init_run_command();
    c->options.progress = [](const std::string& line) { log::info("init: {}", line); };
    init::InitResult r = init::init_application(c->options);
    util::ProcessResult check = dry_run(r.path);
    if (c->json)
      std::cout << util::json_text(to_json(r, check)) << "\n";
    else
      print_summary(r, check);
    if (!check.ok()) command_exit_code() = k_exit_error;
  });
}

std::vector<std::string>& init_run_command() {
  static std::vector<std::string> words;
  return words;
}

} // namespace optimas::cli
