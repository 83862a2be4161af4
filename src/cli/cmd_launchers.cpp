// optimas launchers: the registered launchers (where a campaign's runs execute) and their
// options, from each launcher's spec (launch/launcher.hpp).
#include "cli/commands.hpp"

#include "launch/launcher.hpp"

#include <iostream>
#include <memory>

namespace optimas::cli {

void add_launchers_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("launchers", "List the launchers a campaign can run on, with their options");
  cmd->add_flag("--json", *json, "Print them as JSON");
  cmd->callback([json] {
    if (*json)
      std::cout << launch::launchers_json().dump(2) << "\n";
    else
      std::cout << launch::describe_launchers();
  });
}

} // namespace optimas::cli
