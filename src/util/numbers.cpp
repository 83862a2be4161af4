#include "util/numbers.hpp"

#include "util/strings.hpp"

#include <charconv>
#include <cmath>
#include <limits>

namespace optimas::util {

std::optional<double> parse_number(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  char buf[64];
  std::size_t n = 0;
  for (char c : text) {
    if (c == ',') continue;
    if (n + 1 >= sizeof buf) return std::nullopt;
    buf[n++] = c;
  }
  if (n == 0) return std::nullopt;
  const char* first = buf;
  const char* last = buf + n;
  if (*first == '+') ++first;
  double value = 0;
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves the value unset on overflow/underflow: decide by the exponent sign.
    std::string_view s(first, static_cast<std::size_t>(last - first));
    bool tiny = contains(s, "e-") || contains(s, "E-");
    bool negative = s.front() == '-';
    value = tiny ? 0.0 : std::numeric_limits<double>::infinity();
    if (negative) value = -value;
    return value;
  }
  if (ec != std::errc() || ptr != last) return std::nullopt;
  return value;
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
  constexpr double k_exact = 9007199254740992.0; // 2^53
  auto v = parse_number(text);
  if (!v || !(std::fabs(*v) < k_exact) || *v != std::floor(*v)) return std::nullopt;
  return static_cast<std::int64_t>(*v);
}

std::optional<std::array<std::int64_t, 3>> parse_dim3(std::string_view text) {
  text = trim(text);
  std::array<std::int64_t, 3> out{1, 1, 1};
  if (!text.empty() && text.front() == '(') {
    if (text.back() != ')') return std::nullopt;
    text = text.substr(1, text.size() - 2);
    auto parts = split(text, ',');
    if (parts.empty() || parts.size() > 3) return std::nullopt;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      auto v = parse_integer(parts[i]);
      if (!v || *v < 0) return std::nullopt;
      out[i] = *v;
    }
    return out;
  }
  auto v = parse_integer(text);
  if (!v || *v < 0) return std::nullopt;
  out[0] = *v;
  return out;
}

namespace {

struct Prefix {
  std::string_view name;
  double scale;
};

// ncu uses SI (decimal) prefixes for bytes too: "Kbyte" is 1000 bytes.
constexpr Prefix k_prefixes[] = {{"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"K", 1e3}, {"k", 1e3}, {"", 1.0}};

constexpr struct {
  std::string_view unit;
  double to_ns;
} k_times[] = {{"nsecond", 1.0}, {"ns", 1.0}, {"usecond", 1e3}, {"us", 1e3},
               {"msecond", 1e6}, {"ms", 1e6}, {"second", 1e9},  {"s", 1e9}};

// Base units that take an SI prefix in ncu output.
constexpr std::string_view k_prefixable[] = {"byte",   "hz",      "inst",   "cycle", "warp",
                                             "sector", "request", "thread", "block"};

} // namespace

BaseValue to_base_unit(double value, std::string_view unit) {
  for (const auto& t : k_times) {
    if (unit == t.unit) return {value * t.to_ns, "ns"};
  }
  // Split "Gbyte/second" into numerator and denominator.
  std::string_view num = unit, den;
  if (auto slash = unit.find('/'); slash != std::string_view::npos) {
    num = unit.substr(0, slash);
    den = unit.substr(slash + 1);
  }
  double scale = 1.0;
  std::string base_num(num);
  for (const auto& p : k_prefixes) {
    if (num.size() <= p.name.size() || num.substr(0, p.name.size()) != p.name) continue;
    std::string_view rest = num.substr(p.name.size());
    std::string rest_lower = to_lower(rest);
    bool known = false;
    for (auto b : k_prefixable) known = known || rest_lower == b;
    if (!known) continue;
    scale = p.scale;
    base_num = rest_lower;
    break;
  }
  if (den.empty()) return {value * scale, base_num};
  for (const auto& t : k_times) {
    if (den == t.unit) {
      // x per (t ns) = x / t per ns = x * 1e9 / t per second.
      return {value * scale * 1e9 / (t.to_ns), base_num + "/second"};
    }
  }
  return {value * scale, base_num + "/" + std::string(den)};
}

} // namespace optimas::util
