// Tuning without a tune: block (docs/tuning.md, "Knobs found in the sources"): the knobs an
// application already has, found in its sources where the evidence of its hot kernels points to
// them, and made tunable by an edit where needed.
//   - A block-size macro (`#define TPB 256` passed as a launch's block size) when the kernel's
//     occupancy is limited by registers, shared memory or its block count, or the kernel is
//     latency-bound. A macro not yet guarded by `#ifndef` gets the guard, so -DTPB=... reaches it.
//   - The minimum blocks per SM of `__launch_bounds__` when registers limit the kernel's
//     occupancy and it has no bounds: a macro OPTIMAS_MIN_BLOCKS_<kernel>, 0 (no bounds, the
//     program as it was) by default.
//   - `-Xptxas -dlcm=ca` / `-dlcm=cg` when a hot kernel waits on global loads (long_scoreboard
//     or lg_throttle dominant) and is memory- or latency-bound.
// With no -D and no flag every edited source compiles to the program it was: the guards keep
// each default. Lines the program prints to report a block-size knob are found too
// (config_echo.hpp): validation of a point drops them. Kernels launched with a literal block size are left alone (the
// grid computed from it would have to change with it), and so are template kernels' bounds.
#pragma once

#include "analysis/diagnostics.hpp"
#include "config/tune_config.hpp"
#include "tune/config_echo.hpp"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace optimas::tune {

// Most points measured in a space found this way (--tune-budget lowers it): it runs by default,
// so its cost stays bounded.
inline constexpr int k_discovered_budget = 8;

// The names of the knobs discovery makes (beside the sources' own macros and dlcm): a point of an
// earlier run (--tune-point) may name them before discovery has run.
inline constexpr std::string_view k_min_blocks_prefix = "OPTIMAS_MIN_BLOCKS_"; // + the kernel's name
inline constexpr std::string_view k_grid_knob = "OPTIMAS_GRID_SCALE";

struct Discovery {
  config::TuneSettings settings;               // the knobs as a tune: block would declare them
  std::map<std::string, std::string> edited;   // source (as the sources list names it) -> its tunable text
  std::map<std::string, std::string> defaults; // each knob's value in the program as it is ("" for no flag)
  std::vector<std::string> knobs;              // one line per knob: what, where and the evidence
  std::vector<std::string> passed;             // candidates not made knobs, and why
  std::vector<ConfigEcho> echoes;              // printed lines that report a knob (config_echo.hpp)
  bool empty() const { return settings.params.empty(); }
};

// What the variable `name` was last declared as before offset `at` of `text`, when that is one
// initialiser (`int name = E;`, `dim3 name(E, ...);`, `dim3 name = dim3(E);`), or a bare
// declaration set by one statement (`int name; ... name = E;`), and nothing else assigns it
// before `at`; "" otherwise. The initialiser's text, whitespace-normalised.
std::string variable_value(std::string_view text, std::size_t at, const std::string& name);

// The knobs of `sources` (name -> text) for the hot kernels of `d`; `budget` is the stage's
// (tune.budget), capped at k_discovered_budget.
Discovery discover(const std::map<std::string, std::string>& sources, const analysis::Diagnostics& d, int budget);

} // namespace optimas::tune
