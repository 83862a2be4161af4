// The builtin backend: a deterministic rule-based optimizer that needs no model. Each rule maps
// evidence to a source transformation, as an expert would, and answers with the same JSON reply
// a model gives, so it flows through the same parser, guardrails and metrics. A rule whose
// evidence is absent stays silent; a rule that fires says why and cites the evidence.
//
// Rules (bit-exact unless noted):
//   restrict  — __restrict__ on pointer parameters (and const on the ones only read) when
//               memory-dependency stalls dominate and no launch passes one buffer twice;
//   bounds    — __launch_bounds__(block, blocks) from the profiled block size when registers
//               limit occupancy;
//   unroll    — #pragma unroll on constant-trip innermost loops whose lines wait or branch;
//   hoist     — a loop condition's invariant, expensive bound (a load, a division, a call)
//               computed once before the loop, when the loop header line stalls and the loop
//               writes no memory the bound could read;
//   reciprocal — (changes results) division by a floating-point kernel parameter on a hot line
//               inside a loop becomes a multiplication by its reciprocal, computed once. It is
//               applied only with allow_fp_changes; otherwise it is listed as withheld, since
//               outputs are compared bit for bit.
#include "llm/backend.hpp"

#include "cuda/source.hpp"
#include "prompt/reply.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

namespace optimas::llm {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct StallLine {
  std::string id, file, stall;
  int line = 0;
  double fraction = 0;
};

// The salient PC lines of a kernel, from the diagnostics JSON.
std::vector<StallLine> stall_lines(const json& kernel) {
  std::vector<StallLine> out;
  if (!kernel.contains("stalls") || kernel["stalls"].is_null()) return out;
  for (const auto& l : kernel["stalls"]["lines"])
    out.push_back(
        {l["id"], fs::path(l["file"].get<std::string>()).filename().string(), l["stall"], l["line"], l["fraction"]});
  return out;
}

bool is_memory_dependency(const std::string& stall) {
  return stall == "stall_long_scoreboard" || stall == "stall_membar" || stall == "stall_lg_throttle";
}

// Whether the kernel body writes through a pointer parameter (or lets it escape, which could).
bool written_in_body(const std::vector<cuda::Token>& body, const std::string& name) {
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (body[i].kind != cuda::TokenKind::identifier || body[i].text != name) continue;
    std::size_t j = i + 1;
    if (j < body.size() && body[j].text == "[") {
      int depth = 0;
      for (; j < body.size(); ++j) {
        if (body[j].text == "[") ++depth;
        if (body[j].text == "]" && --depth == 0) break;
      }
      ++j;
    }
    if (j < body.size()) {
      std::string_view next = body[j].text;
      // `p[i] = x`, `p[i] += x`, `p[i]++`: a write (x == y is a comparison, not a write).
      if (next == "=" && !(j + 1 < body.size() && body[j + 1].text == "=")) return true;
      if ((next == "+" || next == "-" || next == "*" || next == "/" || next == "|" || next == "&" || next == "^") &&
          j + 1 < body.size() && (body[j + 1].text == "=" || body[j + 1].text == next))
        return true;
    }
    // Passed to a call, stored in another pointer, or its address taken (`atomicAdd(&p[i], 1)`;
    // a binary `&` counts too, which only withholds const): assume it may be written.
    if (i > 0 && body[i - 1].text == "&") return true;
    bool subscripted = i + 1 < body.size() && body[i + 1].text == "[";
    if (!subscripted && !(i > 0 && body[i - 1].text == "*")) return true;
    if (i > 0 && body[i - 1].text == "*" && j < body.size() && body[j].text == "=") return true;
  }
  return false;
}

