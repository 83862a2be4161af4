// Token-level helpers of the memory-access rules (see access.hpp for why tokens).
#include "builtin/access.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace optimas::builtin::access {

using nlohmann::json;

std::optional<double> figure(const json& kernel, const char* key) {
  if (!kernel.is_object() || !kernel.contains("roofline") || !kernel["roofline"].is_object()) return std::nullopt;
  const json& r = kernel["roofline"];
  if (!r.contains("access") || !r["access"].is_object()) return std::nullopt;
  const json& a = r["access"];
  if (!a.contains(key) || !a[key].is_number()) return std::nullopt;
  return a[key].get<double>();
}

std::string roofline_id(const json& kernel) {
  if (!kernel.is_object() || !kernel.contains("roofline") || !kernel["roofline"].is_object()) return "";
  const json& id = kernel["roofline"].value("id", json());
  return id.is_string() ? id.get<std::string>() : "";
}

std::size_t matching(const Tokens& t, std::size_t open) {
  char o = t[open].text[0];
  char c = o == '(' ? ')' : o == '{' ? '}' : ']';
  int depth = 0;
  for (std::size_t i = open; i < t.size(); ++i) {
    if (t[i].kind != cuda::TokenKind::punct) continue;
    if (t[i].text[0] == o) ++depth;
    if (t[i].text[0] == c && --depth == 0) return i;
  }
  return t.size();
}

std::optional<ForLoop> for_loop(const Tokens& t, std::size_t at) {
  if (at + 1 >= t.size() || t[at].text != "for" || t[at + 1].text != "(") return std::nullopt;
  ForLoop l;
  l.at = at;
  std::size_t close = matching(t, at + 1);
  if (close >= t.size()) return std::nullopt;
  std::vector<std::size_t> semis;
  int depth = 0;
  for (std::size_t x = at + 2; x < close; ++x) {
    if (t[x].text == "(" || t[x].text == "[") ++depth;
    if (t[x].text == ")" || t[x].text == "]") --depth;
    if (t[x].text == ";" && depth == 0) semis.push_back(x);
  }
  if (semis.size() != 2) return std::nullopt;
  // TYPE v = INIT: the variable is the identifier right before the first top-level '='.
  std::size_t eq = at + 2;
  while (eq < semis[0] && t[eq].text != "=") ++eq;
  if (eq == semis[0] || eq < at + 4 || t[eq - 1].kind != cuda::TokenKind::identifier) return std::nullopt;
  l.type_begin = at + 2;
  l.var = eq - 1;
  for (std::size_t x = l.type_begin; x < l.var; ++x)
    if (t[x].kind != cuda::TokenKind::identifier) return std::nullopt; // `int* p`, `a, b`: not ours
  l.init_begin = eq + 1;
  l.init_end = semis[0];
  l.cond_begin = semis[0] + 1;
  l.cond_end = semis[1];
  l.step_begin = semis[1] + 1;
  l.step_end = close;
  if (close + 1 >= t.size()) return std::nullopt;
  if (t[close + 1].text == "{") {
    l.braced = true;
    l.last = matching(t, close + 1);
    if (l.last >= t.size()) return std::nullopt;
    l.body_begin = close + 2;
    l.body_end = l.last;
  } else {
    // A single statement: a simple one only (a nested if/for/while could hold its own ';').
    std::string_view first = t[close + 1].text;
    if (first == "if" || first == "for" || first == "while" || first == "do" || first == "switch") return std::nullopt;
    std::size_t x = close + 1;
    int d = 0;
    for (; x < t.size(); ++x) {
      if (t[x].text == "(" || t[x].text == "[" || t[x].text == "{") ++d;
      if (t[x].text == ")" || t[x].text == "]" || t[x].text == "}") --d;
      if (t[x].text == ";" && d == 0) break;
    }
    if (x >= t.size()) return std::nullopt;
    l.body_begin = close + 1;
    l.body_end = x + 1;
    l.last = x;
  }
  return l;
}

