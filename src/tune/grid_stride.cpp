// The grid knob's guard (grid_stride.hpp), on cuda::lex tokens of the kernel's body: each read of
// blockIdx or gridDim is followed to where it ends up, through the variables it initialises.
#include "tune/grid_stride.hpp"

#include "cuda/macros.hpp"

#include <fmt/format.h>

#include <set>

namespace optimas::tune {

namespace {

using Tokens = std::vector<cuda::Token>;

struct Range {
  std::size_t begin = 0, end = 0;
  bool has(std::size_t i) const { return i >= begin && i < end; }
};

struct Loop {
  Range init;   // `i = start`
  Range stride; // E of the increment `i += E`; empty when the increment is something else
};

struct Declaration {
  std::size_t name = 0; // the token of `type name = init;`
  Range init;
};

bool opens(std::string_view s) {
  return s == "(" || s == "[" || s == "{";
}
bool closes(std::string_view s) {
  return s == ")" || s == "]" || s == "}";
}

// The token that closes the bracket `open` opens; t.size() when none does.
std::size_t closing(const Tokens& t, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < t.size(); ++i)
    if (opens(t[i].text))
      ++depth;
    else if (closes(t[i].text) && --depth == 0)
      return i;
  return t.size();
}

std::vector<Loop> for_loops(const Tokens& t) {
  std::vector<Loop> out;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].text != "for" || t[i + 1].text != "(") continue;
    const std::size_t close = closing(t, i + 1);
    std::vector<std::size_t> semicolons, commas;
    int depth = 0;
    for (std::size_t j = i + 2; j < close; ++j)
      if (opens(t[j].text))
        ++depth;
      else if (closes(t[j].text))
        --depth;
      else if (depth == 0 && t[j].text == ";")
        semicolons.push_back(j);
      else if (depth == 0 && t[j].text == "," && !semicolons.empty())
        commas.push_back(j);
    if (semicolons.size() != 2) continue;
    Loop l;
    l.init = {i + 2, semicolons[0]};
    // The variable the init sets (the name before its `=`) is the one the step advances.
    std::string_view set;
    for (std::size_t j = l.init.begin; j + 1 < l.init.end; ++j)
      if (t[j + 1].text == "=" && t[j].kind == cuda::TokenKind::identifier) {
        set = t[j].text;
        break;
      }
    const std::size_t k = semicolons[1] + 1;
    if (commas.empty() && k + 3 < close && t[k].text == set && !set.empty() && t[k + 1].text == "+" &&
        t[k + 2].text == "=")
      l.stride = {k + 3, close};
    out.push_back(l);
  }
  return out;
}

// `type name = init;`: a name after a word, then `=` (not `==`); the initialiser ends at the
// statement's `;` or a `,` of the same depth.
std::vector<Declaration> declarations(const Tokens& t) {
  std::vector<Declaration> out;
  for (std::size_t i = 1; i + 2 < t.size(); ++i) {
    if (t[i].kind != cuda::TokenKind::identifier || t[i - 1].kind != cuda::TokenKind::identifier ||
        t[i + 1].text != "=" || t[i + 2].text == "=")
      continue;
    std::size_t j = i + 2;
    for (int depth = 0; j < t.size(); ++j) {
      if (opens(t[j].text)) ++depth;
      if (closes(t[j].text) && --depth < 0) break;
      if (depth == 0 && (t[j].text == ";" || t[j].text == ",")) break;
    }
    out.push_back({i, {i + 2, j}});
  }
  return out;
}

class Checker {
public:
  Checker(const Tokens& t, int first_line)
      : m_t(t), m_loops(for_loops(t)), m_declarations(declarations(t)), m_line0(first_line) {}

  // "" when every read of blockIdx and gridDim starts or strides a grid-stride loop.
  std::string check() {
    for (std::size_t i = 0; i < m_t.size(); ++i) {
      const bool block = m_t[i].text == "blockIdx", grid = m_t[i].text == "gridDim";
      if (!block && !grid) continue;
      if (i + 2 >= m_t.size() || m_t[i + 1].text != "." || m_t[i + 2].text != "x")
        return fmt::format("line {}: it reads {} in y or z", line(i), m_t[i].text);
      if (!used_well(i, grid))
        return m_why.empty() ? fmt::format("line {}: it reads {} other than to start or stride a "
                                           "grid-stride loop",
                                           line(i), m_t[i].text)
                             : m_why;
    }
    if (!m_grid_loop) return "it has no grid-stride loop (a start from blockIdx, a stride from gridDim)";
    return "";
  }

private:
  int line(std::size_t i) const { return m_line0 + m_t[i].line - 1; }