// Where a launch's "<<<" starts after a kernel's name at `i`: right after it, or after the
// template arguments of an instance (name<W><<<...); 0 when this is no launch.
std::size_t launch_chevrons(const std::vector<cuda::Token>& t, std::size_t i) {
  std::size_t j = i + 1;
  auto chevrons = [&](std::size_t k) {
    return k + 2 < t.size() && t[k].text == "<" && t[k + 1].text == "<" && t[k + 2].text == "<";
  };
  if (!chevrons(j) && j < t.size() && t[j].text == "<") {
    int depth = 0;
    for (; j < t.size(); ++j) {
      if (t[j].text == "<") ++depth;
      if (t[j].text == ">" && --depth == 0) break;
      if (t[j].text == ";" || t[j].text == "{") return 0;
    }
    ++j;
  }
  return chevrons(j) ? j : 0;
}

// Arguments of every launch of `kernel` in the sources: name<<<...>>>(a, b, ...), and of its
// template instances: name<8><<<...>>>(a, b, ...).
std::vector<std::vector<std::string>> launch_arguments(const std::map<std::string, std::string>& sources,
                                                       const std::string& kernel) {
  std::vector<std::vector<std::string>> out;
  for (const auto& [file, text] : sources) {
    auto t = cuda::lex(text);
    for (std::size_t i = 0; i + 3 < t.size(); ++i) {
      if (t[i].text != kernel) continue;
      std::size_t at = launch_chevrons(t, i);
      if (at == 0) continue;
      std::size_t j = at + 3;
      while (j + 2 < t.size() && !(t[j].text == ">" && t[j + 1].text == ">" && t[j + 2].text == ">")) ++j;
      j += 3;
      if (j >= t.size() || t[j].text != "(") continue;
      std::vector<std::string> args(1);
      int depth = 0;
      for (++j; j < t.size(); ++j) {
        std::string_view x = t[j].text;
        if (x == "(" || x == "[" || x == "{") ++depth;
        if ((x == ")" || x == "]" || x == "}") && depth-- == 0) break;
        if (x == "," && depth == 0) {
          args.emplace_back();
          continue;
        }
        args.back() += x;
      }
      out.push_back(std::move(args));
    }
  }
  return out;
}

struct KernelEdits {
  prompt::Edit signature; // restrict and bounds together: they touch the same text
  bool signature_changed = false;
  std::vector<std::string> why;
  std::vector<prompt::Edit> others;
  std::vector<prompt::Withheld> withheld;
};

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

// The extent of a loop starting at token `at` (`for` or `while`): its header's closing ')' and
// the last token of its body (the matching '}' or the ';' of a single statement).
struct LoopExtent {
  std::size_t close = 0;
  std::size_t body_end = 0;
};

LoopExtent loop_extent(const std::vector<cuda::Token>& t, std::size_t at) {
  LoopExtent e;
  int depth = 0;
  for (e.close = at + 1; e.close < t.size(); ++e.close) {
    if (t[e.close].text == "(") ++depth;
    if (t[e.close].text == ")" && --depth == 0) break;
  }
  e.body_end = e.close + 1;
  if (e.body_end < t.size() && t[e.body_end].text == "{") {
    int d = 0;
    for (; e.body_end < t.size(); ++e.body_end) {
      if (t[e.body_end].text == "{") ++d;
      if (t[e.body_end].text == "}" && --d == 0) break;
    }
  } else {
    while (e.body_end < t.size() && t[e.body_end].text != ";") ++e.body_end;
  }
  e.close = std::min(e.close, t.size() - 1);
  e.body_end = std::min(e.body_end, t.size() - 1);
  return e;
}

} // namespace

namespace {

class BuiltinBackend : public Backend {
public:
  explicit BuiltinBackend(const BackendConfig& c) {
    auto it = c.options.find("allow_fp_changes");
    m_allow_fp_changes = it != c.options.end() && (it->second == "true" || it->second == "1");
  }

  std::string name() const override { return "builtin"; }

