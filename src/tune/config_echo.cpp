#include "tune/config_echo.hpp"

#include "cuda/macros.hpp"
#include "cuda/source.hpp"
#include "tune/discover.hpp"
#include "util/regex.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

namespace optimas::tune {

namespace {

// A format's text with its escapes read; nullopt for an escape other than \n \t \\ \" \'.
std::optional<std::string> unescape(std::string_view literal) {
  std::string out;
  for (std::size_t i = 0; i < literal.size(); ++i) {
    if (literal[i] != '\\') {
      out += literal[i];
      continue;
    }
    static constexpr std::string_view escaped = "nt\\\"'", meant = "\n\t\\\"'";
    const std::size_t at = ++i < literal.size() ? escaped.find(literal[i]) : std::string_view::npos;
    if (at == std::string_view::npos) return std::nullopt;
    out += meant[at];
  }
  return out;
}

// One line a format prints: its regex, the indices of its conversions, its letters.
struct Line {
  std::string regex;
  std::vector<std::size_t> values;
  int letters = 0;
};

// The lines of a format whose conversions are all integer ones (the last may be unfinished), and
// how many conversions it has; nullopt for any other conversion.
std::optional<std::pair<std::vector<Line>, std::size_t>> lines_of(const std::string& format) {
  std::vector<Line> out(1);
  std::size_t conversions = 0;
  for (std::size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    Line& line = out.back();
    if (c == '\n') {
      out.emplace_back();
      continue;
    }
    if (c != '%') {
      line.regex += util::regex_literal(std::string(1, c));
      line.letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '%') {
      line.regex += "%";
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    while (j < format.size() && std::string_view("-+ #0").find(format[j]) != std::string_view::npos) ++j;
    while (j < format.size() && std::isdigit(static_cast<unsigned char>(format[j]))) ++j;
    while (j < format.size() && std::string_view("hlzjt").find(format[j]) != std::string_view::npos) ++j;
    if (j >= format.size()) return std::nullopt;
    char conv = format[j];
    if (conv == 'd' || conv == 'i' || conv == 'u')
      line.regex += " *[-+]?[0-9]+ *";
    else if (conv == 'x' || conv == 'X')
      line.regex += " *(0[xX])?[0-9a-fA-F]+ *";
    else
      return std::nullopt; // %f, %s, %c, %p, %*d, precisions: not a configuration's integer
    line.values.push_back(conversions++);
    i = j;
  }
  return std::make_pair(out, conversions);
}

// The knob `name` is, or that its value was computed from before offset `at` (through variables
// set once, a few steps deep); "" for none.
std::string knob_behind(std::string_view text, std::size_t at, const std::string& name,
                        const std::set<std::string>& knobs, int steps = 3) {
  if (knobs.count(name)) return name;
  if (steps == 0) return "";
  const std::string value = variable_value(text, at, name);
  for (const auto& id : cuda::identifiers_in(value))
    if (auto knob = knob_behind(text, at, id, knobs, steps - 1); !knob.empty()) return knob;
  return "";
}

} // namespace

std::vector<ConfigEcho> config_echoes(const std::map<std::string, std::string>& sources,
                                      const std::set<std::string>& knobs) {
  std::vector<ConfigEcho> out;
  std::set<std::string> macros; // every object macro of the sources: a value that is the same in every build
  for (const auto& [file, text] : sources)
    for (const auto& m : cuda::object_macros(text)) macros.insert(m.name);
  for (const auto& [file, text] : sources) {
    const auto t = cuda::lex(text);
    for (std::size_t i = 0; i + 1 < t.size(); ++i) {
      const bool f = t[i].text == "fprintf";
      if ((t[i].text != "printf" && !f) || t[i + 1].text != "(") continue;
      if (i > 0 && (t[i - 1].text == "." || t[i - 1].text == ">")) continue; // a member, not the C call
      // The arguments, split at the call's own commas.
      std::vector<std::vector<const cuda::Token*>> args(1);
      int depth = 1;
      std::size_t k = i + 2;
      for (; k < t.size() && depth > 0; ++k) {
        if (t[k].text == "\\") continue; // a line continued (pathfinder's printf)
        if (t[k].text == "(") ++depth;
        if (t[k].text == ")" && --depth == 0) break;
        if (t[k].text == "," && depth == 1)
          args.emplace_back();
        else
          args.back().push_back(&t[k]);
      }
      if (depth != 0) continue;
      std::size_t first = 0;
      if (f) {
        if (args.front().size() != 1 || args.front().front()->text != "stdout") continue;
        first = 1;
      }
      if (args.size() <= first || args[first].empty()) continue;
      std::string format;
      bool literal = true;
      for (const auto* tok : args[first]) {
        literal = literal && tok->kind == cuda::TokenKind::string && tok->text.size() >= 2;
        if (!literal) break;
        auto text_of = unescape(tok->text.substr(1, tok->text.size() - 2));
        if (!text_of)
          literal = false;
        else
          format += *text_of;
      }
      auto lines = lines_of(format); // first: most prints of results have a %f, and end here
      if (!literal || !lines || lines->second != args.size() - first - 1 || lines->second == 0) continue;
      // Each value: plain (names, numbers, arithmetic: no call, element or member), then what
      // it is: computed from a knob, or fixed (numbers and macros only, the same in every build).
      ConfigEcho e{file, t[i].line, {}, {}};
      std::vector<bool> knobbed, fixed;
      bool plain = true;
      for (std::size_t a = first + 1; a < args.size() && plain; ++a) {
        plain = !args[a].empty();
        std::string knob;
        bool constant = true;
        for (std::size_t n = 0; n < args[a].size() && plain; ++n) {
          const auto* tok = args[a][n];
          if (tok->kind == cuda::TokenKind::identifier) {
            plain = !(n + 1 < args[a].size() && args[a][n + 1]->text == "(");
            const std::string name(tok->text);
            const std::string behind = knob_behind(text, t[i].offset, name, knobs);
            if (!behind.empty() && knob.empty()) knob = behind;
            constant = constant && macros.count(name) && !knobs.count(name);
          } else if (tok->kind == cuda::TokenKind::punct) {
            plain = std::string_view("+-*/%()").find(tok->text) != std::string_view::npos && tok->text.size() == 1;
          } else {
            plain = tok->kind == cuda::TokenKind::number;
          }
        }
        knobbed.push_back(!knob.empty());
        fixed.push_back(constant && knob.empty());
        if (!knob.empty() && std::find(e.knobs.begin(), e.knobs.end(), knob) == e.knobs.end()) e.knobs.push_back(knob);
      }
      if (!plain || e.knobs.empty()) continue;
      // A line is dropped whole when a knob is behind one of its values and every other value is
      // fixed: it reports the configuration and nothing computed. The first line may continue
      // what was printed before, and the last one what follows: they are matched whole anyway.
      for (const auto& line : lines->first) {
        bool any = false, only = !line.values.empty() && line.letters >= 3;
        for (std::size_t v : line.values) {
          any = any || knobbed[v];
          only = only && (knobbed[v] || fixed[v]);
        }
        if (any && only) e.patterns.push_back("^" + line.regex + "$");
      }
      if (e.patterns.empty()) continue;
      out.push_back(std::move(e));
    }
  }
  return out;
}

} // namespace optimas::tune
