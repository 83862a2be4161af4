// Tests of propose/propose's asking (ask_backend, the one ask path of `ask`, `optimize` and `run`):
// every answer priced by the price table, totals added up as pricing.hpp adds them (a replay
// costs nothing and is counted apart), failures as values or errors; and unknown_evidence.
#include "propose/prepare.hpp"
#include "propose/propose.hpp"

#include "llm/pricing.hpp"
#include "util/error.hpp"

#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace optimas;

namespace {

// A backend that answers every prompt with a fixed usage, records what it was sent, and fails
// the prompts whose text holds "FAIL" (with the kind named after it).
class CountingBackend final : public llm::Backend {
public:
  std::string name() const override { return "openai/gpt-5"; }
  llm::Result complete(const llm::Request& request) override {
    requests.push_back(request);
    if (request.prompt.find("FAIL awaiting") != std::string::npos)
      return llm::Failure{llm::FailureKind::awaiting_reply, "save the answer as reply.md"};
    if (request.prompt.find("FAIL") != std::string::npos)
      return llm::Failure{llm::FailureKind::bad_request, "HTTP 400: bad prompt", 400};
    llm::Response r;
    r.text = R"({"summary": "answer to )" + request.prompt + R"(", "edits": [], "withheld": []})";
    r.model = "gpt-5-2025-08-07";
    r.usage.input_tokens = 1'000'000;
    r.usage.output_tokens = 100'000;
    return r;
  }
  std::vector<llm::Request> requests;
};

std::vector<prompt::Prompt> prompts(const std::vector<std::string>& users) {
  std::vector<prompt::Prompt> out;
  for (const auto& u : users) out.push_back({u, "You are a tuner.", u, {"k"}, {}});
  return out;
}

llm::BackendConfig backend_config(const std::string& provider, const std::string& model) {
  llm::BackendConfig c;
  c.provider = provider;
  c.model = model;
  return c;
}

// What pricing.hpp says `n` fresh answers of CountingBackend cost under `provider`/`model`.
llm::UsageTotals expected_totals(int n, const std::string& provider, const std::string& model) {
  llm::UsageTotals t;
  for (int i = 0; i < n; ++i) {
    llm::Usage u{1'000'000, 100'000, 0, false};
    llm::price(u, provider, model, llm::PriceTable::builtin());
    t.add(u);
  }
  return t;
}

} // namespace

TEST(AskBackend, EveryAnswerIsPricedAndTheTotalIsPricingsTotal) {
  CountingBackend backend;
  auto asked = propose::ask_backend(prompts({"a", "b"}), "", {}, backend, backend_config("openai", "gpt-5"), nullptr);
  auto want = expected_totals(2, "openai", "gpt-5");
  ASSERT_TRUE(want.cost_known) << "the built-in table prices openai/gpt-5";
  EXPECT_GT(want.cost_usd, 0);
  EXPECT_EQ(asked.usage.calls, 2);
  EXPECT_EQ(asked.usage.input_tokens, 2'000'000u);
  EXPECT_EQ(asked.usage.output_tokens, 200'000u);
  EXPECT_TRUE(asked.usage.cost_known) << "a priced model's cost is known, as optimas ask reports it";
  EXPECT_DOUBLE_EQ(asked.usage.cost_usd, want.cost_usd);
  ASSERT_EQ(asked.results.size(), 2u);
  const auto& first = std::get<llm::Response>(asked.results[0]);
  EXPECT_TRUE(first.usage.cost_known);
  EXPECT_DOUBLE_EQ(first.usage.cost_usd, want.cost_usd / 2);
  EXPECT_EQ(asked.model, "gpt-5-2025-08-07");
  EXPECT_EQ(asked.replies.size(), 2u);
}

TEST(AskBackend, AReplayedAnswerIsCountedApartAndCostsNothing) {
  test::TempDir dir;
  llm::ResponseCache cache(dir.path() / "cache");
  CountingBackend backend;
  auto cfg = backend_config("openai", "gpt-5");
  auto first = propose::ask_backend(prompts({"a", "b"}), "", {}, backend, cfg, &cache);
  auto again = propose::ask_backend(prompts({"a", "b"}), "", {}, backend, cfg, &cache);
  EXPECT_EQ(backend.requests.size(), 2u) << "the second ask is replayed";
  EXPECT_EQ(again.replies, first.replies);
  EXPECT_EQ(again.usage.calls, 0);
  EXPECT_EQ(again.usage.cached_calls, 2);
  EXPECT_EQ(again.usage.input_tokens, 0u) << "a replay's tokens were paid for once, by the first ask";
  EXPECT_EQ(again.usage.output_tokens, 0u);
  EXPECT_EQ(again.usage.cost_usd, 0);
  EXPECT_TRUE(again.usage.cost_known);
}

TEST(AskBackend, AnUnpricedModelHasAnUnknownTotalAndTheBuiltinCostsNothing) {
  CountingBackend backend;
  auto unknown =
      propose::ask_backend(prompts({"a"}), "", {}, backend, backend_config("openai", "gpt-unlisted"), nullptr);
  EXPECT_FALSE(unknown.usage.cost_known);
  EXPECT_EQ(unknown.usage.cost_usd, 0);
  auto builtin = propose::ask_backend(prompts({"a"}), "", {}, backend, backend_config("builtin", ""), nullptr);
  EXPECT_TRUE(builtin.usage.cost_known);
  EXPECT_EQ(builtin.usage.cost_usd, 0);
}

TEST(AskBackend, TheSettingsAndTheFeedbackReachTheRequest) {
  CountingBackend backend;
  propose::AskSettings s;
  s.temperature = 0.7;
  s.max_tokens = 123;
  s.seed = 42;
  s.timeout_s = 9;
  std::vector<std::size_t> progress;
  s.before_each = [&](std::size_t i, const prompt::Prompt& p) {
    progress.push_back(i);
    EXPECT_EQ(p.label, i == 0 ? "a" : "b");
  };
  nlohmann::json context = {{"sources", {{"main.cu", "x"}}}};
  propose::ask_backend(prompts({"a", "b"}), "edit 1 was not applied", context, backend,
                       backend_config("openai", "gpt-5"), nullptr, s);
  ASSERT_EQ(backend.requests.size(), 2u);
  const auto& r = backend.requests[1];
  EXPECT_EQ(r.temperature, 0.7);
  EXPECT_EQ(r.max_tokens, 123);
  EXPECT_EQ(r.seed.value_or(-1), 42);
  EXPECT_EQ(r.timeout_s, 9);
  EXPECT_EQ(r.system, "You are a tuner.");
  EXPECT_EQ(r.prompt, propose::with_feedback("b", "edit 1 was not applied"));
  EXPECT_EQ(r.response_schema, prompt::reply_schema());
  EXPECT_EQ(r.context, context);
  EXPECT_EQ(progress, (std::vector<std::size_t>{0, 1}));
  // The loop's defaults when nothing is set.
  propose::ask_backend(prompts({"c"}), "", {}, backend, backend_config("openai", "gpt-5"), nullptr);
  EXPECT_EQ(backend.requests.back().temperature, propose::AskSettings{}.temperature);
  EXPECT_FALSE(backend.requests.back().seed.has_value());
  EXPECT_EQ(backend.requests.back().prompt, "c");
}

TEST(AskBackend, AFailureStopsTheLoopButIsRecordedForAsk) {
  CountingBackend backend;
  try {
    propose::ask_backend(prompts({"a", "FAIL", "c"}), "", {}, backend, backend_config("openai", "gpt-5"), nullptr);
    ADD_FAILURE() << "a failure must throw without keep_going";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("openai/gpt-5 failed (bad_request): HTTP 400"), std::string::npos) << e.what();
  }
  EXPECT_EQ(backend.requests.size(), 2u) << "nothing is asked after the failure";

  CountingBackend again;
  propose::AskSettings s;
  s.keep_going = true;
  auto asked =
      propose::ask_backend(prompts({"a", "FAIL", "c"}), "", {}, again, backend_config("openai", "gpt-5"), nullptr, s);
  EXPECT_EQ(again.requests.size(), 3u);
  ASSERT_EQ(asked.results.size(), 3u);
  ASSERT_TRUE(std::holds_alternative<llm::Failure>(asked.results[1]));
  EXPECT_EQ(std::get<llm::Failure>(asked.results[1]).kind, llm::FailureKind::bad_request);
  EXPECT_EQ(asked.replies[1], "");
  EXPECT_TRUE(llm::ok(asked.results[2]));
  EXPECT_EQ(asked.usage.calls, 2) << "a failed call is no answer to pay for";
  EXPECT_DOUBLE_EQ(asked.usage.cost_usd, expected_totals(2, "openai", "gpt-5").cost_usd);
}

TEST(AskBackend, AMissingManualReplyIsPendingEvenWithKeepGoing) {
  for (bool keep_going : {false, true}) {
    propose::AskSettings s;
    s.keep_going = keep_going;
    CountingBackend backend;
    EXPECT_THROW(propose::ask_backend(prompts({"FAIL awaiting", "b"}), "", {}, backend, backend_config("manual", ""),
                                      nullptr, s),
                 PendingError)
        << keep_going;
    EXPECT_EQ(backend.requests.size(), 1u) << "the next prompt waits too";
  }
}

TEST(UnknownEvidence, NamesTheCitedIdsTheDiagnosticsLack) {
  analysis::Diagnostics d;
  d.evidence.push_back({"PC1", "pc", "k", "line 3 waits"});
  d.evidence.push_back({"RF1", "roofline", "k", "DRAM-bound"});
  prompt::Reply reply;
  prompt::Edit a;
  a.evidence = {"PC1", "PC9"};
  prompt::Edit b;
  b.evidence = {"RF1", "IA4"};
  reply.edits = {a, b};
  EXPECT_EQ(propose::unknown_evidence(reply, d), (std::vector<std::string>{"PC9", "IA4"}));
  reply.edits = {b};
  reply.edits[0].evidence = {"RF1"};
  EXPECT_TRUE(propose::unknown_evidence(reply, d).empty());
}

// The host files the builtin reads for launches: the application's code that launches or
// declares kernels, not its editable sources, build trees, run stores or hidden folders.
TEST(HostSources, TheApplicationsOtherFilesThatLaunchKernels) {
  test::TempDir d;
  d.file("needle.cu", "#include \"needle_kernel.cu\"\nint main() { needle_1<<<1, 16>>>(r, m); }\n");
  d.file("needle_kernel.cu", "__global__ void needle_1(int* r, int* m) {}\n");
  d.file("needle.h", "__global__ void needle_1(int* r, int* m);\n");
  d.file("timing.h", "double now();\n"); // neither launches nor declares a kernel
  d.file("util/launch.cpp", "void go() { k<<<1, 1>>>(); }\n");
  d.file("a/b/c/deep.cu", "void deep() { k<<<1, 1>>>(); }\n"); // three levels down
  d.file("build/CMakeFiles/x.cu", "void copy() { k<<<1, 1>>>(); }\n");
  d.file(".optimas/cache/y.cu", "void cached() { k<<<1, 1>>>(); }\n");
  d.file("runs/r1/snapshot/needle.cu", "int main() { needle_1<<<1, 16>>>(r, m); }\n");
  d.file("notes.txt", "k<<<1, 1>>>();\n");
  config::AppConfig app;
  app.dir = d.path().string();
  app.sources = {"needle_kernel.cu"};
  auto host = propose::read_host_sources(app, d.path());
  std::vector<std::string> names;
  for (const auto& [name, text] : host) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"needle.cu", "needle.h", "util/launch.cpp"}));
  EXPECT_NE(host["needle.cu"].find("needle_1<<<1, 16>>>"), std::string::npos);

  auto context = propose::structured_context({}, {{"needle_kernel.cu", "..."}}, host);
  EXPECT_EQ(context["host_sources"].size(), 3u);
  EXPECT_FALSE(propose::structured_context({}, {{"needle_kernel.cu", "..."}}).contains("host_sources"));
}