  Result complete(const Request& request) override {
    const json& ctx = request.context;
    if (!ctx.is_object() || !ctx.contains("diagnostics") || !ctx.contains("sources"))
      return Failure{FailureKind::bad_request,
                     "the builtin optimizer works from the structured diagnostics and sources, which this request "
                     "lacks (use optimas optimize or optimas ask)"};
    std::map<std::string, std::string> sources = ctx["sources"].get<std::map<std::string, std::string>>();
    std::map<std::string, cuda::SourceFile> parsed;
    for (const auto& [name, text] : sources) parsed.emplace(name, cuda::parse_source(name, text));

    prompt::Reply reply;
    std::vector<std::string> summary;
    std::set<const cuda::Function*> edited;
    for (const auto& k : ctx["diagnostics"]["kernels"]) {
      std::string name = k["kernel"].get<std::string>();
      name = name.substr(0, name.find('<'));
      const cuda::SourceFile* file = nullptr;
      const cuda::Function* fn = nullptr;
      for (const auto& [fname, f] : parsed)
        if (const auto* x = f.kernel(name)) {
          file = &f;
          fn = x;
          break;
        }
      // Instances of one template share its source: the hottest one (listed first) decides its edits.
      if (!fn || !edited.insert(fn).second) continue;
      KernelEdits ke;
      rule_restrict(k, *file, *fn, sources, ke);
      rule_bounds(k, *file, *fn, ke);
      rule_unroll(k, *file, *fn, ke);
      rule_hoist(k, *file, *fn, ke);
      rule_reciprocal(k, *file, *fn, ke);
      if (ke.signature_changed) {
        ke.signature.rationale = util::join(ke.why, " ");
        reply.edits.push_back(std::move(ke.signature));
      }
      for (auto& e : ke.others) reply.edits.push_back(std::move(e));
      for (auto& w : ke.withheld) reply.withheld.push_back(std::move(w));
      if (!ke.why.empty() || !ke.others.empty()) summary.push_back(name);
    }
    reply.summary = summary.empty()
                        ? "No rule's evidence is present: no change proposed."
                        : "Rule-based edits for " + util::join(summary, ", ") + ", each citing its evidence.";
    Response out;
    out.text = prompt::to_json(reply).dump(2);
    out.model = "builtin";
    out.raw = out.text;
    out.usage.cost_known = true;
    return out;
  }

private:
  // The text of the declaration from `__global__`... to the closing ')' of the parameters.
  static std::string declaration(const cuda::SourceFile& f, const cuda::Function& fn) {
    std::size_t open = f.text.find('(', f.text.find(fn.name, fn.begin));
    std::size_t close = fn.body_begin;
    while (close > open && f.text[close] != ')') --close;
    return f.text.substr(fn.begin, close + 1 - fn.begin);
  }

  void start_signature(const cuda::SourceFile& f, const cuda::Function& fn, KernelEdits& ke) {
    if (ke.signature_changed) return;
    ke.signature.file = fs::path(f.path).filename().string();
    ke.signature.kernel = fn.name;
    ke.signature.find = declaration(f, fn);
    ke.signature.replace = *ke.signature.find;
    ke.signature_changed = true;
  }

