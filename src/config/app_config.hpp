// optimas.yml of an application: how to build it, how to run it under each input
// configuration, and where its output is.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace optimas::config {

struct InputConfig {
  std::string name;
  bool is_default = false;
  bool held_out = false;                     // never shown to a backend; used to validate variants
  std::map<std::string, std::string> params; // values of the run command's {placeholders}
  int line = 0;                              // where it is declared, for messages
};

struct AppConfig {
  std::string path; // the optimas.yml file
  std::string dir;  // its folder: build and run happen there
  std::string name;
  std::string description;
  std::vector<std::string> sources;
  std::string build_command;
  std::string binary;
  std::string run_command; // with {placeholders}
  std::string output;      // file the program writes, compared byte for byte
  std::string kernel_time; // regex, group 1 = milliseconds
  double timeout_s = 600;
  std::vector<InputConfig> configs;

  const InputConfig& default_config() const;
  const InputConfig* find(const std::string& name) const;
  // The run command with placeholders filled; {output} becomes `output_path`.
  std::string command_for(const InputConfig& c, const std::string& output_path) const;
};

// Reads and validates an optimas.yml; errors name the file and line.
AppConfig load_app_config(const std::string& path);

} // namespace optimas::config
