// Lines a program prints to report its own configuration. A printf whose arguments name a knob's
// macro (`printf("WG size = %d\n", BLOCK_SIZE)`, Rodinia's programs print one each) prints that
// knob's value: a point that changes the knob changes the line while computing the same
// results, and byte-for-byte validation would reject every such point. The knob search drops
// these lines from both outputs before it compares them, and only where that is safe to tell:
// - every conversion is an integer one (%d %i %u %x), so no result of floating point goes unseen;
// - every argument is names, numbers and arithmetic (no call, no array element, no member), as a
//   configuration is printed;
// - each line is matched whole (a line that also holds other output is not dropped), and a line
//   must carry three letters of the format's own text.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace optimas::tune {

struct ConfigEcho {
  std::string file;
  int line = 0;
  std::vector<std::string> knobs;    // the knob macros its arguments name
  std::vector<std::string> patterns; // one regex per line it prints whole that holds a value
};

// The printf and fprintf(stdout, ...) calls of `sources` (name -> text) that print one of `knobs`.
std::vector<ConfigEcho> config_echoes(const std::map<std::string, std::string>& sources,
                                      const std::set<std::string>& knobs);

} // namespace optimas::tune
