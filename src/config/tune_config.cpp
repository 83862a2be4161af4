#include "config/tune_config.hpp"

#include "config/yaml_reader.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <regex>
#include <set>

namespace optimas::config {

namespace {

constexpr const char* k_tune_keys[] = {"search", "budget", "allow_fp_changes", "macros", "flags", "constraints"};
constexpr const char* k_range_keys[] = {"values", "min", "max", "step", "pow2"};

// Flags that change floating-point results: refused unless tune.allow_fp_changes.
const std::regex k_fp_flag(R"((--?use_fast_math|--?ftz=true|--?prec-div=false|--?prec-sqrt=false|--?fmad=(true|false))"
                           R"(|-ffast-math|-Ofast|-funsafe-math-optimizations))");

class TuneReader : public YamlReader {
public:
  using YamlReader::YamlReader;

  int line(const YAML::Node& n) const { return n.IsDefined() ? n.Mark().line + 1 : 0; }

  long long integer(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar()) fail(n, fmt::format("{} must be a whole number", what));
    long long v = 0;
    const std::string& text = n.Scalar();
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
      fail(n, fmt::format("{} must be a whole number, not \"{}\"", what, n.Scalar()));
    return v;
  }

  // A row of the option table (tune.search, tune.budget, tune.allow_fp_changes), checked by it.
  nlohmann::json setting(const YAML::Node& n, const std::string& yml) const {
    const Option* row = option_for_yml(yml);
    if (!n.IsScalar()) fail(n, fmt::format("\"{}\" must be a single value", yml));
    nlohmann::json v;
    if (row->kind == Kind::integer)
      v = integer(n, yml);
    else if (row->kind == Kind::flag) {
      bool b = false;
      if (!YAML::convert<bool>::decode(n, b))
        fail(n, fmt::format("\"{}\" must be true or false, not \"{}\"", yml, n.Scalar()));
      v = b;
    } else
      v = n.Scalar();
    if (std::string why = check(row->name, v); !why.empty()) fail(n, why);
    return v;
  }

  // A macro's domain: a list of whole numbers, or {min, max, step} or {min, max, pow2: true}.
  std::vector<std::string> macro_values(const YAML::Node& n, const std::string& name) const {
    std::vector<long long> values;
    const std::string what = "tune.macros." + name;
    if (n.IsSequence()) {
      for (const auto& x : n) values.push_back(integer(x, what + " values"));
    } else if (n.IsMap()) {
      check_keys(n, k_range_keys, what);
      if (n["values"]) {
        if (n["min"] || n["max"] || n["step"] || n["pow2"]) fail(n, what + ": values or min/max, not both");
        return macro_values(n["values"], name);
      }
      if (!n["min"] || !n["max"]) fail(n, what + " needs values: [...] or min and max");
      long long lo = integer(n["min"], what + ".min"), hi = integer(n["max"], what + ".max");
      if (lo > hi) fail(n["max"], fmt::format("{}: max ({}) is below min ({})", what, hi, lo));
      bool pow2 = false;
      if (n["pow2"] && !YAML::convert<bool>::decode(n["pow2"], pow2))
        fail(n["pow2"], what + ".pow2 must be true or false");
      if (pow2 && n["step"]) fail(n["step"], what + ": step or pow2, not both");
      if (pow2) {
        if (lo < 1) fail(n["min"], what + ": pow2 ranges start at 1 or more");
        // Doubling stops before it could pass 2^62: no value here overflows.
        long long p = 1;
        while (p < lo && p <= (1LL << 61)) p *= 2;
        for (; p >= lo && p <= hi; p *= 2) {
          values.push_back(p);
          if (p > (1LL << 61)) break;
        }
        if (values.empty()) fail(n, fmt::format("{}: no power of two lies between {} and {}", what, lo, hi));
      } else {
        long long step = n["step"] ? integer(n["step"], what + ".step") : 1;
        if (step < 1) fail(n["step"], what + ".step must be at least 1");
        // In 128 bits: min and max may be any 64-bit numbers.
        __extension__ using wide = __int128;
        wide count = (static_cast<wide>(hi) - lo) / step + 1;
        if (count > static_cast<wide>(k_max_values))
          fail(n, fmt::format("{} has more than {} values", what, k_max_values));
        for (wide k = 0; k < count; ++k) values.push_back(static_cast<long long>(lo + k * step));
      }
    } else {
      fail(n, what + " must be a list of values or {min, max[, step | pow2: true]}");
    }
    if (values.empty()) fail(n, what + " has no values");
    if (values.size() > k_max_values) fail(n, fmt::format("{} has more than {} values", what, k_max_values));
    std::vector<std::string> out;
    std::set<long long> seen;
    for (long long v : values) {
      if (!seen.insert(v).second) fail(n, fmt::format("{} lists {} twice", what, v));
      out.push_back(std::to_string(v));
    }
    return out;
  }

  std::vector<std::string> flag_values(const YAML::Node& n, const std::string& name, bool allow_fp) const {
    const std::string what = "tune.flags." + name;
    if (!n.IsSequence() || n.size() == 0)
      fail(n, what + " must be a list of choices, such as [\"\", \"-Xptxas -dlcm=ca\"]");
    std::vector<std::string> out;
    for (const auto& x : n) {
      if (!x.IsScalar()) fail(x, what + ": each choice is a string of flags (\"\" for none)");
      std::string text = std::string(util::trim(x.Scalar()));
      if (std::string why = tune_flag_problem(text, allow_fp); !why.empty()) fail(x, what + ": " + why);
      for (const auto& o : out)
        if (o == text) fail(x, fmt::format("{} lists \"{}\" twice", what, text));
      out.push_back(text);
    }
    return out;
  }
};

} // namespace

