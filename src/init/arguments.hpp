// The run command a user hands to `optimas init` (after `--`), its values turned into
// {placeholders}: numbers become parameters of the configurations, an output file's name becomes
// {output}, and a seed is marked as one.
#pragma once

#include "init/proposal.hpp"

#include <string>
#include <vector>

namespace optimas::init {

// `argv` as given (empty: the binary with no arguments). Values of flags (--n 96, --n=96, -s 4)
// and numeric positional words become {placeholders}; the value of an output flag (--out, -o,
// --output) that names no existing file in `dir` becomes {output}.
RunGuess generalise_command(const std::vector<std::string>& argv, const std::string& binary, const std::string& dir);

// Replaces the word equal to one of `written` (a file the runs wrote, named on the command line)
// by {output}; returns the file, or empty when no word names one. Does nothing when the command
// already has {output}.
std::string use_output_placeholder(RunGuess& run, const std::vector<std::string>& written);

// The command line from its words ({placeholders} unquoted, other words shell-quoted as needed).
std::string command_text(const std::vector<std::string>& tokens);

} // namespace optimas::init
