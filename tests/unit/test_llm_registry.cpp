// Tests of llm/registry: a new backend is one spec and one registry line (listed by `optimas
// backends`, reached through backend_from); model names, options and their errors; the
// registry's own checks of its lines.
#include "llm/backend.hpp"
#include "llm/schema_dialect.hpp"
#include "util/error.hpp"
#include "util/secrets.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>

using namespace optimas::llm;
namespace util = optimas::util;

namespace {

// ---- What a newcomer's src/llm/echo.cpp holds (docs/prompts-and-backends.md shows the same) ----

const OptionSpec k_greeting = {"greeting", "the word the answer starts with", "hello"};

class EchoBackend final : public Backend {
public:
  explicit EchoBackend(BackendConfig config) : m_config(std::move(config)) {}
  std::string name() const override { return "echo/" + m_config.model; }
  Result complete(const Request& request) override {
    if (request.prompt.empty()) return Failure{FailureKind::bad_request, "echo: an empty prompt"};
    Response r;
    r.text = option_value(m_config, k_greeting) + " " + m_config.model + ": " + request.prompt;
    r.model = m_config.model;
    r.usage.input_tokens = request.prompt.size();
    return r;
  }

private:
  BackendConfig m_config;
};

BackendSpec echo_backend() {
  return {.name = "echo",
          .description = "Answers with the prompt (a newcomer's first backend)",
          .key_env = {"OPTIMAS_TEST_ECHO_ACCESS"},
          .options = {k_greeting},
          .make = [](const BackendConfig& c) { return std::make_unique<EchoBackend>(c); }};
}

// ---- ... and its one line in registry.cpp's table, here added to a copy of that table ----

Registry with_echo() {
  std::vector<BackendSpec> lines = registry().specs();
  lines.push_back(echo_backend());
  return Registry(std::move(lines));
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const optimas::UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

} // namespace

TEST(Registry, ANewBackendRegisteredByOneLineIsListed) {
  Registry r = with_echo();
  ASSERT_NE(r.find("echo"), nullptr);
  EXPECT_EQ(r.names().back(), "echo");
  std::string listing = describe_backends(r);
  EXPECT_NE(listing.find("echo               Answers with the prompt"), std::string::npos) << listing;
  EXPECT_NE(listing.find("option greeting: the word the answer starts with (default hello)"), std::string::npos)
      << listing;
  EXPECT_NE(listing.find("key: $OPTIMAS_TEST_ECHO_ACCESS"), std::string::npos) << listing;
  // Every backend of the real table is still listed before it.
  for (const auto& b : backends()) EXPECT_NE(listing.find(b.name + " "), std::string::npos) << b.name;
}

TEST(Registry, ANewBackendsKeyVariableIsASecretOnceRegistered) {
  // Not named like a key, so only registering makes it one.
  const std::string var = "OPTIMAS_TEST_ECHO_ACCESS_ONLY_HERE";
  EXPECT_FALSE(optimas::util::is_secret_variable(var));
  BackendSpec spec = echo_backend();
  spec.key_env = {var};
  Registry r({spec});
  EXPECT_TRUE(optimas::util::is_secret_variable(var));
}

TEST(Registry, AnOptionNamingAKeyVariableMakesItASecretWhenSet) {
  BackendSpec spec = echo_backend();
  spec.options.push_back({"access_env", "variable holding the echo server's key", "", true});
  Registry r({spec});
  EXPECT_FALSE(optimas::util::is_secret_variable("OPTIMAS_TEST_ECHO_NAMED_BY_OPTION"));
  backend_from("echo/x", "", {{"access_env", "OPTIMAS_TEST_ECHO_NAMED_BY_OPTION"}, {"greeting", "OPTIMAS_TEST_ECHO_PLAIN"}},
               r);
  EXPECT_TRUE(optimas::util::is_secret_variable("OPTIMAS_TEST_ECHO_NAMED_BY_OPTION"));
  EXPECT_FALSE(optimas::util::is_secret_variable("OPTIMAS_TEST_ECHO_PLAIN")) << "an ordinary option's value is not";
}

TEST(Registry, ANewBackendIsCallableThroughBackendFrom) {
  Registry r = with_echo();
  BackendConfig c = backend_from("echo/parrot-1", "http://unused", {{"greeting", "hi"}}, r);
  EXPECT_EQ(c.provider, "echo");
  EXPECT_EQ(c.model, "parrot-1");
  EXPECT_EQ(c.base_url, "http://unused");
  auto backend = make_backend(c, r);
  EXPECT_EQ(backend->name(), "echo/parrot-1");
  Request req;
  req.prompt = "optimize k";
  Result answer = backend->complete(req);
  ASSERT_TRUE(ok(answer));
  EXPECT_EQ(std::get<Response>(answer).text, "hi parrot-1: optimize k");
  // Without the option, the default its spec declares.
  auto plain = make_backend(backend_from("echo/parrot-1", "", {}, r), r);
  EXPECT_EQ(std::get<Response>(plain->complete(req)).text, "hello parrot-1: optimize k");
  // The real table does not know it: registering is the line, nothing else.
  EXPECT_NE(message_of([] { backend_from("echo/parrot-1", "", {}); }).find("unknown model provider \"echo\""),
            std::string::npos);
}

TEST(Registry, AnUnknownOptionNamesTheBackendAndItsOptions) {
  Registry r = with_echo();
  std::string m = message_of([&] { backend_from("echo/x", "", {{"greting", "hi"}}, r); });
  EXPECT_NE(m.find("the echo backend has no option \"greting\" (its options: greeting)"), std::string::npos) << m;
  m = message_of([] { backend_from("openai-compatible/q", "", {{"organization", "me"}}); });
  EXPECT_NE(m.find("the openai-compatible backend has no option \"organization\" (its options: base_url, "
                   "api_key_env)"),
            std::string::npos)
      << m;
  m = message_of([] { backend_from("ollama/llama3", "", {{"api_key_env", "K"}}); });
  EXPECT_NE(m.find("the ollama backend has no option \"api_key_env\" (its options: none)"), std::string::npos) << m;
}

// A value of each option's kind: text, a whole number, a number, a flag.
std::string value_for(const OptionSpec& o) {
  switch (o.kind) {
  case util::OptionKind::integer:
    return "7";
  case util::OptionKind::real:
    return "0.5";
  case util::OptionKind::flag:
    return "true";
  default:
    return "x-" + o.name;
  }
}

TEST(Registry, BackendFromTakesEveryDeclaredOption) {
  for (const auto& spec : backends()) {
    std::map<std::string, std::string> options;
    for (const auto& o : spec.options) options[o.name] = value_for(o);
    BackendConfig c = backend_from(spec.name + "/m", "", options);
    EXPECT_EQ(c.options, options) << spec.name;
    for (const auto& o : spec.options) EXPECT_EQ(option_value(c, o), value_for(o)) << spec.name;
  }
}

// An option's value is checked by its kind where it is given (issue 31: OptionSpec has a kind
// and a check, the option table's).
TEST(Registry, AValueNotOfItsOptionsKindIsRefused) {
  std::string m = message_of([] { backend_from("builtin", "", {{"allow_fp_changes", "maybe"}}); });
  EXPECT_NE(m.find("the builtin backend's option allow_fp_changes takes true or false, got \"maybe\""),
            std::string::npos)
      << m;
  EXPECT_TRUE(util::option_flag(backend_from("builtin", "", {{"allow_fp_changes", "1"}}).options,
                          OptionSpec{"allow_fp_changes", "", "false", false, util::OptionKind::flag}));
  OptionSpec whole{"n", "", "", false, util::OptionKind::integer};
  EXPECT_EQ(util::option_problem(whole, "12"), "");
  EXPECT_EQ(util::option_problem(whole, "1.5"), "takes a whole number, got \"1.5\"");
  EXPECT_EQ(util::option_problem(whole, "99999999999999999999"), "takes a whole number, got \"99999999999999999999\"");
  OptionSpec real{"x", "", "", false, util::OptionKind::real};
  EXPECT_EQ(util::option_problem(real, "1e-3"), "");
  EXPECT_EQ(util::option_problem(real, "nan"), "takes a number, got \"nan\"");
  OptionSpec checked{"c", "", "", false, util::OptionKind::text, [](const std::string& v) {
                       return v == "bad" ? std::string("is bad") : std::string();
                     }};
  EXPECT_EQ(util::option_problem(checked, "bad"), "is bad");
  EXPECT_EQ(util::option_problem(checked, "good"), "");
}

TEST(Registry, ModelNames) {
  auto c = parse_model("openai/gpt-5");
  EXPECT_EQ(c.provider, "openai");
  EXPECT_EQ(c.model, "gpt-5");
  EXPECT_EQ(parse_model("ollama/llama3.1:70b").model, "llama3.1:70b");
  EXPECT_THROW(parse_model("openia/gpt-5"), optimas::UsageError);
  for (const char* name : {"openai", "openai-compatible", "gemini", "anthropic", "ollama", "manual"})
    EXPECT_NE(find_backend(name), nullptr) << name;
}

TEST(Registry, AModelWithoutASlashIsAProviderAlone) {
  BackendConfig c = backend_from("builtin", "", {});
  EXPECT_EQ(c.provider, "builtin");
  EXPECT_EQ(c.model, "");
  // Only the first slash splits: model names may hold their own (ft:..., org/model).
  EXPECT_EQ(backend_from("openai-compatible/Qwen/Qwen2.5-Coder", "", {}).model, "Qwen/Qwen2.5-Coder");
  std::string m = message_of([] { backend_from("openia/gpt-5", "", {}); });
  for (const auto& b : backends()) EXPECT_NE(m.find(b.name), std::string::npos) << "known providers named: " << m;
  EXPECT_NE(message_of([] { backend_from("", "", {}); }).find("unknown model provider \"\""), std::string::npos);
}

TEST(Registry, SplitOptionTakesKeyEqualsValue) {
  EXPECT_EQ(split_option("api_key_env=VLLM_KEY"), std::make_pair(std::string("api_key_env"), std::string("VLLM_KEY")));
  EXPECT_EQ(split_option("base_url=http://h/v1?a=b").second, "http://h/v1?a=b") << "only the first '=' splits";
  EXPECT_EQ(split_option("organization=").second, "");
  EXPECT_NE(message_of([] { split_option("allow_fp_changes"); }).find("--option takes key=value"), std::string::npos);
}

TEST(Registry, OptionValueIsTheSetValueElseTheDeclaredDefault) {
  const OptionSpec version = {"anthropic_version", "header", "2023-06-01"};
  BackendConfig c;
  EXPECT_EQ(option_value(c, version), "2023-06-01");
  c.options["anthropic_version"] = "";
  EXPECT_EQ(option_value(c, version), "2023-06-01") << "an empty value is no value";
  c.options["anthropic_version"] = "2024-01-01";
  EXPECT_EQ(option_value(c, version), "2024-01-01");
}

TEST(Registry, OnlyModelBackendsAreCached) {
  EXPECT_FALSE(caches_answers(backend_from("manual", "", {})));
  EXPECT_FALSE(caches_answers(backend_from("builtin", "", {})));
  for (const char* m : {"openai/gpt-5", "openai-compatible/q", "gemini/g", "anthropic/c", "ollama/l"})
    EXPECT_TRUE(caches_answers(backend_from(m, "", {}))) << m;
  BackendConfig unknown;
  unknown.provider = "nobody";
  EXPECT_FALSE(caches_answers(unknown));
}

TEST(Registry, TheListingComesFromTheSpecs) {
  std::string listing = describe_backends();
  for (const auto& b : backends()) {
    EXPECT_NE(listing.find(b.description), std::string::npos) << b.name;
    for (const auto& o : b.options) EXPECT_NE(listing.find("option " + o.name + ": "), std::string::npos) << o.name;
    if (!b.default_base_url.empty()) {
      EXPECT_NE(listing.find("base_url: " + b.default_base_url), std::string::npos) << b.name;
    }
    if (b.schema_dialect) {
      EXPECT_NE(listing.find(b.schema_dialect("").name), std::string::npos) << b.name;
    }
  }
}

TEST(Registry, ALineThatCannotBeUsedIsRefused) {
  auto spec = [](std::string name) {
    BackendSpec s = echo_backend();
    s.name = std::move(name);
    return s;
  };
  EXPECT_THROW(Registry({spec("echo"), spec("echo")}), std::logic_error) << "a name twice";
  EXPECT_THROW(Registry({spec("")}), std::logic_error) << "no name";
  EXPECT_THROW(Registry({spec("my/echo")}), std::logic_error) << "a '/' would split the model name";
  BackendSpec no_factory = spec("bare");
  no_factory.make = nullptr;
  EXPECT_THROW(Registry({no_factory}), std::logic_error);
  BackendSpec twice = spec("twice");
  twice.options.push_back(k_greeting);
  EXPECT_THROW(Registry({twice}), std::logic_error) << "an option twice";
  EXPECT_NO_THROW(Registry({spec("a"), spec("b")}));
}

TEST(Registry, TheRealTableHasUniqueNamesAndItsKeysAreSecrets) {
  std::set<std::string> names;
  for (const auto& b : backends()) {
    EXPECT_TRUE(names.insert(b.name).second) << b.name;
    for (const auto& var : b.key_env) EXPECT_TRUE(optimas::util::is_secret_variable(var)) << var;
  }
  EXPECT_EQ(names.size(), 7u);
}