  void rule_restrict(const json& k, const cuda::SourceFile& f, const cuda::Function& fn,
                     const std::map<std::string, std::string>& sources, KernelEdits& ke) {
    std::vector<std::string> evidence;
    std::string top_stall;
    double top_fraction = 0;
    for (const auto& l : stall_lines(k))
      if (is_memory_dependency(l.stall)) {
        evidence.push_back(l.id);
        if (l.fraction > top_fraction) {
          top_fraction = l.fraction;
          top_stall = l.stall;
        }
      }
    if (evidence.empty()) return;
    std::vector<const cuda::Parameter*> pointers;
    for (const auto& p : fn.parameters)
      if (p.pointer && !p.restrict_) pointers.push_back(&p);
    if (pointers.empty()) return;
    // Aliasing: every launch in the sources must pass distinct buffers to the pointer parameters.
    auto launches = launch_arguments(sources, fn.name);
    std::vector<std::size_t> index;
    for (std::size_t i = 0; i < fn.parameters.size(); ++i)
      if (fn.parameters[i].pointer) index.push_back(i);
    bool aliasing = launches.empty();
    for (const auto& args : launches)
      for (std::size_t x = 0; x < index.size() && !aliasing; ++x)
        for (std::size_t y = x + 1; y < index.size() && !aliasing; ++y)
          if (index[y] < args.size() && args[index[x]] == args[index[y]]) aliasing = true;
    if (aliasing) {
      ke.withheld.push_back({fmt::format("__restrict__ on the pointer parameters of {}", fn.name),
                             launches.empty()
                                 ? "no launch of the kernel was found in the sources, so aliasing cannot be ruled out"
                                 : "a launch passes the same buffer to two pointer parameters",
                             evidence});
      return;
    }
    // Body tokens, for telling read-only pointers.
    auto body = cuda::lex(std::string_view(f.text).substr(fn.body_begin, fn.end - fn.body_begin));
    start_signature(f, fn, ke);
    std::string& decl = *ke.signature.replace;
    std::vector<std::string> restricted, constified;
    // Rewrite the parameter list from the back so that earlier offsets stay valid.
    auto params_open = decl.find('(', decl.find(fn.name));
    std::string head = decl.substr(0, params_open + 1);
    std::string list = decl.substr(params_open + 1, decl.size() - params_open - 2);
    std::vector<std::string> parts;
    {
      int depth = 0;
      std::string cur;
      for (char c : list) {
        if (c == '(' || c == '<' || c == '[') ++depth;
        if (c == ')' || c == '>' || c == ']') --depth;
        if (c == ',' && depth == 0) {
          parts.push_back(cur);
          cur.clear();
          continue;
        }
        cur += c;
      }
      parts.push_back(cur);
    }
    for (std::size_t i = 0; i < parts.size() && i < fn.parameters.size(); ++i) {
      const auto& p = fn.parameters[i];
      if (!p.pointer || p.restrict_) continue;
      std::string& part = parts[i];
      auto star = part.rfind('*');
      if (star == std::string::npos) continue;
      part.insert(star + 1, " __restrict__");
      restricted.push_back(p.name);
      if (!p.const_pointee && !written_in_body(body, p.name)) {
        // const goes before the pointee type, after any leading whitespace.
        std::size_t lead = part.find_first_not_of(" \t\n");
        part.insert(lead == std::string::npos ? 0 : lead, "const ");
        constified.push_back(p.name);
      }
    }
    decl = head + util::join(parts, ",") + ")";
    for (const auto& e : evidence) add_unique(ke.signature.evidence, e);
    ke.why.push_back(fmt::format(
        "{}: {} dominate the hot lines ({} {:.0f}%); pointer parameters {} may alias as far as the compiler knows, so "
        "it must keep loads and stores in order. No launch passes one buffer twice, so __restrict__ is safe{}.",
        fn.name, top_stall == "stall_membar" ? "memory barriers" : "memory-dependency stalls", top_stall,
        100 * top_fraction, util::join(restricted, ", "),
        constified.empty()
            ? ""
            : fmt::format("; {} only read, so they are also const (read-only loads)", util::join(constified, ", "))));
    ke.signature.expected_effect.push_back({top_stall, "decrease"});
  }

