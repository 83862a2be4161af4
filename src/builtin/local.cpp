// The builtin optimizer's local_to_registers rule. A per-thread array indexed by data (a
// histogram's `cnt[key & 15]++`) cannot live in registers, which have no addresses: the compiler
// puts it in local memory, and every access is a load or store through L1. When the array is
// small and of constant size, and every index is provably in range, the rule makes every index a
// compile-time constant: loops over the array are unrolled in full, and each statement that
// indexes it by data runs inside an unrolled loop over the array's indices, guarded by
// `k == index`, naming the element as a[k]. The statement runs once, on the same element, with
// the same operations, so results stay bit-identical. Index ranges come from the interval
// analysis of index_range.cpp; tokens suffice for the reasons at the top of
// memory.cpp, and whatever the analysis cannot bound withholds the edit.
#include "builtin/local.hpp"

#include "cuda/source.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

namespace optimas::builtin {

using nlohmann::json;
namespace fs = std::filesystem;
using namespace local;

namespace {

const std::set<std::string> k_scalar_types = {"float",   "double",        "int",     "unsigned",  "unsigned int",
                                              "char",    "unsigned char", "short",   "long long", "unsigned long long",
                                              "int32_t", "uint32_t",      "int64_t", "uint64_t",  "bool"};

struct Replacement {
  std::size_t begin, end; // offsets into the file
  std::string text;
};

// What one array's rewrite needs, or why it cannot be made.
struct Plan {
  std::vector<Replacement> replacements;
  std::set<int> lines;              // lines that use the array
  std::vector<int> unrolled;        // loop lines given #pragma unroll
  std::vector<std::string> bounds;  // "`key & 15` in [0, 15]" for the rationale
  std::vector<std::string> guarded; // "`key` on line 9": indices checked at run time
  int dynamic = 0;                  // statements rewritten as compare-and-select
  std::string unsafe;
};

std::string fresh_name(const std::vector<cuda::Token>& t, const std::string& want) {
  std::string name = want;
  auto used = [&](const std::string& n) {
    return std::any_of(t.begin(), t.end(), [&](const cuda::Token& x) { return x.text == n; });
  };
  while (used(name)) name += "_";
  return name;
}

// Rewrites the statement [sb, se) around the use at `u` (its index in [u + 2, close)) as a
// compare-and-select over the array's indices, guarded where the index is not known `inside`.
// False, with p.unsafe saying why, when the statement cannot be split that way.
bool rewrite_statement(const Facts& facts, const LocalArray& a, const cuda::SourceFile& f, const cuda::Function& fn,
                       std::size_t sb, std::size_t se, std::size_t u, std::size_t close, const std::string& index,
                       bool inside, int line, Plan& p) {
  const auto& t = *facts.t;
  const int base_line = fn.body_first_line - 1;
  const long long n = *a.n;
  // One assignment at most (the statement's own), the same index everywhere in it, and an
  // index without side effects.
  std::vector<std::size_t> uses;
  for (std::size_t x = sb; x < se; ++x)
    if (t[x].text == a.name && x + 1 < se && t[x + 1].text == "[") uses.push_back(x);
  bool same = std::all_of(uses.begin(), uses.end(), [&](std::size_t x) {
    std::size_t c = matching_token(t, x + 1);
    auto r = index_interval(facts, x + 2, c, x);
    return cuda::normalise(tokens_text(facts, x + 2, c)) == cuda::normalise(index) ||
           (r && !r->data && r->lo >= 0 && r->hi <= n - 1);
  });
  if (!same || side_effects(t, u + 2, close) > 0 || side_effects(t, sb, se) > 1) {
    p.unsafe = fmt::format("the statement on line {} that indexes `{}` by data {}", line, a.name,
                           same ? "has side effects besides its own assignment" : "uses two different indices");
    return false;
  }
  // A declaration `T v = ...a[i]...;` keeps its scope: `T v;` then the guarded assignment.
  std::size_t eq = sb;
  while (eq < se && !is_assignment_op(t, eq)) ++eq;
  bool declaration = eq < se && eq >= sb + 2 && std::all_of(t.begin() + sb, t.begin() + eq, [](const cuda::Token& x) {
                       return x.kind == cuda::TokenKind::identifier;
                     });
  std::string declared;
  if (declaration) {
    std::vector<std::string> words;
    for (std::size_t x = sb; x + 1 < eq; ++x) words.push_back(std::string(t[x].text));
    std::string type = bare_type(words);
    if (!k_scalar_types.count(type)) {
      p.unsafe =
          fmt::format("line {} declares `{}` of type {}, which this rule does not split", line, t[eq - 1].text, type);
      return false;
    }
    declared = type + " " + std::string(t[eq - 1].text) + ";";
  }
  std::string idx = fresh_name(t, a.name + "_i"), k = fresh_name(t, a.name + "_k");
  // The statement with every data-indexed a[index] naming a[k]; the original spacing kept.
  std::size_t from = declaration ? eq - 1 : sb;
  std::string rewritten;
  std::size_t cursor = t[from].offset;
  for (std::size_t x : uses) {
    std::size_t c = matching_token(t, x + 1);
    auto r = index_interval(facts, x + 2, c, x);
    if (r && !r->data) continue;
    rewritten += std::string(facts.body.substr(cursor, t[x].offset - cursor)) + a.name + "[" + k + "]";
    cursor = t[c].offset + 1;
  }
  rewritten += std::string(facts.body.substr(cursor, t[se].offset + 1 - cursor));
  std::string ind = indent_of(line_text(f.text, base_line + t[sb].line));
  // Guarded, the index is read as a long long (no narrowing can bring it into range) and
  // checked before the element is chosen.
  std::string head = inside ? fmt::format("{}  const int {} = ({});\n", ind, idx, index)
                            : fmt::format("{}  const long long {} = (long long)({});\n{}  if ({} < 0 || {} >= {}) "
                                          "__trap(); // outside the array: the original's access is undefined\n",
                                          ind, idx, index, ind, idx, idx, n);
  std::string text = fmt::format(
      "{}{{\n{}{}  #pragma unroll\n{}  for (int {} = 0; {} < {}; ++{})\n{}    if ({} == {}) {}\n{}}}",
      declared.empty() ? "" : declared + "\n" + ind, head, ind, ind, k, k, n, k, ind, k, idx, rewritten, ind);
  p.replacements.push_back({fn.body_begin + t[sb].offset, fn.body_begin + t[se].offset + 1, text});
  return true;
}

// The constant-trip loops whose variable indexes the array, given `#pragma unroll` (once).
void unroll_loops(const Facts& facts, const std::set<std::size_t>& loops, const cuda::SourceFile& f,
                  const cuda::Function& fn, Plan& p) {
  const auto& t = *facts.t;
  for (std::size_t l : loops) {
    const auto& loop = facts.loops[l];
    if (loop.hi - loop.lo + 1 > k_max_trip) {
      p.unsafe = fmt::format("the loop on line {} runs {} times, too many to unroll in full", loop.line,
                             loop.hi - loop.lo + 1);
      return;
    }
    if (line_text(f.text, loop.line - 1).find("#pragma unroll") != std::string::npos) continue;
    std::size_t b = f.text.rfind('\n', fn.body_begin + t[loop.for_tok].offset);
    b = b == std::string::npos ? 0 : b + 1;
    p.replacements.push_back({b, b, indent_of(line_text(f.text, loop.line)) + "#pragma unroll\n"});
    p.unrolled.push_back(loop.line);
  }
}

// Each use of the array classified: a constant index (its loops unrolled) or a statement
// rewritten by data.
Plan plan_array(const Facts& facts, const LocalArray& a, const cuda::SourceFile& f, const cuda::Function& fn) {
  const auto& t = *facts.t;
  int base_line = fn.body_first_line - 1;
  Plan p;
  long long n = *a.n;
  std::set<std::size_t> loops_to_unroll;
  std::set<std::size_t> statements_done;
  for (std::size_t u = a.last + 1; u < t.size() && p.unsafe.empty(); ++u) {
    if (t[u].text != a.name) continue;
    int line = base_line + t[u].line;
    bool subscripted = u + 1 < t.size() && t[u + 1].text == "[";
    std::size_t close = subscripted ? matching_token(t, u + 1) : t.size();
    bool address =
        u > 0 && t[u - 1].text == "&" &&
        !(u > 1 && (t[u - 2].kind == cuda::TokenKind::identifier || t[u - 2].kind == cuda::TokenKind::number ||
                    t[u - 2].text == ")" || t[u - 2].text == "]"));
    if (!subscripted || close >= t.size() || (close + 1 < t.size() && t[close + 1].text == "[") || address) {
      p.unsafe = fmt::format("line {} uses `{}` other than as {}[i] (its address escapes)", line, a.name, a.name);
      break;
    }
    p.lines.insert(line);
    std::string index = tokens_text(facts, u + 2, close);
    auto range = index_interval(facts, u + 2, close, u);
    bool inside = range && range->lo >= 0 && range->hi <= n - 1;
    // An index known only at run time that the analysis cannot bound is checked at run time
    // (the guard); one fixed once the loops are unrolled, or one that can never be inside, is a
    // fault of the original that no guard should carry.
    bool never = range && (range->hi < 0 || range->lo > n - 1);
    if (!inside && (never || (range && !range->data))) {
      p.unsafe =
          fmt::format("the index `{}` on line {} could lie outside [0, {}){}", index, line, n,
                      range && range->bounded() ? fmt::format(" (it lies in [{}, {}])", range->lo, range->hi) : "");
      break;
    }
    if (inside && !range->data) {
      // Constant once the loops around it are unrolled.
      for (std::size_t l = 0; l < facts.loops.size(); ++l) {
        const auto& loop = facts.loops[l];
        bool encloses = loop.for_tok < u && u <= loop.body_end;
        bool named =
            std::any_of(t.begin() + u + 2, t.begin() + close, [&](const cuda::Token& x) { return x.text == loop.var; });
        if (encloses && named) loops_to_unroll.insert(l);
      }
      u = close;
      continue;
    }
    auto stmt = statement_around(t, u);
    if (!stmt || statements_done.count(stmt->first)) {
      if (stmt) {
        u = close;
        continue; // a second use in a statement already rewritten: it had the same index
      }
      p.unsafe = fmt::format("line {} indexes `{}` by data inside a condition, a loop header or a call", line, a.name);
      break;
    }
    auto [sb, se] = *stmt;
    if (!rewrite_statement(facts, a, f, fn, sb, se, u, close, index, inside, line, p)) break;
    if (inside)
      p.bounds.push_back(fmt::format("`{}` lies in [{}, {}]", index, range->lo, range->hi));
    else
      p.guarded.push_back(fmt::format("`{}` on line {}", index, line));
    ++p.dynamic;
    statements_done.insert(sb);
    u = se;
  }
  if (p.unsafe.empty()) unroll_loops(facts, loops_to_unroll, f, fn, p);
  return p;
}

// Where line `line` (1-based) starts; npos past the end.
std::size_t line_offset(const std::string& text, int line) {
  std::size_t b = 0;
  for (int n = 1; n < line; ++n) {
    b = text.find('\n', b);
    if (b == std::string::npos) return b;
    ++b;
  }
  return b <= text.size() ? b : std::string::npos;
}

int line_of(const std::string& text, std::size_t offset) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + std::min(offset, text.size()), '\n'));
}

