// An application's optimas.yml, loaded as every subcommand loads it, then each configuration's
// run command and kernel-call count filled in as the loop does, and its tuning space enumerated.
#include "fuzz_common.hpp"

#include "config/app_config.hpp"
#include "tune/space.hpp"
#include "util/error.hpp"
#include "util/names.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace optimas;
  static const bool ready = [] {
    // The sources a config may name, so that loading gets past the existence checks.
    std::filesystem::create_directories(fuzz::scratch() / "app" / "src");
    fuzz::write_file("app/main.cu", "__global__ void k() {}\n");
    fuzz::write_file("app/src/k.cu", "__global__ void k() {}\n");
    fuzz::write_file("app/Makefile", "all:\n");
    return true;
  }();
  (void)ready;
  std::string path = fuzz::write_file("app/optimas.yml", std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    auto app = config::load_app_config(path);
    for (const auto& c : app.configs) {
      // Every name the loader accepts becomes file names as it stands (runs/<id>/.../<name>.log).
      if (!util::name_problem(c.name).empty() || !util::name_problem(app.name).empty()) __builtin_trap();
      app.command_for(c, "out.bin");
      app.kernel_calls(c);
    }
    app.default_config();
    // The tuning space, as the stage builds it: every constraint evaluated on every point of a
    // small grid (a large one costs the fuzzer time, not coverage: at 4,096 points the harness
    // ran 195 inputs a second, too few for 10^7).
    if (!app.tune.empty() && app.tune.grid_size() <= 256) {
      tune::Space space(app.tune, path);
      for (const auto& p : space.allowed_points()) space.build_env(p, "");
    }
  } catch (const Error&) {
  }
  return 0;
}
