// The builtin optimizer's rules that edit a kernel's declaration: restrict (__restrict__ and
// const on pointer parameters) and bounds (__launch_bounds__). Both change the same text, so
// they share one edit (KernelEdits::signature).
#include "builtin/rules.hpp"

#include "builtin/access.hpp"
#include "cuda/source.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

namespace optimas::builtin {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool is_memory_dependency(const std::string& stall) {
  return stall == "stall_long_scoreboard" || stall == "stall_membar" || stall == "stall_lg_throttle";
}

// Whether elements of `type` (a pointee) are known to pass by value: arithmetic types and
// CUDA's vector types. Others may be arrays (curandDirectionVectors32_t is unsigned int[32]),
// which decay to a pointer when passed on, and a callee taking that pointer non-const rejects
// a const one (cuda-samples' MC_EstimatePiInlineQ: curand_init(dirs[0], ...)).
bool passes_by_value(const std::string& type) {
  static const std::set<std::string_view> k_vector_bases = {
      "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong", "ulonglong", "float", "double"};
  static const std::set<std::string_view> k_others = {"bool", "half", "__half", "__nv_bfloat16"};
  for (const auto& w : util::split(type, ' ')) {
    bool vector = w.size() > 1 && w.back() >= '1' && w.back() <= '4' &&
                  k_vector_bases.count(std::string_view(w).substr(0, w.size() - 1));
    if (!access::arithmetic_type_word(w) && !vector && !k_others.count(w)) return false;
  }
  return !type.empty();
}

// `f(p[i])`, `f(x, p[i])`: an element passed on whole.
bool element_passed_on(const std::vector<cuda::Token>& t, const std::string& name) {
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i].text != name || t[i + 1].text != "[" || (t[i - 1].text != "(" && t[i - 1].text != ",")) continue;
    std::size_t close = access::matching(t, i + 1);
    if (close + 1 < t.size() && (t[close + 1].text == "," || t[close + 1].text == ")")) return true;
  }
  return false;
}

// Past the template arguments `<...>` that start at `j` (name<8>, name<(16)>): the token after
// the closing '>'; t.size() when a ';' or '{' comes first.
std::size_t past_template_arguments(const std::vector<cuda::Token>& t, std::size_t j) {
  for (int depth = 0; j < t.size(); ++j) {
    if (t[j].text == "<") ++depth;
    if (t[j].text == ">" && --depth == 0) return j + 1;
    if (t[j].text == ";" || t[j].text == "{") break;
  }
  return t.size();
}

// Where else the sources declare `kernel` (a prototype, `__global__ void k(float*);`, or an
// explicit instantiation, `template __global__ void k<8>(float*);`), as file:line. A
// definition whose pointee becomes const no longer matches such a declaration: it declares
// another function, and the call to the first is left undefined (cuda-samples'
// simpleCUFFT_MGPU). __restrict__ alone is a top-level qualifier and changes no type.
std::vector<std::string> kernel_declarations(const std::map<std::string, std::string>& sources,
                                             const std::string& kernel) {
  std::vector<std::string> out;
  for (const auto& [file, text] : sources) {
    auto t = cuda::lex(text);
    for (std::size_t i = 0; i + 1 < t.size(); ++i) {
      if (t[i].text != kernel) continue;
      std::size_t open = t[i + 1].text == "<" ? past_template_arguments(t, i + 1) : i + 1; // k<8>(...)
      if (open >= t.size() || t[open].text != "(") continue;
      std::size_t k = access::matching(t, open);
      if (k + 1 >= t.size() || t[k + 1].text != ";") continue;
      bool global = false;
      for (std::size_t b = i; b-- > 0;) {
        if (t[b].text == ";" || t[b].text == "{" || t[b].text == "}" || t[b].kind == cuda::TokenKind::preprocessor)
          break;
        global = global || t[b].text == "__global__";
      }
      if (global) out.push_back(fmt::format("{}:{}", file, t[i].line));
    }
  }
  return out;
}

} // namespace

// Arguments of every launch of `kernel` in the sources: name<<<...>>>(a, b, ...), and of its
// template instances: name<8><<<...>>>(a, b, ...).
std::vector<std::vector<std::string>> launch_arguments(const std::map<std::string, std::string>& sources,
                                                       const std::string& kernel) {
  std::vector<std::vector<std::string>> out;
  for (const auto& [file, text] : sources)
    for (auto& l : cuda::find_launches(text))
      if (l.kernel == kernel && l.call) out.push_back(std::move(l.args));
  return out;
}

