#include "cuda/source.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <cctype>
#include <set>

namespace optimas::cuda {

namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

} // namespace

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

// Finds the token index matching the bracket at `open` ('(' '{' '<' '['); tokens.size() if none.
std::size_t matching(const std::vector<Token>& t, std::size_t open) {
  char o = t[open].text[0];
  char c = o == '(' ? ')' : o == '{' ? '}' : o == '[' ? ']' : '>';
  int depth = 0;
  for (std::size_t i = open; i < t.size(); ++i) {
    if (t[i].kind != TokenKind::punct) continue;
    if (t[i].text[0] == o)
      ++depth;
    else if (t[i].text[0] == c && --depth == 0)
      return i;
  }
  return t.size();
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
  auto t = lex(f.text);
  for (std::size_t i = 0; i < t.size(); ++i) {
    bool global = t[i].text == "__global__";
    bool device = t[i].text == "__device__";
    if (t[i].kind != TokenKind::identifier || (!global && !device)) continue;
    // Walk back over qualifiers and a template header to the declaration's start.
    std::size_t start = i;
    while (start > 0 && t[start - 1].kind == TokenKind::identifier &&
           (t[start - 1].text == "static" || t[start - 1].text == "inline" || t[start - 1].text == "__forceinline__" ||
            t[start - 1].text == "extern" || t[start - 1].text == "__host__" || t[start - 1].text == "__device__" ||
            t[start - 1].text == "__global__"))
      --start;
    bool is_template = false;
    if (start > 0 && t[start - 1].text == ">") {
      // template < ... > : find the matching '<' backwards.
      int depth = 0;
      std::size_t j = start - 1;
      for (;; --j) {
        if (t[j].text == ">")
          ++depth;
        else if (t[j].text == "<" && --depth == 0)
          break;
        if (j == 0) break;
      }
      if (j > 0 && t[j - 1].text == "template") {
        start = j - 1;
        is_template = true;
      }
    }
    // Forward: qualifiers, __launch_bounds__(...), return type, name, (params), then '{' or ';'.
    std::size_t j = i + 1;
    std::string launch_bounds;
    std::size_t name = t.size();
    std::size_t open = t.size();
    for (; j < t.size(); ++j) {
      if (t[j].text == "__launch_bounds__" && j + 1 < t.size() && t[j + 1].text == "(") {
        std::size_t close = matching(t, j + 1);
        if (close == t.size()) break;
        launch_bounds = std::string(f.text.substr(t[j + 1].offset + 1, t[close].offset - t[j + 1].offset - 1));
        j = close;
        continue;
      }
      if (t[j].text == "(") {
        open = j;
        break;
      }
      if (t[j].text == ";" || t[j].text == "{") break;
      if (t[j].kind == TokenKind::identifier) name = j;
    }
    if (open == t.size() || name == t.size()) continue;
    std::size_t close = matching(t, open);
    if (close + 1 >= t.size()) continue;
    std::size_t brace = close + 1;
    // Skip trailing qualifiers before the body (rare: noexcept and the like).
    while (brace < t.size() && t[brace].kind == TokenKind::identifier) ++brace;
    if (brace >= t.size() || t[brace].text != "{") {
      i = close; // a declaration, not a definition
      continue;
    }
    std::size_t body_end = matching(t, brace);
    if (body_end == t.size()) continue; // unbalanced: not a definition we can use
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
      std::string_view x = t[k].text;
      if (x == "(" || x == "<" || x == "[")
        ++depth;
      else if ((x == ")" || x == ">" || x == "]") && k != close)
        --depth;
      if ((x == "," && depth == 0) || k == close) {
        if (k > pb) fn.parameters.push_back(parse_parameter(t, pb, k));
        pb = k + 1;
      }
    }
    f.functions.push_back(std::move(fn));
    i = body_end;
  }
  return f;
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
