// The builtin optimizer's rules that edit lines inside a kernel's loops: unroll, hoist and
// reciprocal (the one rule that changes floating-point results).
#include "builtin/rules.hpp"

#include "cuda/source.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

namespace optimas::builtin {

using nlohmann::json;
namespace fs = std::filesystem;

LoopExtent loop_extent(const std::vector<cuda::Token>& t, std::size_t at) {
  LoopExtent e;
  int depth = 0;
  for (e.close = at + 1; e.close < t.size(); ++e.close) {
    if (t[e.close].text == "(") ++depth;
    if (t[e.close].text == ")" && --depth == 0) break;
  }
  e.body_end = e.close + 1;
  if (e.body_end < t.size() && t[e.body_end].text == "{") {
    int d = 0;
    for (; e.body_end < t.size(); ++e.body_end) {
      if (t[e.body_end].text == "{") ++d;
      if (t[e.body_end].text == "}" && --d == 0) break;
    }
  } else {
    while (e.body_end < t.size() && t[e.body_end].text != ";") ++e.body_end;
  }
  e.close = std::min(e.close, t.size() - 1);
  e.body_end = std::min(e.body_end, t.size() - 1);
  return e;
}

void rule_unroll(const KernelInput& in, KernelEdits& ke) {
  const json& k = in.kernel;
  const cuda::SourceFile& f = in.file;
  const cuda::Function& fn = in.fn;
  auto lines = stall_lines(k);
  const std::string& file = in.file_name;
  std::string_view text(f.text);
  const auto& t = in.tokens;
  const int base_line = in.base_line;
  // Names that hold compile-time constants: #defines and template parameters.
  std::set<std::string> constants;
  for (const auto& tok : cuda::lex(text))
    if (tok.kind == cuda::TokenKind::preprocessor) {
      std::string directive = cuda::normalise(tok.text.substr(1)); // split() returns views into it
      auto words = util::split(directive, ' ');
      if (words.size() >= 2 && words[0] == "define") constants.insert(std::string(words[1]));
    }
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].text != "for" || t[i + 1].text != "(") continue;
    // Header: for (int v = N; v < C; ...) with N a literal and C a literal or a known constant.
    auto [close, body_end] = loop_extent(t, i);
    std::vector<std::string_view> h;
    for (std::size_t x = i + 2; x < close; ++x) h.push_back(t[x].text);
    bool constant_trip =
        h.size() >= 9 && h[0] == "int" && h[2] == "=" && std::isdigit(static_cast<unsigned char>(h[3][0])) &&
        h[4] == ";" && h[5] == h[1] && (h[6] == "<" || h[6] == "<=") &&
        (std::isdigit(static_cast<unsigned char>(h[7][0])) || constants.count(std::string(h[7]))) && h[8] == ";";
    if (!constant_trip) continue;
    // Innermost: no other loop in its body.
    bool inner = true;
    for (std::size_t x = close + 1; x < body_end && x < t.size(); ++x)
      if (t[x].text == "for" || t[x].text == "while") inner = false;
    if (!inner) continue;
    int first = base_line + t[i].line, last = base_line + t[body_end].line;
    // Already unrolled?
    std::size_t line_begin = text.rfind('\n', t[i].offset + fn.body_begin);
    std::size_t prev_begin = line_begin == std::string_view::npos ? 0 : text.rfind('\n', line_begin - 1);
    std::string_view prev = text.substr(prev_begin == std::string_view::npos ? 0 : prev_begin + 1,
                                        line_begin - (prev_begin == std::string_view::npos ? 0 : prev_begin + 1));
    if (prev.find("#pragma unroll") != std::string_view::npos) continue;
    std::vector<std::string> evidence;
    std::string stall;
    for (const auto& l : lines)
      if (l.file == file && l.line >= first && l.line <= last &&
          (l.stall == "stall_wait" || l.stall == "stall_branch_resolving" || l.stall == "stall_no_instructions")) {
        evidence.push_back(l.id);
        if (stall.empty()) stall = l.stall;
      }
    if (evidence.empty()) continue;
    std::size_t start = line_begin == std::string_view::npos ? 0 : line_begin + 1;
    std::size_t end = text.find('\n', start);
    std::string line(text.substr(start, end - start));
    std::string indent = line.substr(0, line.find_first_not_of(" \t"));
    prompt::Edit e;
    e.rule = "unroll";
    e.file = file;
    e.kernel = fn.name;
    e.line_start = first;
    e.line_end = first;
    e.new_text = indent + "#pragma unroll\n" + line;
    e.evidence = evidence;
    e.rationale = fmt::format("{}: the loop at line {} has a constant trip count ({} {} {}) and its lines show {}; "
                              "unrolling removes the loop branch and lets independent iterations overlap. The order of "
                              "operations is unchanged, so results stay bit-identical.",
                              fn.name, first, h[5], h[6], h[7], stall);
    e.expected_effect.push_back({stall, "decrease"});
    ke.others.push_back(std::move(e));
    i = close;
  }
}

