// propose/variant.cpp: optimize's variant, copied without build outputs and built in the sandbox.
#include "propose/variant.hpp"

#include "config/app_config.hpp"
#include "test_helpers.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <gtest/gtest.h>

#include <filesystem>

using namespace optimas;
using optimas::test::ScopedEnv;
using optimas::test::TempDir;
namespace fs = std::filesystem;

namespace {

config::AppConfig app_in(const TempDir& dir, const std::string& build_command) {
  dir.file("src/main.cu", "int main() { return 0; }\n");
  dir.file("main.o", "an object file from an earlier build");
  return config::load_app_config(dir.file("optimas.yml", "name: demo\nsources: [src/main.cu]\n"
                                                         "build:\n  command: " +
                                                             build_command +
                                                             "\n"
                                                             "run:\n  command: ./demo\n  needs_gpu: false\n"
                                                             "configs:\n  - {name: small}\n"));
}

} // namespace

TEST(Variant, TheCopyHoldsTheEditsAndNoBuildOutputs) {
  TempDir app_dir, out;
  auto app = app_in(app_dir, "true");
  std::string dir = (out.path() / "variant").string();
  propose::write_variant(app, {{"src/main.cu", "int main() { return 1; }\n"}}, dir);
  EXPECT_EQ(util::read_file(dir + "/src/main.cu"), "int main() { return 1; }\n");
  EXPECT_TRUE(fs::exists(dir + "/optimas.yml"));
  EXPECT_FALSE(fs::exists(dir + "/main.o")); // an old object file would make make skip the compile
  EXPECT_EQ(util::read_file((app_dir.path() / "src/main.cu").string()), "int main() { return 0; }\n");

  // Written again, the folder is replaced, not merged.
  util::write_file(dir + "/stale.txt", "left over");
  propose::write_variant(app, {}, dir);
  EXPECT_FALSE(fs::exists(dir + "/stale.txt"));
  EXPECT_EQ(util::read_file(dir + "/src/main.cu"), "int main() { return 0; }\n");
  EXPECT_THROW(propose::write_variant(app, {{"../outside.cu", "x"}}, dir), Error);
  EXPECT_FALSE(fs::exists(out.path() / "outside.cu"));
}

TEST(Variant, AFolderInsideTheApplicationDoesNotCopyItself) {
  TempDir app_dir;
  auto app = app_in(app_dir, "true");
  std::string dir = (app_dir.path() / "out" / "variant").string();
  propose::write_variant(app, {{"src/main.cu", "edited\n"}}, dir);
  propose::write_variant(app, {{"src/main.cu", "edited again\n"}}, dir);
  EXPECT_EQ(util::read_file(dir + "/src/main.cu"), "edited again\n");
  EXPECT_FALSE(fs::exists(dir + "/out/variant"));
  EXPECT_EQ(util::read_file((app_dir.path() / "src/main.cu").string()), "int main() { return 0; }\n");
}

TEST(Variant, TheBuildSeesNoApiKey) {
  ScopedEnv key("OPENAI_API_KEY", "sk-test-variant-build-0123456789");
  ScopedEnv plain("OPTIMAS_TEST_PLAIN_VARIABLE", "visible");
  TempDir app_dir, out;
  auto app = app_in(app_dir, "env > build-env.txt");
  std::string dir = (out.path() / "variant").string();
  propose::write_variant(app, {}, dir);
  auto b = propose::build_variant(app, dir, (out.path() / "build.log").string());
  ASSERT_TRUE(b.ok) << b.result;
  std::string env = util::read_file(dir + "/build-env.txt");
  EXPECT_NE(env.find("OPTIMAS_TEST_PLAIN_VARIABLE=visible"), std::string::npos) << env;
  EXPECT_EQ(env.find("OPENAI_API_KEY"), std::string::npos) << env;
  EXPECT_EQ(env.find("sk-test-variant-build"), std::string::npos) << env;
}

TEST(Variant, AFailedBuildSaysSo) {
  TempDir app_dir, out;
  auto app = app_in(app_dir, "echo broken; exit 3");
  std::string dir = (out.path() / "variant").string();
  propose::write_variant(app, {}, dir);
  auto b = propose::build_variant(app, dir, (out.path() / "build.log").string());
  EXPECT_FALSE(b.ok);
  EXPECT_NE(b.result.find("3"), std::string::npos) << b.result;
  EXPECT_NE(util::read_file(b.log).find("broken"), std::string::npos);
}
