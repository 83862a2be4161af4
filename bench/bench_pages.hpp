// What the source-page benchmarks share: a page made large by repeating a recorded one, and the
// process's peak resident memory.
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace optimas::bench {

inline double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// Writes `page` to `path` again and again until at least `bytes` are written; returns how many.
inline std::uint64_t generate(const std::string& path, const std::string& page, std::uint64_t bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  std::uint64_t written = 0;
  while (written < bytes) {
    out.write(page.data(), static_cast<std::streamsize>(page.size()));
    written += page.size();
  }
  return written;
}

} // namespace optimas::bench
