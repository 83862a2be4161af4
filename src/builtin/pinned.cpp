// The builtin optimizer's application rule pinned_host (optimize.scope: application). A copy
// from or to pageable host memory is staged by the driver through a pinned buffer of its own, at
// a fraction of the bus's speed, and the host waits for it. When the timeline's copies of one
// direction are mostly pageable and cost a share of the wall time (an AP item), each host buffer
// those copies name, allocated once with malloc in a .cu file, is allocated with cudaMallocHost
// instead and freed with cudaFreeHost. The bytes copied are the same, so results stay
// bit-identical; what changes is the wall time (pinning costs time once, each copy saves some),
// and so the loop judges a variant with this edit by the wall time (docs/loop.md).
//
// Withheld, with the reason, where the swap could break the program or cost more than it saves:
// a buffer allocated in a loop (pinned again each time), allocated or assigned more than once,
// passed to realloc, its address taken, freed in another file (free() of pinned memory is
// undefined), a file nvcc does not compile, an allocation or a free outside the host code this
// scope lets an edit change, or copies that do not recur (each buffer copied about once).
#include "analysis/application.hpp"
#include "builtin/rules.hpp"
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

// The copies' kind argument for a direction of the timeline, and which argument of cudaMemcpy
// (dst, src, bytes, kind) names the host buffer.
struct Direction {
  const char* timeline;
  const char* kind;
  std::size_t host_arg;
};
constexpr Direction k_directions[] = {{"HtoD", "cudaMemcpyHostToDevice", 1}, {"DtoH", "cudaMemcpyDeviceToHost", 0}};

// The call's arguments, each as its tokens' indices [first, last); empty when unbalanced.
std::vector<std::pair<std::size_t, std::size_t>> call_arguments(const std::vector<cuda::Token>& t, std::size_t open) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const std::size_t close = matching_token(t, open);
  if (close >= t.size()) return out;
  std::size_t from = open + 1;
  int depth = 0;
  for (std::size_t i = open + 1; i <= close; ++i) {
    const auto x = t[i].text;
    if (x == "(" || x == "[" || x == "{") ++depth;
    if ((x == ")" || x == "]" || x == "}") && i < close) --depth;
    if ((x == "," && depth == 0) || i == close) {
      out.push_back({from, i});
      from = i + 1;
    }
  }
  return out;
}

// The buffer an argument names: an identifier alone, after casts `(void *)`, `(float*)`; "" else.
std::string named_buffer(const std::vector<cuda::Token>& t, std::pair<std::size_t, std::size_t> arg) {
  auto [i, end] = arg;
  while (i < end && t[i].text == "(") {
    std::size_t close = matching_token(t, i);
    if (close >= end) return "";
    bool cast = close > i + 1 && t[close - 1].text == "*";
    if (!cast) return "";
    i = close + 1;
  }
  return end == i + 1 && t[i].kind == cuda::TokenKind::identifier ? std::string(t[i].text) : "";
}

// The token ranges of every loop body of the file (for, while, do).
std::vector<std::pair<std::size_t, std::size_t>> loop_bodies(const std::vector<cuda::Token>& t) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if ((t[i].text == "for" || t[i].text == "while") && t[i + 1].text == "(") {
      auto e = loop_extent(t, i);
      out.push_back({e.close, e.body_end});
    } else if (t[i].text == "do" && t[i + 1].text == "{") {
      out.push_back({i + 1, matching_token(t, i + 1)});
    }
  }
  return out;
}

// Calls that read or write a buffer and never free it.
const std::set<std::string> k_keeps = {"cudaMemcpy", "cudaMemcpyAsync", "memcpy", "memset",    "memmove",
                                       "memcmp",     "fread",           "fwrite", "printf",    "fprintf",
                                       "sprintf",    "snprintf",        "sizeof", "std::fill", "std::copy"};

// The body of the top-level function `name` in the tokens (its '{' and '}'), or {0, 0}.
std::pair<std::size_t, std::size_t> function_body(const std::vector<cuda::Token>& t, std::string_view name) {
  int depth = 0;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].text == "{") ++depth;
    if (t[i].text == "}") --depth;
    if (depth != 0 || t[i].text != name || t[i + 1].text != "(") continue;
    std::size_t close = matching_token(t, i + 1);
    std::size_t open = close + 1;
    while (open < t.size() && (t[open].text == "const" || t[open].text == "noexcept")) ++open;
    if (open < t.size() && t[open].text == "{") return {open, matching_token(t, open)};
  }
  return {0, 0};
}