namespace {

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

// The text of the declaration from `__global__`... to the closing ')' of the parameters.
std::string declaration(const cuda::SourceFile& f, const cuda::Function& fn) {
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

// The memory-dependency stalls of the kernel's hot lines, and the largest one.
struct MemoryStalls {
  std::vector<std::string> evidence;
  std::string top_stall;
  double top_fraction = 0;
};

MemoryStalls memory_stalls(const json& k) {
  MemoryStalls out;
  for (const auto& l : stall_lines(k))
    if (is_memory_dependency(l.stall)) {
      out.evidence.push_back(l.id);
      if (l.fraction > out.top_fraction) {
        out.top_fraction = l.fraction;
        out.top_stall = l.stall;
      }
    }
  return out;
}

// Why the pointer parameters might alias (empty when they cannot): every launch in the sources
// must pass distinct buffers to them.
std::string aliasing_reason(const std::map<std::string, std::string>& sources, const cuda::Function& fn) {
  auto launches = launch_arguments(sources, fn.name);
  if (launches.empty()) return "no launch of the kernel was found in the sources, so aliasing cannot be ruled out";
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < fn.parameters.size(); ++i)
    if (fn.parameters[i].pointer) index.push_back(i);
  for (const auto& args : launches)
    for (std::size_t x = 0; x < index.size(); ++x)
      for (std::size_t y = x + 1; y < index.size(); ++y)
        if (index[y] < args.size() && args[index[x]] == args[index[y]])
          return "a launch passes the same buffer to two pointer parameters";
  return "";
}

// A parameter list's text split at its top-level commas, each part as written.
std::vector<std::string> split_parameters(const std::string& list) {
  std::vector<std::string> parts;
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
  return parts;
}

// The parameters the rewrite touched, by what it did to them.
struct Restricted {
  std::vector<std::string> restricted, constified, unconstified;
};

// Adds __restrict__ to each pointer part of `parts`, and const where the kernel only reads
// through it and no other declaration of the kernel would then disagree.
Restricted restrict_parameters(const cuda::Function& fn, const std::vector<cuda::Token>& body,
                               const std::vector<std::string>& declared, std::vector<std::string>& parts) {
  Restricted out;
  for (std::size_t i = 0; i < parts.size() && i < fn.parameters.size(); ++i) {
    const auto& p = fn.parameters[i];
    if (!p.pointer || p.restrict_) continue;
    std::string& part = parts[i];
    auto star = part.rfind('*');
    if (star == std::string::npos) continue;
    // `float *C` and `float*C` put the name right after the star: keep it apart.
    bool name_follows =
        star + 1 < part.size() && (std::isalnum(static_cast<unsigned char>(part[star + 1])) || part[star + 1] == '_');
    part.insert(star + 1, name_follows ? " __restrict__ " : " __restrict__");
    out.restricted.push_back(p.name);
    bool only_read = !p.const_pointee && !access::written_or_escapes(body, 0, body.size(), p.name) &&
                     (passes_by_value(access::pointee(p)) || !element_passed_on(body, p.name));
    if (only_read && !declared.empty()) {
      out.unconstified.push_back(p.name);
    } else if (only_read) {
      // const goes before the pointee type, after any leading whitespace.
      std::size_t lead = part.find_first_not_of(" \t\n");
      part.insert(lead == std::string::npos ? 0 : lead, "const ");
      out.constified.push_back(p.name);
    }
  }
  return out;
}

// What the rule tells the user: the stalls that point at aliasing, and what each parameter got.
std::string restrict_why(const cuda::Function& fn, const MemoryStalls& s, const Restricted& r,
                         const std::vector<std::string>& declared) {
  return fmt::format(
      "{}: {} dominate the hot lines ({} {:.0f}%); pointer parameters {} may alias as far as the compiler knows, so "
      "it must keep loads and stores in order. No launch passes one buffer twice, so __restrict__ is safe{}.",
      fn.name, s.top_stall == "stall_membar" ? "memory barriers" : "memory-dependency stalls", s.top_stall,
      100 * s.top_fraction, util::join(r.restricted, ", "),
      (r.constified.empty()
           ? std::string()
           : fmt::format("; {} only read, so they are also const (read-only loads)", util::join(r.constified, ", "))) +
          (r.unconstified.empty()
               ? std::string()
               : fmt::format("; {} only read but not made const: the kernel is also declared at {}, which would "
                             "then declare another function",
                             util::join(r.unconstified, ", "), util::join(declared, ", "))));
}

} // namespace

