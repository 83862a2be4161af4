// vector_loads: a grid-stride loop over consecutive elements whose loads wait on
// long_scoreboard while memory throughput stays low (few bytes in flight per thread) gets a
// vector path: each thread takes 16 bytes of every array per step (float4, int4, uint4,
// double2), under a check that the arrays are 16-byte aligned, and the original loop stays as
// the fallback. The tail (fewer than one vector of elements) runs the original body.
//
// Why this stays bit-identical: every element i is computed by the original body text with the
// same i, reading the same values (a vector load returns the same bits as the scalar loads) and
// storing the same results; iterations carry no state (the body assigns only variables it
// declares) and touch only element i of any array they write, so no iteration reads what
// another writes and the order in which elements are processed cannot matter. nvcc sees the
// same expression per element, so it contracts multiply-adds the same way.
// Token-level matching (see access.hpp); anything else is withheld with the reason.
#include "builtin/access.hpp"
#include "builtin/rules.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace optimas::builtin {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using access::Tokens;

using access::Outcome;
using access::withhold;

// Words that may stand before a name without declaring it (`else x = 1;`).
bool keyword(std::string_view w) {
  return w == "return" || w == "else" || w == "do" || w == "case" || w == "goto" || w == "sizeof";
}

// The vector type of 16 bytes of `elem` and its components.
struct Vector {
  std::string type, make;
  std::vector<std::string> parts;
};

Vector vector_of(const std::string& elem) {
  if (elem == "float") return {"float4", "make_float4", {"x", "y", "z", "w"}};
  if (elem == "double") return {"double2", "make_double2", {"x", "y"}};
  if (elem == "int") return {"int4", "make_int4", {"x", "y", "z", "w"}};
  return {"uint4", "make_uint4", {"x", "y", "z", "w"}}; // unsigned, unsigned int
}

// The loop's start is the global thread index and its step the grid's size, directly or
// through variables declared so before it and never changed.
bool is_grid_stride(const Tokens& t, const access::ForLoop& loop) {
  std::string i(t[loop.var].text);
  auto means = [&](std::size_t b, std::size_t e, bool (*test)(const Tokens&, std::size_t, std::size_t)) {
    if (test(t, b, e)) return true;
    if (e != b + 1 || t[b].kind != cuda::TokenKind::identifier) return false;
    auto init = access::initialiser(t, 0, loop.at, t[b].text);
    return init && test(t, init->first, init->second) && !access::assigned(t, init->second, t.size(), t[b].text);
  };
  if (loop.step_end < loop.step_begin + 4 || t[loop.step_begin].text != i || t[loop.step_begin + 1].text != "+" ||
      t[loop.step_begin + 2].text != "=")
    return false;
  if (!means(loop.init_begin, loop.init_end, access::is_thread_index) ||
      !means(loop.step_begin + 3, loop.step_end, access::is_grid_size))
    return false;
  return true;
}

struct Array {
  std::string name, elem;
  bool read = false, written = false, plain_stores_only = true;
  std::vector<std::pair<std::size_t, std::size_t>> at_i; // [name, ']'] of each name[i]
};

// What the loop body does with each pointer parameter, and the names it declares.
struct BodyScan {
  std::map<std::string, Array> arrays;
  std::set<std::string> declared;
  bool has_continue = false, nested = false;
};

