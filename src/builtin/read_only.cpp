// The builtin optimizer's read_only rule: loads of data a kernel never writes, on hot loop lines
// that wait for memory, go through the read-only data cache (__ldg) where __restrict__ had to be
// withheld because a launch passes one buffer to two pointer parameters. Tokens suffice here for
// the reasons given at the top of memory.cpp.
#include "builtin/rules.hpp"

#include "builtin/access.hpp"
#include "cuda/source.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

namespace optimas::builtin {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Pointee types __ldg has an overload for (sm_32_intrinsics.h).
bool ldg_type(const std::string& t) {
  static const std::set<std::string> k_types = {
      "char",         "signed char", "unsigned char", "short",         "unsigned short", "int",
      "unsigned int", "unsigned",    "long",          "unsigned long", "long long",      "unsigned long long",
      "float",        "double",      "int32_t",       "uint32_t",      "int64_t",        "uint64_t",
      "char2",        "char4",       "uchar2",        "uchar4",        "short2",         "short4",
      "ushort2",      "ushort4",     "int2",          "int4",          "uint2",          "uint4",
      "float2",       "float4",      "double2",       "longlong2",     "ulonglong2"};
  return k_types.count(t) > 0;
}

// The buffer a launch argument names: its first identifier after any cast ("(float*)d_a + n" ->
// "d_a"); empty when it is not that simple (a call, a conditional), so that it may be anything.
std::string argument_buffer(const std::string& arg) {
  static const std::set<std::string> k_skip = {
      "const", "float",  "double", "int",         "unsigned",         "char",       "short",
      "long",  "signed", "void",   "static_cast", "reinterpret_cast", "const_cast", "volatile"};
  auto t = cuda::lex(arg);
  std::string base;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].text == "?") return {};
    if (t[i].kind != cuda::TokenKind::identifier) continue;
    std::string w(t[i].text);
    if (k_skip.count(w)) continue;
    if (i + 1 < t.size() && t[i + 1].text == "(") return {}; // a call returns some pointer
    if (base.empty()) base = w;
  }
  return base;
}

// Names written in the body other than through pointer parameters and arrays it declares:
// a write we cannot trace to a launch argument.
std::string untraced_write(const std::vector<cuda::Token>& t, const cuda::Function& fn) {
  std::set<std::string> known;
  for (const auto& p : fn.parameters) known.insert(p.name);
  for (std::size_t i = 1; i + 1 < t.size(); ++i)
    if (t[i].kind == cuda::TokenKind::identifier && t[i + 1].text == "[" &&
        t[i - 1].kind == cuda::TokenKind::identifier && t[i - 1].text != "return" && t[i - 1].text != "else" &&
        t[i - 1].text != "do" && t[i - 1].text != "case")
      known.insert(std::string(t[i].text)); // `T name[N]` declares an array of the kernel's own
  std::set<std::string> seen;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].kind != cuda::TokenKind::identifier) continue;
    std::string w(t[i].text);
    bool through = t[i + 1].text == "[" ||
                   (i > 0 && t[i - 1].text == "*" && (i < 2 || t[i - 2].kind != cuda::TokenKind::identifier));
    if (!through || known.count(w) || !seen.insert(w).second) continue;
    if (access::written_or_escapes(t, 0, t.size(), w)) return w;
  }
  return {};
}

// Lines inside loops whose loads wait for memory: the first such stall cited on each.
struct HotLines {
  std::map<int, std::string> id;    // line -> evidence id
  std::map<int, std::string> stall; // line -> the stall's kind
};

HotLines hot_loop_lines(const json& k, const std::string& file, const std::vector<cuda::Token>& t, int base_line) {
  std::set<int> loop_lines;
  for (std::size_t i = 0; i + 1 < t.size(); ++i)
    if (t[i].text == "for" || t[i].text == "while")
      for (int l = t[i].line; l <= t[loop_extent(t, i).body_end].line; ++l) loop_lines.insert(base_line + l);
  HotLines hot;
  for (const auto& l : stall_lines(k))
    if (l.file == file && loop_lines.count(l.line) &&
        (l.stall == "stall_long_scoreboard" || l.stall == "stall_lg_throttle") && !hot.id.count(l.line)) {
      hot.id[l.line] = l.id;
      hot.stall[l.line] = l.stall;
    }
  return hot;
}