std::optional<ForLoop> while_loop(const Tokens& t, std::size_t at) {
  if (at + 1 >= t.size() || t[at].text != "while" || t[at + 1].text != "(") return std::nullopt;
  if (at > 0 && t[at - 1].text == "}") return std::nullopt; // the end of a do-while
  std::size_t close = matching(t, at + 1);
  if (close + 1 >= t.size() || t[close + 1].text != "{") return std::nullopt;
  ForLoop l;
  l.at = at;
  l.is_while = true;
  l.braced = true;
  l.cond_begin = at + 2;
  l.cond_end = close;
  l.body_begin = close + 2;
  l.last = matching(t, close + 1);
  if (l.last >= t.size() || l.last < l.body_begin + 3 || t[l.last - 1].text != ";") return std::nullopt;
  // The last statement: back from its ';' to the previous ';', '{' or '}' at the body's depth.
  std::size_t b = l.last - 1;
  while (b > l.body_begin && t[b - 1].text != ";" && t[b - 1].text != "{" && t[b - 1].text != "}") --b;
  std::size_t e = l.last - 1; // the ';'
  std::size_t var = 0;
  auto word = [&](std::size_t x) { return t[x].kind == cuda::TokenKind::identifier; };
  if (e - b >= 3 && word(b) && t[b + 1].text == "+" && t[b + 2].text == "=")
    var = b; // v += EXPR
  else if (e - b == 3 && word(b) && t[b + 1].text == "+" && t[b + 2].text == "+")
    var = b; // v++
  else if (e - b == 3 && t[b].text == "+" && t[b + 1].text == "+" && word(b + 2))
    var = b + 2; // ++v
  else if (e - b >= 5 && word(b) && t[b + 1].text == "=" && t[b + 2].text == t[b].text && t[b + 3].text == "+")
    var = b; // v = v + EXPR
  else
    return std::nullopt;
  bool read = false;
  for (std::size_t x = l.cond_begin; x < l.cond_end; ++x) read = read || (word(x) && t[x].text == t[var].text);
  if (!read) return std::nullopt;
  l.var = l.type_begin = var;
  l.step_begin = b;
  l.step_end = e;
  l.body_end = b;
  return l;
}

std::string text(const Tokens& t, std::size_t b, std::size_t e) {
  std::string out;
  for (std::size_t x = b; x < e && x < t.size(); ++x) {
    bool word = std::isalnum(static_cast<unsigned char>(t[x].text.front())) || t[x].text.front() == '_';
    if (!out.empty() && word && (std::isalnum(static_cast<unsigned char>(out.back())) || out.back() == '_')) out += ' ';
    out += t[x].text;
  }
  return out;
}

std::string without_casts(const Tokens& t, std::size_t b, std::size_t e) {
  std::string s = text(t, b, e);
  for (const char* cast : {"(size_t)", "(long long)", "(long)", "(int)", "(unsigned)", "(unsigned int)",
                           "(unsigned long long)", "(int64_t)", "(uint64_t)"})
    for (std::size_t p; (p = s.find(cast)) != std::string::npos;) s.erase(p, std::string_view(cast).size());
  return s;
}

bool is_thread_index(const Tokens& t, std::size_t b, std::size_t e) {
  std::string s = without_casts(t, b, e);
  return s == "blockIdx.x*blockDim.x+threadIdx.x" || s == "blockDim.x*blockIdx.x+threadIdx.x" ||
         s == "threadIdx.x+blockIdx.x*blockDim.x" || s == "threadIdx.x+blockDim.x*blockIdx.x";
}

bool is_grid_size(const Tokens& t, std::size_t b, std::size_t e) {
  std::string s = without_casts(t, b, e);
  return s == "blockDim.x*gridDim.x" || s == "gridDim.x*blockDim.x";
}

std::set<std::string> uniform_names(const cuda::SourceFile& f, const cuda::Function& fn, const Tokens& body) {
  std::set<std::string> out;
  for (const auto& p : fn.parameters)
    if (!p.pointer && !p.name.empty() && !assigned(body, 0, body.size(), p.name)) out.insert(p.name);
  for (const auto& tok : cuda::lex(f.text))
    if (tok.kind == cuda::TokenKind::preprocessor) {
      auto words = util::split(cuda::normalise(tok.text.substr(1)), ' ');
      // `#define NAME value` only: a function-like macro (NAME(x)) could hide anything.
      if (words.size() >= 2 && words[0] == "define" && words[1].find('(') == std::string::npos)
        out.insert(std::string(words[1]));
    }
  return out;
}

