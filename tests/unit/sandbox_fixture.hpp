// What test_sandbox.cpp and test_sandbox_ending.cpp share.
#pragma once

#include "config/app_config.hpp"

#include "test_helpers.hpp"

#include <string>

namespace optimas::test {

// A host application in `dir` whose optimas.yml has `run_block` (indented keys under run:).
inline config::AppConfig host_app(const TempDir& dir, const std::string& run_block,
                                  const std::string& build_block = "  command: 'true'\n",
                                  const std::string& configs = "  - {name: only}\n") {
  std::string yml = "name: host\n"
                    "build:\n" +
                    build_block + "run:\n" + run_block + "  needs_gpu: false\n" + "configs:\n" + configs;
  return config::load_app_config(dir.file("optimas.yml", yml));
}

} // namespace optimas::test