std::uint64_t TuneSettings::grid_size() const {
  std::uint64_t n = 1;
  for (const auto& p : params) {
    if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(p.values.size()), &n)) return UINT64_MAX;
  }
  return params.empty() ? 0 : n;
}

std::string tune_flag_problem(const std::string& flags, bool allow_fp_changes) {
  static const std::regex k_regs(R"(--?maxrregcount=([0-9]+))");
  static const std::regex k_dlcm(R"(-dlcm=(ca|cg))");
  auto words = util::split(flags, ' ');
  std::vector<std::string> w;
  for (auto x : words)
    if (!util::trim(x).empty()) w.emplace_back(util::trim(x));
  for (std::size_t i = 0; i < w.size(); ++i) {
    std::smatch m;
    if (std::regex_match(w[i], m, k_regs)) {
      long long n = std::stoll(m[1].str().substr(0, 6));
      if (n < 16 || n > 255) return fmt::format("{} is outside 16..255 registers", w[i]);
      continue;
    }
    if (w[i] == "--extra-device-vectorization" || w[i] == "-extra-device-vectorization") continue;
    if (w[i] == "-Xptxas" || w[i] == "--ptxas-options") {
      if (i + 1 < w.size() && std::regex_match(w[i + 1], k_dlcm)) {
        ++i;
        continue;
      }
      return fmt::format("{} takes -dlcm=ca or -dlcm=cg here, got \"{}\"", w[i], i + 1 < w.size() ? w[i + 1] : "");
    }
    if (std::regex_match(w[i], k_fp_flag)) {
      if (allow_fp_changes) continue;
      return fmt::format("{} changes floating-point results, so no variant built with it could be bit-identical to "
                         "the baseline; set tune.allow_fp_changes: true to tune it anyway (and validate.tolerance to "
                         "what you accept)",
                         w[i]);
    }
    return fmt::format(
        "\"{}\" is not a flag the tuner passes (it passes only flags that keep results bit-identical: "
        "-maxrregcount=N, -Xptxas -dlcm=ca|cg, --extra-device-vectorization; tune anything else as a macro)",
        w[i]);
  }
  return {};
}

// One function for the whole block: its keys, each read and checked in turn, in the order of docs/tuning.md.
TuneSettings read_tune(const YAML::Node& node, const std::string& path) {
  TuneReader rd(path);
  rd.check_keys(node, k_tune_keys, "tune");
  TuneSettings t;
  t.line = rd.line(node);
  if (node["search"]) t.search = rd.setting(node["search"], "tune.search").get<std::string>();
  if (node["budget"]) t.budget = rd.setting(node["budget"], "tune.budget").get<int>();
  if (node["allow_fp_changes"])
    t.allow_fp_changes = rd.setting(node["allow_fp_changes"], "tune.allow_fp_changes").get<bool>();
  static const std::regex k_macro_name(R"([A-Za-z_][A-Za-z0-9_]*)");
  std::set<std::string> names;
  auto declare = [&](const YAML::Node& key, const char* section) {
    std::string name = key.Scalar();
    if (!names.insert(name).second) rd.fail(key, fmt::format("\"{}\" is declared twice in tune", name));
    if (!std::regex_match(name, k_macro_name))
      rd.fail(key, fmt::format("tune.{} name \"{}\" must be a C identifier", section, name));
    return name;
  };
  if (YAML::Node m = node["macros"]) {
    if (!m.IsMap()) rd.fail(m, "tune.macros must be a mapping of macro names to their values");
    for (const auto& kv : m) {
      config::TuneParam p;
      p.name = declare(kv.first, "macros");
      p.kind = TuneParam::Kind::macro;
      p.values = rd.macro_values(kv.second, p.name);
      p.line = rd.line(kv.first);
      t.params.push_back(std::move(p));
    }
  }
  std::set<std::string> macros = names;
  if (YAML::Node f = node["flags"]) {
    if (!f.IsMap()) rd.fail(f, "tune.flags must be a mapping of names to lists of flag choices");
    for (const auto& kv : f) {
      config::TuneParam p;
      p.name = declare(kv.first, "flags");
      p.kind = TuneParam::Kind::flag;
      p.values = rd.flag_values(kv.second, p.name, t.allow_fp_changes);
      p.line = rd.line(kv.first);
      t.params.push_back(std::move(p));
    }
  }
  if (t.params.empty()) rd.fail(node, "tune needs macros or flags to tune");
  if (t.grid_size() > k_max_grid)
    rd.fail(node,
            fmt::format("the tuning space has {} points, more than {}: narrow the domains", t.grid_size(), k_max_grid));
  if (YAML::Node c = node["constraints"]) {
    if (!c.IsSequence()) rd.fail(c, "tune.constraints must be a list of expressions, such as [\"BX * BY <= 1024\"]");
    for (const auto& x : c) {
      if (!x.IsScalar()) rd.fail(x, "a constraint is an expression such as \"BX * BY <= 1024\"");
      TuneConstraint tc;
      tc.line = rd.line(x);
      try {
        tc.expr = util::Expr::parse(x.Scalar());
      } catch (const util::ExprError& e) {
        rd.fail(x, fmt::format("constraint \"{}\", column {}: {}", x.Scalar(), e.column(), e.what()));
      }
      for (const auto& n : tc.expr.names())
        if (!macros.count(n))
          rd.fail(x, fmt::format("constraint \"{}\" names \"{}\", which is not a macro of tune.macros{}", x.Scalar(), n,
                                 names.count(n) ? " (flags have no numeric value)" : ""));
      t.constraints.push_back(std::move(tc));
    }
  }
  return t;
}

} // namespace optimas::config
