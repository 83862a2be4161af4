// What the source-page benchmarks share: a page made large by repeating a recorded one, and the
// process's peak resident memory.
#pragma once

#include <sys/resource.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

// The command line both take: [SIZE_MB ...] [--dir DIR] [--keep] (sizes default to 256 and 1024).
struct PageArgs {
  std::vector<std::uint64_t> sizes_mb;
  std::string dir = std::filesystem::temp_directory_path().string();
  bool keep = false;
};
inline PageArgs page_args(int argc, char** argv) {
  PageArgs a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--dir" && i + 1 < argc)
      a.dir = argv[++i];
    else if (arg == "--keep")
      a.keep = true;
    else
      a.sizes_mb.push_back(std::stoull(arg));
  }
  if (a.sizes_mb.empty()) a.sizes_mb = {256, 1024};
  return a;
}

} // namespace optimas::bench
