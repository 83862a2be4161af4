// The one list of secret variables, and the redactor that keeps their values out of everything
// optimas writes or prints. It lives in util because it knows nothing of models: the model layer
// names the variables it reads keys from (register_secret_variable), and the writers (logs,
// JSON, files, the run store, child processes) use it without reaching up a layer.
#pragma once

#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

namespace optimas::util {

inline constexpr std::string_view k_redacted = "[REDACTED]";

// Declares `name` a key variable whatever it is called (a backend's key variable, or the one its
// api_key_env option names). Safe to call from any thread, any number of times.
void register_secret_variable(const std::string& name);

// Whether `name` holds a secret: registered, or named like one (it contains KEY, TOKEN, SECRET,
// PASSWORD, PASSWD or CREDENTIAL, in any case). No child process optimas starts sees these.
bool is_secret_variable(std::string_view name);

// The secret variables set in the environment now.
std::vector<std::string> secret_variables();

// The values to redact, longest first: those of registered variables from 4 characters, those of
// variables only named like secrets from 8 (so placeholders such as "EMPTY" are left alone).
// The environment is read at each call, so a key set after start-up is still caught.
std::vector<std::string> secret_values();

// `text` with every secret value replaced by "[REDACTED]".
std::string redact(std::string_view text);

// Redacts a file in place, reading it in pieces (a program's log may be large). Returns whether
// anything was replaced; a file that does not exist is left alone.
bool redact_file(const std::string& path);

// A stream buffer that passes text on to `target` redacted, a line at a time (a key holds no
// line break). main() puts one under std::cout and std::cerr, so that whatever a command prints
// is redacted, whoever prints it.
class RedactingStreambuf : public std::streambuf {
public:
  explicit RedactingStreambuf(std::streambuf* target) : m_target(target) {}
  ~RedactingStreambuf() override { sync(); }
  RedactingStreambuf(const RedactingStreambuf&) = delete;
  RedactingStreambuf& operator=(const RedactingStreambuf&) = delete;
  std::streambuf* target() const { return m_target; }

protected:
  int overflow(int c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

private:
  void pass_lines(bool all); // passes the complete lines on (all: the rest too)
  std::streambuf* m_target;
  std::string m_pending;
};

} // namespace optimas::util