bool pure_call(std::string_view name) {
  static const std::set<std::string_view> k_pure = {
      "sqrtf", "sqrt", "rsqrtf", "rsqrt", "expf", "exp", "exp2f", "exp2", "logf", "log", "log2f", "log2", "sinf", "sin",
      "cosf", "cos", "tanhf", "tanh", "fabsf", "fabs", "fminf", "fmin", "fmaxf", "fmax", "fmaf", "fma", "min", "max",
      "umin", "umax", "abs", "floorf", "floor", "ceilf", "ceil", "powf", "pow", "erff", "erf", "truncf", "roundf",
      "__popc", "__clz", "__ffs", "__brev", "__fmul_rn", "__fadd_rn", "__fmaf_rn", "__ldg",
      // Intrinsics that compute a value from their arguments and touch no memory (cuda_fp16.h's
      // half arithmetic and conversions among them: fp16ScalarProduct's loop calls __hfma2).
      "__expf", "__logf", "__sinf", "__cosf", "__powf", "__fdividef", "__saturatef", "__frsqrt_rn", "__fsqrt_rn",
      "__fdiv_rn", "__fsub_rn", "__fma_rn", "__dadd_rn", "__dmul_rn", "__umul24", "__mul24", "__umulhi", "__mulhi",
      "__int_as_float", "__float_as_int", "__uint_as_float", "__float_as_uint", "__float2int_rn", "__float2int_rz",
      "rintf", "cbrtf", "hypotf", "atan2f", "atanf", "asinf", "acosf", "copysignf", "fmodf", "log10f", "log1pf",
      "expm1f", "exp10f", "__hfma2", "__hmul2", "__hadd2", "__hsub2", "__hfma", "__hmul", "__hadd", "__hsub", "__hneg2",
      "__hmax", "__hmin", "__hmax2", "__hmin2", "__float2half", "__float2half_rn", "__half2float", "__float2half2_rn",
      "__floats2half2_rn", "__halves2half2", "__half22float2", "__low2float", "__high2float", "__low2half",
      "__high2half", "__lows2half2", "__highs2half2", "__hfma2_sat", "__hmul2_sat", "__hadd2_sat", "make_float2",
      "make_float3", "make_float4", "make_int2", "make_int4", "make_double2"};
  return k_pure.count(name) > 0;
}

bool arithmetic_type_word(std::string_view w) {
  return w == "int" || w == "unsigned" || w == "long" || w == "size_t" || w == "short" || w == "char" || w == "float" ||
         w == "double" || w == "signed" || w == "int64_t" || w == "uint64_t" || w == "int32_t" || w == "uint32_t";
}

bool is_uniform(const Tokens& t, std::size_t b, std::size_t e, const std::set<std::string>& uniform) {
  if (b >= e) return false;
  for (std::size_t x = b; x < e; ++x) {
    std::string_view w = t[x].text;
    switch (t[x].kind) {
    case cuda::TokenKind::number:
      break;
    case cuda::TokenKind::identifier:
      if (arithmetic_type_word(w)) {
        // Only inside a cast: `(int)`, `(long long)`.
        std::size_t y = x;
        while (y < e && arithmetic_type_word(t[y].text)) ++y;
        if (x == b || t[x - 1].text != "(" || y >= e || t[y].text != ")") return false;
        x = y;
        break;
      }
      if (!uniform.count(std::string(w))) return false;
      if (x + 1 < e && (t[x + 1].text == "(" || t[x + 1].text == "[")) return false;
      break;
    case cuda::TokenKind::punct:
      if (w == "=" || w == "[" || w == "]" || w == "," || w == "." || w == "->" || w == "?" || w == ":" || w == ";")
        return false;
      if ((w == "+" || w == "-") && x + 1 < e && t[x + 1].text == w) return false;      // ++ / --
      if ((w == "<" || w == ">" || w == "!") && x + 1 < e && t[x + 1].text == "=") ++x; // <=, >=, != are fine
      break;
    default:
      return false;
    }
  }
  return true;
}

namespace {

// `&name`, not `a & name` or `a && name`.
bool address_taken(const Tokens& t, std::size_t x) {
  if (x == 0 || t[x - 1].text != "&") return false;
  if (x < 2) return true;
  std::string_view before = t[x - 2].text;
  return t[x - 2].kind == cuda::TokenKind::punct && before != "&" && before != ")" && before != "]";
}

} // namespace

bool assigned(const Tokens& t, std::size_t b, std::size_t e, std::string_view name) {
  for (std::size_t x = b; x < e && x < t.size(); ++x) {
    if (t[x].kind != cuda::TokenKind::identifier || t[x].text != name) continue;
    if (x > 0 && (t[x - 1].text == "." || t[x - 1].text == "->")) continue; // a member of something else
    std::string_view next = x + 1 < t.size() ? t[x + 1].text : "";
    std::string_view after = x + 2 < t.size() ? t[x + 2].text : "";
    if (next == "=" && after != "=") return true;
    if ((next == "+" || next == "-" || next == "*" || next == "/" || next == "%" || next == "|" || next == "&" ||
         next == "^") &&
        (after == "=" || ((next == "+" || next == "-") && after == next)))
      return true;
    if (x >= 2 && (t[x - 1].text == "+" || t[x - 1].text == "-") && t[x - 2].text == t[x - 1].text) return true;
    if (address_taken(t, x)) return true;
  }
  return false;
}