  // Token j names a member (`s.name`, `p->name`), not the variable.
  bool member(std::size_t j) const {
    return j > 0 && (m_t[j - 1].text == "." || (j > 1 && m_t[j - 1].text == ">" && m_t[j - 2].text == "-"));
  }

  // A loop's stride reads the grid: gridDim, or a variable set from it (whose every use strides).
  bool strided_by_grid(const Loop& l) {
    for (std::size_t j = l.stride.begin; j < l.stride.end; ++j) {
      if (m_t[j].text == "gridDim") return true;
      for (const auto& d : m_declarations)
        if (m_t[j].text == m_t[d.name].text && d.init.end <= j && reads(d.init, "gridDim") && name_used_well(d, true))
          return true;
    }
    return false;
  }

  bool reads(Range r, std::string_view what) const {
    for (std::size_t j = r.begin; j < r.end; ++j)
      if (m_t[j].text == what) return true;
    return false;
  }

  // Token i (a read of blockIdx, or of a variable set from it; `grid`: of gridDim or its
  // variables) starts a grid-stride loop, strides one, or initialises a variable that does.
  bool used_well(std::size_t i, bool grid) {
    for (const auto& l : m_loops) {
      if (grid && l.stride.has(i)) return true;
      if (!grid && l.init.has(i) && strided_by_grid(l)) return m_grid_loop = true;
    }
    for (const auto& d : m_declarations)
      if (d.init.has(i)) return name_used_well(d, grid);
    return false;
  }

  bool name_used_well(const Declaration& d, bool grid) {
    const std::string name(m_t[d.name].text);
    if (!m_visiting.insert(name).second) return true; // being checked further up
    bool ok = true;
    for (std::size_t j = d.init.end; j < m_t.size() && ok; ++j)
      if (m_t[j].text == name && !member(j)) ok = used_well(j, grid);
    m_visiting.erase(name);
    if (!ok && m_why.empty())
      m_why = fmt::format("line {}: {}, set from {}, is used other than to start or stride a grid-stride loop",
                          line(d.name), name, grid ? "gridDim" : "blockIdx");
    return ok;
  }

  const Tokens& m_t;
  std::vector<Loop> m_loops;
  std::vector<Declaration> m_declarations;
  int m_line0;
  std::set<std::string> m_visiting;
  std::string m_why;
  bool m_grid_loop = false;
};

bool reads_the_grid(std::string_view text) {
  return text.find("blockIdx") != std::string_view::npos || text.find("gridDim") != std::string_view::npos;
}

// A function of the sources the body calls, or a macro it names, that reads blockIdx or gridDim.
std::string hidden_read(const Tokens& t, const std::vector<cuda::SourceFile>& sources) {
  std::set<std::string> names;
  for (const auto& tok : t)
    if (tok.kind == cuda::TokenKind::identifier) names.emplace(tok.text);
  for (const auto& f : sources) {
    for (const auto& fn : f.functions)
      if (names.count(fn.name) &&
          reads_the_grid(std::string_view(f.text).substr(fn.body_begin, fn.end - fn.body_begin)))
        return fmt::format("it calls {} ({}:{}), which reads blockIdx or gridDim", fn.name, f.path, fn.first_line);
    for (const auto& macros : {cuda::object_macros(f.text), cuda::function_macros(f.text)})
      for (const auto& m : macros)
        if (names.count(m.name) && reads_the_grid(m.text))
          return fmt::format("it names the macro {} ({}:{}), which reads blockIdx or gridDim", m.name, f.path, m.line);
  }
  return "";
}

} // namespace

std::string grid_dependence(const cuda::SourceFile& file, const cuda::Function& kernel,
                            const std::vector<cuda::SourceFile>& sources) {
  const std::string_view body = std::string_view(file.text).substr(kernel.body_begin, kernel.end - kernel.body_begin);
  const Tokens t = cuda::lex(body);
  if (std::string hidden = hidden_read(t, sources); !hidden.empty()) return hidden;
  return Checker(t, kernel.body_first_line).check();
}

} // namespace optimas::tune