namespace {

// The kernel's names by what a write through them could reach.
struct HoistNames {
  std::set<std::string> const_params, other_pointers, local_arrays;
};

HoistNames hoist_names(const cuda::Function& fn, const std::vector<cuda::Token>& t) {
  HoistNames n;
  for (const auto& p : fn.parameters)
    if (p.pointer) (p.const_pointee ? n.const_params : n.other_pointers).insert(p.name);
  // Local arrays (`T name[N];`) live in registers or local memory: writes to them are safe.
  for (std::size_t i = 1; i + 1 < t.size(); ++i)
    if (t[i].kind == cuda::TokenKind::identifier && t[i + 1].text == "[" &&
        t[i - 1].kind == cuda::TokenKind::identifier && t[i - 1].text != "return")
      n.local_arrays.insert(std::string(t[i].text));
  // Local pointer declarations (`T* p =`, at the start of a statement): writes through them
  // could reach anything, so a loop using one is not touched.
  for (std::size_t i = 2; i + 1 < t.size(); ++i) {
    bool statement_start = i < 3 || t[i - 3].text == ";" || t[i - 3].text == "{" || t[i - 3].text == "}" ||
                           t[i - 3].text == "const" || t[i - 3].text == "(";
    if (t[i].kind == cuda::TokenKind::identifier && t[i - 1].text == "*" &&
        t[i - 2].kind == cuda::TokenKind::identifier && statement_start &&
        (t[i + 1].text == "=" || t[i + 1].text == ";" || t[i + 1].text == ","))
      n.other_pointers.insert(std::string(t[i].text));
  }
  return n;
}

// A loop condition `v OP E` whose E is worth computing once: expensive, and reading neither v
// nor memory the kernel may write.
struct Condition {
  std::string v;
  std::size_t e0 = 0, e1 = 0; // E is tokens [e0, e1); e1 is the header's second ';'
  std::set<std::string> used; // the names E reads
};

std::optional<Condition> hoistable_condition(const std::vector<cuda::Token>& t, std::size_t at, std::size_t close,
                                             const HoistNames& names) {
  std::size_t semi1 = 0, semi2 = 0;
  int depth = 0;
  for (std::size_t x = at + 1; x < close; ++x) {
    if (t[x].text == "(") ++depth;
    if (t[x].text == ")") --depth;
    if (t[x].text == ";" && depth == 1) (semi1 ? semi2 : semi1) = x;
  }
  if (!semi1 || !semi2) return std::nullopt;
  // cond: v OP E
  std::size_t c0 = semi1 + 1;
  if (c0 + 2 >= semi2 || t[c0].kind != cuda::TokenKind::identifier) return std::nullopt;
  Condition c;
  c.v = std::string(t[c0].text);
  std::size_t e0 = c0 + 1;
  std::string op(t[e0].text);
  if (op == "<" || op == ">" || op == "!") {
    if (t[e0 + 1].text == "=") ++e0;
  } else {
    return std::nullopt;
  }
  if (op == "!" && t[e0].text != "=") return std::nullopt;
  c.e0 = e0 + 1;
  c.e1 = semi2;
  bool expensive = false, invariant = true;
  for (std::size_t x = c.e0; x < c.e1; ++x) {
    std::string_view w = t[x].text;
    if (w == "/" || w == "%" || w == "[") expensive = true;
    if (t[x].kind != cuda::TokenKind::identifier) continue;
    if (x + 1 < c.e1 && t[x + 1].text == "(") {
      expensive = true; // a call: __ffs, sqrt, ...
      continue;
    }
    if (w == c.v) invariant = false;
    c.used.insert(std::string(w));
    if (x + 1 < c.e1 && t[x + 1].text == "[" && !names.const_params.count(std::string(w))) invariant = false;
  }
  if (!expensive || !invariant) return std::nullopt;
  return c;
}

// The loop's increment and body (up to `body_end`) must not change what E reads, nor write memory.
bool loop_keeps_condition(const std::vector<cuda::Token>& t, const Condition& c, std::size_t body_end,
                          const HoistNames& names) {
  for (std::size_t x = c.e1 + 1; x < body_end && x < t.size(); ++x) {
    std::string w(t[x].text);
    if (t[x].kind != cuda::TokenKind::identifier) continue;
    std::string_view next = x + 1 < t.size() ? t[x + 1].text : "";
    std::string_view after = x + 2 < t.size() ? t[x + 2].text : "";
    bool assigned = (next == "=" && after != "=") ||
                    ((next == "+" || next == "-" || next == "*" || next == "/") && (after == "=" || after == next)) ||
                    (x > 0 && (t[x - 1].text == "&" || (t[x - 1].text == "+" && x > 1 && t[x - 2].text == "+")));
    if (c.used.count(w) && assigned) return false;
    // Memory writes or escapes through anything but a local array.
    if (names.other_pointers.count(w)) return false;
    if (next == "[" && !names.local_arrays.count(w) && !names.const_params.count(w)) return false;
  }
  return true;
}

// The loop's line with E computed once before it; nothing when E's text is not on that line
// exactly once.
std::optional<prompt::Edit> hoist_edit(const KernelInput& in, const std::vector<cuda::Token>& t, std::size_t at,
                                       const Condition& c, const std::vector<std::string>& evidence,
                                       const std::string& stall) {
  const cuda::SourceFile& f = in.file;
  const cuda::Function& fn = in.fn;
  std::string_view text(f.text);
  std::size_t base = fn.body_begin;
  int line = fn.body_first_line - 1 + t[at].line;
  std::size_t e_begin = base + t[c.e0].offset, e_end = base + t[c.e1 - 1].offset + t[c.e1 - 1].text.size();
  std::string expr(text.substr(e_begin, e_end - e_begin));
  std::size_t line_begin = text.rfind('\n', base + t[at].offset);
  line_begin = line_begin == std::string_view::npos ? 0 : line_begin + 1;
  std::size_t line_end = text.find('\n', line_begin);
  std::string src(text.substr(line_begin, line_end - line_begin));
  if (src.find(expr) == std::string::npos || src.find(expr) != src.rfind(expr)) return std::nullopt;
  std::string bound = c.v + "_bound";
  std::string indent = src.substr(0, src.find_first_not_of(" \t"));
  std::string new_line = src;
  new_line.replace(new_line.find(expr), expr.size(), bound);
  prompt::Edit e;
  e.rule = "hoist";
  e.file = fs::path(f.path).filename().string();
  e.kernel = fn.name;
  e.line_start = line;
  e.line_end = line;
  e.new_text = fmt::format("{}const auto {} = {};\n{}", indent, bound, expr, new_line);
  e.evidence = evidence;
  e.rationale =
      fmt::format("{}: the loop condition at line {} evaluates `{}` on every iteration and the line shows {}; "
                  "nothing in the loop changes it or writes memory it reads, so it is computed once before "
                  "the loop. Same value, same comparison: results stay bit-identical.",
                  fn.name, line, expr, stall);
  e.expected_effect.push_back({stall, "decrease"});
  return e;
}

} // namespace