// Where the time is that applied edits act on (issue #50): each hot kernel's stalled samples,
// weighted by its share of the hot time, on lines an edit changes or whose cause line it changes.
TEST(Coverage, TimeAddressedCountsEditedLinesAndTheirCauses) {
  analysis::Diagnostics d;
  auto kernel = [&](const std::string& name, double share, std::vector<analysis::SalientLine> lines) {
    analysis::KernelDiagnostics kd;
    kd.time.kernel = name;
    kd.time.share = share;
    analysis::StallSummary s;
    s.kernel_stalls = {
        {profile::Stall::long_scoreboard, 80}, {profile::Stall::selected, 100}, {profile::Stall::wait, 20}};
    s.lines = std::move(lines);
    kd.stalls = std::move(s);
    d.kernels.push_back(std::move(kd));
  };
  auto line = [](std::string id, int at, std::uint64_t stalled) {
    analysis::SalientLine l;
    l.id = std::move(id);
    l.file = "/abs/k.cu";
    l.line = at;
    l.stalled = stalled;
    return l;
  };
  auto waits = line("PC1", 10, 60); // its cause, line 4, is what an edit changes
  waits.cause = analysis::Cause{};
  waits.cause->status = analysis::Cause::Status::found;
  waits.cause->file = "/abs/k.cu";
  waits.cause->line = 4;
  kernel("a", 0.6, {waits, line("PC2", 12, 30)});
  kernel("b", 0.2, {line("PC3", 30, 50)});
  edit::Application app;
  app.original = {{"k.cu", ""}};
  edit::EditOutcome o;
  o.applied = true;
  o.file = "k.cu";
  o.first_line = 3;
  o.last_line = 5;
  app.outcomes = {o};
  prompt::Reply reply;
  reply.withheld.push_back({"vector loads: line 30", "its rows may be unaligned", {"PC3"}});
  auto c = propose::coverage(reply, app, d);
  // PC1: kernel a holds 0.75 of the hot time, its line 60 of 100 stalled samples.
  EXPECT_NEAR(c.time_addressed, 0.75 * 0.6, 1e-9);
  ASSERT_EQ(c.unaddressed.size(), 2u);
  EXPECT_EQ(c.unaddressed[0].id, "PC2"); // 0.75 * 0.3 against PC3's 0.25 * 0.5
  EXPECT_NEAR(c.unaddressed[0].share, 0.225, 1e-9);
  EXPECT_EQ(c.unaddressed[0].why, "no edit acts on it");
  EXPECT_EQ(c.unaddressed[1].id, "PC3");
  EXPECT_EQ(c.unaddressed[1].why, "withheld: vector loads: line 30 (its rows may be unaligned)");
  EXPECT_EQ(c.text().substr(0, 38), "addresses 45% of the stalled samples; ");
  // Without the cause line, the same edit addresses nothing.
  d.kernels[0].stalls->lines[0].cause.reset();
  EXPECT_EQ(propose::coverage(reply, app, d).time_addressed, 0.0);
  // An applied edit that says it addresses PC2 (a padded array's use, lines away) acts on it; the
  // same edit not applied does not.
  prompt::Edit padded;
  padded.addresses = {"PC2"};
  reply.edits = {padded};
  EXPECT_NEAR(propose::coverage(reply, app, d).time_addressed, 0.75 * 0.3, 1e-9);
  app.outcomes[0].applied = false;
  EXPECT_EQ(propose::coverage(reply, app, d).time_addressed, 0.0);
}