// Why `name`, passed whole to a call, might be freed there ("" when every such call keeps it):
// each callee is a call known not to free, or a function of the sources whose body frees nothing.
std::string escapes(const std::string& name, const std::vector<cuda::Token>& t,
                    const std::map<std::string, std::string>& sources) {
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i].text != name || (t[i - 1].text != "(" && t[i - 1].text != ",") ||
        (t[i + 1].text != ")" && t[i + 1].text != ","))
      continue;
    // The call whose argument it is: the identifier before the innermost open '('.
    int depth = 0;
    std::size_t open = i;
    while (open > 0) {
      --open;
      if (t[open].text == ")") ++depth;
      if (t[open].text == "(" && depth-- == 0) break;
    }
    if (open == 0 || t[open - 1].kind != cuda::TokenKind::identifier) continue; // a cast or a parenthesis
    const std::string callee(t[open - 1].text);
    if (callee == "realloc") return fmt::format("it is passed to realloc (line {})", t[i].line);
    if (callee == "free" || k_keeps.count(callee)) continue;
    bool found = false, frees = false;
    for (const auto& [path, text] : sources) {
      const auto u = cuda::lex(text);
      auto [from, to] = function_body(u, callee);
      if (from == 0) continue;
      found = true;
      for (std::size_t x = from; x < to; ++x)
        frees = frees || u[x].text == "free" || u[x].text == "realloc" || u[x].text == "delete";
    }
    if (!found || frees)
      return fmt::format("it is passed to {} (line {}), which {}", callee, t[i].line,
                         found ? "frees memory" : "the sources do not define, and which may free it");
  }
  return "";
}

// One buffer's edits, or why it cannot be pinned.
struct BufferPlan {
  std::string name, file;
  int malloc_first = 0, malloc_last = 0;
  std::string malloc_lines;                       // the replacement of lines [malloc_first, malloc_last]
  std::vector<std::pair<int, std::string>> frees; // line -> its replacement
  std::string unsafe;
};

bool inside(const std::vector<cuda::Function>& fns, int line) {
  return std::any_of(fns.begin(), fns.end(),
                     [&](const cuda::Function& f) { return line >= f.first_line && line <= f.last_line; });
}

// The lines [first, last] of `text` with the tokens [from, to) replaced by `with`.
std::string replaced_lines(std::string_view text, int first, int last, std::size_t from, std::size_t to,
                           const std::string& with) {
  std::string out;
  for (int l = first; l <= last; ++l) out += line_text(text, l) + (l < last ? "\n" : "");
  std::size_t line_begin = 0;
  for (int l = 1; l < first; ++l) line_begin = text.find('\n', line_begin) + 1;
  return out.replace(from - line_begin, to - from, with);
}

