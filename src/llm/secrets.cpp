#include "llm/secrets.hpp"

#include "llm/backend.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace optimas::llm {

namespace {

// Variables the registry names are known to hold keys, so short values count too; below four
// characters a value cannot be a real key, and replacing it would garble every message.
constexpr std::size_t k_min_named_length = 4;
// Variables found only by their suffix may hold anything; eight characters keep placeholders
// such as "EMPTY" or "none" from being replaced all over a message.
constexpr std::size_t k_min_suffix_length = 8;
constexpr std::string_view k_secret_suffixes[] = {"_API_KEY", "_TOKEN", "_SECRET"};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::vector<std::string> secret_values() {
  std::vector<std::string> values;
  for (const auto& spec : backends())
    for (const auto& var : spec.key_env)
      if (const char* v = std::getenv(var.c_str()); v && std::string_view(v).size() >= k_min_named_length)
        values.emplace_back(v);
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = entry.substr(0, eq), value = entry.substr(eq + 1);
    if (value.size() < k_min_suffix_length) continue;
    for (auto suffix : k_secret_suffixes)
      if (ends_with(name, suffix)) {
        values.emplace_back(value);
        break;
      }
  }
  // Longest first, so that a key which contains another key is replaced whole.
  std::sort(values.begin(), values.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

} // namespace

std::string redact(std::string_view text) {
  std::string out(text);
  for (const auto& secret : secret_values()) {
    for (auto pos = out.find(secret); pos != std::string::npos; pos = out.find(secret, pos + k_redacted.size()))
      out.replace(pos, secret.size(), k_redacted);
  }
  return out;
}

} // namespace optimas::llm