void rule_hoist(const KernelInput& in, KernelEdits& ke) {
  const cuda::Function& fn = in.fn;
  const std::string& file = in.file_name;
  const auto& t = in.tokens;
  const int base_line = in.base_line;
  HoistNames names = hoist_names(fn, t);
  auto lines = stall_lines(in.kernel);
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].text != "for" || t[i + 1].text != "(") continue;
    auto [close, body_end] = loop_extent(t, i);
    auto c = hoistable_condition(t, i, close, names);
    if (!c || !loop_keeps_condition(t, *c, body_end, names)) continue;
    int line = base_line + t[i].line;
    std::vector<std::string> evidence;
    std::string stall;
    for (const auto& l : lines)
      if (l.file == file && l.line == line) {
        evidence.push_back(l.id);
        stall = l.stall;
      }
    if (evidence.empty()) continue;
    auto e = hoist_edit(in, t, i, *c, evidence, stall);
    if (!e) continue;
    ke.others.push_back(std::move(*e));
    i = close;
  }
}

void rule_reciprocal(const KernelInput& in, KernelEdits& ke) {
  const json& k = in.kernel;
  const cuda::SourceFile& f = in.file;
  const cuda::Function& fn = in.fn;
  const bool allow_fp_changes = in.allow_fp_changes;
  const std::string& file = in.file_name;
  std::map<std::string, std::string> fp_params; // name -> "1.0f" or "1.0"
  for (const auto& p : fn.parameters)
    if (!p.pointer && (p.type == "float" || p.type == "const float"))
      fp_params[p.name] = "1.0f";
    else if (!p.pointer && (p.type == "double" || p.type == "const double"))
      fp_params[p.name] = "1.0";
  if (fp_params.empty()) return;
  std::string_view text(f.text);
  const auto& t = in.tokens;
  const int base_line = in.base_line;
  // Lines inside loops of the kernel body.
  std::set<int> loop_lines;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].text != "for" && t[i].text != "while") continue;
    auto extent = loop_extent(t, i);
    for (int l = t[i].line; l <= t[extent.body_end].line; ++l) loop_lines.insert(base_line + l);
  }
  for (const auto& l : stall_lines(k)) {
    if (l.file != file || !loop_lines.count(l.line)) continue;
    for (std::size_t i = 0; i + 1 < t.size(); ++i) {
      if (base_line + t[i].line != l.line || t[i].text != "/" || !fp_params.count(std::string(t[i + 1].text))) continue;
      std::string divisor(t[i + 1].text);
      if (i + 2 < t.size() && (t[i + 2].text == "[" || t[i + 2].text == "(" || t[i + 2].text == ".")) continue;
      std::string suggestion = fmt::format(
          "{}: multiply by a reciprocal of {} computed once instead of dividing on line {}", fn.name, divisor, l.line);
      if (!allow_fp_changes) {
        ke.withheld.push_back({suggestion,
                               "x * (1/y) can differ from x / y in the last bit and outputs are compared bit for bit; "
                               "run with --option allow_fp_changes=true to apply it",
                               {l.id}});
        return;
      }
      std::size_t line_begin = text.rfind('\n', fn.body_begin + t[i].offset) + 1;
      std::size_t line_end = text.find('\n', line_begin);
      std::string src(text.substr(line_begin, line_end - line_begin));
      std::string from = "/ " + divisor, alt = "/" + divisor;
      std::string inv = divisor + "_inv";
      std::string out = src;
      for (const auto& pattern : {from, alt})
        for (std::size_t pos; (pos = out.find(pattern)) != std::string::npos;)
          out.replace(pos, pattern.size(), "* " + inv);
      std::string decl_text = "  const auto " + inv + " = " + fp_params[divisor] + " / " + divisor + ";";
      prompt::Edit e;
      e.rule = "reciprocal";
      e.file = file;
      e.kernel = fn.name;
      e.line_start = l.line;
      e.line_end = l.line;
      e.new_text = out;
      e.evidence = {l.id};
      e.rationale = suggestion + " (changes floating-point results; allowed by allow_fp_changes).";
      e.expected_effect.push_back({l.stall, "decrease"});
      // The reciprocal is computed once, as the body's first statement.
      int decl_line = fn.body_first_line + 1;
      if (decl_line == l.line) {
        e.new_text = decl_text + "\n" + out;
      } else {
        std::size_t b = 0;
        for (int n = 1; n < decl_line; ++n) b = text.find('\n', b) + 1;
        prompt::Edit decl;
        decl.rule = "reciprocal";
        decl.file = file;
        decl.kernel = fn.name;
        decl.line_start = decl_line;
        decl.line_end = decl_line;
        decl.new_text = decl_text + "\n" + std::string(text.substr(b, text.find('\n', b) - b));
        decl.evidence = {l.id};
        decl.rationale = fmt::format("{}: the reciprocal of {} for the edit of line {}, computed once per thread.",
                                     fn.name, divisor, l.line);
        ke.others.push_back(std::move(decl));
      }
      ke.others.push_back(std::move(e));
      return;
    }
  }
}

} // namespace optimas::builtin
