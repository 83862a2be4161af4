#include "init/yml_writer.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <regex>

namespace optimas::init {
namespace {

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

// A value after a key in block style: plain where YAML reads it back as the same string (braces,
// quotes and '=' are ordinary there after the first character), else single-quoted.
std::string block_scalar(const std::string& s) {
  static const std::regex plain(R"([A-Za-z0-9_./+-][A-Za-z0-9_./+ {}=$"'-]*)");
  static const std::regex special(R"(^(true|false|yes|no|on|off|null|~)$)", std::regex::icase);
  if (!s.empty() && std::regex_match(s, plain) && s.back() != ' ' && !std::regex_match(s, special)) return s;
  return quoted(s);
}

// A value inside a flow mapping or list ({name: small, n: 4}): plain when safe, else single-quoted.
std::string scalar(const std::string& s) {
  static const std::regex plain(R"([A-Za-z0-9_./+-][A-Za-z0-9_./+ -]*)");
  static const std::regex special(R"(^(true|false|yes|no|on|off|null|~)$)", std::regex::icase);
  if (!s.empty() && std::regex_match(s, plain) && s.back() != ' ' && !std::regex_match(s, special)) return s;
  return quoted(s);
}

// Comment lines at `indent`, wrapped near 100 columns; a line break in `text` starts a new line,
// and every line after the first is indented under the lead ("#   - " then "#     ").
std::string comment(const std::string& text, const std::string& indent, const std::string& lead = "# ") {
  if (text.empty()) return {};
  std::string out, prefix = lead;
  const std::string continuation = "#" + std::string(lead.size() - 1, ' ');
  auto emit = [&](const std::string& line) {
    out += indent + prefix + line + "\n";
    prefix = continuation;
  };
  for (auto paragraph : util::split(text, '\n')) {
    std::string line;
    for (auto word : util::split(paragraph, ' ')) {
      if (!line.empty() && indent.size() + prefix.size() + line.size() + word.size() > 100) {
        emit(line);
        line.clear();
      }
      line += (line.empty() ? "" : " ") + std::string(word);
    }
    if (!line.empty()) emit(line);
  }
  return out;
}

std::string decision(const std::string& key, const Decision& d, const std::string& indent) {
  std::string out = comment(d.why, indent);
  if (!d.todo.empty()) out += comment("TODO: " + d.todo, indent);
  if (d.value.empty()) return out + indent + "# " + key + ":\n";
  return out + indent + key + ": " + block_scalar(d.value) + "\n";
}

std::string config_line(const std::string& name, const std::vector<Parameter>& params, int which,
                        const std::string& tail) {
  std::string out = "{name: " + name;
  for (const auto& p : params)
    out += ", " + p.name + ": " + scalar(which == 0 ? p.value : which == 1 ? p.small : p.heldout);
  return out + tail + "}";
}

std::string kernel_time(const KernelTimeGuess& k) {
  std::string out = comment(k.why, "  ");
  if (!k.todo.empty()) out += comment("TODO: " + k.todo, "  ");
  if (!k.per_call && k.unit == "ms") return out + "  kernel_time: " + scalar(k.pattern) + "\n";
  out += "  kernel_time: {pattern: " + scalar(k.pattern) + ", unit: " + k.unit;
  if (k.per_call) out += ", per: call, calls: " + scalar(k.calls);
  return out + "}\n";
}

std::string flow_list(const std::vector<std::string>& items) {
  std::vector<std::string> q;
  for (const auto& i : items) q.push_back(scalar(i));
  return "[" + util::join(q, ", ") + "]";
}

} // namespace

std::string write_yml(const Proposal& p, const std::string& header) {
  std::string y = comment(header, "");
  y += "# Every key says why init chose it; \"TODO\" marks what it could not decide. docs/getting-started.md\n";
  if (!p.findings.empty()) {
    y += "#\n# What the runs showed:\n";
    for (const auto& f : p.findings) y += comment(f, "", "#   - ");
  }
  if (!p.todo.empty()) {
    y += "#\n# TODO:\n";
    for (const auto& t : p.todo) y += comment(t, "", "#   - ");
  }
  y += "name: " + scalar(p.name) + "\n";
  y += comment(p.sources_why, "");
  y += p.sources.empty() ? "# TODO: sources: [the files that hold the kernels]\n"
                         : "sources: " + flow_list(p.sources) + "\n";

  y += "build:\n" + decision("command", p.build.command, "  ");
  if (!p.build.clean.value.empty() || !p.build.clean.todo.empty()) y += decision("clean", p.build.clean, "  ");
  if (!p.build.dir.value.empty()) y += decision("dir", p.build.dir, "  ");
  y += decision("binary", p.build.binary, "  ");

  y += "run:\n" + decision("command", p.run.command, "  ");
  if (!p.run.outputs.empty()) {
    y += comment(p.run.outputs_why, "  ");
    y += "  output: " + (p.run.outputs.size() == 1 ? scalar(p.run.outputs[0]) : flow_list(p.run.outputs)) + "\n";
  } else if (!p.run.outputs_why.empty()) {
    y += comment("output: " + p.run.outputs_why, "  ");
  }
  if (p.kernel_time)
    y += kernel_time(*p.kernel_time);
  else
    y += comment("TODO: kernel_time: no printed time matched the kernels' (optional: the trace times them)", "  ");
  y += comment(p.timeout_why, "  ") + fmt::format("  timeout_s: {}\n", p.timeout_s);
  for (const auto& param : p.run.parameters)
    if (param.seed && param.name != "seed")
      y += "  seed: " + param.name + "   # the program's seed: validation also runs fresh ones\n";
  if (!p.needs_gpu) y += "  needs_gpu: false                 # a host program: it runs where there is no GPU\n";

  const bool any_active = std::any_of(p.ignore.begin(), p.ignore.end(), [](const IgnoreGuess& i) { return i.active; });
  if (!p.ignore.empty()) {
    // Without an active line the whole block is a comment: an empty `ignore:` would not load.
    const std::string off = any_active ? "" : "# ";
    y += off + "validate:\n";
    y += comment("stdout lines dropped before stdout is compared (they matter only when stdout is the compared "
                 "output: no {output} and no run.output)",
                 "  ");
    y += off + "  ignore:\n";
    for (const auto& i : p.ignore)
      y += comment(i.active ? i.why : "TODO: " + i.why, "    ") + (i.active ? off + "    - " : "    # - ") +
           scalar(i.pattern) + "\n";
  }

  y += "configs:\n";
  y += "  - " + config_line("default", p.run.parameters, 0, ", default: true") + "   # the arguments given to init\n";
  bool any = false;
  for (const auto& param : p.run.parameters) any = any || param.small != param.value || param.heldout != param.value;
  if (any) {
    y += "  # Suggested (uncomment once checked): a smaller input, and one the model never sees.\n";
    y += "  # - " + config_line("small", p.run.parameters, 1, "") + "\n";
    y += "  # - " + config_line("heldout", p.run.parameters, 2, ", held_out: true") + "\n";
  } else {
    y += "  # TODO: a held-out config (held_out: true) with inputs the model never sees validates variants further\n";
  }
  return y;
}

} // namespace optimas::init
