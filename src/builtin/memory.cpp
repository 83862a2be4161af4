// The builtin optimizer's memory rules that need no range analysis: pad_shared (padding a 2-D
// shared array walked by column) and read_only (__ldg for never-written data where __restrict__
// was withheld), and the helpers all memory rules share. local_to_registers is in
// local.cpp.
//
// Why tokens and not a syntax tree: these rules need the shape of a declaration, every use of one
// name, loop headers and a statement's extent, which cuda::lex gives exactly, and every doubt
// (a use we do not recognise, a launch argument we cannot follow) withholds the edit instead of
// guessing. Debian's clang 14 (libclang-14) was tried on our examples and cannot parse them:
// it knows CUDA up to 11.5 and no sm_90, its CUDA wrapper headers fail on CUDA 13's (the texture
// templates are gone), and with -nocudainc every CUDA builtin and C++ header the program
// includes must be stubbed by hand (its cuda_wrappers for <algorithm> break without them). A
// parse that fails on the user's program would leave the rules with nothing; tokens always work.
#include "builtin/access.hpp"
#include "builtin/rules.hpp"

#include "cuda/macros.hpp"
#include "cuda/source.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>
#include <set>

namespace optimas::builtin {

using nlohmann::json;
namespace fs = std::filesystem;

double access_figure(const json& k, const char* name) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  if (!k.is_object() || !k.contains("roofline") || !k["roofline"].is_object()) return nan;
  const json& r = k["roofline"];
  if (!r.contains("access") || !r["access"].is_object()) return nan;
  auto it = r["access"].find(name);
  return it != r["access"].end() && it->is_number() ? it->get<double>() : nan;
}

std::map<std::string, std::string> object_macros(const cuda::SourceFile& f) {
  std::map<std::string, std::string> out;
  for (auto& m : cuda::object_macros(f.text)) out[m.name] = std::move(m.text); // the last definition wins
  return out;
}

std::set<std::string> pure_macros(const cuda::SourceFile& f) {
  std::set<std::string> out;
  for (const auto& m : cuda::function_macros(f.text)) {
    auto t = cuda::lex(m.text);
    bool pure = !t.empty();
    for (std::size_t i = 0; pure && i < t.size(); ++i) {
      std::string_view w = t[i].text, next = i + 1 < t.size() ? t[i + 1].text : "";
      std::string_view prev = i > 0 ? t[i - 1].text : "";
      bool compare = prev == "=" || prev == "!" || prev == "<" || prev == ">";
      if (w == ";" || w == "{" || ((w == "+" || w == "-") && next == w) || (w == "=" && next != "=" && !compare) ||
          w == "#")
        pure = false;
      if (t[i].kind == cuda::TokenKind::identifier && next == "(" && !access::pure_call(w)) pure = false;
    }
    if (pure)
      out.insert(m.name);
    else
      out.erase(m.name); // the last definition wins
  }
  return out;
}

namespace {

// A recursive-descent evaluator of integer constant expressions over cuda::lex tokens.
class ConstantParser {
public:
  ConstantParser(std::string_view expr, const std::map<std::string, std::string>& macros, int depth)
      : m_text(expr), m_t(cuda::lex(m_text)), m_macros(macros), m_depth(depth) {}

  std::optional<long long> parse() {
    auto v = bit_or();
    if (!v || m_at != m_t.size()) return std::nullopt;
    return v;
  }

private:
  using Value = std::optional<long long>;
  bool at(std::string_view s, std::size_t ahead = 0) const {
    return m_at + ahead < m_t.size() && m_t[m_at + ahead].text == s;
  }
  static Value checked(bool overflow, long long v) { return overflow ? std::nullopt : Value(v); }