// One array the rule rewrites: its plan, what it cites, and why the rewrite keeps the results.
struct Accepted {
  Plan plan;
  std::vector<std::string> evidence;
  std::string stall, why;
};

std::string lines_text(const std::vector<int>& lines) {
  std::vector<std::string> v;
  for (int l : lines) v.push_back(std::to_string(l));
  return util::join(v, ", ");
}

std::string explanation(const std::string& kernel, const LocalArray& a, const Plan& plan, bool measured, double loads,
                        double stores, const std::string& stall) {
  std::string n = std::to_string(*a.n);
  std::string proof =
      plan.bounds.empty()
          ? (plan.guarded.empty() ? "every index lies in [0, " : "past the guard, every index lies in [0, ") + n + ")"
          : util::join(plan.bounds, ", ") + (plan.guarded.empty() ? "" : " and, past the guard, the others");
  return fmt::format(
      "{}: {}{}; `{}` ({} {}s){} lives in local memory, since registers cannot be indexed at run time. {}{}"
      "every index is then a compile-time constant and the array can stay in registers. Bit-identical: {}, so "
      "exactly one guard holds and the guarded statement performs the same operations on the same element once; "
      "the unrolled loops run the same iterations in the same order.{}",
      kernel,
      measured ? fmt::format("local memory takes {:.0f} load and {:.0f} store requests", loads, stores)
               : "its lines that use a local array wait on memory",
      stall.empty() ? "" : fmt::format(" and the lines using `{}` show {}", a.name, stall), a.name, n, a.type,
      plan.dynamic ? " is indexed by data and" : "",
      plan.unrolled.empty()
          ? ""
          : fmt::format("The loops over it (line {}) are unrolled in full; ", lines_text(plan.unrolled)),
      plan.dynamic ? fmt::format("each statement that indexes it by data runs in an unrolled loop over its {} "
                                 "indices, guarded by `k == index`, naming the element as {}[k]: ",
                                 n, a.name)
                   : "",
      proof,
      plan.guarded.empty()
          ? ""
          : fmt::format(" Guarded: the source does not bound {}; each is checked at run time and the kernel stops "
                        "(__trap) where it leaves [0, {}), where the original reads or writes memory that is not "
                        "the array (undefined behaviour). Inputs that keep every index inside give the same results "
                        "bit for bit; one that leaves them fails the run, so validation rejects the variant instead "
                        "of its results changing silently.",
                        util::join(plan.guarded, ", "), n));
}