// Fills `s` from the body of the loop over `i`, or returns why the body cannot run per element
// (empty when it can).
std::string scan_body(const cuda::Function& fn, const Tokens& t, const access::ForLoop& loop, const std::string& i,
                      BodyScan& s) {
  int depth = 0;
  for (std::size_t x = loop.body_begin; x < loop.body_end; ++x) {
    std::string_view w = t[x].text;
    if (w == "{") ++depth;
    if (w == "}") --depth;
    if (w == "return" || w == "break" || w == "goto" || w == "__syncthreads" || w == "asm" || w == "__syncwarp")
      return fmt::format("the loop body holds `{}`", w);
    s.nested = s.nested || w == "for" || w == "while" || w == "do";
    s.has_continue = s.has_continue || w == "continue";
    if (t[x].kind != cuda::TokenKind::identifier) continue;
    if (x + 1 < loop.body_end && t[x + 1].text == "(" && !access::pure_call(w) && !access::arithmetic_type_word(w))
      return fmt::format("the loop body calls {}, which could write memory", w);
    if (x > loop.body_begin && t[x - 1].kind == cuda::TokenKind::identifier && !keyword(t[x - 1].text) &&
        x + 1 < loop.body_end && (t[x + 1].text == "=" || t[x + 1].text == ";" || t[x + 1].text == "["))
      s.declared.insert(std::string(w));
    const cuda::Parameter* p = nullptr;
    for (const auto& q : fn.parameters)
      if (q.pointer && q.name == w) p = &q;
    if (!p) continue;
    Array& a = s.arrays[p->name];
    a.name = p->name;
    a.elem = access::pointee(*p);
    bool written = access::written_or_escapes(t, x, x + 1, w);
    if (x + 3 < loop.body_end && t[x + 1].text == "[" && t[x + 2].text == i && t[x + 3].text == "]") {
      a.at_i.push_back({x, x + 3});
      bool plain = written && t[x + 4].text == "=" && depth == 0 &&
                   (x == loop.body_begin || t[x - 1].text == ";" || t[x - 1].text == "{" || t[x - 1].text == "}");
      a.plain_stores_only = a.plain_stores_only && plain;
    } else if (written) {
      return fmt::format("{} is written at an index other than [{}] (or passed on)", a.name, i);
    } else {
      std::size_t close = x + 1 < loop.body_end ? access::matching(t, x + 1) : t.size();
      return fmt::format("{} is read at [{}], not at [{}]: the index pattern is not unit-stride", a.name,
                         close < t.size() ? access::text(t, x + 2, close) : "?", i);
    }
    (written ? a.written : a.read) = true;
  }
  if (s.nested && s.has_continue) return "a `continue` inside a nested loop";
  return "";
}

// Loop-carried state: a variable from outside the loop that the body assigns. Returns why the
// order of elements matters, or empty.
std::string carried_state(const Tokens& t, const access::ForLoop& loop, const BodyScan& s) {
  for (std::size_t x = loop.body_begin; x < loop.body_end; ++x)
    if (t[x].kind == cuda::TokenKind::identifier && !s.declared.count(std::string(t[x].text)) &&
        !s.arrays.count(std::string(t[x].text)) &&
        (access::assigned(t, x, x + 1, t[x].text) ||
         (x + 1 < loop.body_end && t[x + 1].text == "[" && access::written_or_escapes(t, x, x + 1, t[x].text))))
      return fmt::format("the body accumulates into {} across iterations: a different order of elements "
                         "per thread would change its result",
                         t[x].text);
  return "";
}

// The generated code's ingredients.
struct Plan {
  std::string i, type, start, step, end; // the loop's variable, its type and its bounds as written
  std::vector<const Array*> arrays;      // those indexed at [i], in name order
  int width = 0;                         // elements per 16 bytes
  bool has_continue = false;
};

// Puts the arrays indexed at [i] into `plan` with the width of their common element size, or
// returns why one step cannot cover them.
std::string choose_arrays(const BodyScan& s, Plan& plan) {
  int size = 0;
  for (const auto& [name, a] : s.arrays) {
    if (a.at_i.empty()) continue;
    int e = access::element_size(a.elem);
    if (e == 0) return fmt::format("{}'s element type `{}` has no vector type here", name, a.elem);
    if (size && e != size) return "the arrays' elements differ in size, so one step cannot cover them all";
    size = e;
    plan.arrays.push_back(&a);
  }
  if (plan.arrays.empty()) return fmt::format("no array is read or written at [{}]", plan.i);
  plan.width = 16 / size;
  return "";
}

// Appends one array's vector load (or its uninitialised elements) to `loads` and, when written,
// its vector store to `stores`.
void array_lines(const Array& a, const Plan& plan, const std::string& ind, std::string& loads, std::string& stores) {
  Vector v = vector_of(a.elem);
  bool load = a.read || !a.plain_stores_only || plan.has_continue; // a skipped store must keep the old value
  if (load) {
    std::vector<std::string> parts;
    for (const auto& c : v.parts) parts.push_back(fmt::format("{}_q.{}", a.name, c));
    loads += fmt::format("{i}    const {V} {a}_q = reinterpret_cast<const {V}*>({a})[{n}_v];\n"
                         "{i}    {T} {a}_e[{W}] = {{{p}}};\n",
                         fmt::arg("i", ind), fmt::arg("V", v.type), fmt::arg("a", a.name), fmt::arg("n", plan.i),
                         fmt::arg("T", a.elem), fmt::arg("W", plan.width), fmt::arg("p", util::join(parts, ", ")));
  } else {
    loads += fmt::format("{}    {} {}_e[{}];\n", ind, a.elem, a.name, plan.width);
  }
  if (a.written) {
    std::vector<std::string> parts;
    for (int c = 0; c < plan.width; ++c) parts.push_back(fmt::format("{}_e[{}]", a.name, c));
    stores += fmt::format("{i}    reinterpret_cast<{V}*>({a})[{n}_v] = {m}({p});\n", fmt::arg("i", ind),
                          fmt::arg("V", v.type), fmt::arg("a", a.name), fmt::arg("n", plan.i), fmt::arg("m", v.make),
                          fmt::arg("p", util::join(parts, ", ")));
  }
}