  Value bit_or() {
    Value a = bit_and();
    while (a && at("|") && !at("|", 1)) {
      ++m_at;
      Value b = bit_and();
      a = b ? Value(*a | *b) : std::nullopt;
    }
    return a;
  }
  Value bit_and() {
    Value a = shift();
    while (a && at("&") && !at("&", 1)) {
      ++m_at;
      Value b = shift();
      a = b ? Value(*a & *b) : std::nullopt;
    }
    return a;
  }
  Value shift() {
    Value a = additive();
    while (a && ((at("<") && at("<", 1)) || (at(">") && at(">", 1)))) {
      bool left = at("<");
      m_at += 2;
      Value b = additive();
      if (!b || *b < 0 || *b > 62) return std::nullopt;
      if (left && (*a < 0 || *a > (std::numeric_limits<long long>::max() >> *b))) return std::nullopt;
      a = left ? *a << *b : *a >> *b;
    }
    return a;
  }
  Value additive() {
    Value a = multiplicative();
    while (a && (at("+") || at("-"))) {
      bool plus = at("+");
      ++m_at;
      Value b = multiplicative();
      if (!b) return std::nullopt;
      long long r = 0;
      a = checked(plus ? __builtin_add_overflow(*a, *b, &r) : __builtin_sub_overflow(*a, *b, &r), r);
    }
    return a;
  }
  Value multiplicative() {
    Value a = unary();
    while (a && (at("*") || at("/") || at("%"))) {
      std::string_view op = m_t[m_at++].text;
      Value b = unary();
      if (!b) return std::nullopt;
      long long r = 0;
      if (op == "*")
        a = checked(__builtin_mul_overflow(*a, *b, &r), r);
      else if (*b == 0 || (*a == std::numeric_limits<long long>::min() && *b == -1))
        return std::nullopt;
      else
        a = op == "/" ? *a / *b : *a % *b;
    }
    return a;
  }
  Value unary() {
    if (at("-") || at("+") || at("~")) {
      std::string_view op = m_t[m_at++].text;
      Value v = unary();
      if (!v || (op == "-" && *v == std::numeric_limits<long long>::min())) return std::nullopt;
      return op == "-" ? -*v : op == "~" ? ~*v : *v;
    }
    return primary();
  }
  Value primary() {
    if (m_at >= m_t.size()) return std::nullopt;
    const cuda::Token& tok = m_t[m_at];
    if (tok.text == "(") {
      ++m_at;
      Value v = bit_or();
      if (!v || !at(")")) return std::nullopt;
      ++m_at;
      return v;
    }
    ++m_at;
    if (tok.kind == cuda::TokenKind::number) {
      std::string s(tok.text);
      while (!s.empty() && (s.back() == 'u' || s.back() == 'U' || s.back() == 'l' || s.back() == 'L')) s.pop_back();
      if (s.empty() || s.find_first_of(".eEpP") != std::string::npos) return std::nullopt;
      errno = 0;
      char* end = nullptr;
      long long v = std::strtoll(s.c_str(), &end, 0);
      if (errno != 0 || *end != '\0') return std::nullopt;
      return v;
    }
    if (tok.kind == cuda::TokenKind::identifier && m_depth < 16) {
      auto it = m_macros.find(std::string(tok.text));
      if (it != m_macros.end()) return ConstantParser(it->second, m_macros, m_depth + 1).parse();
    }
    return std::nullopt;
  }

  std::string m_text; // owned: the tokens view into it
  std::vector<cuda::Token> m_t;
  const std::map<std::string, std::string>& m_macros;
  int m_depth = 0;
  std::size_t m_at = 0;
};

} // namespace

std::optional<long long> constant_value(std::string_view expr, const std::map<std::string, std::string>& macros) {
  return ConstantParser(expr, macros, 0).parse();
}

