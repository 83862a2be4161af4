// The manual backend: for users with a chat window and no API. It writes the prompt to a file
// named by the prompt's hash and reads the answer from the matching reply file; until that
// exists it stops and says where to put it.
#include "llm/backend.hpp"

#include "prompt/reply.hpp"

#include "util/hash.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace optimas::llm {

namespace fs = std::filesystem;

namespace {

class ManualBackend : public Backend {
public:
  explicit ManualBackend(const BackendConfig& c) : m_dir(c.work_dir.empty() ? "optimas-manual" : c.work_dir) {}

  std::string name() const override { return "manual"; }

  Result complete(const Request& r) override {
    std::string text = "# System\n\n" + r.system + "\n# Prompt\n\n" + r.prompt;
    if (!r.response_schema.is_null())
      text += "\n(Answer with the JSON object only; it is checked against the schema above.)\n";
    std::string id = util::sha256_hex(text).substr(0, 12);
    fs::path prompt = fs::path(m_dir) / ("prompt-" + id + ".md");
    fs::path reply = fs::path(m_dir) / ("reply-" + id + ".md");
    std::error_code ec;
    fs::create_directories(m_dir, ec);
    if (ec) return Failure{FailureKind::bad_request, fmt::format("cannot create {}: {}", m_dir, ec.message())};
    if (!fs::exists(prompt)) util::write_file(prompt.string(), text);
    // The reply path is the user's to fill: anything but a regular file of sensible size is a
    // mistake to name, not something to block on (a FIFO) or to read whole (a device).
    if (fs::exists(reply) && !fs::is_regular_file(reply))
      return Failure{FailureKind::bad_request,
                     fmt::format("{} is not a regular file: save the model's answer there as text", reply.string())};
    if (!fs::exists(reply) || fs::file_size(reply) == 0)
      return Failure{FailureKind::awaiting_reply,
                     fmt::format("the prompt is in {}: give it to your model (a chat window will do), save the whole "
                                 "answer as {} and run the same command again",
                                 prompt.string(), reply.string())};
    if (fs::file_size(reply) > prompt::k_max_reply_bytes)
      return Failure{FailureKind::bad_request, fmt::format("{} has {} bytes; a reply over {} bytes is refused",
                                                           reply.string(), fs::file_size(reply),
                                                           prompt::k_max_reply_bytes)};
    Response out;
    out.text = util::read_file(reply.string());
    out.model = "manual";
    out.raw = out.text;
    return out;
  }

private:
  std::string m_dir;
};

} // namespace

std::unique_ptr<Backend> make_manual(const BackendConfig& config) {
  return std::make_unique<ManualBackend>(config);
}

BackendSpec manual_backend() {
  return {.name = "manual",
          .description = "Writes the prompt to a file and reads the answer from a file (a chat window, no API)",
          .make = make_manual,
          .cache_answers = false}; // the prompt and reply files are its own record
}

} // namespace optimas::llm