// Why the plan's text changes cannot join those already taken: another rule edits their lines
// (a `#pragma unroll` it adds too is left to it), or another array's rewrite overlaps them.
// Empty when they can; the plan then loses the changes already made.
std::string conflict(const cuda::SourceFile& f, const std::string& file, const KernelEdits& ke,
                     const std::vector<Accepted>& taken, Plan& plan) {
  std::vector<Replacement> kept;
  for (const auto& r : plan.replacements) {
    int first = line_of(f.text, r.begin), last = line_of(f.text, r.end > r.begin ? r.end - 1 : r.begin);
    const prompt::Edit* other = nullptr;
    for (int l = first; l <= last && !other; ++l) other = edit_on_line(ke, file, l);
    if (other && r.begin == r.end && other->rule == "unroll") continue; // the same pragma, already there
    if (other) return fmt::format("line {} is already edited by rule {}", other->line_start, other->rule);
    bool duplicate = false;
    for (const auto& a : taken)
      for (const auto& x : a.plan.replacements) {
        if (x.begin == r.begin && x.end == r.end && x.text == r.text)
          duplicate = true; // the same pragma
        else if (r.begin < x.end + (x.begin == x.end) && x.begin < r.end + (r.begin == r.end))
          return fmt::format("line {} is rewritten for another local array", first);
      }
    if (!duplicate) kept.push_back(r);
  }
  plan.replacements = std::move(kept);
  return "";
}