namespace {

// Past a use's subscripts and member accesses: p[i], p[i][j].x, p->next.
std::size_t past_postfix(const Tokens& t, std::size_t j) {
  while (j < t.size()) {
    if (t[j].text == "[") {
      j = matching(t, j) + 1;
    } else if ((t[j].text == "." || t[j].text == "->") && j + 1 < t.size() &&
               t[j + 1].kind == cuda::TokenKind::identifier) {
      j += 2;
    } else {
      break;
    }
  }
  return j;
}

bool one_of(std::string_view x, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), x) != set.end();
}

} // namespace

bool written_or_escapes(const Tokens& t, std::size_t b, std::size_t e, std::string_view name) {
  const std::size_t n = t.size();
  for (std::size_t x = b; x < e && x < n; ++x) {
    if (t[x].kind != cuda::TokenKind::identifier || t[x].text != name) continue;
    if (x > 0 && (t[x - 1].text == "." || t[x - 1].text == "->")) continue; // a member of something else
    // The expression around the use: `*`, parentheses, subscripts and member accesses.
    std::size_t s = x, end = past_postfix(t, x + 1);
    bool accessed = end > x + 1;
    for (;;) {
      if (s > 0 && t[s - 1].text == "*") {
        --s;
        accessed = true;
      } else if (s > 0 && t[s - 1].text == "(" && end < n && t[end].text == ")") {
        --s;
        end = past_postfix(t, end + 1);
      } else {
        break;
      }
    }
    if (!accessed) return true;           // bare: passed on, copied, offset (p + i)
    if (address_taken(t, s)) return true; // &p[i]
    if (s > 1 && one_of(t[s - 1].text, {"+", "-"}) && t[s - 2].text == t[s - 1].text) return true; // ++p[i]
    if (end >= n) continue;
    std::string_view next = t[end].text, after = end + 1 < n ? t[end + 1].text : "";
    if (next == "=" && after != "=") return true; // p[i] = v (p[i] == v compares)
    if (one_of(next, {"+", "-", "*", "/", "%", "|", "&", "^"}) && after == "=") return true;             // p[i] += v
    if (one_of(next, {"+", "-"}) && after == next) return true;                                          // p[i]++
    if (one_of(next, {"<", ">"}) && after == next && end + 2 < n && t[end + 2].text == "=") return true; // <<=
    if (next == "(" && one_of(t[end - 2].text, {".", "->"})) return true; // p[i].store(v): a method may write
  }
  return false;
}

std::optional<std::pair<std::size_t, std::size_t>> initialiser(const Tokens& t, std::size_t b, std::size_t e,
                                                               std::string_view name) {
  for (std::size_t x = b + 1; x + 1 < e; ++x) {
    if (t[x].text != name || t[x + 1].text != "=" || t[x - 1].kind != cuda::TokenKind::identifier) continue;
    if (x + 2 < e && t[x + 2].text == "=") continue;
    std::size_t end = x + 2;
    while (end < e && t[end].text != ";" && t[end].text != ",") ++end;
    if (end >= e || t[end].text != ";") return std::nullopt;
    return std::make_pair(x + 2, end);
  }
  return std::nullopt;
}

std::string rewrite(std::string_view body_text, const Tokens& t, std::size_t b, std::size_t e,
                    std::vector<Replacement> replacements) {
  std::sort(replacements.begin(), replacements.end(),
            [](const Replacement& x, const Replacement& y) { return x.begin < y.begin; });
  std::string out;
  std::size_t pos = t[b].offset;
  std::size_t stop = t[e - 1].offset + t[e - 1].text.size();
  for (const auto& r : replacements) {
    if (r.begin < b || r.end > e || r.begin >= r.end || t[r.begin].offset < pos) continue;
    out.append(body_text.substr(pos, t[r.begin].offset - pos));
    out += r.with;
    pos = t[r.end - 1].offset + t[r.end - 1].text.size();
  }
  out.append(body_text.substr(pos, stop - pos));
  return out;
}

std::string pointee(const cuda::Parameter& p) {
  if (!p.pointer) return "";
  std::string type;
  for (const auto& tok : cuda::lex(p.type)) {
    std::string_view w = tok.text;
    if (w == "const" || w == "__restrict__" || w == "__restrict" || w == "restrict" || w == "volatile") continue;
    if (w == "*") break;
    if (!type.empty()) type += ' ';
    type += w;
  }
  // Two stars (float**) leave a '*' after the first: not an element pointer.
  if (std::count(p.type.begin(), p.type.end(), '*') != 1 || p.type.find("volatile") != std::string::npos) return "";
  return type;
}