BufferPlan plan_buffer(const std::string& name, const std::string& file_name, const std::string& text,
                       const std::vector<cuda::Function>& allowed, const std::map<std::string, std::string>& sources) {
  BufferPlan p;
  p.name = name;
  p.file = file_name;
  auto unsafe = [&p](std::string why) {
    p.unsafe = std::move(why);
    return p;
  };
  const auto t = cuda::lex(text);
  const auto loops = loop_bodies(t);
  std::size_t malloc_at = 0;
  int assigned = 0;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].text != name) continue;
    if (i > 0 && (t[i - 1].text == "&" || t[i - 1].text == "." || t[i - 1].text == "->")) {
      if (t[i - 1].text == "&") p.unsafe = fmt::format("its address is taken on line {}", t[i].line);
      continue;
    }
    if (t[i + 1].text != "=") continue;
    ++assigned;
    // `name = (T *) malloc(`, `name = malloc(`, `name = static_cast<T *>(malloc(`
    std::size_t j = i + 2;
    while (j < t.size() && t[j].text != "malloc" && t[j].text != ";") ++j;
    if (j + 1 < t.size() && t[j].text == "malloc" && t[j + 1].text == "(") malloc_at = j;
  }
  if (!p.unsafe.empty()) return p;
  if (std::string why = escapes(name, t, sources); !why.empty()) return unsafe(why);
  if (assigned != 1 || malloc_at == 0) {
    p.unsafe = assigned > 1 ? fmt::format("it is assigned {} times in {}", assigned, file_name)
                            : "it is not allocated with malloc in " + file_name;
    return p;
  }
  for (const auto& [from, to] : loops)
    if (malloc_at > from && malloc_at < to) {
      p.unsafe = fmt::format("it is allocated inside a loop (line {}): pinning it each time would cost more than the "
                             "copies save",
                             t[malloc_at].line);
      return p;
    }
  const std::size_t close = matching_token(t, malloc_at + 1);
  if (close >= t.size()) return unsafe("its malloc call does not close");
  p.malloc_first = t[malloc_at].line;
  p.malloc_last = t[close].line;
  if (!inside(allowed, p.malloc_first)) {
    p.unsafe = fmt::format("its malloc (line {}) is in a function that neither copies nor launches a hot kernel, "
                           "where optimize.scope application lets no edit go",
                           p.malloc_first);
    return p;
  }
  // Pinned once: in main, or in a function that copies the buffer in a loop of its own. Any other
  // function may itself run again and again (Rodinia's streamcluster allocates its work buffer in
  // each call of pgain), pinning the buffer each time.
  const cuda::Function* home = nullptr;
  for (const auto& fn : allowed)
    if (p.malloc_first >= fn.first_line && p.malloc_first <= fn.last_line) home = &fn;
  bool copied_in_loop = false;
  for (std::size_t i = malloc_at; home && i + 1 < t.size() && t[i].line <= home->last_line; ++i) {
    if (t[i].text.rfind("cudaMemcpy", 0) != 0 || t[i + 1].text != "(") continue;
    const std::size_t end = matching_token(t, i + 1);
    bool names = false;
    for (std::size_t x = i + 2; x < end && x < t.size(); ++x) names = names || t[x].text == name;
    for (const auto& [from, to] : loops) copied_in_loop = copied_in_loop || (names && i > from && i < to);
  }
  if (home && home->name != "main" && !copied_in_loop)
    return unsafe(fmt::format("it is allocated in {}, which copies it in no loop of its own: {} may itself run again "
                              "and again, pinning it each time",
                              home->name, home->name));
  const std::string size(
      std::string_view(text).substr(t[malloc_at + 2].offset, t[close].offset - t[malloc_at + 2].offset));
  p.malloc_lines = replaced_lines(
      text, p.malloc_first, p.malloc_last, t[malloc_at].offset, t[close].offset + 1,
      fmt::format("[&]() -> void* {{ void* pinned = nullptr; return cudaMallocHost(&pinned, {}) == cudaSuccess ? "
                  "pinned : nullptr; }}()",
                  size));
  for (const auto& [other, other_text] : sources) {
    const bool same = fs::path(other).filename() == file_name;
    const auto u = same ? t : cuda::lex(other_text);
    for (std::size_t i = 0; i + 3 < u.size(); ++i) {
      const bool call =
          (u[i].text == "free" || u[i].text == "realloc") && u[i + 1].text == "(" && u[i + 2].text == name;
      if (!call) continue;
      if (u[i].text == "realloc" || !same)
        return unsafe(fmt::format("it is passed to {} in {} (line {})", u[i].text, other, u[i].line));
      if (u[i + 3].text != ")") continue;
      if (!inside(allowed, u[i].line))
        return unsafe(fmt::format("its free (line {}) is in a function that neither copies nor launches a hot kernel, "
                                  "where optimize.scope application lets no edit go",
                                  u[i].line));
      if (u[i].line >= p.malloc_first && u[i].line <= p.malloc_last)
        return unsafe("it is freed on the line that allocates it");
      p.frees.push_back(
          {u[i].line, replaced_lines(text, u[i].line, u[i].line, u[i].offset, u[i].offset + 4, "cudaFreeHost")});
    }
  }
  return p;
}

// The AP item about the copies `d` (the timeline's traffic of one direction): its id, or "".
std::string traffic_item(const json& diagnostics, const profile::Traffic& d) {
  const std::string text = analysis::traffic_text(d);
  for (const auto& e : diagnostics.value("evidence", json::array()))
    if (text_of(e, "kind") == "application" && text_of(e, "text").rfind(text, 0) == 0) return text_of(e, "id");
  return "";
}

} // namespace