// The accepted arrays' text changes grouped into line edits: changes on overlapping lines make
// one edit, which cites and explains every array it rewrites.
std::vector<prompt::Edit> line_edits(const cuda::SourceFile& f, const std::string& file, const std::string& kernel,
                                     const std::vector<Accepted>& accepted) {
  struct Change {
    Replacement r;
    std::size_t array;
  };
  std::vector<Change> all;
  for (std::size_t i = 0; i < accepted.size(); ++i)
    for (const auto& r : accepted[i].plan.replacements) all.push_back({r, i});
  std::sort(all.begin(), all.end(), [](const Change& x, const Change& y) { return x.r.begin < y.r.begin; });
  std::vector<std::vector<Change>> groups;
  std::vector<std::pair<int, int>> spans;
  for (const auto& c : all) {
    int first = line_of(f.text, c.r.begin), last = line_of(f.text, c.r.end > c.r.begin ? c.r.end - 1 : c.r.begin);
    if (!spans.empty() && first <= spans.back().second) {
      spans.back().second = std::max(spans.back().second, last);
      groups.back().push_back(c);
    } else {
      spans.push_back({first, last});
      groups.push_back({c});
    }
  }
  std::vector<prompt::Edit> edits;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    auto [first, last] = spans[g];
    std::size_t b = line_offset(f.text, first), e = line_offset(f.text, last + 1);
    e = e == std::string::npos ? f.text.size() : e - 1; // up to the last line's newline
    std::string text = f.text.substr(b, e - b);
    for (auto it = groups[g].rbegin(); it != groups[g].rend(); ++it)
      text.replace(it->r.begin - b, it->r.end - it->r.begin, it->r.text);
    prompt::Edit edit;
    edit.rule = "local_to_registers";
    edit.file = file;
    edit.kernel = kernel;
    edit.line_start = first;
    edit.line_end = last;
    edit.new_text = text;
    std::set<std::size_t> arrays;
    for (const auto& c : groups[g]) arrays.insert(c.array);
    std::vector<std::string> whys;
    for (std::size_t i : arrays) {
      for (const auto& id : accepted[i].evidence)
        if (std::find(edit.evidence.begin(), edit.evidence.end(), id) == edit.evidence.end())
          edit.evidence.push_back(id);
      whys.push_back(accepted[i].why);
      if (!accepted[i].stall.empty() && std::none_of(edit.expected_effect.begin(), edit.expected_effect.end(),
                                                     [&](const auto& x) { return x.metric == accepted[i].stall; }))
        edit.expected_effect.push_back({accepted[i].stall, "decrease"});
    }
    edit.rationale = util::join(whys, " ");
    edit.expected_effect.insert(edit.expected_effect.begin(),
                                {"l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum", "decrease"});
    edits.push_back(std::move(edit));
  }
  return edits;
}

} // namespace