// Read-only pointers loaded on the hot lines, as indices of the kernel's parameters.
std::vector<std::size_t> ldg_candidates(const cuda::Function& fn, const std::vector<cuda::Token>& t, int base_line,
                                        const HotLines& hot) {
  std::vector<std::size_t> candidates;
  for (std::size_t i = 0; i < fn.parameters.size(); ++i) {
    const auto& p = fn.parameters[i];
    if (!p.pointer || p.restrict_ || access::written_or_escapes(t, 0, t.size(), p.name)) continue;
    if (std::count(p.type.begin(), p.type.end(), '*') != 1) continue;
    std::string type = p.type;
    std::replace(type.begin(), type.end(), '*', ' ');
    std::vector<std::string> words;
    std::string normal = cuda::normalise(type); // split() returns views into it
    for (auto w : util::split(normal, ' '))
      if (!w.empty()) words.emplace_back(w);
    if (!ldg_type(bare_type(words))) continue;
    bool loaded = false;
    for (std::size_t u = 0; u + 1 < t.size() && !loaded; ++u)
      loaded = t[u].text == p.name && t[u + 1].text == "[" && hot.id.count(base_line + t[u].line);
    if (loaded) candidates.push_back(i);
  }
  return candidates;
}

// Whether the kernel's launches leave this rule anything to do. With no aliasing launch,
// __restrict__ and const apply (rule restrict) and give the compiler the read-only path itself.
// A launch that passes a written buffer twice runs the kernel in place: the restrict rule's
// withheld reason covers it, and this rule is for kernels refused __restrict__ only because two
// pointers they read share a buffer.
bool ldg_applies(const cuda::Function& fn, const std::vector<cuda::Token>& t,
                 const std::vector<std::vector<std::string>>& launches, const std::vector<std::size_t>& pointers) {
  bool aliasing = false, in_place = false;
  for (const auto& args : launches)
    for (std::size_t x = 0; x < pointers.size(); ++x)
      for (std::size_t y = x + 1; y < pointers.size(); ++y)
        if (pointers[y] < args.size() && args[pointers[x]] == args[pointers[y]]) {
          aliasing = true;
          in_place = in_place || access::written_or_escapes(t, 0, t.size(), fn.parameters[pointers[x]].name) ||
                     access::written_or_escapes(t, 0, t.size(), fn.parameters[pointers[y]].name);
        }
  return !in_place && (launches.empty() || aliasing);
}

// Why parameter `c` might be written while the kernel runs (empty: it cannot be): no launch to
// check, a write the rule cannot follow, or a launch that passes its buffer to a written pointer.
std::string unproven_read_only(const cuda::Function& fn, const std::vector<cuda::Token>& t, std::size_t c,
                               const std::vector<std::vector<std::string>>& launches,
                               const std::vector<std::size_t>& pointers, const std::string& untraced) {
  const std::string& name = fn.parameters[c].name;
  if (launches.empty()) return "no launch of the kernel was found in the sources, so what else it writes is unknown";
  if (!untraced.empty())
    return fmt::format("the kernel writes through `{}`, which this rule cannot follow to a launch argument", untraced);
  for (const auto& args : launches) {
    std::string mine = c < args.size() ? argument_buffer(args[c]) : "";
    if (mine.empty())
      return fmt::format("a launch passes `{}` for {}, and which buffer that is cannot be told",
                         c < args.size() ? args[c] : "", name);
    for (std::size_t q : pointers) {
      if (q == c || q >= args.size() || !access::written_or_escapes(t, 0, t.size(), fn.parameters[q].name)) continue;
      std::string theirs = argument_buffer(args[q]);
      if (theirs.empty() || theirs == mine)
        return fmt::format("a launch passes the buffer of {} (`{}`) to {} too, which the kernel writes", name, args[c],
                           fn.parameters[q].name);
    }
  }
  return "";
}