void rule_restrict(const KernelInput& in, KernelEdits& ke) {
  const cuda::SourceFile& f = in.file;
  const cuda::Function& fn = in.fn;
  MemoryStalls stalls = memory_stalls(in.kernel);
  if (stalls.evidence.empty()) return;
  bool any = false;
  for (const auto& p : fn.parameters) any = any || (p.pointer && !p.restrict_);
  if (!any) return;
  std::string why = aliasing_reason(in.sources, fn);
  // Parameters under #if (Rodinia's mummergpu): the list is rewritten as one text, which would
  // break the directives apart; the guardrails caught that, and no rule should offer it.
  const std::string decl_text = declaration(f, fn);
  const auto decl_tokens = cuda::lex(decl_text);
  auto directive = std::find_if(decl_tokens.begin(), decl_tokens.end(),
                                [](const cuda::Token& t) { return t.kind == cuda::TokenKind::preprocessor; });
  if (why.empty() && directive != decl_tokens.end()) {
    std::string_view d = util::trim(directive->text);
    why =
        fmt::format("the parameter list holds preprocessor directives (`{}`), which a rewrite of the list could break",
                    d.substr(0, d.find('\n')));
  }
  if (!why.empty()) {
    ke.withheld.push_back({fmt::format("__restrict__ on the pointer parameters of {}", fn.name), why, stalls.evidence});
    return;
  }
  // Body tokens, for telling read-only pointers.
  const auto& body = in.tokens;
  start_signature(f, fn, ke);
  std::string& decl = *ke.signature.replace;
  const auto declared = kernel_declarations(in.sources, fn.name);
  // Rewrite the parameter list from the back so that earlier offsets stay valid.
  auto params_open = decl.find('(', decl.find(fn.name));
  std::string head = decl.substr(0, params_open + 1);
  std::vector<std::string> parts = split_parameters(decl.substr(params_open + 1, decl.size() - params_open - 2));
  Restricted r = restrict_parameters(fn, body, declared, parts);
  decl = head + util::join(parts, ",") + ")";
  for (const auto& e : stalls.evidence) add_unique(ke.signature.evidence, e);
  ke.rules.push_back("restrict");
  ke.why.push_back(restrict_why(fn, stalls, r, declared));
  ke.signature.expected_effect.push_back({stalls.top_stall, "decrease"});
}

void rule_bounds(const KernelInput& in, KernelEdits& ke) {
  const json& k = in.kernel;
  const cuda::SourceFile& f = in.file;
  const cuda::Function& fn = in.fn;
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
  // A kernel that already reaches local memory (a spill or a local array) would spill more under
  // a tighter register budget, and local_to_registers may move its arrays into registers, which
  // then need more of them than were profiled: on examples/labels the two together ran at 0.81x.
  double local = access_figure(k, "local_load_requests") + access_figure(k, "local_store_requests");
  if (std::isfinite(local) && local > 0) {
    ke.withheld.push_back(
        {fmt::format("__launch_bounds__({}, {}) on {}", block, target, fn.name),
         fmt::format("the kernel already uses local memory ({:.3g} local load and store requests): a register "
                     "budget for {} blocks per SM would spill more of it",
                     local, target),
         {k["roofline"].value("id", "")}});
    return;
  }
  start_signature(f, fn, ke);
  std::string& decl = *ke.signature.replace;
  auto at = decl.find(fn.name);
  decl.insert(at, fmt::format("__launch_bounds__({}, {}) ", block, target));
  std::string rf = k["roofline"]["id"];
  add_unique(ke.signature.evidence, rf);
  ke.rules.push_back("launch_bounds");
  ke.why.push_back(
      fmt::format("{}: occupancy is limited by registers ({} blocks of {} threads per SM where warps would "
                  "allow {}); __launch_bounds__({}, {}) lets the compiler budget registers for {} blocks.",
                  fn.name, reg_blocks, block, warp_blocks, block, target, target));
  ke.signature.expected_effect.push_back({"sm__warps_active.avg.pct_of_peak_sustained_active", "increase"});
}

} // namespace optimas::builtin
