// What `optimas init` decided about an application it has never seen, key by key, with the
// reason for each decision and what it could not decide: the content of the optimas.yml it
// writes (init/yml_writer.hpp turns it into text, a comment beside every key).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace optimas::init {

// A key's value and why: `why` becomes the comment beside it; `todo` marks what the user must
// still decide (written as "# TODO ...").
struct Decision {
  std::string value = {};
  std::string why = {};
  std::string todo = {};
};

struct BuildGuess {
  std::string kind; // "make", "cmake" or "nvcc"
  Decision command;
  Decision clean;  // empty value: none
  Decision dir;    // out-of-tree build folder (cmake), else empty
  Decision binary; // relative to the application folder
  // Relative paths the build files reach outside the application folder (../../common/make.config):
  // a scratch copy does not have them.
  std::vector<std::string> outside;
};

// One value of the run command that became a {placeholder}.
struct Parameter {
  std::string name;    // the placeholder
  std::string value;   // as given on the command line
  std::string small;   // suggested for a smaller configuration; empty: same as value
  std::string heldout; // suggested for the held-out configuration
  bool seed = false;
};

struct RunGuess {
  Decision command;                // with {placeholders}
  std::vector<std::string> tokens; // the command's words, {placeholders} in place of the values
  std::vector<Parameter> parameters;
  std::vector<std::string> outputs; // run.output, when the command has no {output}
  std::string outputs_why;
};

// run.kernel_time as written in optimas.yml.
struct KernelTimeGuess {
  std::string pattern; // group 1 = the figure
  std::string unit = "ms";
  bool per_call = false;
  std::string calls; // with per_call: a number or a {placeholder}
  std::string why;
  std::string todo;
};

struct IgnoreGuess {
  std::string pattern;
  std::string why;
  // false for a varying line that does not read as a time: likely a result, which ignoring would
  // leave unchecked. Written as a TODO for the user to decide, not ignored.
  bool active = true;
};

struct Proposal {
  std::string name;
  std::vector<std::string> sources;
  std::string sources_why;
  BuildGuess build;
  RunGuess run;
  std::optional<KernelTimeGuess> kernel_time;
  std::vector<IgnoreGuess> ignore;
  double timeout_s = 600;
  std::string timeout_why;
  bool needs_gpu = true;
  std::vector<std::string> findings; // what the runs showed, for the head of the file and the summary
  std::vector<std::string> todo;     // what needs the user (or a run on a GPU)
};

} // namespace optimas::init
