// optimas report: one run's page as a self-contained HTML file (all of it in serve/).
#include "cli/commands.hpp"

#include "serve/server.hpp"
#include "util/strings.hpp"

#include <iostream>
#include <memory>

namespace optimas::cli {

void add_report_command(CLI::App& app) {
  struct Args {
    std::string runs_dir = "runs", id, output;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("report", "Write a run's page as one self-contained HTML file");
  cmd->add_option("run", a->id, "Run id or unique prefix")->required();
  cmd->add_option("-o,--output", a->output, "The HTML file to write (default: report-ID.html)");
  cmd->add_option("--runs-dir", a->runs_dir, "Where runs are stored")->envname("OPTIMAS_RUNS")->capture_default_str();
  cmd->callback([a] {
    store::RunStore st(a->runs_dir);
    std::string id = st.resolve(a->id);
    std::string out = a->output.empty() ? "report-" + id + ".html" : a->output;
    util::write_file(out, serve::report_html(st, id));
    std::cout << out << "\n";
  });
}

} // namespace optimas::cli
