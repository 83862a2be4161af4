#include "cuda/source.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

namespace optimas::cuda {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::vector<Token> lex(std::string_view s) {
  std::vector<Token> out;
  int line = 1;
  bool line_start = true; // only whitespace so far on this line
  for (std::size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == '\n') {
      ++line;
      line_start = true;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      i += 2;
      while (i + 1 < s.size() && !(s[i] == '*' && s[i + 1] == '/')) line += (s[i++] == '\n');
      i = std::min(s.size(), i + 2);
      continue;
    }
    std::size_t start = i;
    int start_line = line;
    if (c == '#' && line_start) {
      // A directive runs to the end of the line, through backslash continuations.
      while (i < s.size() && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '\n') {
          ++line;
          i += 2;
          continue;
        }
        ++i;
      }
      out.push_back({TokenKind::preprocessor, s.substr(start, i - start), start, start_line});
      continue;
    }
    line_start = false;
    if (c == '"' || c == '\'') {
      // Raw string literals R"d(...)d" are rare in kernels; plain literals handle escapes.
      char q = c;
      ++i;
      while (i < s.size() && s[i] != q && s[i] != '\n') i += (s[i] == '\\') ? 2 : 1;
      i = std::min(s.size(), i + 1);
      out.push_back(
          {q == '"' ? TokenKind::string : TokenKind::character, s.substr(start, i - start), start, start_line});
      continue;
    }
    if (ident_start(c)) {
      while (i < s.size() && ident_char(s[i])) ++i;
      out.push_back({TokenKind::identifier, s.substr(start, i - start), start, start_line});
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      while (i < s.size() && (ident_char(s[i]) || s[i] == '.' ||
                              ((s[i] == '+' || s[i] == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E'))))
        ++i;
      out.push_back({TokenKind::number, s.substr(start, i - start), start, start_line});
      continue;
    }
    // Punctuation: "::" and "->" matter for reading types; others are single characters.
    if ((c == ':' && i + 1 < s.size() && s[i + 1] == ':') || (c == '-' && i + 1 < s.size() && s[i + 1] == '>')) {
      out.push_back({TokenKind::punct, s.substr(start, 2), start, start_line});
      i += 2;
      continue;
    }
    out.push_back({TokenKind::punct, s.substr(start, 1), start, start_line});
    ++i;
  }
  return out;
}

std::string normalise(std::string_view code) {
  std::string out;
  for (const auto& t : lex(code)) {
    if (!out.empty()) {
      bool word_before = ident_char(out.back());
      bool word_now = ident_char(t.text.front());
      if (word_before && word_now) out += ' ';
    }
    out += t.text;
  }
  return out;
}

std::vector<std::string> identifiers_in(std::string_view text) {
  std::vector<std::string> out;
  std::set<std::string_view> seen;
  for (const auto& t : lex(text))
    if (t.kind == TokenKind::identifier && seen.insert(t.text).second) out.emplace_back(t.text);
  return out;
}

namespace {

// What parse_source looks up for every token, computed in one pass each so that reading a file
// stays linear in its length however its brackets fall (a megabyte of unbalanced '(' after
// thousands of `__device__` made the old per-declaration scans quadratic: minutes).
struct Tables {
  std::vector<std::size_t> partner; // a bracket's matching bracket, t.size() if none
  std::vector<std::size_t> stop;    // the first '(' ';' or '{' at or after i, t.size() if none
  std::vector<std::size_t> ident;   // the last identifier at or before i, t.size() if none
};

Tables tables(const std::vector<Token>& t) {
  const std::size_t n = t.size();
  Tables x{std::vector<std::size_t>(n, n), std::vector<std::size_t>(n + 1, n), std::vector<std::size_t>(n, n)};
  // Each kind of bracket pairs on its own, as a per-kind depth count would: a '<' may be a
  // comparison, and only the declaration around it says which.
  constexpr std::string_view opens = "({[<", closes = ")}]>";
  std::vector<std::size_t> open[4];
  for (std::size_t i = 0; i < n; ++i) {
    if (t[i].kind == TokenKind::identifier)
      x.ident[i] = i;
    else if (i > 0)
      x.ident[i] = x.ident[i - 1];
    if (t[i].kind != TokenKind::punct) continue;
    if (auto k = opens.find(t[i].text[0]); k != std::string_view::npos) {
      open[k].push_back(i);
    } else if (k = closes.find(t[i].text[0]); k != std::string_view::npos && !open[k].empty()) {
      x.partner[open[k].back()] = i;
      x.partner[i] = open[k].back();
      open[k].pop_back();
    }
  }
  for (std::size_t i = n; i-- > 0;)
    x.stop[i] = t[i].text == "(" || t[i].text == ";" || t[i].text == "{" ? i : x.stop[i + 1];
  return x;
}

bool qualifier(const Token& t) {
  return t.kind == TokenKind::identifier &&
         (t.text == "static" || t.text == "inline" || t.text == "__forceinline__" || t.text == "extern" ||
          t.text == "__host__" || t.text == "__device__" || t.text == "__global__");
}

Parameter parse_parameter(const std::vector<Token>& t, std::size_t b, std::size_t e) {
  Parameter p;
  // The name is the last identifier outside brackets (no default values in kernels).
  std::size_t name = e;
  for (std::size_t i = b; i < e; ++i)
    if (t[i].kind == TokenKind::identifier) name = i;
  std::string type;
  bool seen_star = false;
  for (std::size_t i = b; i < e; ++i) {
    if (i == name) continue;
    std::string_view x = t[i].text;
    if (x == "*") seen_star = true;
    if (x == "const" && !seen_star) p.const_pointee = true;
    if (x == "__restrict__" || x == "__restrict" || x == "restrict") p.restrict_ = true;
    if (!type.empty() && ident_char(type.back()) && ident_char(x.front())) type += ' ';
    type += x;
  }
  p.pointer = seen_star;
  if (!p.pointer) p.const_pointee = false;
  p.type = type;
  if (name < e) p.name = std::string(t[name].text);
  return p;
}

} // namespace

SourceFile parse_source(std::string path, std::string text) {
  SourceFile f;
  f.path = std::move(path);
  f.text = std::move(text);
  const auto t = lex(f.text);
  const std::size_t n = t.size();
  const Tables x = tables(t);
  for (std::size_t i = 0; i < n; ++i) {
    bool global = t[i].text == "__global__";
    bool device = t[i].text == "__device__";
    if (t[i].kind != TokenKind::identifier || (!global && !device)) continue;
    // Walk back over qualifiers and a template header to the declaration's start. An earlier
    // __global__ or __device__ among them began this same declaration and was read already.
    std::size_t start = i;
    while (start > 0 && qualifier(t[start - 1]) && t[start - 1].text != "__global__" &&
           t[start - 1].text != "__device__")
      --start;
    if (start > 0 && qualifier(t[start - 1])) continue;
    bool is_template = false;
    if (start > 0 && t[start - 1].text == ">") {
      std::size_t j = x.partner[start - 1]; // template < ... >
      if (j != n && j > 0 && t[j - 1].text == "template") {
        start = j - 1;
        is_template = true;
      }
    }
    // Forward: qualifiers, __launch_bounds__(...), return type, name, (params), then '{' or ';'.
    // The name is the last identifier before the parameters' '(', outside __launch_bounds__.
    std::string launch_bounds;
    std::size_t name = n;
    std::size_t open = n;
    for (std::size_t j = i + 1, hops = 0; hops < 4; ++hops) { // one __launch_bounds__ in real code
      std::size_t s = x.stop[j];
      if (s == n || t[s].text != "(") break; // ';' or '{' first: not a function
      bool bounds = s > j && t[s - 1].text == "__launch_bounds__";
      std::size_t last = bounds ? (s >= j + 2 ? x.ident[s - 2] : n) : x.ident[s - 1];
      if (last != n && last >= j) name = last;
      if (!bounds) {
        open = s;
        break;
      }
      std::size_t close = x.partner[s];
      if (close == n) break;
      launch_bounds = std::string(f.text.substr(t[s].offset + 1, t[close].offset - t[s].offset - 1));
      j = close + 1;
    }
    if (open == n || name == n) continue;
    std::size_t close = x.partner[open];
    if (close == n || close + 1 >= n) continue;
    std::size_t brace = close + 1;
    // Skip trailing qualifiers before the body (rare: noexcept and the like).
    while (brace < n && brace <= close + 4 && t[brace].kind == TokenKind::identifier) ++brace;
    if (brace >= n || t[brace].text != "{") {
      i = close; // a declaration, not a definition
      continue;
    }
    std::size_t body_end = x.partner[brace];
    if (body_end == n) continue; // unbalanced: not a definition we can use
    Function fn;
    fn.name = std::string(t[name].text);
    fn.kernel = global || (t[start].text == "__global__");
    for (std::size_t k = start; k < open; ++k) fn.kernel = fn.kernel || t[k].text == "__global__";
    fn.is_template = is_template;
    fn.launch_bounds = launch_bounds;
    fn.signature = normalise(f.text.substr(t[start].offset, t[close].offset + 1 - t[start].offset));
    fn.first_line = t[start].line;
    fn.body_first_line = t[brace].line;
    fn.last_line = t[body_end].line;
    fn.begin = t[start].offset;
    fn.body_begin = t[brace].offset;
    fn.end = t[body_end].offset + 1;
    // Parameters, split at top-level commas.
    std::size_t pb = open + 1;
    int depth = 0;
    for (std::size_t k = open + 1; k <= close; ++k) {
      std::string_view tok = t[k].text;
      if (tok == "(" || tok == "<" || tok == "[")
        ++depth;
      else if ((tok == ")" || tok == ">" || tok == "]") && k != close)
        --depth;
      if ((tok == "," && depth == 0) || k == close) {
        if (k > pb) fn.parameters.push_back(parse_parameter(t, pb, k));
        pb = k + 1;
      }
    }
    f.functions.push_back(std::move(fn));
    i = body_end;
  }
  return f;
}

namespace {

// Where a launch's "<<<" starts after the kernel's name at `i`: right after it, or after the
// template arguments of an instance (name<8><<<...); 0 when this is no launch.
std::size_t launch_chevrons(const std::vector<Token>& t, std::size_t i) {
  auto chevrons = [&](std::size_t k) {
    return k + 2 < t.size() && t[k].text == "<" && t[k + 1].text == "<" && t[k + 2].text == "<";
  };
  std::size_t j = i + 1;
  if (chevrons(j)) return j;
  if (j >= t.size() || t[j].text != "<") return 0;
  for (int depth = 0; j < t.size(); ++j) {
    if (t[j].text == "<") ++depth;
    if (t[j].text == ">" && --depth == 0) return chevrons(j + 1) ? j + 1 : 0;
    if (t[j].text == ";" || t[j].text == "{") break;
  }
  return 0;
}

bool launch_at(const std::vector<Token>& t, std::size_t i) {
  return launch_chevrons(t, i) != 0;
}

// The function whose body opens at the '{' token `brace`, or none: the brace must follow a
// parameter list (and qualifiers such as const) that follows a name which is no keyword, so that
// `if (...) {`, a lambda and a namespace or class body are not taken for one.
std::optional<Function> function_at(const SourceFile& f, const std::vector<Token>& t, const Tables& x,
                                    std::size_t brace) {
  static const std::set<std::string_view> k_trailing = {"const", "noexcept", "override",
                                                        "final", "mutable",  "volatile"};
  static const std::set<std::string_view> k_not_names = {
      "if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof", "__launch_bounds__"};
  const std::size_t n = t.size();
  std::size_t close = brace;
  while (close > 0 && t[close - 1].kind == TokenKind::identifier && k_trailing.count(t[close - 1].text)) --close;
  if (close == 0 || t[close - 1].text != ")" || x.partner[close - 1] == n || x.partner[brace] == n) return std::nullopt;
  std::size_t open = x.partner[close - 1];
  if (open == 0 || t[open - 1].kind != TokenKind::identifier || k_not_names.count(t[open - 1].text))
    return std::nullopt;
  std::size_t name = open - 1;
  // Back to the declaration's start: the end of what came before (a statement, a block, a
  // directive, an access specifier), at most a few dozen tokens of return type and qualifiers.
  std::size_t start = name;
  for (int hops = 0; start > 0 && hops < 64; ++hops) {
    const Token& p = t[start - 1];
    if (p.kind == TokenKind::preprocessor || p.text == ";" || p.text == "}" || p.text == "{" || p.text == ":") break;
    --start;
  }
  Function fn;
  fn.name = std::string(t[name].text);
  for (std::size_t q = name; q >= start + 2 && t[q - 1].text == "::" && t[q - 2].kind == TokenKind::identifier; q -= 2)
    fn.name = std::string(t[q - 2].text) + "::" + fn.name; // S::run
  fn.signature = normalise(std::string_view(f.text).substr(t[start].offset, t[close - 1].offset + 1 - t[start].offset));
  fn.first_line = t[start].line;
  fn.body_first_line = t[brace].line;
  fn.last_line = t[x.partner[brace]].line;
  fn.begin = t[start].offset;
  fn.body_begin = t[brace].offset;
  fn.end = t[x.partner[brace]].offset + 1;
  return fn;
}

} // namespace

namespace {

// The host functions of `f` around each token `at` picks, each once, in file order: the
// outermost function body around it (a lambda or block inside a function counts as that function).
template <typename Pick> std::vector<Function> host_functions_at(const SourceFile& f, Pick at) {
  const auto t = lex(f.text);
  const Tables x = tables(t);
  std::vector<Function> out;
  std::vector<std::size_t> open; // the '{' around the current token, outermost first
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].text == "{") open.push_back(i);
    if (t[i].text == "}" && !open.empty()) open.pop_back();
    if (t[i].kind != TokenKind::identifier || !at(t, i)) continue;
    for (std::size_t b : open) {
      auto fn = function_at(f, t, x, b);
      if (!fn) continue;
      bool device = false; // a kernel or __device__ function: parse_source has it
      for (const auto& g : f.functions) device = device || g.begin == fn->begin || g.body_begin == fn->body_begin;
      bool seen = false;
      for (const auto& g : out) seen = seen || g.begin == fn->begin;
      if (!device && !seen) out.push_back(std::move(*fn));
      break;
    }
  }
  std::sort(out.begin(), out.end(), [](const Function& a, const Function& b) { return a.begin < b.begin; });
  return out;
}

} // namespace

