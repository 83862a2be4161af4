#include "init/arguments.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>
#include <set>

namespace fs = std::filesystem;

namespace optimas::init {
namespace {

bool is_number(const std::string& s) {
  static const std::regex number(R"([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)");
  return std::regex_match(s, number);
}

bool is_integer(const std::string& s) {
  static const std::regex integer(R"([0-9]+)");
  return std::regex_match(s, integer) && s.size() < 18;
}

bool output_flag(const std::string& name) {
  static const std::set<std::string> names = {"o",        "out",         "output", "outfile",
                                              "out_file", "output_file", "result", "dump"};
  return names.count(name) > 0;
}

// A placeholder name from a flag: "--n-steps" -> n_steps; never one the loader reserves.
std::string placeholder_name(std::string flag, std::set<std::string>& taken) {
  flag.erase(0, flag.find_first_not_of('-'));
  std::string name;
  for (char c : flag) name += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "p" + name;
  if (name == "output" || name == "name" || name == "default" || name == "held_out") name += "_value";
  std::string unique = name;
  for (int k = 2; !taken.insert(unique).second; ++k) unique = fmt::format("{}{}", name, k);
  return unique;
}

bool iteration_name(const std::string& name) {
  static const std::regex words(
      R"((^|_)(n?iters?|iterations?|calls|reps|repeats?|repetitions|steps|loops|runs|times)$)");
  return std::regex_search(name, words);
}

// Smaller and held-out values of an integer size: half, and three quarters kept to the value's
// power-of-two factor (up to 64), so that a size the program wants divisible by its block stays so.
// Iteration counts stay: the held-out input differs in its data, not in how often it is worked on.
Parameter suggest(Parameter p) {
  if (p.seed) {
    p.small = p.value == "11" ? "12" : "11";
    p.heldout = "1234";
    return p;
  }
  p.small = p.heldout = p.value;
  if (!is_integer(p.value) || iteration_name(p.name)) return p;
  long long v = std::stoll(p.value);
  if (v < 16) return p;
  long long g = 1;
  while (g < 64 && v % (2 * g) == 0) g *= 2;
  p.small = std::to_string(std::max(1LL, v / 2));
  long long h = (v * 3 / 4) / g * g;
  p.heldout = std::to_string(h > 0 && h != v ? h : v + g);
  return p;
}

} // namespace

std::string command_text(const std::vector<std::string>& tokens) {
  static const std::regex placeholder(R"([A-Za-z0-9_./=:-]*\{[A-Za-z0-9_]+\}[A-Za-z0-9_./=:-]*)");
  std::vector<std::string> words;
  for (const auto& t : tokens) words.push_back(std::regex_match(t, placeholder) ? t : util::shell_quote(t));
  return util::join(words, " ");
}

RunGuess generalise_command(const std::vector<std::string>& argv, const std::string& binary, const std::string& dir) {
  RunGuess run;
  if (argv.empty()) {
    std::string program = binary.empty() ? "./TODO-program" : "./" + binary;
    run.tokens = {program};
    run.command = {program, "the program with no arguments (give init the run command after `--` to choose them)"};
    if (binary.empty()) run.command.todo = "the program to run";
    return run;
  }
  std::set<std::string> taken;
  int positional = 0;
  run.tokens.push_back(argv[0]);
  auto add = [&](const std::string& flag, const std::string& value) {
    Parameter p;
    p.name = placeholder_name(flag, taken);
    p.value = value;
    p.seed = util::contains(util::to_lower(flag), "seed");
    run.parameters.push_back(suggest(p));
    return "{" + p.name + "}";
  };
  bool has_output = false;
  auto output_word = [&](const std::string& flag, const std::string& value) {
    std::string name = flag;
    name.erase(0, name.find_first_not_of('-'));
    std::replace(name.begin(), name.end(), '-', '_');
    bool yes = !has_output && output_flag(util::to_lower(name)) && !fs::exists(fs::path(dir) / value);
    has_output = has_output || yes;
    return yes;
  };
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    std::size_t eq = a.find('=');
    if (a.rfind("-", 0) == 0 && !is_number(a) && eq != std::string::npos) {
      std::string flag = a.substr(0, eq), value = a.substr(eq + 1);
      run.tokens.push_back(flag + "=" +
                           (is_number(value)           ? add(flag, value)
                            : output_word(flag, value) ? "{output}"
                                                       : value));
    } else if (a.rfind("-", 0) == 0 && !is_number(a) && i + 1 < argv.size() &&
               (argv[i + 1].rfind("-", 0) != 0 || is_number(argv[i + 1]))) {
      const std::string& value = argv[++i];
      run.tokens.push_back(a);
      run.tokens.push_back(is_number(value) ? add(a, value) : output_word(a, value) ? "{output}" : value);
    } else if (is_number(a)) {
      run.tokens.push_back(add(fmt::format("arg{}", ++positional), a));
    } else {
      if (a.rfind("-", 0) != 0) ++positional;
      run.tokens.push_back(a);
    }
  }
  run.command = {command_text(run.tokens),
                 run.parameters.empty() ? "the command given to init"
                                        : "the command given to init, its numbers as {placeholders} of the configs"};
  if (has_output) run.outputs_why = "the output flag's file, compared byte for byte";
  return run;
}

std::string use_output_placeholder(RunGuess& run, const std::vector<std::string>& written) {
  for (const auto& t : run.tokens)
    if (util::contains(t, "{output}")) return {};
  for (std::size_t i = 1; i < run.tokens.size(); ++i)
    for (const auto& w : written) {
      std::string& t = run.tokens[i];
      std::size_t eq = t.find('=');
      std::string value = t.rfind("-", 0) == 0 && eq != std::string::npos ? t.substr(eq + 1) : t;
      if (value != w && fs::path(value).lexically_normal() != fs::path(w)) continue;
      t = value == t ? "{output}" : t.substr(0, eq + 1) + "{output}";
      run.command.value = command_text(run.tokens);
      run.outputs_why =
          fmt::format("{}, named on the command line and written by every run, compared byte for byte", w);
      return w;
    }
  return {};
}

} // namespace optimas::init
