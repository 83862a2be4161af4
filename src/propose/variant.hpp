// A variant outside a run (optimas optimize): a copy of the application with edited sources,
// built through the sandbox as every variant of a run is, so that its build runs under the
// application's limits and sees no API key.
#pragma once

#include "config/app_config.hpp"
#include "evaluate/sandbox.hpp"

#include <map>
#include <string>

namespace optimas::propose {

// Copies the application into `dir` (replaced) as a run's snapshot does (without build outputs,
// version control or Optimas' own folders) and writes `edited` over it: source path relative to
// the application folder -> its new text. The application's own folder is not touched.
void write_variant(const config::AppConfig& app, const std::map<std::string, std::string>& edited,
                   const std::string& dir);

// Builds the variant in `dir` with build.clean and build.command (build_in), in the sandbox of
// sandbox_for(app), logging to `log_path`.
evaluate::BuildResult build_variant(const config::AppConfig& app, const std::string& dir, const std::string& log_path);

} // namespace optimas::propose