  void rule_bounds(const json& k, const cuda::SourceFile& f, const cuda::Function& fn, KernelEdits& ke) {
    if (!k.contains("roofline") || k["roofline"].is_null()) return;
    const json& occ = k["roofline"]["occupancy"];
    std::string limiter = occ.value("limiter", "");
    int block = occ.value("block_size", 0);
    if (limiter.find("registers") == std::string::npos || block <= 0 || !fn.launch_bounds.empty()) return;
    const json& limits = occ.value("blocks_per_sm_limits", json::object());
    double reg_blocks =
        limits.contains("registers") && limits["registers"].is_number() ? limits["registers"].get<double>() : 0;
    double warp_blocks = limits.contains("warps") && limits["warps"].is_number() ? limits["warps"].get<double>() : 0;
    if (reg_blocks <= 0) return;
    // Ask for the blocks per SM the warp limit would allow, at most twice today's.
    int target = static_cast<int>(std::min(warp_blocks > 0 ? warp_blocks : 2 * reg_blocks, 2 * reg_blocks));
    if (target <= reg_blocks) return; // registers are not the only limit: nothing to gain
    start_signature(f, fn, ke);
    std::string& decl = *ke.signature.replace;
    auto at = decl.find(fn.name);
    decl.insert(at, fmt::format("__launch_bounds__({}, {}) ", block, target));
    std::string rf = k["roofline"]["id"];
    add_unique(ke.signature.evidence, rf);
    ke.why.push_back(
        fmt::format("{}: occupancy is limited by registers ({} blocks of {} threads per SM where warps would "
                    "allow {}); __launch_bounds__({}, {}) lets the compiler budget registers for {} blocks.",
                    fn.name, reg_blocks, block, warp_blocks, block, target, target));
    ke.signature.expected_effect.push_back({"sm__warps_active.avg.pct_of_peak_sustained_active", "increase"});
  }

  void rule_unroll(const json& k, const cuda::SourceFile& f, const cuda::Function& fn, KernelEdits& ke) {
    auto lines = stall_lines(k);
    std::string file = fs::path(f.path).filename().string();
    std::string_view text(f.text);
    auto t = cuda::lex(text.substr(fn.body_begin, fn.end - fn.body_begin));
    int base_line = fn.body_first_line - 1;
    // Names that hold compile-time constants: #defines and template parameters.
    std::set<std::string> constants;
    for (const auto& tok : cuda::lex(text))
      if (tok.kind == cuda::TokenKind::preprocessor) {
        auto words = util::split(cuda::normalise(tok.text.substr(1)), ' ');
        if (words.size() >= 2 && words[0] == "define") constants.insert(std::string(words[1]));
      }
    for (std::size_t i = 0; i + 1 < t.size(); ++i) {
      if (t[i].text != "for" || t[i + 1].text != "(") continue;
      // Header: for (int v = N; v < C; ...) with N a literal and C a literal or a known constant.
      auto [close, body_end] = loop_extent(t, i);
      std::vector<std::string_view> h;
      for (std::size_t x = i + 2; x < close; ++x) h.push_back(t[x].text);
      bool constant_trip =
          h.size() >= 9 && h[0] == "int" && h[2] == "=" && std::isdigit(static_cast<unsigned char>(h[3][0])) &&
          h[4] == ";" && h[5] == h[1] && (h[6] == "<" || h[6] == "<=") &&
          (std::isdigit(static_cast<unsigned char>(h[7][0])) || constants.count(std::string(h[7]))) && h[8] == ";";
      if (!constant_trip) continue;
      // Innermost: no other loop in its body.
      bool inner = true;
      for (std::size_t x = close + 1; x < body_end && x < t.size(); ++x)
        if (t[x].text == "for" || t[x].text == "while") inner = false;
      if (!inner) continue;
      int first = base_line + t[i].line, last = base_line + t[body_end].line;
      // Already unrolled?
      std::size_t line_begin = text.rfind('\n', t[i].offset + fn.body_begin);
      std::size_t prev_begin = line_begin == std::string_view::npos ? 0 : text.rfind('\n', line_begin - 1);
      std::string_view prev = text.substr(prev_begin == std::string_view::npos ? 0 : prev_begin + 1,
                                          line_begin - (prev_begin == std::string_view::npos ? 0 : prev_begin + 1));
      if (prev.find("#pragma unroll") != std::string_view::npos) continue;
      std::vector<std::string> evidence;
      std::string stall;
      for (const auto& l : lines)
        if (l.file == file && l.line >= first && l.line <= last &&
            (l.stall == "stall_wait" || l.stall == "stall_branch_resolving" || l.stall == "stall_no_instructions")) {
          evidence.push_back(l.id);
          if (stall.empty()) stall = l.stall;
        }
      if (evidence.empty()) continue;
      std::size_t start = line_begin == std::string_view::npos ? 0 : line_begin + 1;
      std::size_t end = text.find('\n', start);
      std::string line(text.substr(start, end - start));
      std::string indent = line.substr(0, line.find_first_not_of(" \t"));
      prompt::Edit e;
      e.file = file;
      e.kernel = fn.name;
      e.line_start = first;
      e.line_end = first;
      e.new_text = indent + "#pragma unroll\n" + line;
      e.evidence = evidence;
      e.rationale =
          fmt::format("{}: the loop at line {} has a constant trip count ({} {} {}) and its lines show {}; "
                      "unrolling removes the loop branch and lets independent iterations overlap. The order of "
                      "operations is unchanged, so results stay bit-identical.",
                      fn.name, first, h[5], h[6], h[7], stall);
      e.expected_effect.push_back({stall, "decrease"});
      ke.others.push_back(std::move(e));
      i = close;
    }
  }

