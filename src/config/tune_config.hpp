// optimas.yml's tune: block, the tuning stage's parameters (docs/tuning.md): preprocessor macros
// and compiler flags with their domains, constraints over the macros, and how to search.
#pragma once

#include "config/options.hpp"
#include "util/expr.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace optimas::config {

struct TuneParam {
  enum class Kind { macro, flag };
  std::string name;
  Kind kind = Kind::macro;
  // macro: whole numbers as written ("128"), passed as -DNAME=value; flag: the flags' text
  // ("-Xptxas -dlcm=ca"), "" for none.
  std::vector<std::string> values;
  int line = 0;
};

struct TuneConstraint {
  util::Expr expr;
  int line = 0;
};

struct TuneSettings {
  std::vector<TuneParam> params; // as declared: macros, then flags
  std::vector<TuneConstraint> constraints;
  std::string search = default_of<std::string>("tune_search"); // auto, exhaustive or nlopt
  int budget = default_of<int>("tune_budget");                 // most points built and measured
  bool allow_fp_changes = default_of<bool>("allow_fp_changes");
  bool enabled = default_of<bool>("tune");           // --no-tune: skip the stage
  bool only = default_of<bool>("tune_only");         // --tune-only: the stage alone, no edit step
  bool discover = default_of<bool>("tune_discover"); // without params: tune the knobs found in the sources
  std::string point;                                 // --tune-point: that point alone (its label)
  int line = 0;                                      // of tune:, for messages

  bool empty() const { return params.empty(); }
  bool runs() const { return enabled && !empty(); }
  // The points of the space before constraints (at most 2^63).
  std::uint64_t grid_size() const;
};

// Most values one parameter may take, and most points a space may have before constraints.
inline constexpr std::size_t k_max_values = 4096;
inline constexpr std::uint64_t k_max_grid = 1000000;

// Why the flag text `flags` (one parameter value) cannot be tuned, or empty: the tuner passes
// only flags that keep results bit-identical (-maxrregcount=N, -Xptxas -dlcm=ca|cg,
// --extra-device-vectorization), and the fast-math family only with allow_fp_changes.
std::string tune_flag_problem(const std::string& flags, bool allow_fp_changes);

// Reads tune: (`node`) of the optimas.yml at `path`; ConfigError naming file:line on a mistake.
TuneSettings read_tune(const YAML::Node& node, const std::string& path);

} // namespace optimas::config
