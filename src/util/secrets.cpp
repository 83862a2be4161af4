#include "util/secrets.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

extern char** environ;

namespace optimas::util {

namespace fs = std::filesystem;

namespace {

// Registered variables are known to hold keys, so short values count too; below four characters
// a value cannot be a real key, and replacing it would garble every message.
constexpr std::size_t k_min_registered_length = 4;
// Variables found only by their name may hold anything; eight characters keep placeholders such
// as "EMPTY" or "none" from being replaced all over a message.
constexpr std::size_t k_min_named_length = 8;
constexpr std::string_view k_secret_words[] = {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"};
// A file is redacted in pieces of this size, so a program's large log needs no large buffer.
constexpr std::size_t k_file_chunk = 1 << 20;

std::mutex g_mutex;
std::set<std::string, std::less<>>& registered() {
  static std::set<std::string, std::less<>> names;
  return names;
}

bool is_registered(std::string_view name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return registered().count(name) > 0;
}

bool named_like_secret(std::string_view name) {
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (auto word : k_secret_words)
    if (upper.find(word) != std::string::npos) return true;
  return false;
}

// Copies `in` to `out` (when given) with every secret replaced; returns whether one was found.
// Each piece keeps its last (longest secret - 1) bytes for the next, so a secret that straddles
// two pieces is still found.
bool redact_stream(std::istream& in, std::ostream* out, const std::vector<std::string>& secrets) {
  const std::size_t keep = secrets.front().size() - 1;
  std::string buf;
  std::vector<char> chunk(k_file_chunk);
  bool found = false;
  for (bool eof = false; !eof;) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    eof = got < chunk.size();
    buf.append(chunk.data(), got);
    const std::size_t limit = eof ? buf.size() : buf.size() - std::min(keep, buf.size());
    std::size_t pos = 0;
    while (pos < limit) {
      std::size_t best = std::string::npos, length = 0;
      for (const auto& s : secrets) // longest first: at a tie the longer secret wins
        if (auto p = buf.find(s, pos); p < best) best = p, length = s.size();
      if (best >= limit) {
        if (out) out->write(buf.data() + pos, static_cast<std::streamsize>(limit - pos));
        pos = limit;
        break;
      }
      found = true;
      if (!out) return true;
      out->write(buf.data() + pos, static_cast<std::streamsize>(best - pos));
      out->write(k_redacted.data(), static_cast<std::streamsize>(k_redacted.size()));
      pos = best + length;
    }
    buf.erase(0, pos);
  }
  return found;
}

} // namespace

void register_secret_variable(const std::string& name) {
  if (name.empty()) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  registered().insert(name);
}

bool is_secret_variable(std::string_view name) {
  return named_like_secret(name) || is_registered(name);
}

std::vector<std::string> secret_variables() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    std::string_view name = entry.substr(0, entry.find('='));
    if (is_secret_variable(name)) out.emplace_back(name);
  }
  return out;
}

std::vector<std::string> secret_values() {
  std::vector<std::string> values;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = entry.substr(0, eq), value = entry.substr(eq + 1);
    const bool known = is_registered(name);
    if (!known && !named_like_secret(name)) continue;
    // A value inside "[REDACTED]" would make redacting twice differ from redacting once.
    if (value.size() >= (known ? k_min_registered_length : k_min_named_length) &&
        k_redacted.find(value) == std::string_view::npos) {
      values.emplace_back(value);
      // In JSON text a quote or backslash in a key is escaped: that form must go too.
      std::string escaped;
      for (char c : value) escaped += c == '"' || c == '\\' ? std::string{'\\', c} : std::string{c};
      if (escaped != value) values.push_back(escaped);
    }
  }
  // Longest first, so that a key which contains another key is replaced whole.
  std::sort(values.begin(), values.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

std::string redact(std::string_view text) {
  std::string out(text);
  for (const auto& secret : secret_values())
    for (auto pos = out.find(secret); pos != std::string::npos; pos = out.find(secret, pos + k_redacted.size()))
      out.replace(pos, secret.size(), k_redacted);
  return out;
}

bool redact_file(const std::string& path) {
  const auto secrets = secret_values();
  std::error_code ec;
  if (secrets.empty() || !fs::is_regular_file(path, ec)) return false;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in || !redact_stream(in, nullptr, secrets)) return false;
  }
  // Written next to the file and renamed over it, so a failure leaves the file as it was.
  const std::string tmp = path + ".redacting";
  {
    std::ifstream in(path, std::ios::binary);
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot write " + tmp + " while removing a secret from " + path);
    redact_stream(in, &out, secrets);
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      throw Error("cannot write " + tmp + " while removing a secret from " + path);
    }
  }
  fs::permissions(tmp, fs::status(path).permissions(), ec);
  fs::rename(tmp, path);
  return true;
}

void RedactingStreambuf::pass_lines(bool all) {
  const std::size_t end = all ? m_pending.size() : m_pending.rfind('\n') + 1; // npos + 1 == 0
  if (end == 0) return;
  const std::string text = redact(std::string_view(m_pending).substr(0, end));
  m_target->sputn(text.data(), static_cast<std::streamsize>(text.size()));
  m_pending.erase(0, end);
}

int RedactingStreambuf::overflow(int c) {
  if (c == traits_type::eof()) return traits_type::not_eof(c);
  m_pending += static_cast<char>(c);
  if (c == '\n') pass_lines(false);
  return c;
}

std::streamsize RedactingStreambuf::xsputn(const char* s, std::streamsize n) {
  m_pending.append(s, static_cast<std::size_t>(n));
  if (std::string_view(s, static_cast<std::size_t>(n)).find('\n') != std::string_view::npos) pass_lines(false);
  return n;
}

int RedactingStreambuf::sync() {
  pass_lines(true);
  return m_target->pubsync();
}

} // namespace optimas::util