// Hot line `line` with each load of a safe pointer wrapped in __ldg(&...); nothing when the
// line loads none of them.
std::optional<prompt::Edit> ldg_edit(const KernelInput& in, const std::vector<cuda::Token>& t, int line,
                                     const HotLines& hot, const std::vector<std::string>& safe) {
  const cuda::SourceFile& f = in.file;
  const cuda::Function& fn = in.fn;
  int base_line = fn.body_first_line - 1;
  std::string src = line_text(f.text, line);
  std::size_t line_begin = 0;
  for (int n = 1; n < line; ++n) line_begin = f.text.find('\n', line_begin) + 1;
  std::vector<std::pair<std::size_t, std::size_t>> loads; // offsets in src
  for (std::size_t u = 0; u + 1 < t.size(); ++u) {
    if (base_line + t[u].line != line || t[u + 1].text != "[" ||
        std::find(safe.begin(), safe.end(), std::string(t[u].text)) == safe.end())
      continue;
    std::size_t m = matching_token(t, u + 1);
    if (m >= t.size() || base_line + t[m].line != line) continue;
    loads.push_back({fn.body_begin + t[u].offset - line_begin, fn.body_begin + t[m].offset + 1 - line_begin});
    u = m;
  }
  if (loads.empty()) return std::nullopt;
  std::string out = src;
  for (auto it = loads.rbegin(); it != loads.rend(); ++it)
    out = out.substr(0, it->first) + "__ldg(&" + out.substr(it->first, it->second - it->first) + ")" +
          out.substr(it->second);
  const std::string& stall = hot.stall.at(line);
  prompt::Edit e;
  e.rule = "read_only";
  e.file = fs::path(f.path).filename().string();
  e.kernel = fn.name;
  e.line_start = line;
  e.line_end = line;
  e.new_text = out;
  e.evidence = {hot.id.at(line)};
  e.rationale = fmt::format(
      "{}: line {} waits on its loads ({}) in a loop; {} {} never written by the kernel, but a launch passes one "
      "buffer to two pointer parameters, so __restrict__ was withheld and the compiler cannot use the read-only "
      "path by itself. __ldg loads through the read-only data cache. Bit-identical: no launch passes these "
      "buffers to a pointer the kernel writes, and the kernel writes through nothing else, so the data stays "
      "constant while the kernel runs and every load returns the same value as before.",
      fn.name, line, stall, util::join(safe, ", "), safe.size() == 1 ? "is" : "are");
  e.expected_effect.push_back({stall, "decrease"});
  return e;
}

} // namespace

void rule_read_only(const KernelInput& in, KernelEdits& ke) {
  const cuda::Function& fn = in.fn;
  const std::string& file = in.file_name;
  const auto& t = in.tokens;
  const int base_line = in.base_line;
  HotLines hot = hot_loop_lines(in.kernel, file, t, base_line);
  if (hot.id.empty()) return;
  std::vector<std::size_t> candidates = ldg_candidates(fn, t, base_line, hot);
  if (candidates.empty()) return;
  auto launches = launch_arguments(in.sources, fn.name);
  std::vector<std::size_t> pointers;
  for (std::size_t i = 0; i < fn.parameters.size(); ++i)
    if (fn.parameters[i].pointer) pointers.push_back(i);
  if (!ldg_applies(fn, t, launches, pointers)) return;
  std::vector<std::string> evidence;
  for (const auto& [line, id] : hot.id) evidence.push_back(id);
  std::string untraced = untraced_write(t, fn);
  std::vector<std::string> safe;
  for (std::size_t c : candidates) {
    const std::string& name = fn.parameters[c].name;
    std::string why = unproven_read_only(fn, t, c, launches, pointers, untraced);
    if (why.empty())
      safe.push_back(name);
    else
      ke.withheld.push_back(
          {fmt::format("{}: load {} through the read-only data cache (__ldg)", fn.name, name), why, evidence});
  }
  if (safe.empty()) return;
  for (const auto& [line, id] : hot.id) {
    if (edit_on_line(ke, file, line)) continue; // another rule rewrote this line; leave it to that one
    if (auto e = ldg_edit(in, t, line, hot, safe)) ke.others.push_back(std::move(*e));
  }
}

} // namespace optimas::builtin
