// loads_in_flight: a loop whose use waits on its own load (long_scoreboard at a line of the loop,
// the line's cause a global or local load declared at the top of the same loop's body) issues
// the loads of K iterations before the first of them is used, so K loads per thread are in
// flight where there was one. The root-cause walk (analysis/causes) names the load; the
// roofline says whether memory has room for more (it is not saturated).
//
//   for (int c = A; c < B; c += S) { float v = p[...c...]; REST }
// becomes
//   for (int c = A; c < B;) {
//     const int c_f0 = c; c += S;                                   // the original step
//     const bool c_in1 = c < B; const int c_f1 = c; if (c_in1) c += S;
//     ...                                                           // up to c_inK-1
//     float v_f0, v_f1, ...;
//     { const int c = c_f0; float v = p[...c...]; v_f0 = v; }      // the K loads, first
//     if (c_in1) { const int c = c_f1; float v = p[...c...]; v_f1 = v; }
//     { const int c = c_f0; float v = v_f0; REST }                  // then each body, in order
//     if (c_in1) { const int c = c_f1; float v = v_f1; REST }
//   }
//
// A while loop that ends by stepping its variable (`while (i < n) { ...; i += s; }`) takes the
// same form, its header kept and its last statement as the step (access::while_loop).
//
// Why this stays bit-identical: the loop variable takes exactly the original sequence of values
// (the header's own condition and step, evaluated in the original order, and never once more),
// and each iteration's body runs unchanged, in the original order, with its own value of the
// variable. Only the hoisted loads move earlier, and nothing they read can change in between:
// the body writes no memory (no store, no atomic, no call that could write, no address taken)
// and assigns none of the names the loads, the condition or the step read. A load of an
// iteration that does not exist is never made (its guard is the original condition).
// Token-level matching (see access.hpp); any other shape is withheld with the reason.
#include "builtin/in_flight.hpp"
#include "builtin/rules.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

