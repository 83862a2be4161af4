#include "config/app_config.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

using namespace optimas::config;
using optimas::ParseError;
using optimas::test::TempDir;

namespace {

const char* k_valid = R"(name: demo
description: a demo
sources: [main.cu]
build:
  command: nvcc -O3 -arch=sm_90 -lineinfo -o demo main.cu
  binary: demo
run:
  command: ./demo --n {n} --seed {seed} --out {output}
  output: demo.out
  kernel_time: 'kernel_time_ms: ([0-9.]+)'
  timeout_s: 30
configs:
  - {name: small, n: 1024, seed: 1}
  - {name: default, n: 4096, seed: 2, default: true}
  - {name: hidden, n: 2048, seed: 3, held_out: true}
)";

std::size_t error_line(const std::string& path) {
  try {
    load_app_config(path);
  } catch (const ParseError& e) {
    return e.line();
  }
  return 0;
}

} // namespace

TEST(AppConfig, Valid) {
  TempDir dir;
  dir.file("main.cu", "");
  auto app = load_app_config(dir.file("optimas.yml", k_valid));
  EXPECT_EQ(app.name, "demo");
  EXPECT_EQ(app.dir, dir.path().string());
  EXPECT_EQ(app.configs.size(), 3u);
  EXPECT_EQ(app.default_config().name, "default");
  EXPECT_TRUE(app.find("hidden")->held_out);
  EXPECT_DOUBLE_EQ(app.timeout_s, 30);
  EXPECT_EQ(app.command_for(*app.find("small"), "/tmp/o.bin"), "./demo --n 1024 --seed 1 --out /tmp/o.bin");
}

TEST(AppConfig, ErrorsNameTheLine) {
  TempDir dir;
  dir.file("main.cu", "");
  std::string typo = k_valid;
  typo.replace(typo.find("  binary:"), 9, "  binry: ");
  EXPECT_EQ(error_line(dir.file("a.yml", typo)), 6u);

  std::string missing = k_valid;
  missing.replace(missing.find("seed: 2, "), 9, "");
  EXPECT_EQ(error_line(dir.file("b.yml", missing)), 14u);

  std::string unused = k_valid;
  unused.replace(unused.find("seed: 1}"), 8, "seed: 1, m: 3}");
  EXPECT_EQ(error_line(dir.file("c.yml", unused)), 13u);

  std::string two_defaults = k_valid;
  two_defaults.replace(two_defaults.find("seed: 1}"), 8, "seed: 1, default: true}");
  EXPECT_GT(error_line(dir.file("d.yml", two_defaults)), 0u);

  EXPECT_EQ(error_line(dir.file("e.yml", "name: [unclosed\n")), 2u);

  std::string bad_regex = k_valid;
  bad_regex.replace(bad_regex.find("'kernel_time_ms: ([0-9.]+)'"), 27, "'no group here'");
  EXPECT_EQ(error_line(dir.file("f.yml", bad_regex)), 10u);
}

TEST(AppConfig, MissingSourceAndFile) {
  TempDir dir;
  EXPECT_GT(error_line(dir.file("optimas.yml", k_valid)), 0u); // main.cu does not exist
  EXPECT_THROW(load_app_config((dir.path() / "none.yml").string()), optimas::Error);
}