std::vector<Function> launching_functions(const SourceFile& f, std::string_view kernel) {
  return host_functions_at(
      f, [&](const std::vector<Token>& t, std::size_t i) { return t[i].text == kernel && launch_at(t, i); });
}

std::vector<Function> calling_functions(const SourceFile& f, const std::vector<std::string>& prefixes) {
  return host_functions_at(f, [&](const std::vector<Token>& t, std::size_t i) {
    if (i + 1 >= t.size() || t[i + 1].text != "(") return false;
    for (const auto& p : prefixes)
      if (!p.empty() && t[i].text.substr(0, p.size()) == p) return true;
    return false;
  });
}

std::vector<Launch> find_launches(std::string_view text) {
  const auto t = lex(text);
  std::vector<Launch> out;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier) continue;
    std::size_t at = launch_chevrons(t, i);
    if (at == 0) continue;
    Launch l{std::string(t[i].text), {}, t[i].line, {}};
    std::size_t from = at + 3;
    int depth = 0;
    std::size_t j = from;
    for (; j + 2 < t.size(); ++j) {
      std::string_view x = t[j].text;
      if (depth == 0 && x == ">" && t[j + 1].text == ">" && t[j + 2].text == ">") break;
      if (x == "(" || x == "[" || x == "{") ++depth;
      if (x == ")" || x == "]" || x == "}") --depth;
      if (x == "," && depth == 0) {
        l.config.push_back(normalise(text.substr(t[from].offset, t[j].offset - t[from].offset)));
        l.config_offsets.push_back({t[from].offset, t[j].offset});
        from = j + 1;
      }
      if (x == ";") break; // no closing chevrons: not a launch after all
    }
    if (j + 2 >= t.size() || t[j].text != ">" || from >= j) continue;
    l.config.push_back(normalise(text.substr(t[from].offset, t[j].offset - t[from].offset)));
    l.config_offsets.push_back({t[from].offset, t[j].offset});
    i = j + 2;
    if (i + 1 < t.size() && t[i + 1].text == "(") {
      l.call = true;
      l.args.emplace_back();
      int depth = 0;
      for (std::size_t k = i + 2; k < t.size(); ++k) {
        std::string_view x = t[k].text;
        if (x == "(" || x == "[" || x == "{") ++depth;
        if ((x == ")" || x == "]" || x == "}") && depth-- == 0) break;
        if (x == "," && depth == 0) {
          l.args.emplace_back();
          continue;
        }
        l.args.back() += x;
      }
    }
    out.push_back(std::move(l));
  }
  return out;
}

SourceFile load_source(const std::string& path) {
  return parse_source(path, util::read_file(path));
}

const Function* SourceFile::kernel(std::string_view n) const {
  for (const auto& f : functions)
    if (f.kernel && f.name == n) return &f;
  return nullptr;
}

const Function* SourceFile::function(std::string_view n) const {
  for (const auto& f : functions)
    if (f.name == n) return &f;
  return nullptr;
}

int SourceFile::line_count() const {
  int n = 1;
  for (char c : text) n += (c == '\n');
  if (!text.empty() && text.back() == '\n') --n;
  return n;
}

std::string SourceFile::numbered(int first, int last) const {
  std::string out;
  int line = 1;
  std::size_t i = 0;
  while (i <= text.size() && line <= last) {
    std::size_t nl = text.find('\n', i);
    if (nl == std::string::npos) nl = text.size();
    if (line >= first) {
      char num[16];
      std::snprintf(num, sizeof num, "%5d | ", line);
      out += num;
      out.append(text, i, nl - i);
      out += '\n';
    }
    if (nl == text.size()) break;
    i = nl + 1;
    ++line;
  }
  return out;
}

} // namespace optimas::cuda