  void rule_hoist(const json& k, const cuda::SourceFile& f, const cuda::Function& fn, KernelEdits& ke) {
    std::string file = fs::path(f.path).filename().string();
    std::string_view text(f.text);
    auto t = cuda::lex(text.substr(fn.body_begin, fn.end - fn.body_begin));
    int base_line = fn.body_first_line - 1;
    std::size_t base = fn.body_begin;
    std::set<std::string> const_params, other_pointers, local_arrays;
    for (const auto& p : fn.parameters)
      if (p.pointer) (p.const_pointee ? const_params : other_pointers).insert(p.name);
    // Local arrays (`T name[N];`) live in registers or local memory: writes to them are safe.
    for (std::size_t i = 1; i + 1 < t.size(); ++i)
      if (t[i].kind == cuda::TokenKind::identifier && t[i + 1].text == "[" &&
          t[i - 1].kind == cuda::TokenKind::identifier && t[i - 1].text != "return")
        local_arrays.insert(std::string(t[i].text));
    // Local pointer declarations (`T* p =`, at the start of a statement): writes through them
    // could reach anything, so a loop using one is not touched.
    for (std::size_t i = 2; i + 1 < t.size(); ++i) {
      bool statement_start = i < 3 || t[i - 3].text == ";" || t[i - 3].text == "{" || t[i - 3].text == "}" ||
                             t[i - 3].text == "const" || t[i - 3].text == "(";
      if (t[i].kind == cuda::TokenKind::identifier && t[i - 1].text == "*" &&
          t[i - 2].kind == cuda::TokenKind::identifier && statement_start &&
          (t[i + 1].text == "=" || t[i + 1].text == ";" || t[i + 1].text == ","))
        other_pointers.insert(std::string(t[i].text));
    }
    auto lines = stall_lines(k);
    for (std::size_t i = 0; i + 1 < t.size(); ++i) {
      if (t[i].text != "for" || t[i + 1].text != "(") continue;
      auto [close, body_end] = loop_extent(t, i);
      std::size_t semi1 = 0, semi2 = 0;
      int depth = 0;
      for (std::size_t x = i + 1; x < close; ++x) {
        if (t[x].text == "(") ++depth;
        if (t[x].text == ")") --depth;
        if (t[x].text == ";" && depth == 1) (semi1 ? semi2 : semi1) = x;
      }
      if (!semi1 || !semi2) continue;
      // cond: v OP E
      std::size_t c0 = semi1 + 1;
      if (c0 + 2 >= semi2 || t[c0].kind != cuda::TokenKind::identifier) continue;
      std::string v(t[c0].text);
      std::size_t e0 = c0 + 1;
      std::string op(t[e0].text);
      if (op == "<" || op == ">" || op == "!") {
        if (t[e0 + 1].text == "=") ++e0;
      } else {
        continue;
      }
      if (op == "!" && t[e0].text != "=") continue;
      ++e0;
      std::size_t e1 = semi2; // E = tokens [e0, e1)
      bool expensive = false, invariant = true;
      std::set<std::string> used;
      for (std::size_t x = e0; x < e1; ++x) {
        std::string_view w = t[x].text;
        if (w == "/" || w == "%" || w == "[") expensive = true;
        if (t[x].kind != cuda::TokenKind::identifier) continue;
        if (x + 1 < e1 && t[x + 1].text == "(") {
          expensive = true; // a call: __ffs, sqrt, ...
          continue;
        }
        if (w == v) invariant = false;
        used.insert(std::string(w));
        if (x + 1 < e1 && t[x + 1].text == "[" && !const_params.count(std::string(w))) invariant = false;
      }
      if (!expensive || !invariant) continue;
      // The loop: its increment and body must not change what E reads, nor write memory.
      bool safe = true;
      for (std::size_t x = semi2 + 1; x < body_end && x < t.size() && safe; ++x) {
        std::string w(t[x].text);
        if (t[x].kind != cuda::TokenKind::identifier) continue;
        std::string_view next = x + 1 < t.size() ? t[x + 1].text : "";
        std::string_view after = x + 2 < t.size() ? t[x + 2].text : "";
        bool assigned =
            (next == "=" && after != "=") ||
            ((next == "+" || next == "-" || next == "*" || next == "/") && (after == "=" || after == next)) ||
            (x > 0 && (t[x - 1].text == "&" || (t[x - 1].text == "+" && x > 1 && t[x - 2].text == "+")));
        if (used.count(w) && assigned) safe = false;
        // Memory writes or escapes through anything but a local array.
        if (other_pointers.count(w)) safe = false;
        if (next == "[" && !local_arrays.count(w) && !const_params.count(w)) safe = false;
      }
      if (!safe) continue;
      int line = base_line + t[i].line;
      std::vector<std::string> evidence;
      std::string stall;
      for (const auto& l : lines)
        if (l.file == file && l.line == line) {
          evidence.push_back(l.id);
          stall = l.stall;
        }
      if (evidence.empty()) continue;
      std::size_t e_begin = base + t[e0].offset, e_end = base + t[e1 - 1].offset + t[e1 - 1].text.size();
      std::string expr(text.substr(e_begin, e_end - e_begin));
      std::size_t line_begin = text.rfind('\n', base + t[i].offset);
      line_begin = line_begin == std::string_view::npos ? 0 : line_begin + 1;
      std::size_t line_end = text.find('\n', line_begin);
      std::string src(text.substr(line_begin, line_end - line_begin));
      if (src.find(expr) == std::string::npos || src.find(expr) != src.rfind(expr)) continue;
      std::string bound = v + "_bound";
      std::string indent = src.substr(0, src.find_first_not_of(" \t"));
      std::string new_line = src;
      new_line.replace(new_line.find(expr), expr.size(), bound);
      prompt::Edit e;
      e.file = file;
      e.kernel = fn.name;
      e.line_start = line;
      e.line_end = line;
      e.new_text = fmt::format("{}const auto {} = {};\n{}", indent, bound, expr, new_line);
      e.evidence = evidence;
      e.rationale =
          fmt::format("{}: the loop condition at line {} evaluates `{}` on every iteration and the line shows {}; "
                      "nothing in the loop changes it or writes memory it reads, so it is computed once before "
                      "the loop. Same value, same comparison: results stay bit-identical.",
                      fn.name, line, expr, stall);
      e.expected_effect.push_back({stall, "decrease"});
      ke.others.push_back(std::move(e));
      i = close;
    }
  }