int element_size(const std::string& type) {
  if (type == "float" || type == "int" || type == "unsigned" || type == "unsigned int") return 4;
  if (type == "double") return 8;
  return 0;
}

bool whole_lines(std::string_view body_text, const Tokens& t, std::size_t first, std::size_t last) {
  if ((first > 0 && t[first - 1].line == t[first].line) || (last + 1 < t.size() && t[last + 1].line == t[last].line))
    return false;
  // Comments are not tokens: nothing but whitespace may share the first and last line.
  std::size_t line_begin = body_text.rfind('\n', t[first].offset);
  line_begin = line_begin == std::string_view::npos ? 0 : line_begin + 1;
  for (std::size_t p = line_begin; p < t[first].offset; ++p)
    if (!std::isspace(static_cast<unsigned char>(body_text[p]))) return false;
  std::size_t end = t[last].offset + t[last].text.size();
  std::size_t line_end = body_text.find('\n', end);
  for (std::size_t p = end; p < std::min(line_end, body_text.size()); ++p)
    if (!std::isspace(static_cast<unsigned char>(body_text[p]))) return false;
  return true;
}

std::string indent_at(std::string_view text, std::size_t at) {
  std::size_t b = text.rfind('\n', at);
  b = b == std::string_view::npos ? 0 : b + 1;
  std::size_t e = b;
  while (e < text.size() && (text[e] == ' ' || text[e] == '\t')) ++e;
  return std::string(text.substr(b, e - b));
}

std::string indented(const std::string& s, const std::string& more) {
  std::string out;
  bool line_start = true;
  for (char c : s) {
    if (line_start && c != '\n') out += more;
    out += c;
    line_start = c == '\n';
  }
  return out;
}

int block_size(const json& kernel, const std::map<std::string, std::string>& sources, const std::string& name) {
  if (kernel.contains("roofline") && kernel["roofline"].is_object()) {
    const json& occ = kernel["roofline"].value("occupancy", json::object());
    if (occ.is_object() && occ.contains("block_size") && occ["block_size"].is_number_integer()) {
      int b = occ["block_size"].get<int>();
      if (b > 0 && b <= 1024) return b;
    }
  }
  // From the launches: name<<<grid, B>>> with B a literal or a #define of one, the same in all.
  int found = 0;
  for (const auto& [file, src] : sources) {
    auto t = cuda::lex(src);
    std::map<std::string, std::string> defines;
    for (const auto& tok : t)
      if (tok.kind == cuda::TokenKind::preprocessor) {
        auto w = util::split(cuda::normalise(tok.text.substr(1)), ' ');
        if (w.size() == 3 && w[0] == "define") defines[std::string(w[1])] = std::string(w[2]);
      }
    for (std::size_t i = 0; i + 4 < t.size(); ++i) {
      if (t[i].text != name || t[i + 1].text != "<" || t[i + 2].text != "<" || t[i + 3].text != "<") continue;
      std::size_t x = i + 4;
      int depth = 0;
      while (x < t.size() && !(depth == 0 && t[x].text == ",")) {
        if (t[x].text == "(") ++depth;
        if (t[x].text == ")") --depth;
        if (t[x].text == ";") return 0;
        ++x;
      }
      if (x + 2 >= t.size() || t[x + 2].text != ">") return 0;
      std::string b(t[x + 1].text);
      if (defines.count(b)) b = defines[b];
      int value = 0;
      for (char c : b) {
        if (!std::isdigit(static_cast<unsigned char>(c)) || value > 100000) {
          value = -1;
          break;
        }
        value = value * 10 + (c - '0');
      }
      if (value <= 0 || value > 1024 || (found && found != value)) return 0;
      found = value;
    }
  }
  return found;
}

prompt::Edit loop_edit(const char* rule, const cuda::SourceFile& f, const cuda::Function& fn, const Tokens& t,
                       const ForLoop& loop, std::string code) {
  prompt::Edit e;
  e.rule = rule;
  e.file = std::filesystem::path(f.path).filename().string();
  e.kernel = fn.name;
  e.line_start = fn.body_first_line - 1 + t[loop.at].line;
  e.line_end = fn.body_first_line - 1 + t[loop.last].line;
  e.new_text = std::move(code);
  return e;
}

} // namespace optimas::builtin::access