// `addresses` (the PC items an edit acts on, which coverage reads) is the builtin's: a model is
// not asked for it, and one it gives is dropped, so it cannot raise its own coverage.
TEST(Proposal, OnlyTheBuiltinsAddressesAreRead) {
  const std::string reply = R"({"summary": "", "withheld": [], "edits": [{"file": "k.cu", "kernel": "k",
    "find": "int x = 1;", "replace": "int x = 2;", "line_start": null, "line_end": null, "new_text": null,
    "evidence": ["PC1"], "rationale": "r", "expected_effect": [], "addresses": ["PC1"]}]})";
  analysis::Diagnostics d;
  std::map<std::string, std::string> sources = {{"k.cu", "__global__ void k() { int x = 1; }\n"}};
  auto model = propose::make_proposal({reply}, d, sources, {}, edit::Scope::kernel, false, false);
  ASSERT_EQ(model.reply.edits.size(), 1u);
  EXPECT_TRUE(model.reply.edits[0].addresses.empty());
  auto builtin = propose::make_proposal({reply}, d, sources, {}, edit::Scope::kernel, false, true);
  ASSERT_EQ(builtin.reply.edits.size(), 1u);
  EXPECT_EQ(builtin.reply.edits[0].addresses, (std::vector<std::string>{"PC1"}));
}