std::string line_text(std::string_view text, int line) {
  std::size_t b = 0;
  for (int n = 1; n < line && b != std::string_view::npos; ++n) {
    b = text.find('\n', b);
    if (b != std::string_view::npos) ++b;
  }
  if (b == std::string_view::npos || b > text.size()) return {};
  std::size_t e = text.find('\n', b);
  return std::string(text.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
}

const prompt::Edit* edit_on_line(const KernelEdits& ke, const std::string& file, int line) {
  for (const auto& e : ke.others)
    if (e.file == file && e.is_range() && e.line_start <= line && line <= e.line_end) return &e;
  return nullptr;
}

namespace {

// Bytes of a scalar type named by its words ("unsigned int"); 0 when unknown.
int scalar_bytes(const std::string& type) {
  static const std::map<std::string, int> k_sizes = {{"char", 1},          {"signed char", 1},
                                                     {"unsigned char", 1}, {"bool", 1},
                                                     {"int8_t", 1},        {"uint8_t", 1},
                                                     {"short", 2},         {"unsigned short", 2},
                                                     {"int16_t", 2},       {"uint16_t", 2},
                                                     {"int", 4},           {"unsigned", 4},
                                                     {"unsigned int", 4},  {"signed int", 4},
                                                     {"float", 4},         {"int32_t", 4},
                                                     {"uint32_t", 4},      {"double", 8},
                                                     {"long", 8},          {"unsigned long", 8},
                                                     {"long long", 8},     {"unsigned long long", 8},
                                                     {"int64_t", 8},       {"uint64_t", 8},
                                                     {"size_t", 8}};
  auto it = k_sizes.find(type);
  return it == k_sizes.end() ? 0 : it->second;
}

} // namespace

std::string bare_type(const std::vector<std::string>& words) {
  std::vector<std::string> kept;
  for (const auto& w : words)
    if (w != "const" && w != "volatile" && w != "static" && w != "__restrict__" && w != "*") kept.push_back(w);
  return util::join(kept, " ");
}

namespace {

struct SharedArray {
  std::string type, name;
  std::vector<std::pair<std::size_t, std::size_t>> dims; // token ranges [begin, end) of each extent
  std::size_t first = 0, last = 0;                       // tokens of the declaration (__shared__ .. ';')
  bool dynamic = false;                                  // extern __shared__ T a[];
  std::optional<long long> bytes;
};

std::vector<SharedArray> shared_arrays(const std::vector<cuda::Token>& t, std::string_view body,
                                       const std::map<std::string, std::string>& macros) {
  std::vector<SharedArray> out;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].text != "__shared__") continue;
    SharedArray a;
    a.first = i;
    a.dynamic = i > 0 && t[i - 1].text == "extern";
    std::vector<std::string> words;
    std::size_t j = i + 1;
    for (; j < t.size() && t[j].kind == cuda::TokenKind::identifier; ++j) words.push_back(std::string(t[j].text));
    if (words.size() < 2) continue; // not a plain declaration: sized as unknown below
    a.name = words.back();
    words.pop_back();
    a.type = bare_type(words);
    while (j < t.size() && t[j].text == "[") {
      std::size_t close = j + 1;
      int depth = 1;
      for (; close < t.size(); ++close) {
        if (t[close].text == "[") ++depth;
        if (t[close].text == "]" && --depth == 0) break;
      }
      a.dims.push_back({j + 1, close});
      j = close + 1;
    }
    bool alone = j < t.size() && t[j].text == ";"; // not `a[N], b[M];` nor an initialiser
    while (j < t.size() && t[j].text != ";") ++j;
    a.last = j;
    long long bytes = alone ? scalar_bytes(a.type) : 0;
    for (auto [b, e] : a.dims) {
      if (b >= e) {
        bytes = 0;
        break;
      }
      auto extent =
          constant_value(body.substr(t[b].offset, t[e - 1].offset + t[e - 1].text.size() - t[b].offset), macros);
      if (!extent || *extent <= 0 || __builtin_mul_overflow(bytes, *extent, &bytes)) bytes = 0;
    }
    if (bytes > 0 && !a.dynamic) a.bytes = bytes;
    out.push_back(std::move(a));
    i = j;
  }
  return out;
}

bool mentions_thread_x(const std::vector<cuda::Token>& t, std::size_t b, std::size_t e,
                       const std::set<std::string>& derived) {
  for (std::size_t x = b; x < e && x < t.size(); ++x) {
    if (t[x].text == "threadIdx" && x + 2 < t.size() && t[x + 1].text == "." && t[x + 2].text == "x") return true;
    if (t[x].kind == cuda::TokenKind::identifier && derived.count(std::string(t[x].text))) return true;
  }
  return false;
}

// Identifiers whose value depends on threadIdx.x, directly or through other such identifiers
// (`int tx = threadIdx.x;`, `x = blockIdx.x * T + threadIdx.x`, `for (int c = threadIdx.x; ...)`).
std::set<std::string> depends_on_thread_x(const std::vector<cuda::Token>& t) {
  std::set<std::string> out;
  for (bool grew = true; grew;) {
    grew = false;
    for (std::size_t i = 0; i + 3 < t.size(); ++i) {
      if (t[i].kind != cuda::TokenKind::identifier || out.count(std::string(t[i].text))) continue;
      std::size_t rhs = i + 1;
      if ((t[rhs].text == "+" || t[rhs].text == "-" || t[rhs].text == "*") && t[rhs + 1].text == "=") ++rhs;
      if (t[rhs].text != "=" || t[rhs + 1].text == "=") continue;
      std::size_t e = rhs + 1;
      for (int depth = 0; e < t.size(); ++e) {
        if (t[e].text == "(" || t[e].text == "[") ++depth;
        if (t[e].text == ")" || t[e].text == "]") {
          if (depth == 0) break;
          --depth;
        }
        if (depth == 0 && (t[e].text == ";" || t[e].text == ",")) break;
      }
      if (mentions_thread_x(t, rhs + 1, e, out)) {
        out.insert(std::string(t[i].text));
        grew = true;
      }
    }
  }
  return out;
}

} // namespace

