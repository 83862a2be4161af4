// Errors: what callers may handle (Error and its kinds) versus what ends the program.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace optimas {

// Exit codes shared by every subcommand (main() is the only place that maps errors to them).
inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_error = 1;
inline constexpr int k_exit_usage = 2;
inline constexpr int k_exit_no_improvement = 3; // finished, but no variant was shown to be faster
inline constexpr int k_exit_pending = 4;        // waiting for something outside (a manual reply)

// A failure a caller may handle or report; the message says what and where.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Input that cannot be read: names the file and the 1-based line.
class ParseError : public Error {
public:
  ParseError(std::string file, std::size_t line, const std::string& what);
  const std::string& file() const { return m_file; }
  std::size_t line() const { return m_line; }
  const std::string& reason() const { return m_reason; }

private:
  std::string m_file;
  std::size_t m_line;
  std::string m_reason;
};

// A mistake in a configuration file (an optimas.yml): wrong use rather than bad data, so main()
// gives it the usage exit code; like any ParseError it names the file and line.
class ConfigError : public ParseError {
public:
  using ParseError::ParseError;
};

// Not a failure: the work waits for something the user must do (the message says what).
class PendingError : public Error {
public:
  using Error::Error;
};

// Wrong use: a bad option or configuration value.
class UsageError : public Error {
public:
  using Error::Error;
};

// What an exception says, in our words where it came from a library: nlohmann's JSON errors
// without their "[json.exception.parse_error.101]" tags ("not valid JSON: ...", "a value of the
// wrong kind: ..."), std::filesystem's as "PATH: REASON". Ours as they are.
std::string plain_message(const std::exception& e);

} // namespace optimas
