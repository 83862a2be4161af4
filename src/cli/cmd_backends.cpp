// optimas backends: the registered model backends, their key variables and options.
#include "cli/commands.hpp"

#include "llm/backend.hpp"

#include <fmt/format.h>

#include <iostream>

namespace optimas::cli {

void add_backends_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("backends", "List the model backends (name models provider/model)");
  cmd->callback([] {
    for (const auto& b : llm::backends()) {
      std::cout << fmt::format("{:<18} {}\n", b.name, b.description);
      for (const auto& var : b.key_env)
        std::cout << fmt::format("{:<18}   key: ${} ({})\n", "", var, std::getenv(var.c_str()) ? "set" : "not set");
      if (!b.default_base_url.empty()) std::cout << fmt::format("{:<18}   base_url: {}\n", "", b.default_base_url);
      for (const auto& o : b.options)
        std::cout << fmt::format("{:<18}   option {}: {}{}\n", "", o.name, o.description,
                                 o.default_value.empty() ? "" : " (default " + o.default_value + ")");
    }
  });
}

} // namespace optimas::cli
