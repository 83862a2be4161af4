#include "util/log.hpp"

#include "util/secrets.hpp"

#include <atomic>
#include <cstdio>

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
  std::fprintf(stderr, "%s%.*s\n", k_prefix[static_cast<int>(level)], static_cast<int>(text.size()), text.data());
}

} // namespace optimas::log
