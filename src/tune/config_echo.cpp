#include "tune/config_echo.hpp"

#include "cuda/source.hpp"

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

std::string regex_escape(char c) {
  static const std::string special = R"(\^$.|?*+()[]{}-/)";
  return special.find(c) != std::string::npos ? std::string("\\") + c : std::string(1, c);
}

// One line's pattern as it is built: its regex, whether it holds a value, its letters.
struct LineOf {
  std::string regex;
  bool value = false;
  int letters = 0;
};

// The whole-line patterns of a format whose conversions are all integer ones, and how many
// conversions it has; nullopt for any other conversion.
std::optional<std::pair<std::vector<std::string>, int>> line_patterns(const std::string& format) {
  std::vector<std::string> out;
  LineOf line;
  int conversions = 0;
  auto end_line = [&] {
    if (line.value && line.letters >= 3) out.push_back("^" + line.regex + "$");
    line = {};
  };
  for (std::size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c == '\n') {
      end_line();
      continue;
    }
    if (c != '%') {
      line.regex += regex_escape(c);
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
    line.value = true;
    ++conversions;
    i = j;
  }
  end_line();
  return std::make_pair(out, conversions);
}

} // namespace

std::vector<ConfigEcho> config_echoes(const std::map<std::string, std::string>& sources,
                                      const std::set<std::string>& knobs) {
  std::vector<ConfigEcho> out;
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
      if (!literal) continue;
      ConfigEcho e{file, t[i].line, {}, {}};
      bool plain = true;
      for (std::size_t a = first + 1; a < args.size() && plain; ++a) {
        plain = !args[a].empty();
        for (std::size_t n = 0; n < args[a].size() && plain; ++n) {
          const auto* tok = args[a][n];
          if (tok->kind == cuda::TokenKind::identifier) {
            const bool call = n + 1 < args[a].size() && args[a][n + 1]->text == "(";
            plain = !call;
            const std::string name(tok->text);
            if (knobs.count(name) && std::find(e.knobs.begin(), e.knobs.end(), name) == e.knobs.end())
              e.knobs.push_back(name);
          } else if (tok->kind == cuda::TokenKind::punct) {
            plain = std::string_view("+-*/%()").find(tok->text) != std::string_view::npos && tok->text.size() == 1;
          } else {
            plain = tok->kind == cuda::TokenKind::number;
          }
        }
      }
      if (!plain || e.knobs.empty()) continue;
      auto lines = line_patterns(format);
      if (!lines || lines->second != static_cast<int>(args.size() - first - 1) || lines->first.empty()) continue;
      e.patterns = std::move(lines->first);
      out.push_back(std::move(e));
    }
  }
  return out;
}

} // namespace optimas::tune
