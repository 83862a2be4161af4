#include "util/log.hpp"

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
  static constexpr const char* k_prefix[] = {"debug: ", "", "warning: ", "error: ", ""};
  std::fprintf(stderr, "%s%.*s\n", k_prefix[static_cast<int>(level)], static_cast<int>(message.size()), message.data());
}

} // namespace optimas::log