std::size_t matching_token(const std::vector<cuda::Token>& t, std::size_t open) {
  std::string_view o = t[open].text, c = o == "[" ? "]" : o == "(" ? ")" : "}";
  int depth = 0;
  for (std::size_t x = open; x < t.size(); ++x) {
    if (t[x].text == o) ++depth;
    if (t[x].text == c && --depth == 0) return x;
  }
  return t.size();
}

namespace {

constexpr long long k_static_shared_limit = 48 * 1024; // bytes of static __shared__ per block
constexpr double k_min_conflict_fraction = 0.2;        // of shared wavefronts

// What the rule knows of the kernel before it looks at any one of its shared arrays.
struct PadContext {
  std::string file;      // the source's file name, as stall lines name it
  std::string_view body; // the kernel's body, which `t` tokenises
  std::vector<cuda::Token> t;
  int base_line = 0; // the line before the body's first
  std::map<std::string, std::string> macros;
  std::set<std::string> derived;                              // identifiers that depend on threadIdx.x
  double fraction = std::numeric_limits<double>::quiet_NaN(); // of shared traffic that is conflicts, if measured
  std::string measured;                                       // that measurement in words
  std::string rf;                                             // the roofline item to cite
  long long static_bytes = 0;                                 // of the arrays that have a size
  bool sized = true, dynamic = false;                         // every static array sized; any dynamic one
};

// How much of the shared traffic is conflicts: ncu's counters, else SourceCounters' excess.
void measure_conflicts(const json& k, PadContext& cx) {
  double conflicts = access_figure(k, "shared_bank_conflicts"), wavefronts = access_figure(k, "shared_wavefronts");
  if (std::isfinite(conflicts) && std::isfinite(wavefronts) && wavefronts > 0) {
    cx.fraction = conflicts / wavefronts;
    cx.measured = fmt::format("{:.0f} bank conflicts over {:.0f} shared wavefronts ({:.0f}%)", conflicts, wavefronts,
                              100 * cx.fraction);
  } else {
    double excess = access_figure(k, "shared_excessive_wavefronts"),
           ideal = access_figure(k, "shared_ideal_wavefronts");
    if (std::isfinite(excess) && std::isfinite(ideal) && excess + ideal > 0) {
      cx.fraction = excess / (excess + ideal);
      cx.measured = fmt::format("{:.0f} of its {:.0f} shared wavefronts are beyond the ideal ({:.0f}%: bank conflicts)",
                                excess, excess + ideal, 100 * cx.fraction);
    }
  }
}

// A two-dimensional array whose column walks meet in the same banks.
struct Grid {
  int elem = 0; // bytes per element
  long long rows = 0, cols = 0, ways = 0;
  std::string col_text; // the column extent as written
};

// The array as a grid of constant extents whose column walks share banks; nothing when it is not one.
std::optional<Grid> bank_grid(const PadContext& cx, const SharedArray& a) {
  const auto& t = cx.t;
  Grid g;
  g.elem = scalar_bytes(a.type);
  if (a.dims.size() != 2 || a.dynamic || g.elem == 0 || a.dims[0].first >= a.dims[0].second ||
      a.dims[1].first >= a.dims[1].second)
    return std::nullopt;
  auto extent = [&](std::pair<std::size_t, std::size_t> d) {
    std::size_t b = t[d.first].offset, e = t[d.second - 1].offset + t[d.second - 1].text.size();
    return std::string(cx.body.substr(b, e - b));
  };
  g.col_text = extent(a.dims[1]);
  auto cols_value = constant_value(g.col_text, cx.macros), rows_value = constant_value(extent(a.dims[0]), cx.macros);
  if (!cols_value || !rows_value || *cols_value <= 0 || *rows_value <= 0) return std::nullopt;
  g.cols = *cols_value;
  g.rows = *rows_value;
  // Threads walking a column are `cols` elements apart: with 4-byte words (a 64-bit access is
  // served half a warp at a time, 16 threads x 2 banks) they share gcd(cols, 32 or 16) banks.
  g.ways = g.elem == 4 ? std::gcd(g.cols, 32LL) : g.elem == 8 ? std::gcd(g.cols, 16LL) : 1;
  if (g.ways < 2) return std::nullopt;
  return g;
}

// The array's uses: the lines that name it, the first that walks a column, or why padding could
// be reached.
struct Uses {
  std::string unsafe;
  std::set<int> lines;
  int walk_line = 0;
};

// Every use must be a[i][j]; a column walk varies threadIdx.x in the first subscript only.
Uses array_uses(const PadContext& cx, const SharedArray& a) {
  const auto& t = cx.t;
  Uses out;
  for (std::size_t u = 0; u < t.size(); ++u) {
    if (t[u].text != a.name || (u >= a.first && u <= a.last)) continue;
    int line = cx.base_line + t[u].line;
    bool twice = u + 1 < t.size() && t[u + 1].text == "[";
    std::size_t m1 = twice ? matching_token(t, u + 1) : t.size();
    twice = twice && m1 + 1 < t.size() && t[m1 + 1].text == "[";
    std::size_t m2 = twice ? matching_token(t, m1 + 1) : t.size();
    bool plain = twice && m2 < t.size() && !(m2 + 1 < t.size() && t[m2 + 1].text == "[") &&
                 !(u > 0 && (t[u - 1].text == "&" || t[u - 1].text == "sizeof" || t[u - 1].text == "*"));
    if (!plain) {
      out.unsafe = fmt::format("line {} uses `{}` other than as {}[i][j] (a pointer, a flat index, an address, a cast "
                               "or a call), which could reach the padding",
                               line, a.name, a.name);
      break;
    }
    out.lines.insert(line);
    if (!out.walk_line && mentions_thread_x(t, u + 2, m1, cx.derived) && !mentions_thread_x(t, m1 + 2, m2, cx.derived))
      out.walk_line = line;
    u = m2;
  }
  return out;
}

// Why padding the array could change a result or fail to build, given the rest of the kernel;
// empty when it cannot.
std::string padding_risk(const PadContext& cx, const KernelEdits& ke, const SharedArray& a, long long padded) {
  int decl_line = cx.base_line + cx.t[a.first].line;
  if (cx.dynamic)
    return "the kernel also uses dynamic shared memory, whose size is set at launch, so the padded total cannot "
           "be checked against the limit";
  if (!cx.sized)
    return "a shared array of the kernel (this one, or one declared with it) has a size this rule cannot compute";
  if (padded > k_static_shared_limit)
    return fmt::format("the padded arrays would take {} bytes of static shared memory, over the {} allowed", padded,
                       k_static_shared_limit);
  if (cx.base_line + cx.t[a.dims[1].second - 1].line != decl_line) return "the declaration spans several lines";
  if (const auto* other = edit_on_line(ke, cx.file, decl_line))
    return fmt::format("line {} is already edited by rule {}", decl_line, other->rule);
  return "";
}

// The stalls on the array's lines that shared-memory conflicts cause: their ids, and the first's kind.
struct Cited {
  std::vector<std::string> evidence;
  std::string stall;
};

Cited conflict_stalls(const json& k, const std::string& file, const std::set<int>& lines) {
  Cited out;
  for (const auto& l : stall_lines(k))
    if (l.file == file && lines.count(l.line) &&
        (l.stall == "stall_short_scoreboard" || l.stall == "stall_mio_throttle")) {
      out.evidence.push_back(l.id);
      if (out.stall.empty()) out.stall = l.stall;
    }
  return out;
}

// The declaration's line with the column extent one larger, and why that keeps every result.
prompt::Edit pad_edit(const KernelInput& in, const PadContext& cx, const SharedArray& a, const Grid& g,
                      const Uses& uses, const Cited& cited) {
  const cuda::SourceFile& f = in.file;
  const cuda::Function& fn = in.fn;
  const auto& t = cx.t;
  auto [cb, ce] = a.dims[1];
  int decl_line = cx.base_line + t[a.first].line;
  long long padded = cx.static_bytes + g.rows * g.elem;
  std::string src = line_text(f.text, decl_line);
  std::size_t line_begin = f.text.rfind('\n', fn.body_begin + t[a.first].offset);
  line_begin = line_begin == std::string::npos ? 0 : line_begin + 1;
  std::size_t at = fn.body_begin + t[cb].offset - line_begin;
  std::string padded_extent = ce - cb == 1 ? g.col_text + " + 1" : "(" + g.col_text + ") + 1";
  prompt::Edit e;
  e.rule = "pad_shared";
  e.file = cx.file;
  e.kernel = fn.name;
  e.line_start = decl_line;
  e.line_end = decl_line;
  e.new_text = src.substr(0, at) + padded_extent + src.substr(at + g.col_text.size());
  e.evidence = cited.evidence;
  e.rationale = fmt::format(
      "{}: {}{}; `{}` is {}x{} {}s, so threads walking one of its columns (line {}) are {} words apart and "
      "meet in the same bank {}-way. Padding each row by one element, [{}], puts consecutive rows one {} apart, "
      "so those threads reach different banks. Bit-identical: every use names its element as {}[i][j], the array "
      "is never used through a pointer, a flat index, a cast or a call, and the padding column is never read or "
      "written, so each element holds the same value and every thread performs the same operations in the same "
      "order; only addresses change. Static shared memory grows from {} to {} bytes (limit {}).",
      fn.name, cx.measured.empty() ? "shared-memory stalls on the lines that use the array" : cx.measured,
      cited.stall.empty() ? "" : fmt::format(" and its lines show {}", cited.stall), a.name, g.rows, g.cols, a.type,
      uses.walk_line, g.cols * g.elem / 4, g.ways, padded_extent,
      g.elem == 8 ? "8-byte element (2 banks; a 64-bit access is served 16 threads at a time)" : "bank", a.name,
      cx.static_bytes, padded, k_static_shared_limit);
  e.expected_effect.push_back({"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "decrease"});
  if (!cited.stall.empty()) e.expected_effect.push_back({cited.stall, "decrease"});
  return e;
}

// One array: padded when the evidence points at it and nothing can reach the padding, withheld
// with the reason when something could, silent when padding would not help.
void pad_array(const KernelInput& in, const PadContext& cx, const SharedArray& a, KernelEdits& ke) {
  auto g = bank_grid(cx, a);
  if (!g) return;
  Uses uses = array_uses(cx, a);
  if (!uses.walk_line && uses.unsafe.empty()) return; // padding would not change any access's banks
  Cited cited = conflict_stalls(in.kernel, cx.file, uses.lines);
  bool measured_high = std::isfinite(cx.fraction);
  if (!measured_high && cited.evidence.empty()) return; // no evidence of conflicts
  if (measured_high && !cx.rf.empty()) cited.evidence.insert(cited.evidence.begin(), cx.rf);
  if (cited.evidence.empty())
    return; // measured, but no roofline item to cite: the guardrails refuse an edit citing none
  long long padded = cx.static_bytes + g->rows * g->elem;
  std::string unsafe = uses.unsafe.empty() ? padding_risk(cx, ke, a, padded) : uses.unsafe;
  if (!unsafe.empty()) {
    ke.withheld.push_back({fmt::format("{}: pad __shared__ {} {}[{}][{}] to [{}][{} + 1]", in.fn.name, a.type, a.name,
                                       g->rows, g->col_text, g->rows, g->col_text),
                           unsafe, cited.evidence});
    return;
  }
  ke.others.push_back(pad_edit(in, cx, a, *g, uses, cited));
}

} // namespace

void rule_pad_shared(const KernelInput& in, KernelEdits& ke) {
  const json& k = in.kernel;
  PadContext cx;
  cx.file = in.file_name;
  cx.body = in.body;
  cx.t = in.tokens;
  cx.base_line = in.base_line;
  cx.macros = in.macros;
  auto arrays = shared_arrays(cx.t, cx.body, cx.macros);
  if (arrays.empty()) return;
  measure_conflicts(k, cx);
  if (std::isfinite(cx.fraction) && cx.fraction < k_min_conflict_fraction) return; // measured: few conflicts
  cx.rf = k.contains("roofline") && k["roofline"].is_object() ? k["roofline"].value("id", "") : "";
  cx.derived = depends_on_thread_x(cx.t);
  for (const auto& a : arrays) {
    cx.dynamic = cx.dynamic || a.dynamic;
    if (a.bytes)
      cx.static_bytes += *a.bytes;
    else if (!a.dynamic)
      cx.sized = false;
  }
  for (const auto& a : arrays) pad_array(in, cx, a, ke);
}

} // namespace optimas::builtin