// The loop's replacement: the vector path under the alignment check, then the tail, with the
// original loop as the fallback.
std::string vector_code(std::string_view body_text, const Tokens& t, const access::ForLoop& loop, const Plan& plan) {
  const std::string& i = plan.i;
  std::string ind = access::indent_at(body_text, t[loop.at].offset);
  std::vector<std::string> aligned;
  std::string loads, stores;
  std::vector<access::Replacement> subs;
  for (const Array* a : plan.arrays) {
    aligned.push_back(fmt::format("(reinterpret_cast<size_t>({}) & 15) == 0", a->name));
    array_lines(*a, plan, ind, loads, stores);
    for (auto [b, close] : a->at_i) subs.push_back({b, close + 1, fmt::format("{}_e[{}_k]", a->name, i)});
  }
  std::string body = access::rewrite(body_text, t, loop.body_begin, loop.body_end, subs);
  std::string plain_body = access::rewrite(body_text, t, loop.body_begin, loop.body_end, {});
  std::size_t first_line = body_text.rfind('\n', t[loop.at].offset) + 1;
  std::size_t last_end = body_text.find('\n', t[loop.last].offset);
  std::string original(body_text.substr(first_line, last_end - first_line));
  return fmt::format(
      "{ind}if ({aligned}) {{\n"
      "{ind}  // vector_loads: {W} consecutive elements per thread and step, one 16-byte access per array; each\n"
      "{ind}  // element is computed by the original body. The tail and unaligned arrays take the original loop.\n"
      "{ind}  for ({ty} {i}_v = {start}; {i}_v < ({end}) / {W}; {i}_v += {step}) {{\n"
      "{loads}"
      "{ind}    #pragma unroll\n"
      "{ind}    for (int {i}_k = 0; {i}_k < {W}; {i}_k++) {{\n"
      "{ind}      const {ty} {i} = {i}_v * {W} + {i}_k;\n"
      "{ind}      {body}\n"
      "{ind}    }}\n"
      "{stores}"
      "{ind}  }}\n"
      "{ind}  for ({ty} {i} = ({end}) / {W} * {W} + {start}; {i} < ({end}); {i} += {step}) {{\n"
      "{ind}    {plain}\n"
      "{ind}  }}\n"
      "{ind}}} else {{\n"
      "{orig}\n"
      "{ind}}}",
      fmt::arg("ind", ind), fmt::arg("aligned", util::join(aligned, " && ")), fmt::arg("W", plan.width),
      fmt::arg("ty", plan.type), fmt::arg("i", i), fmt::arg("start", plan.start), fmt::arg("end", plan.end),
      fmt::arg("step", plan.step), fmt::arg("loads", loads), fmt::arg("stores", stores),
      fmt::arg("body", access::indented(body, "    ").substr(4)),
      fmt::arg("plain", access::indented(plain_body, "  ").substr(2)),
      fmt::arg("orig", access::indented(original, "  ")));
}

