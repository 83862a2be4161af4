#include "evaluate/probe.hpp"

#include "cuda/source.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace optimas::evaluate {

namespace {

// "ns::k<64>" -> "k": what a definition in the source is named.
std::string plain_name(std::string name) {
  name = name.substr(0, name.find('<'));
  if (auto at = name.rfind("::"); at != std::string::npos) name = name.substr(at + 2);
  return name;
}

} // namespace

EmptiedKernels empty_kernels(const std::map<std::string, std::string>& sources, const std::vector<std::string>& names) {
  std::vector<std::string> wanted;
  for (const auto& n : names) wanted.push_back(plain_name(n));
  EmptiedKernels out;
  for (const auto& [file, text] : sources) {
    auto parsed = cuda::parse_source(file, text);
    std::string edited = text;
    // From the last kernel to the first, so earlier offsets stay valid.
    std::vector<std::string> here;
    for (auto f = parsed.functions.rbegin(); f != parsed.functions.rend(); ++f) {
      if (!f->kernel) continue;
      if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), f->name) == wanted.end()) continue;
      edited.insert(f->body_begin + 1, " return; /* optimas: validation probe */");
      here.insert(here.begin(), fmt::format("{} ({}:{})", f->name, file, f->first_line));
    }
    if (here.empty()) continue;
    out.sources[file] = edited;
    out.kernels.insert(out.kernels.end(), here.begin(), here.end());
  }
  return out;
}

std::string blind_validation(const std::string& config, const std::vector<std::string>& kernels,
                             const std::string& probe_dir) {
  return fmt::format(
      "validation cannot tell a wrong result from a right one: with {} emptied (each returns at once), the "
      "program's compared output on config \"{}\" is the baseline's, byte for byte, so a variant that computes "
      "nothing would pass. Make the program print or write its results (a verbose option, or run.output for a file "
      "it writes), or ignore fewer lines (validate.ignore); the probe's build and output are in {}",
      util::join(kernels, ", "), config, probe_dir);
}

} // namespace optimas::evaluate