namespace optimas::builtin {

namespace {

using access::Outcome;
using access::Tokens;
using access::withhold;
using in_flight::assigned_read;
using in_flight::Hoisted;
using in_flight::side_effect;
using nlohmann::json;

// What the evidence says about one loop: the PC lines waiting in it on a load of its own body.
struct Waiting {
  std::vector<std::string> ids;
  std::set<int> load_lines; // the causes' lines
  // Per cause line, the global and local load instructions the profile counted on it (SASS
  // instructions, from the cause's facts or, where it is the stalled line itself, the line's own
  // memory facts); absent where the profile has no such counters.
  std::map<int, int> load_instructions;
  double share = 0; // of the kernel's samples (the lines' shares summed)
};

// Why the body (tokens [b, e)) could change what an early load reads or leave the loop early,
// or empty.
std::string body_hazard(const Tokens& t, std::size_t b, std::size_t e, const std::set<std::string>& pure) {
  for (std::size_t x = b; x < e; ++x) {
    std::string_view w = t[x].text;
    if (w == "break" || w == "continue" || w == "return" || w == "goto" || w == "asm" || w == "__syncthreads" ||
        w == "__syncwarp")
      return fmt::format("the loop body holds `{}`", w);
    if (w == "&" && x > b && t[x - 1].text != "&" && x + 1 < e && t[x + 1].text != "&" &&
        t[x - 1].kind == cuda::TokenKind::punct && t[x - 1].text != ")" && t[x - 1].text != "]")
      return "the loop body takes an address";
    if (t[x].kind != cuda::TokenKind::identifier) continue;
    std::string_view next = x + 1 < e ? t[x + 1].text : "";
    if (next == "(" && !access::pure_call(w) && !access::arithmetic_type_word(w) && !pure.count(std::string(w)) &&
        w != "if" && w != "for" && w != "while" && w != "switch" && w != "sizeof")
      return fmt::format("the loop body calls {}, which could write memory", w);
    bool through = next == "[" || next == "->" || (x > b && t[x - 1].text == "*");
    if (through && access::written_or_escapes(t, x, x + 1, w))
      return fmt::format("the loop body writes memory through {}", w);
  }
  return "";
}

// K: loads per thread in flight. Four by default; two where registers already limit occupancy
// (each hoisted value holds a register per iteration); eight where few warps run and registers
// do not limit them (more loads per warp make up for fewer warps).
std::pair<int, std::string> factor(const json& kernel) {
  const json* occ = nullptr;
  if (kernel.contains("roofline") && kernel["roofline"].is_object() && kernel["roofline"].contains("occupancy"))
    occ = &kernel["roofline"]["occupancy"];
  if (!occ || !occ->is_object()) return {4, "the default (no occupancy figures)"};
  std::string limiter = text_of(*occ, "limiter");
  double regs = number_of(*occ, "registers_per_thread");
  double achieved =
      occ->contains("achieved_pct") && (*occ)["achieved_pct"].is_number() ? number_of(*occ, "achieved_pct") : 100;
  if (limiter == "registers") return {2, fmt::format("registers ({:.0f} a thread) limit occupancy", regs)};
  if (achieved < 25 && regs > 0 && regs <= 64)
    return {8, fmt::format("{:.0f}% achieved occupancy with {:.0f} registers a thread", achieved, regs)};
  return {4, fmt::format("{:.0f}% achieved occupancy, {:.0f} registers a thread", achieved, regs)};
}

// Why the compiler already keeps several of the loop's loads in flight, or empty: a cause line
// with more load instructions than the source has subscripts there was unrolled by nvcc, and
// doing it again by hand fights its schedule (examples/edges' blur: 62 load instructions for
// the 2 loads of its line, and the rule's edit measured 0.75x on the H100).
std::string unrolled_already(const Tokens& t, const access::ForLoop& loop, int base_line, const Waiting& w) {
  for (const auto& [line, instructions] : w.load_instructions) {
    int subscripts = 0;
    for (std::size_t x = loop.body_begin; x < loop.body_end; ++x)
      if (base_line + t[x].line == line && t[x].text == "[" && x > 0 &&
          (t[x - 1].kind == cuda::TokenKind::identifier || t[x - 1].text == "]"))
        ++subscripts;
    if (instructions > subscripts)
      return fmt::format("the compiler already unrolled it: line {} has {} load instructions for the {} subscript(s) "
                         "of its source, so more loads by hand would fight its schedule",
                         line, instructions, subscripts);
  }
  return "";
}

struct Plan {
  std::string i, type, start, cond, step; // the loop's variable, its type, start, condition and step as written
  std::vector<Hoisted> decls;
  std::string rest; // the body after the hoisted declarations
  int k = 4;
  bool is_while = false; // the variable lives outside the loop: its type is `auto` and there is no start
  // The 16-byte form: where the one hoisted value is `p[A + i]` with i stepping by one and k
  // elements making 16 bytes, a batch whose k iterations all exist and whose first element is
  // 16-byte aligned takes them in one load (float4, int4, uint4, double2); the others load one by one.
  std::string vector_type, element;
};

// The 16-byte form's vector type for k elements of `element`, or "".
std::string vector_of(const std::string& element, int k) {
  if (k == 4 && element == "float") return "float4";
  if (k == 4 && element == "int") return "int4";
  if (k == 4 && (element == "unsigned" || element == "unsigned int")) return "uint4";
  if (k == 2 && element == "double") return "double2";
  return "";
}

// Whether the batch can take the 16-byte form: one hoisted value, a load `p[A + i]` (or
// `p[i + A]`, i once, at the top level of the index) from a pointer parameter whose elements fill
// 16 bytes in k, and a step of one.
void choose_vector(const KernelInput& in, const access::ForLoop& loop, Plan& p) {
  const Tokens& t = in.tokens;
  std::string step = access::text(t, loop.step_begin, loop.step_end);
  if (p.decls.size() != 1 || !(step == p.i + "++" || step == "++" + p.i || step == p.i + "+=1")) return;
  const Hoisted& d = p.decls[0];
  std::size_t b = d.first, e = d.semi;
  if (!d.extracted) { // TYPE v = p[IDX];  the expression starts after '='
    while (b < e && t[b].text != "=") ++b;
    ++b;
  } else {
    e = d.semi + 1;
  }
  if (b + 3 >= e || t[b].kind != cuda::TokenKind::identifier || t[b + 1].text != "[" ||
      access::matching(t, b + 1) != e - 1)
    return;
  const cuda::Parameter* param = nullptr;
  for (const auto& q : in.fn.parameters)
    if (q.pointer && q.name == t[b].text) param = &q;
  if (!param) return;
  std::string element = access::pointee(*param);
  std::string type = vector_of(element, p.k);
  if (type.empty()) return;
  // The index: i once, added at its top level.
  std::size_t i0 = b + 2, i1 = e - 1, uses = 0, at = 0;
  int depth = 0;
  for (std::size_t x = i0; x < i1; ++x) {
    if (t[x].text == "(" || t[x].text == "[") ++depth;
    if (t[x].text == ")" || t[x].text == "]") --depth;
    if (t[x].text == p.i) ++uses, at = x;
  }
  if (uses != 1 || depth != 0) return;
  bool last = at == i1 - 1 && at >= i0 + 2 && t[at - 1].text == "+";
  bool first = at == i0 && at + 2 < i1 && t[at + 1].text == "+";
  if (!last && !first) return;
  // The rest of the index must be free of i at its top level: a '+' chain around it.
  for (std::size_t x = i0, dep = 0; x < i1; ++x) {
    if (t[x].text == "(" || t[x].text == "[") ++dep;
    if (t[x].text == ")" || t[x].text == "]") --dep;
    if (dep == 0 && (t[x].text == "-" || t[x].text == "<" || t[x].text == ">" || t[x].text == "?" || t[x].text == "&" ||
                     t[x].text == "|" || t[x].text == "^" || t[x].text == "%"))
      return; // i - A, shifts, masks: not A + i
  }
  p.vector_type = type;
  p.element = element;
}

std::string in_flight_code(const Plan& p, const std::string& ind) {
  // A while loop keeps its header; its step, the body's last statement, moves ahead with the others.
  std::string c = p.is_while ? fmt::format("{}while ({}) {{\n", ind, p.cond)
                             : fmt::format("{}for ({} {} = {}; {};) {{\n", ind, p.type, p.i, p.start, p.cond);
  std::string in = ind + "  ";
  c += fmt::format("{in}// loads_in_flight: the loads of up to {k} iterations issue before the first is used; each\n"
                   "{in}// iteration then runs the original body, in order, with its own {i}.\n"
                   "{in}const {T} {i}_f0 = {i};\n{in}{step};\n",
                   fmt::arg("in", in), fmt::arg("k", p.k), fmt::arg("i", p.i), fmt::arg("T", p.type),
                   fmt::arg("step", p.step));
  for (int j = 1; j < p.k; ++j) {
    std::string prev = j == 1 ? "" : fmt::format("{}_in{} && ", p.i, j - 1);
    c += fmt::format("{in}const bool {i}_in{j} = {prev}({cond});\n{in}const {T} {i}_f{j} = {i};\n"
                     "{in}if ({i}_in{j}) {step};\n",
                     fmt::arg("in", in), fmt::arg("i", p.i), fmt::arg("j", j), fmt::arg("prev", prev),
                     fmt::arg("cond", p.cond), fmt::arg("T", p.type), fmt::arg("step", p.step));
  }
  for (const auto& d : p.decls) {
    std::vector<std::string> names;
    // A guarded load's value starts as zero: an iteration whose guard is false never reads it.
    for (int j = 0; j < p.k; ++j) names.push_back(fmt::format("{}_f{}{}", d.name, j, d.guard.empty() ? "" : "{}"));
    std::string bare = d.type;
    for (const char* q : {"const ", "volatile "})
      for (std::size_t at; (at = bare.find(q)) != std::string::npos;) bare.erase(at, std::string(q).size());
    c += fmt::format("{}{} {};\n", in, bare, util::join(names, ", "));
  }
  auto block = [&](int j, const std::string& inner) {
    std::string guard = j == 0 ? "" : fmt::format("if ({}_in{}) ", p.i, j);
    return fmt::format("{}{}{{\n{}  const {} {} = {}_f{};\n{}{}}}\n", in, guard, in, p.type, p.i, p.i, j, inner, in);
  };
  std::string loads;
  for (int j = 0; j < p.k; ++j) {
    std::string inner;
    for (const auto& d : p.decls)
      inner += d.guard.empty() ? fmt::format("{}  {} {} = {};\n{}  {}_f{} = {};\n", in, d.type, d.name, d.expr, in,
                                             d.name, j, d.name)
                               : fmt::format("{}  if ({}) {}_f{} = {};\n", in, d.guard, d.name, j, d.expr);
    loads += block(j, inner);
  }
  if (p.vector_type.empty()) {
    c += loads;
  } else {
    const Hoisted& d = p.decls[0];
    std::vector<std::string> parts;
    const char* fields[] = {"x", "y", "z", "w"};
    for (int j = 0; j < p.k; ++j) parts.push_back(fmt::format("{}_f{} = {}_q.{};", d.name, j, d.name, fields[j]));
    c += fmt::format(
        "{in}// 16-byte form: a batch whose {k} iterations all exist, its first element 16-byte aligned, takes\n"
        "{in}// them in one load; any other batch loads them one by one.\n"
        "{in}bool {v}_vec = false;\n"
        "{in}if ({i}_in{last}) {{\n"
        "{in}  const {T} {i} = {i}_f0;\n"
        "{in}  const {E}* const {v}_p = &({expr});\n"
        "{in}  if ((reinterpret_cast<size_t>({v}_p) & 15) == 0) {{\n"
        "{in}    const {V} {v}_q = *reinterpret_cast<const {V}*>({v}_p);\n"
        "{in}    {parts}\n"
        "{in}    {v}_vec = true;\n"
        "{in}  }}\n"
        "{in}}}\n"
        "{in}if (!{v}_vec) {{\n{loads}{in}}}\n",
        fmt::arg("in", in), fmt::arg("k", p.k), fmt::arg("v", d.name), fmt::arg("i", p.i), fmt::arg("last", p.k - 1),
        fmt::arg("T", p.type), fmt::arg("E", p.element), fmt::arg("expr", d.expr), fmt::arg("V", p.vector_type),
        fmt::arg("parts", util::join(parts, " ")), fmt::arg("loads", access::indented(loads, "  ")));
  }
  for (int j = 0; j < p.k; ++j) {
    std::string inner;
    for (const auto& d : p.decls) inner += fmt::format("{}  {} {} = {}_f{};\n", in, d.type, d.name, d.name, j);
    inner += access::indented(p.rest, in + "  ") + "\n";
    c += block(j, inner);
  }
  return c + ind + "}";
}

Outcome plan_in_flight(const KernelInput& in, const access::ForLoop& loop, const Waiting& w) {
  const Tokens& t = in.tokens;
  const std::string_view body_text = in.body;
  Plan p;
  p.i = std::string(t[loop.var].text);
  p.type = loop.is_while ? "auto" : access::text(t, loop.type_begin, loop.var);
  p.is_while = loop.is_while;
  if (loop.cond_end == loop.cond_begin || loop.step_end == loop.step_begin)
    return withhold("the loop has no condition or no step");
  if (!loop.is_while) p.start = access::rewrite(body_text, t, loop.init_begin, loop.init_end, {});
  p.cond = access::rewrite(body_text, t, loop.cond_begin, loop.cond_end, {});
  p.step = access::rewrite(body_text, t, loop.step_begin, loop.step_end, {});
  if (auto s = side_effect(t, loop.cond_begin, loop.cond_end, in.pure_macros); !s.empty())
    return withhold("the loop condition " + s.substr(s.find('`', 1) + 2));
  if (access::assigned(t, loop.body_begin, loop.body_end, p.i))
    return withhold(fmt::format("the body changes {}", p.i));
  if (auto why = body_hazard(t, loop.body_begin, loop.body_end, in.pure_macros); !why.empty()) return withhold(why);
  if (auto why = unrolled_already(t, loop, in.base_line, w); !why.empty()) return withhold(why);
  // Volatile memory may be written by other threads while the loop runs (a flag polled in a
  // loop): reading it iterations early could see another value.
  for (const auto& p : in.fn.parameters)
    if (p.type.find("volatile") != std::string::npos)
      return withhold(fmt::format("{} is volatile: another thread may write it while the loop runs", p.name));
  for (const auto& tok : t)
    if (tok.text == "volatile") return withhold("the kernel reads volatile memory, which another thread may write");
  std::string why;
  auto found = in_flight::ahead(in, loop, w.load_lines, why);
  if (!found) return withhold(why);
  p.decls = found->decls;
  std::size_t rest_begin = found->rest_begin;
  if (rest_begin >= loop.body_end) return withhold("nothing in the loop body uses the loads");
  // The names the loads, the condition and the step read: the body may assign none of them.
  std::set<std::string> declared;
  for (const auto& d : p.decls) declared.insert(d.name);
  auto reads_kept = [&](std::size_t b, std::size_t e) { return assigned_read(t, loop, declared, b, e); };
  for (const auto& d : p.decls) {
    if (auto r = reads_kept(d.first, d.semi); !r.empty()) return withhold(r);
    if (auto r = reads_kept(d.guard_begin, d.guard_end); !r.empty()) return withhold(r);
  }
  if (auto r = reads_kept(loop.cond_begin, loop.cond_end); !r.empty()) return withhold(r);
  if (auto r = reads_kept(loop.step_begin, loop.step_end); !r.empty()) return withhold(r);
  for (std::size_t x = loop.step_begin; x < loop.step_end; ++x)
    if (t[x].kind == cuda::TokenKind::identifier && t[x].text != p.i && access::assigned(t, x, x + 1, t[x].text))
      return withhold("the loop's step assigns something besides " + p.i);
  for (const auto& name : {p.i + "_f0", p.i + "_in1"})
    for (const auto& tok : t)
      if (tok.text == name) return withhold(fmt::format("the kernel already uses the name {}", name));
  for (const auto& d : p.decls)
    for (const auto& tok : t)
      if (tok.text == d.name + "_f0" || (d.extracted && tok.text == d.name))
        return withhold(fmt::format("the kernel already uses the name {}", tok.text));
  if (!access::whole_lines(body_text, t, loop.at, loop.last))
    return withhold("the loop shares its first or last line with other code");
  p.rest = access::rewrite(body_text, t, rest_begin, loop.body_end, found->in_rest);
  std::string why_k;
  std::tie(p.k, why_k) = factor(in.kernel);
  choose_vector(in, loop, p);
  if (!p.vector_type.empty())
    for (const auto& tok : t)
      if (tok.text == p.decls[0].name + "_q" || tok.text == p.decls[0].name + "_vec" ||
          tok.text == p.decls[0].name + "_p")
        p.vector_type.clear(); // a name of ours is taken: the batch loads one by one
  std::string ind = access::indent_at(body_text, t[loop.at].offset);
  std::string code = in_flight_code(p, ind);
  prompt::Edit e = access::loop_edit("loads_in_flight", in.file, in.fn, t, loop, code);
  std::vector<std::string> names;
  for (const auto& d : p.decls) names.push_back(d.name);
  e.rationale = fmt::format(
      "{fn}: the loop at line {line} waits on its own load ({ids}: long_scoreboard, {share:.0f}% of the kernel's "
      "samples, whose cause is the load of {names}), one load per thread at a time. The loads of {k} "
      "iterations now issue before the first is used (k = {k}: {why}). Bit-identical: {i} takes the original "
      "values through the loop's own condition and step, each body runs unchanged and in order, and the body "
      "writes no memory and assigns nothing the loads read.",
      fmt::arg("fn", in.fn.name), fmt::arg("line", in.base_line + t[loop.at].line),
      fmt::arg("ids", util::join(w.ids, ", ")), fmt::arg("share", 100 * w.share),
      fmt::arg("names", util::join(names, ", ")), fmt::arg("k", p.k), fmt::arg("why", why_k), fmt::arg("i", p.i));
  e.expected_effect.push_back({"stall_long_scoreboard", "decrease"});
  return {std::move(e), ""};
}

} // namespace

void rule_loads_in_flight(const KernelInput& in, KernelEdits& ke) {
  const json& k = in.kernel;
  if (!k.contains("roofline") || !k["roofline"].is_object()) return;
  const json& r = k["roofline"];
  if (r.contains("memory_saturated") && r["memory_saturated"] == true) return; // bandwidth, not latency
  if (!k.contains("stalls") || !k["stalls"].is_object() || !k["stalls"].contains("lines")) return;
  const Tokens& t = in.tokens;
  std::map<std::size_t, access::ForLoop> loops;
  std::map<std::size_t, Waiting> waiting;
  for (const auto& l : k["stalls"]["lines"]) {
    if (text_of(l, "stall") != "stall_long_scoreboard" || !l.contains("cause") || !l["cause"].is_object()) continue;
    const json& c = l["cause"];
    std::string op = text_of(c, "operation");
    if (text_of(c, "status") != "found" || text_of(c, "kind") != "producer" ||
        !(op.rfind("global load", 0) == 0 || op.rfind("local load", 0) == 0))
      continue;
    auto same_file = [&](const json& j) {
      return std::filesystem::path(text_of(j, "file")).filename().string() == in.file_name;
    };
    if (!same_file(l) || !same_file(c)) continue;
    const int line = static_cast<int>(number_of(l, "line")), cause = static_cast<int>(number_of(c, "line"));
    // The innermost loop holding both the stalled line and its load.
    std::optional<access::ForLoop> best;
    for (std::size_t x = 0; x < t.size(); ++x) {
      auto loop = access::for_loop(t, x);
      if (!loop) loop = access::while_loop(t, x);
      if (!loop) continue;
      int first = in.base_line + t[loop->at].line, last = in.base_line + t[loop->last].line;
      if (line < first || line > last || cause <= first || cause > last) continue;
      if (!best || loop->at > best->at) best = loop;
    }
    if (!best) continue;
    loops[best->at] = *best;
    Waiting& w = waiting[best->at];
    w.ids.push_back(text_of(l, "id"));
    w.load_lines.insert(cause);
    const json* facts = c.contains("facts") && c["facts"].is_object() ? &c["facts"] : nullptr;
    if (!facts && cause == line && l.contains("memory") && l["memory"].is_object()) facts = &l["memory"];
    if (facts && facts->contains("accesses") && (*facts)["accesses"].is_array()) {
      int n = 0;
      for (const auto& a : (*facts)["accesses"])
        if (text_of(a, "operation") == "load" && (text_of(a, "space") == "global" || text_of(a, "space") == "local"))
          n += static_cast<int>(number_of(a, "instructions"));
      if (n > 0) w.load_instructions[cause] = n;
    }
    w.share += number_of(l, "kernel_share");
  }
  std::string rf = access::roofline_id(k);
  for (const auto& [at, loop] : loops) {
    const Waiting& w = waiting[at];
    std::vector<std::string> cited = w.ids;
    if (!rf.empty()) cited.push_back(rf);
    auto outcome = plan_in_flight(in, loop, w);
    if (outcome.edit) {
      outcome.edit->evidence = cited;
      ke.others.push_back(std::move(*outcome.edit));
    } else {
      ke.withheld.push_back({fmt::format("{}: more loads in flight in the loop at line {} (loads_in_flight)",
                                         in.fn.name, in.base_line + t[loop.at].line),
                             outcome.reason, cited});
    }
  }
}

} // namespace optimas::builtin