void rule_pinned_host(const ApplicationInput& in, KernelEdits& ke) {
  const json& timeline = in.diagnostics.contains("timeline") ? in.diagnostics["timeline"] : json();
  if (!timeline.is_object() || !timeline.contains("traffic") || !timeline["traffic"].is_array()) return;
  // Each buffer once, whichever directions copy it: file/name -> its plan and the items citing it.
  std::map<std::string, std::pair<BufferPlan, std::vector<std::string>>> buffers;
  std::vector<std::string> order;
  for (const auto& x : timeline["traffic"]) {
    if (!x.is_object()) continue;
    const profile::Traffic d = profile::traffic_from_json(x);
    const Direction* dir = nullptr;
    for (const auto& k : k_directions)
      if (d.direction == k.timeline) dir = &k;
    const std::string id = traffic_item(in.diagnostics, d);
    // Only copies that are mostly pageable, with an AP item (a share of the wall time) to cite.
    if (!dir || id.empty() || 2 * d.pageable < d.count) continue;
    std::vector<std::string> named;
    for (const auto& [path, text] : in.sources) {
      const std::string file_name = fs::path(path).filename().string();
      const auto t = cuda::lex(text);
      for (std::size_t i = 0; i + 1 < t.size(); ++i) {
        if (t[i].text != "cudaMemcpy" || t[i + 1].text != "(") continue;
        auto args = call_arguments(t, i + 1);
        if (args.size() != 4 || args[3].second != args[3].first + 1 || t[args[3].first].text != dir->kind) continue;
        const std::string name = named_buffer(t, args[dir->host_arg]);
        const std::string key = file_name + "/" + name;
        if (name.empty() || std::find(named.begin(), named.end(), key) != named.end()) continue;
        named.push_back(key);
        auto [at, fresh] = buffers.try_emplace(key);
        at->second.second.push_back(id);
        if (!fresh) continue;
        order.push_back(key);
        if (fs::path(path).extension() != ".cu") {
          at->second.first.name = name;
          at->second.first.file = file_name;
          at->second.first.unsafe = "the file is not compiled by nvcc, where the CUDA runtime's calls may be unknown";
          continue;
        }
        const auto f = cuda::parse_source(path, text);
        auto allowed = cuda::calling_functions(f, {"cudaMemcpy"});
        for (const auto& k : in.hot_kernels)
          for (auto& fn : cuda::launching_functions(f, k)) allowed.push_back(std::move(fn));
        at->second.first = plan_buffer(name, file_name, text, allowed, in.sources);
      }
    }
    // Pinning costs about what one copy saves: worth it where each buffer is copied again and again.
    if (!named.empty() && d.pageable < 2 * named.size()) {
      ke.withheld.push_back({"the host buffers of the " + profile::direction_words(d.direction) +
                                 " copies allocated with cudaMallocHost (pinned_host)",
                             fmt::format("{} pageable copies for {} buffer(s): each is copied about once, and pinning "
                                         "costs about what a copy saves",
                                         d.pageable, named.size()),
                             {id}});
      for (const auto& key : named) {
        auto& ids = buffers[key].second;
        std::erase(ids, id);
      }
    }
  }
  for (const auto& key : order) {
    const auto& [p, ids] = buffers[key];
    if (ids.empty()) continue;
    const std::string suggestion = fmt::format("{} in {} allocated with cudaMallocHost (pinned_host)", p.name, p.file);
    if (!p.unsafe.empty()) {
      ke.withheld.push_back({suggestion, p.unsafe, ids});
      continue;
    }
    prompt::Edit e;
    e.file = p.file;
    e.line_start = p.malloc_first;
    e.line_end = p.malloc_last;
    e.new_text = p.malloc_lines;
    e.evidence = ids;
    e.rule = "pinned_host";
    e.rationale = fmt::format(
        "{}: the copies of {} are to or from pageable memory, which the driver stages at a fraction of the bus's speed "
        "while the host waits; {} is allocated once, so pinning it costs once and every copy of it is direct "
        "(bit-identical: the same bytes are copied; judged by the wall time)",
        util::join(ids, ", "), p.name, p.name);
    ke.others.push_back(e);
    for (const auto& [line, text] : p.frees) {
      prompt::Edit f = e;
      f.line_start = f.line_end = line;
      f.new_text = text;
      f.rationale = fmt::format("{}: {} is freed with cudaFreeHost, as cudaMallocHost's memory must be",
                                util::join(ids, ", "), p.name);
      ke.others.push_back(std::move(f));
    }
  }
}

} // namespace optimas::builtin