// Evidence and the plan's safety verdict per array; the accepted arrays' changes then become
// line edits together, so that two arrays sharing a loop are both rewritten.
void rule_local_to_registers(const KernelInput& in, KernelEdits& ke) {
  const json& k = in.kernel;
  const cuda::SourceFile& f = in.file;
  const cuda::Function& fn = in.fn;
  const std::string& file = in.file_name;
  const std::string_view body = in.body;
  const auto& t = in.tokens;
  const int base_line = in.base_line;
  const auto& macros = in.macros;
  Facts facts;
  facts.t = &t;
  facts.body = body;
  facts.macros = &macros;
  facts.loops = constant_loops(facts, base_line);
  facts.once = assigned_once(t);
  auto arrays = local_arrays(facts);
  if (arrays.empty()) return;
  double loads = access_figure(k, "local_load_requests"), stores = access_figure(k, "local_store_requests");
  bool measured = std::isfinite(loads) && std::isfinite(stores);
  if (measured && loads + stores <= 0) return; // no local-memory traffic: the arrays are in registers
  std::string rf = k.contains("roofline") && k["roofline"].is_object() ? k["roofline"].value("id", "") : "";
  auto stalls = stall_lines(k);
  std::vector<Accepted> accepted;
  for (const auto& a : arrays) {
    // The lines that name the array, for the stall evidence (also when the plan fails).
    std::set<int> lines;
    for (std::size_t u = a.last + 1; u < t.size(); ++u)
      if (t[u].text == a.name) lines.insert(base_line + t[u].line);
    Accepted x;
    for (const auto& l : stalls)
      if (l.file == file && lines.count(l.line) &&
          (l.stall == "stall_lg_throttle" || l.stall == "stall_long_scoreboard")) {
        x.evidence.push_back(l.id);
        if (x.stall.empty()) x.stall = l.stall;
      }
    if (!measured && x.evidence.empty()) continue; // nothing says this array is in local memory
    if (measured && !rf.empty()) x.evidence.insert(x.evidence.begin(), rf);
    if (x.evidence.empty())
      continue; // measured, but no roofline item to cite: the guardrails refuse an edit citing none
    std::string suggestion = fmt::format("{}: keep the local array {}[{}] in registers", fn.name, a.name, a.size_text);
    if (!a.n || *a.n < 1 || *a.n > k_max_elements) {
      ke.withheld.push_back(
          {suggestion,
           a.n ? fmt::format("it has {} elements, more than the {} this rule unrolls over", *a.n, k_max_elements)
               : fmt::format("its size `{}` is not a constant this rule can evaluate", a.size_text),
           x.evidence});
      continue;
    }
    x.plan = plan_array(facts, a, f, fn);
    if (x.plan.unsafe.empty() && x.plan.dynamic == 0 && x.plan.unrolled.empty()) continue; // register-friendly
    std::string unsafe = x.plan.unsafe.empty() ? conflict(f, file, ke, accepted, x.plan) : x.plan.unsafe;
    if (!unsafe.empty()) {
      ke.withheld.push_back({suggestion, unsafe, x.evidence});
      continue;
    }
    x.why = explanation(fn.name, a, x.plan, measured, loads, stores, x.stall);
    accepted.push_back(std::move(x));
  }
  for (auto& e : line_edits(f, file, fn.name, accepted)) ke.others.push_back(std::move(e));
}

} // namespace optimas::builtin
