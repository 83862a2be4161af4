// Lines a program prints to report its own configuration. A printf whose arguments name a knob's
// macro (`printf("WG size = %d\n", BLOCK_SIZE)`: Rodinia's programs print one each) prints that
// knob's value: a point that changes the knob changes the line while computing the same
// results, and byte-for-byte validation would reject every such point. The knob search drops
// these lines from both outputs before it compares them, and only where that is safe to tell:
// - every conversion of the format is an integer one (%d %i %u %x): a float may be a result;
// - every argument is names, numbers and arithmetic (no call, no array element, no member);
// - a line is dropped only when a knob is behind one of its values (the knob itself, or a
//   variable computed from it, a few steps deep) and every other value is fixed (numbers and
//   macros): a line that also prints a count or a result stays compared;
// - each line is matched whole, and must carry three letters of the format's own text.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace optimas::tune {

struct ConfigEcho {
  std::string file;
  int line = 0;
  std::vector<std::string> knobs;    // the knob macros behind its values
  std::vector<std::string> patterns; // one regex per line it prints that reports only the configuration
};

// The printf and fprintf(stdout, ...) calls of `sources` (name -> text) that print one of `knobs`.
std::vector<ConfigEcho> config_echoes(const std::map<std::string, std::string>& sources,
                                      const std::set<std::string>& knobs);

} // namespace optimas::tune
