#include "util/log.hpp"

#include "util/secrets.hpp"

#include <atomic>
#include <cstdio>
#include <string>

namespace optimas::log {

namespace {
std::atomic<Level> g_level{Level::info};
}

void set_level(Level level) {
  g_level = level;
}
Level level() {
  return g_level;
}

void write(Level level, std::string_view message) {
  const std::string text = util::redact(message); // a log line may quote a reply, a header, a program's output
  static constexpr const char* k_prefix[] = {"debug: ", "", "warning: ", "error: ", ""};
  // The line's bytes in one fwrite: a NUL in a quoted program output no longer cuts the line
  // short, as printf's %.*s did.
  std::string line = k_prefix[static_cast<int>(level)];
  line.append(text).push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stderr);
}

} // namespace optimas::log
