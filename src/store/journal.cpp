#include "store/journal.hpp"

#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <unistd.h>

namespace optimas::store {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

[[noreturn]] void throw_errno(const std::string& what, const std::string& path) {
  throw Error(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

std::size_t line_of(const std::string& text, std::size_t byte) {
  std::size_t end = std::min(byte > 0 ? byte - 1 : 0, text.size());
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
}

// json::parse reports where a parse error is, but not where a number past double's range is
// (out_of_range carries no position); a SAX pass, which gets both as parse_error, finds it.
class ErrorPosition : public nlohmann::json_sax<json> {
public:
  std::size_t byte = 0;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) override {
    byte = position;
    return false;
  }
};

// nlohmann's message without its "[json.exception.parse_error.101] " tag.
std::string reason_of(const json::exception& e) {
  std::string what = e.what();
  auto close = what.find("] ");
  return close == std::string::npos ? what : what.substr(close + 2);
}

} // namespace

void write_json_atomic(const std::string& path, const json& doc) {
  const std::string content = util::json_text(doc) + "\n";
  // Unique per process and call, so concurrent writers never share a temporary file.
  static std::atomic<unsigned> counter{0};
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), counter++);
  // Removes the temporary file and throws, keeping the errno that says why.
  auto fail = [&tmp](const char* what, const std::string& target) {
    int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    throw_errno(what, target);
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw_errno("cannot create", tmp);
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int saved = errno;
      ::close(fd);
      errno = saved;
      fail("cannot write", tmp);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    int saved = errno;
    ::close(fd);
    errno = saved;
    fail("cannot flush", tmp);
  }
  if (::close(fd) != 0) fail("cannot close", tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot move into place", path);
  // The rename is durable only once the folder holding it is synced; losing it is not fatal.
  std::string dir = fs::path(path).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

json parse_json(const std::string& text, const std::string& path, const std::string& what, const std::string& advice) {
  try {
    return util::parse_json(text);
  } catch (const json::exception& e) { // parse_error, and out_of_range for a number like 1e400
    std::size_t byte = 0;
    if (const auto* pe = dynamic_cast<const json::parse_error*>(&e)) {
      byte = pe->byte;
    } else {
      ErrorPosition where;
      json::sax_parse(text, &where);
      byte = where.byte;
    }
    throw ParseError(path, line_of(text, byte), what + "not valid JSON: " + reason_of(e) + advice);
  }
}

json read_json(const std::string& path) {
  return parse_json(util::read_file(path), path, "", "; delete it to redo that step");
}

void append_line(const std::string& path, const json& doc) {
  std::ofstream out(path, std::ios::app);
  out << util::json_text(doc, -1) << "\n";
  out.flush();
  if (!out) throw Error(path + ": cannot append");
}

Journal parse_journal(const std::string& text, const std::string& path) {
  Journal out;
  std::size_t number = 0;
  for (auto line : util::split(text, '\n')) {
    ++number;
    if (line.empty()) continue;
    try {
      json doc = util::parse_json(line);
      if (doc.is_object())
        out.lines.push_back(std::move(doc));
      else
        out.skipped.push_back(fmt::format("{}:{}: not a JSON object", path, number));
    } catch (const json::exception& e) { // a line cut short, or a number like 1e400
      out.skipped.push_back(fmt::format("{}:{}: not valid JSON: {}", path, number, reason_of(e)));
    }
  }
  return out;
}

std::vector<json> read_journal(const std::string& path) {
  if (!fs::exists(path)) return {};
  Journal journal = parse_journal(util::read_file(path), path);
  for (const auto& s : journal.skipped) log::warn("{}; ignoring the line (what it recorded is taken again)", s);
  return std::move(journal.lines);
}

} // namespace optimas::store