  void rule_reciprocal(const json& k, const cuda::SourceFile& f, const cuda::Function& fn, KernelEdits& ke) {
    std::string file = fs::path(f.path).filename().string();
    std::map<std::string, std::string> fp_params; // name -> "1.0f" or "1.0"
    for (const auto& p : fn.parameters)
      if (!p.pointer && (p.type == "float" || p.type == "const float"))
        fp_params[p.name] = "1.0f";
      else if (!p.pointer && (p.type == "double" || p.type == "const double"))
        fp_params[p.name] = "1.0";
    if (fp_params.empty()) return;
    std::string_view text(f.text);
    auto t = cuda::lex(text.substr(fn.body_begin, fn.end - fn.body_begin));
    int base_line = fn.body_first_line - 1;
    // Lines inside loops of the kernel body.
    std::set<int> loop_lines;
    for (std::size_t i = 0; i + 1 < t.size(); ++i) {
      if (t[i].text != "for" && t[i].text != "while") continue;
      auto extent = loop_extent(t, i);
      for (int l = t[i].line; l <= t[extent.body_end].line; ++l) loop_lines.insert(base_line + l);
    }
    for (const auto& l : stall_lines(k)) {
      if (l.file != file || !loop_lines.count(l.line)) continue;
      for (std::size_t i = 0; i + 1 < t.size(); ++i) {
        if (base_line + t[i].line != l.line || t[i].text != "/" || !fp_params.count(std::string(t[i + 1].text)))
          continue;
        std::string divisor(t[i + 1].text);
        if (i + 2 < t.size() && (t[i + 2].text == "[" || t[i + 2].text == "(" || t[i + 2].text == ".")) continue;
        std::string suggestion =
            fmt::format("{}: multiply by a reciprocal of {} computed once instead of dividing on line {}", fn.name,
                        divisor, l.line);
        if (!m_allow_fp_changes) {
          ke.withheld.push_back(
              {suggestion,
               "x * (1/y) can differ from x / y in the last bit and outputs are compared bit for bit; "
               "run with --option allow_fp_changes=true to apply it",
               {l.id}});
          return;
        }
        std::size_t line_begin = text.rfind('\n', fn.body_begin + t[i].offset) + 1;
        std::size_t line_end = text.find('\n', line_begin);
        std::string src(text.substr(line_begin, line_end - line_begin));
        std::string from = "/ " + divisor, alt = "/" + divisor;
        std::string inv = divisor + "_inv";
        std::string out = src;
        for (const auto& pattern : {from, alt})
          for (std::size_t pos; (pos = out.find(pattern)) != std::string::npos;)
            out.replace(pos, pattern.size(), "* " + inv);
        std::string decl_text = "  const auto " + inv + " = " + fp_params[divisor] + " / " + divisor + ";";
        prompt::Edit e;
        e.file = file;
        e.kernel = fn.name;
        e.line_start = l.line;
        e.line_end = l.line;
        e.new_text = out;
        e.evidence = {l.id};
        e.rationale = suggestion + " (changes floating-point results; allowed by allow_fp_changes).";
        e.expected_effect.push_back({l.stall, "decrease"});
        // The reciprocal is computed once, as the body's first statement.
        int decl_line = fn.body_first_line + 1;
        if (decl_line == l.line) {
          e.new_text = decl_text + "\n" + out;
        } else {
          std::size_t b = 0;
          for (int n = 1; n < decl_line; ++n) b = text.find('\n', b) + 1;
          prompt::Edit decl;
          decl.file = file;
          decl.kernel = fn.name;
          decl.line_start = decl_line;
          decl.line_end = decl_line;
          decl.new_text = decl_text + "\n" + std::string(text.substr(b, text.find('\n', b) - b));
          decl.evidence = {l.id};
          decl.rationale = fmt::format("{}: the reciprocal of {} for the edit of line {}, computed once per thread.",
                                       fn.name, divisor, l.line);
          ke.others.push_back(std::move(decl));
        }
        ke.others.push_back(std::move(e));
        return;
      }
    }
  }

  // Rules that change floating-point results run only when this is set.
  bool m_allow_fp_changes = false;
};

} // namespace

std::unique_ptr<Backend> make_builtin(const BackendConfig& config) {
  return std::make_unique<BuiltinBackend>(config);
}

} // namespace optimas::llm
