// What the harnesses share: a scratch folder for readers that take paths, and quiet logs.
// A harness lets through only optimas::Error (a clear message for bad input): any other
// exception, a crash or a sanitizer report is a bug.
#pragma once

#include "util/log.hpp"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

namespace optimas::fuzz {

// One folder per process, removed at exit; /dev/shm when there is one, so writes stay in memory
// (OPTIMAS_FUZZ_SCRATCH names another base, for the test that checks the removal). The path is
// never destroyed: the exit handler is registered before the path is made, so a static path
// would be destroyed before the handler ran, which then read freed memory and left the folder.
inline const std::filesystem::path& scratch() {
  static const std::filesystem::path* dir = [] {
    const char* env = std::getenv("OPTIMAS_FUZZ_SCRATCH");
    std::string base = env && *env ? env : std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string tmpl = base + "/optimas-fuzz-XXXXXX";
    if (!mkdtemp(tmpl.data())) std::abort();
    log::set_level(log::Level::quiet); // logs would dominate the time per input
    auto* made = new std::filesystem::path(tmpl);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch(), ec);
    });
    return made;
  }();
  return *dir;
}

inline std::string write_file(const std::string& name, std::string_view content) {
  std::string path = (scratch() / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  return path;
}

// How far amplify grows an input: 64 KiB, or OPTIMAS_FUZZ_AMPLIFY_BYTES (0: not at all, the
// input as it is). A megabyte finds what only a megabyte brings out (a quadratic reader took
// minutes on one: bug 13), but under the sanitizers each such input costs a second or more:
// from a corpus holding hundreds of them, fuzz_reply ran at 60 executions a second here, and
// at 64 KiB at 180 per worker on the H200 machine against 1,400 without amplification. So the
// ctest run (which replays the regression seeds) sets a megabyte, and the long runs count the
// two modes apart (docs/fuzzing.md).
inline std::size_t amplify_limit() {
  static const std::size_t limit = [] {
    const char* env = std::getenv("OPTIMAS_FUZZ_AMPLIFY_BYTES");
    return env && *env ? std::strtoull(env, nullptr, 10) : std::size_t{64} << 10;
  }();
  return limit;
}

// Inputs past the harnesses' -max_len (8 KB) find what only size brings out: the stack a
// million nested brackets need, a line too long to match. `\x7f N SEGMENT \x7f` is replaced by
// SEGMENT repeated 256 x N times (N a byte, 1-255), each such part anywhere in the input, the
// whole grown to at most `limit` bytes; the rest is kept as it is. Without \x7f, the input.
inline std::string amplify(std::string_view in, std::size_t limit = amplify_limit()) {
  if (limit == 0) return std::string(in);
  std::string out;
  for (std::size_t i = 0; i < in.size();) {
    std::size_t open = in.find('\x7f', i);
    std::size_t close =
        open == std::string_view::npos || open + 1 >= in.size() ? std::string_view::npos : in.find('\x7f', open + 2);
    if (close == std::string_view::npos) {
      out.append(in.substr(i));
      break;
    }
    out.append(in.substr(i, open - i));
    std::size_t times = 256 * static_cast<unsigned char>(in[open + 1]);
    std::string_view segment = in.substr(open + 2, close - open - 2);
    for (std::size_t k = 0; k < times && out.size() + segment.size() <= limit; ++k) out.append(segment);
    i = close + 1;
  }
  if (out.size() > limit) out.resize(limit);
  return out;
}

} // namespace optimas::fuzz
