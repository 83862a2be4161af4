// A kernel tracer's file (docs/trace-format.md, formats 1 to 3), read with read_trace as a
// profile's timing pass is, then summarised as the application's timeline when it parses.
#include "fuzz_common.hpp"

#include "profile/timeline.hpp"
#include "profile/trace.hpp"
#include "util/error.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace optimas;
  static const std::string dir = [] {
    std::filesystem::create_directories(fuzz::scratch() / "trace");
    return (fuzz::scratch() / "trace").string();
  }();
  fuzz::write_file("trace/trace-100.tsv", std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    auto trace = profile::read_trace(dir);
    if (auto t = profile::summarize_timeline(trace)) {
      if (!(t->busy_fraction() >= 0 && t->busy_fraction() <= 1)) __builtin_trap();
    }
  } catch (const Error&) {
  }
  return 0;
}
