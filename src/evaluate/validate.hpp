// Correctness of a variant: its outputs compared with the baseline's, byte for byte by default,
// on every input configuration (held-out ones included) and on fresh seeds.
#pragma once

#include "config/app_config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace optimas::evaluate {

struct Tolerance {
  enum class Mode { exact, absolute, relative, ulp } mode = Mode::exact;
  double value = 0;
};

// From optimas.yml's validate.tolerance ("exact", "abs", "rel", "ulp").
Tolerance tolerance_from(const config::ValidateSettings& settings);
std::string describe(const Tolerance& t); // "byte for byte", "relative 1e-12", ...

struct OutputComparison {
  bool equal = false;
  std::string detail; // where they first differ, when they do
};

// Exact: byte for byte. Otherwise both files are read as whitespace-separated tokens; tokens that
// parse as numbers (hex floats too) must agree within the tolerance, others must be identical.
OutputComparison compare_outputs(const std::string& expected, const std::string& actual, const Tolerance& tolerance);

// Several outputs (run.output's files, in order), each compared as compare_outputs does;
// `names` label a difference ("result.bin: byte 12 differs").
OutputComparison compare_output_sets(const std::vector<std::string>& expected, const std::vector<std::string>& actual,
                                     const std::vector<std::string>& names, const Tolerance& tolerance);

// One run a variant must pass: a configuration, maybe with a seed nobody has seen.
struct Check {
  std::string config;
  std::string label; // "default", "heldout", "default+seed 184467"
  bool held_out = false;
  config::InputConfig input; // the parameters to run with
};

// The checks for a variant: each selected configuration as declared, then `fresh_seeds` more runs
// of each with seeds derived from `salt` (the run id and variant), where the program takes a seed.
std::vector<Check> validation_checks(const config::AppConfig& app, const std::string& salt);

// A seed derived from `salt`: new to everyone, the same on a resume.
std::string derived_seed(const std::string& salt);

// `config` with a seed derived from `salt` where the program takes one (else unchanged): a
// measured run's input, which no earlier run has seen, so no cache of earlier runs can answer it.
config::InputConfig with_fresh_seed(const config::AppConfig& app, const config::InputConfig& config,
                                    const std::string& salt);

} // namespace optimas::evaluate