Outcome plan_vector(const cuda::SourceFile& f, const cuda::Function& fn, const Tokens& t, const access::ForLoop& loop) {
  std::string_view body_text = std::string_view(f.text).substr(fn.body_begin, fn.end - fn.body_begin);
  Plan plan;
  // As written (parenthesised: they are pasted into other expressions).
  plan.start = "(" + access::rewrite(body_text, t, loop.init_begin, loop.init_end, {}) + ")";
  plan.step = "(" + access::rewrite(body_text, t, loop.step_begin + 3, loop.step_end, {}) + ")";
  auto uniform = access::uniform_names(f, fn, t);
  plan.i = std::string(t[loop.var].text);
  const std::string& i = plan.i;
  plan.type = access::text(t, loop.type_begin, loop.var);
  if (t[loop.cond_begin].text != i || t[loop.cond_begin + 1].text != "<" || t[loop.cond_begin + 2].text == "=" ||
      !access::is_uniform(t, loop.cond_begin + 2, loop.cond_end, uniform))
    return withhold(fmt::format("the loop's bound is not `{} < n` with n the same for every thread", i));
  plan.end = access::rewrite(body_text, t, loop.cond_begin + 2, loop.cond_end, {});
  if (access::assigned(t, loop.body_begin, loop.body_end, i)) return withhold(fmt::format("the body changes {}", i));
  BodyScan scan;
  if (auto why = scan_body(fn, t, loop, i, scan); !why.empty()) return withhold(why);
  if (auto why = carried_state(t, loop, scan); !why.empty()) return withhold(why);
  plan.has_continue = scan.has_continue;
  if (auto why = choose_arrays(scan, plan); !why.empty()) return withhold(why);
  for (const auto& name : {i + "_v", i + "_k"})
    for (const auto& tok : t)
      if (tok.text == name) return withhold(fmt::format("the kernel already uses the name {}", name));
  if (!access::whole_lines(body_text, t, loop.at, loop.last))
    return withhold("the loop shares its first or last line with other code");

  std::string code = vector_code(body_text, t, loop, plan);
  std::vector<std::string> names;
  for (const Array* a : plan.arrays) names.push_back(a->name);
  prompt::Edit e = access::loop_edit("vector_loads", f, fn, t, loop, code);
  e.rationale = fmt::format(
      "{fn}: the grid-stride loop's loads wait on long_scoreboard while memory throughput stays low, so too few "
      "bytes are in flight per thread. When {arrays} are 16-byte aligned, each thread now takes {W} consecutive "
      "elements per step with one {V} access per array; the tail and unaligned arrays run the original loop. "
      "Bit-identical: each element {i} is computed by the original body, unchanged, from the same values; the body "
      "carries no state between iterations and touches only element {i} of the arrays it writes, so the order in "
      "which elements are processed cannot change any result.",
      fmt::arg("fn", fn.name), fmt::arg("arrays", util::join(names, ", ")), fmt::arg("W", plan.width),
      fmt::arg("V", vector_of(plan.arrays[0]->elem).type), fmt::arg("i", i));
  e.expected_effect.push_back({"stall_long_scoreboard", "decrease"});
  e.expected_effect.push_back({"dram__throughput.avg.pct_of_peak_sustained_elapsed", "increase"});
  return {std::move(e), ""};
}

} // namespace

void rule_vector_loads(const KernelInput& in, KernelEdits& ke) {
  const json& k = in.kernel;
  const cuda::SourceFile& f = in.file;
  const cuda::Function& fn = in.fn;
  if (!k.contains("roofline") || !k["roofline"].is_object()) return;
  const json& r = k["roofline"];
  if (!r.contains("rho_memory") || !r["rho_memory"].is_number()) return;
  double rho = r["rho_memory"].get<double>();
  if (rho >= 0.5 || r.value("memory_saturated", false) == true) return; // bandwidth, not latency
  const std::string& file = in.file_name;
  const auto& t = in.tokens;
  const int base_line = in.base_line;
  std::map<std::size_t, std::vector<std::string>> evidence;
  std::map<std::size_t, access::ForLoop> loops;
  for (const auto& l : stall_lines(k)) {
    if (l.file != file || l.stall != "stall_long_scoreboard") continue;
    std::optional<access::ForLoop> best;
    for (std::size_t x = 0; x < t.size(); ++x) {
      auto loop = access::for_loop(t, x);
      if (!loop || l.line < base_line + t[loop->at].line || l.line > base_line + t[loop->last].line) continue;
      if (!best || loop->at > best->at) best = loop;
    }
    if (!best) continue;
    loops[best->at] = *best;
    evidence[best->at].push_back(l.id);
  }
  std::string rf = access::roofline_id(k);
  for (const auto& [at, loop] : loops) {
    if (!is_grid_stride(t, loop)) continue; // not the rule's pattern: silent
    auto outcome = plan_vector(f, fn, t, loop);
    std::vector<std::string> cited = evidence[at];
    if (!rf.empty()) cited.push_back(rf);
    if (outcome.edit) {
      outcome.edit->evidence = cited;
      outcome.edit->rationale += fmt::format(" (memory at {:.0f}% of its peak)", 100 * rho);
      ke.others.push_back(std::move(*outcome.edit));
    } else {
      ke.withheld.push_back({fmt::format("{}: vector loads in the grid-stride loop at line {} (vector_loads)", fn.name,
                                         base_line + t[loop.at].line),
                             outcome.reason, cited});
    }
  }
}

} // namespace optimas::builtin
