#include "evaluate/validate.hpp"

#include "util/error.hpp"
#include "util/hash.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

namespace optimas::evaluate {

namespace {

std::optional<double> as_number(const std::string& token) {
  if (token.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(token.c_str(), &end);
  if (end != token.c_str() + token.size()) return std::nullopt;
  return v;
}

std::int64_t ordered_bits(double x) {
  std::int64_t i;
  std::memcpy(&i, &x, sizeof i);
  return i < 0 ? std::numeric_limits<std::int64_t>::min() - i : i;
}

bool within(double a, double b, const Tolerance& t) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  if (std::isinf(a) || std::isinf(b)) return false; // unequal and one infinite: no tolerance covers it
  switch (t.mode) {
  case Tolerance::Mode::exact:
    return false;
  case Tolerance::Mode::absolute:
    return std::abs(a - b) <= t.value;
  case Tolerance::Mode::relative:
    return std::abs(a - b) <= t.value * std::max(std::abs(a), std::abs(b));
  case Tolerance::Mode::ulp: {
    // In integers: as doubles, bit patterns above 2^53 would round to multiples of many ULP.
    std::int64_t x = ordered_bits(a), y = ordered_bits(b);
    std::uint64_t d = x > y ? static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(y)
                            : static_cast<std::uint64_t>(y) - static_cast<std::uint64_t>(x);
    return static_cast<double>(d) <= t.value;
  }
  }
  return false;
}

OutputComparison compare_bytes(const std::string& expected, const std::string& actual) {
  std::ifstream a(expected, std::ios::binary), b(actual, std::ios::binary);
  if (!a) throw Error(expected + ": cannot read the baseline's output");
  if (!b) return {false, "the variant wrote no output"};
  std::uint64_t offset = 0, line = 1;
  char ba[65536], bb[65536];
  while (true) {
    a.read(ba, sizeof ba);
    b.read(bb, sizeof bb);
    auto na = a.gcount(), nb = b.gcount();
    auto n = std::min(na, nb);
    for (std::streamsize i = 0; i < n; ++i) {
      if (ba[i] != bb[i])
        return {false,
                fmt::format("outputs differ at byte {} (line {})", offset + static_cast<std::uint64_t>(i), line)};
      if (ba[i] == '\n') ++line;
    }
    offset += static_cast<std::uint64_t>(n);
    if (na != nb) return {false, fmt::format("outputs differ in length: the shorter one ends at byte {}", offset)};
    if (na == 0) return {true, ""};
  }
}

} // namespace

Tolerance tolerance_from(const config::ValidateSettings& s) {
  Tolerance t;
  t.value = s.tolerance_value;
  if (s.tolerance == "abs")
    t.mode = Tolerance::Mode::absolute;
  else if (s.tolerance == "rel")
    t.mode = Tolerance::Mode::relative;
  else if (s.tolerance == "ulp")
    t.mode = Tolerance::Mode::ulp;
  else if (s.tolerance != "exact")
    throw UsageError(fmt::format("unknown tolerance \"{}\"", s.tolerance));
  return t;
}

std::string describe(const Tolerance& t) {
  switch (t.mode) {
  case Tolerance::Mode::exact:
    return "byte for byte";
  case Tolerance::Mode::absolute:
    return fmt::format("absolute {:g}", t.value);
  case Tolerance::Mode::relative:
    return fmt::format("relative {:g}", t.value);
  case Tolerance::Mode::ulp:
    return fmt::format("{:g} ULP", t.value);
  }
  return "";
}

OutputComparison compare_outputs(const std::string& expected, const std::string& actual, const Tolerance& t) {
  if (t.mode == Tolerance::Mode::exact) return compare_bytes(expected, actual);
  std::ifstream a(expected), b(actual);
  if (!a) throw Error(expected + ": cannot read the baseline's output");
  if (!b) return {false, "the variant wrote no output"};
  std::string ta, tb;
  for (std::size_t index = 0;; ++index) {
    bool ga = static_cast<bool>(a >> ta), gb = static_cast<bool>(b >> tb);
    if (!ga && !gb) return {true, ""};
    if (ga != gb) return {false, fmt::format("outputs differ in length: one ends after {} values", index)};
    if (ta == tb) continue;
    auto x = as_number(ta), y = as_number(tb);
    if (!x || !y) return {false, fmt::format("value {} differs: \"{}\" vs \"{}\"", index + 1, ta, tb)};
    if (!within(*x, *y, t))
      return {false, fmt::format("value {} differs beyond {}: {} vs {}", index + 1, describe(t), ta, tb)};
  }
}

OutputComparison compare_output_sets(const std::vector<std::string>& expected, const std::vector<std::string>& actual,
                                     const std::vector<std::string>& names, const Tolerance& tolerance) {
  if (expected.size() != actual.size())
    return {false, fmt::format("{} output(s) instead of {}", actual.size(), expected.size())};
  for (std::size_t k = 0; k < expected.size(); ++k) {
    auto cmp = compare_outputs(expected[k], actual[k], tolerance);
    if (!cmp.equal) {
      if (expected.size() > 1 && k < names.size()) cmp.detail = names[k] + ": " + cmp.detail;
      return cmp;
    }
  }
  return {true, ""};
}

std::string derived_seed(const std::string& salt) {
  std::string h = util::sha256_hex(salt);
  return std::to_string(std::stoul(h.substr(0, 7), nullptr, 16) + 1000);
}

config::InputConfig with_fresh_seed(const config::AppConfig& app, const config::InputConfig& config,
                                    const std::string& salt) {
  config::InputConfig out = config;
  if (!app.seed_param.empty()) out.params[app.seed_param] = derived_seed(salt);
  return out;
}

std::vector<Check> validation_checks(const config::AppConfig& app, const std::string& salt) {
  std::vector<const config::InputConfig*> selected;
  if (app.validate.configs.empty())
    for (const auto& c : app.configs) selected.push_back(&c);
  else
    for (const auto& n : app.validate.configs) selected.push_back(app.find(n));
  std::vector<Check> checks;
  for (const auto* c : selected) checks.push_back({c->name, c->name, c->held_out, *c});
  if (app.seed_param.empty()) return checks;
  for (int k = 0; k < app.validate.fresh_seeds; ++k) {
    for (const auto* c : selected) {
      // Seeds derived from the run and variant: new to the backend, the same on a resume.
      std::string seed = derived_seed(fmt::format("{}/{}/{}", salt, c->name, k));
      Check check{c->name, fmt::format("{}+seed {}", c->name, seed), c->held_out, *c};
      check.input.params[app.seed_param] = seed;
      checks.push_back(std::move(check));
    }
  }
  return checks;
}

} // namespace optimas::evaluate
