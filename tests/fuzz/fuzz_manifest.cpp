// A profile directory's manifest.json, read with import_profile as `optimas analyze DIR` does.
// The folder holds small valid pages the manifest may name (details.csv, raw.csv, source.csv,
// session.csv), so a manifest can get as far as the page readers.
#include "fuzz_common.hpp"

#include "profile/importer.hpp"
#include "profile/json.hpp"
#include "util/error.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace {

const char* k_details = "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\","
                        "\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\","
                        "\"Metric Unit\",\"Metric Value\"\n"
                        "\"0\",\"1\",\"app\",\"h\",\"k(float*)\",\"1\",\"7\",\"(256, 1, 1)\",\"(8, 1, 1)\",\"0\",\"9.0\","
                        "\"GPU Speed Of Light Throughput\",\"gpu__time_duration.sum\",\"nsecond\",\"1,024\"\n";
const char* k_raw = "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"nsecond\"\n\"0\",\"k(float*)\",\"1024\"\n";
const char* k_session = "\"Attribute\",\"Value\"\n\"Version\",\"2025.1.0.0\"\n";

const std::string& profile_dir() {
  static const std::string dir = [] {
    auto d = optimas::fuzz::scratch() / "profile";
    std::filesystem::create_directories(d / "default");
    optimas::fuzz::write_file("profile/default/details.csv", k_details);
    optimas::fuzz::write_file("profile/default/raw.csv", k_raw);
    optimas::fuzz::write_file("profile/default/session.csv", k_session);
    return d.string();
  }();
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace optimas;
  const std::string& dir = profile_dir();
  fuzz::write_file("profile/manifest.json", std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    auto p = profile::import_profile(dir);
    profile::to_json(p).dump();
  } catch (const Error&) {
  }
  return 0;
}
