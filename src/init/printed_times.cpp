#include "init/printed_times.hpp"

#include "util/regex.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>

namespace optimas::init {
namespace {

const char* const k_figure = "([0-9.eE+-]+)";

// A unit word at the start of `after` (" us over 20 iterations" -> us), normalised.
std::string unit_after(const std::string& after, std::string* literal) {
  // The regex below, cheaply first: a unit starts with a letter (µ's first byte is not ASCII),
  // after at most one space. Most figures of a printed result have none.
  auto byte = [&](std::size_t i) { return i < after.size() ? static_cast<unsigned char>(after[i]) : 0; };
  const std::size_t first = std::isspace(byte(0)) ? 1 : 0;
  if (!std::isalpha(byte(first)) && byte(first) < 0x80) return {};
  static const std::regex unit(
      R"(^(\s?)(ms|msec|milliseconds?|us|usec|microseconds?|µs|ns|nsec|nanoseconds?|s|sec|secs|seconds?)\b)");
  std::smatch g;
  if (!std::regex_search(after, g, unit)) return {};
  if (literal) *literal = g[0];
  std::string u = g[2];
  if (u.rfind("ms", 0) == 0 || u.rfind("milli", 0) == 0) return "ms";
  if (u == "us" || u == "usec" || u.rfind("micro", 0) == 0 || u == "µs") return "us";
  if (u.rfind("n", 0) == 0) return "ns";
  return "s";
}

// A unit named in the label: "time (ms):", "elapsed_us=", "Time in msec", "[s]".
// The units named in a line, each with where its match ends, in order: a label's unit is the
// last one ending within it. One pass over the line, however many figures it holds.
std::vector<std::pair<std::size_t, std::string>> units_in_line(const std::string& line) {
  static const std::regex unit(
      R"((?:[\[(]|_|\bin\s)(ms|msec|milliseconds|us|usec|microseconds|ns|nsec|s|sec|seconds)(?:[\])]|\b))",
      std::regex::icase);
  std::vector<std::pair<std::size_t, std::string>> found;
  for (auto it = std::sregex_iterator(line.begin(), line.end(), unit); it != std::sregex_iterator(); ++it) {
    std::string u = util::to_lower((*it)[1].str());
    found.emplace_back(static_cast<std::size_t>(it->position(0) + it->length(0)), u[0] == 'm'   ? "ms"
                                                                                  : u[0] == 'u' ? "us"
                                                                                  : u[0] == 'n' ? "ns"
                                                                                                : "s");
  }
  return found;
}

std::string unit_in_label(const std::string& label) {
  auto units = units_in_line(label);
  return units.empty() ? std::string() : units.back().second;
}

void classify(PrintedTime& t) {
  std::string l = util::to_lower(t.label);
  t.average = util::contains(l, "average") || util::contains(l, "avg") || util::contains(l, "mean") ||
              util::contains(l, "per call") || util::contains(l, "per iteration") || util::contains(l, "per launch");
  t.kernel_word = util::contains(l, "kernel") || util::contains(l, "gpu") || util::contains(l, "device");
}

// Where the first time word of `text` ends (npos: none): a label holds one when it is no
// shorter than that.
std::size_t time_word_end(const std::string& text) {
  std::string l = util::to_lower(text);
  std::size_t end = std::string::npos;
  for (const std::string w : {"time", "elapsed", "duration", "took", "latency"})
    if (auto at = l.find(w); at != std::string::npos) end = std::min(end, at + w.size());
  return end;
}

bool time_words(const std::string& label) {
  return time_word_end(label) != std::string::npos;
}

} // namespace

double unit_ms(const std::string& unit) {
  if (unit == "ms") return 1;
  if (unit == "us") return 1e-3;
  if (unit == "ns") return 1e-6;
  if (unit == "s") return 1e3;
  return 0;
}

std::vector<PrintedTime> printed_times_in_source(const std::string& file, const std::string& text) {
  static const std::regex call(R"((?:\bprintf|\bfprintf\s*\(\s*stdout\s*,)\s*\(?\s*"((?:[^"\\\n]|\\.)*)\")");
  static const std::regex conversion(R"(%[-+ #0]*[0-9]*(?:\.[0-9]+)?(?:l|L)?([fgeFGE]))");
  static const std::regex any_conversion(R"(%[-+ #0]*[0-9]*(?:\.[0-9]+)?[a-zA-Z]+)");
  std::vector<PrintedTime> found;
  for (std::sregex_iterator it(text.begin(), text.end(), call), end; it != end; ++it) {
    std::string format = (*it)[1];
    auto line = 1 + std::count(text.begin(), text.begin() + it->position(0), '\n');
    // Each printed line on its own: the figure's label is the text before it on that line.
    std::size_t nl;
    while ((nl = format.find("\\n")) != std::string::npos || !format.empty()) {
      std::string piece = format.substr(0, nl);
      format = nl == std::string::npos ? std::string() : format.substr(nl + 2);
      std::smatch g;
      if (!std::regex_search(piece, g, conversion)) continue;
      std::string label = g.prefix().str();
      if (std::regex_search(label, any_conversion) || util::contains(label, "\\")) continue;
      std::string literal;
      std::string unit = unit_after(g.suffix().str(), &literal);
      if (unit.empty()) unit = unit_in_label(label);
      // A time word in the label, or a unit right after the figure ("%.3f ms").
      if (!time_words(label) && literal.empty()) continue;
      PrintedTime t;
      t.label = label;
      t.unit = unit;
      t.pattern = util::regex_literal(label) + k_figure + util::regex_literal(literal);
      t.where = fmt::format("{}:{}", file, line);
      classify(t);
      found.push_back(t);
    }
  }
  return found;
}

std::vector<PrintedTime> printed_times_in_output(const std::string& stdout_text) {
  static const std::regex number(R"([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)");
  std::vector<PrintedTime> found;
  for (auto view : util::split(stdout_text, '\n')) {
    std::string line(view);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // Worked out once a line, not once a figure: a printed matrix row holds hundreds of figures.
    const std::size_t time_word = time_word_end(line);
    std::vector<std::pair<std::size_t, std::string>> units;
    bool units_read = false;
    for (std::sregex_iterator it(line.begin(), line.end(), number), end; it != end; ++it) {
      const auto at = static_cast<std::size_t>(it->position(0));
      // A number glued to a word ("sm_90", "x2") is part of that word.
      if (at > 0 && (std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_')) continue;
      std::string literal;
      // " milliseconds" and a word boundary: a unit after a figure is within its next 16 characters.
      std::string unit = unit_after(line.substr(at + static_cast<std::size_t>(it->length(0)), 16), &literal);
      const bool timed = time_word <= at;
      if (!timed && literal.empty()) continue;
      if (unit.empty()) {
        if (!units_read) units = units_in_line(line), units_read = true;
        for (const auto& [ends, u] : units)
          if (ends <= at) unit = u;
      }
      if (unit.empty()) continue;
      std::string label = line.substr(0, at);
      // The label up to the figure, its numbers generalised (an iteration count in it varies).
      PrintedTime t;
      t.label = label;
      t.unit = unit;
      t.value = std::strtod(it->str().c_str(), nullptr);
      std::string shape = line_shape(label);
      t.pattern = shape.substr(1) + k_figure + util::regex_literal(literal);
      classify(t);
      found.push_back(t);
      break;
    }
  }
  return found;
}

std::string line_shape(const std::string& line) {
  static const std::regex number(R"([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)");
  std::string out = "^";
  std::size_t at = 0;
  for (std::sregex_iterator it(line.begin(), line.end(), number), end; it != end; ++it) {
    auto pos = static_cast<std::size_t>(it->position(0));
    // Spaces before a number are its padding (%8d): their count varies with the number.
    std::string literal = line.substr(at, pos - at);
    std::size_t kept = literal.find_last_not_of(' ') + 1;
    out += util::regex_literal(literal.substr(0, kept)) + (kept < literal.size() ? " *" : "") + "[-+0-9.eE]+";
    at = pos + static_cast<std::size_t>(it->length(0));
  }
  return out + util::regex_literal(line.substr(at));
}

bool looks_like_timing(const std::string& line) {
  if (!printed_times_in_output(line).empty()) return true;
  std::string l = util::to_lower(line);
  // A rate as words too: cuda-samples' BlackScholes prints "Gigaoptions per second    : 354.75",
  // MonteCarloMultiGPU "Options per sec.: 1234.5" ("per sector" is no rate).
  for (const char* w : {"gb/s", "gbytes/s", "mb/s", "gflop", "tflop", "bandwidth", "throughput", "elapsed", "time",
                        "per second", "per sec ", "per sec.", "per sec:", "/sec"})
    if (util::contains(l, w)) return true;
  // Any unit per second: cuda-samples' SobolQRNG prints "Gsamples/s: 31.25" ("i/o" is none).
  for (std::size_t at = l.find("/s"); at != std::string::npos; at = l.find("/s", at + 1)) {
    const bool unit_before = at > 0 && std::isalpha(static_cast<unsigned char>(l[at - 1]));
    const bool word_ends = at + 2 == l.size() || !std::isalpha(static_cast<unsigned char>(l[at + 2]));
    if (unit_before && word_ends) return true;
  }
  return util::trim(l).ends_with("per sec");
}

} // namespace optimas::init
