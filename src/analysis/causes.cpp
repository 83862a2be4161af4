#include "analysis/causes.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

namespace optimas::analysis {

using profile::Stall;
using profile::sass::Instruction;
using profile::sass::Regs;
using profile::sass::Unit;

namespace {

std::string base_name(const std::string& file) {
  return std::filesystem::path(file).filename().string();
}

std::string where(const std::string& file, int line) {
  return fmt::format("{}:{}", base_name(file), line);
}

double ratio(std::uint64_t a, std::uint64_t b) {
  return b ? static_cast<double>(a) / static_cast<double>(b) : profile::k_nan;
}

// Average active threads per execution; NaN without executions.
double threads_of(const profile::InstructionCounters& c) {
  return ratio(c.thread_executed, c.executed);
}

} // namespace

// ---------------------------------------------------------------- the control-flow graph

namespace {

// Predecessors of each instruction in address order: the one before it unless that one ends its
// path, and every direct branch that jumps to it.
struct Cfg {
  const KernelCode& code;
  std::vector<std::vector<std::size_t>> preds;
  bool indirect = false; // a branch through a register: predecessors may be missing

  explicit Cfg(const KernelCode& c) : code(c), preds(c.instructions.size()) {
    std::map<std::uint64_t, std::size_t> at;
    for (std::size_t i = 0; i < c.instructions.size(); ++i) at[c.instructions[i].offset] = i;
    for (std::size_t i = 0; i < c.instructions.size(); ++i) {
      const Instruction& d = c.instructions[i].decoded;
      indirect = indirect || d.indirect;
      bool falls_through = !d.ends_path || d.guard.has_value();
      if (falls_through && i + 1 < c.instructions.size()) preds[i + 1].push_back(i);
      // BSSY names its reconvergence point and CALL returns: neither jumps there from here.
      if (d.target && d.unit == Unit::branch && d.opcode != "BSSY" && !d.calls && *d.target >= c.base) {
        auto t = at.find(*d.target - c.base);
        if (t != at.end()) preds[t->second].push_back(i);
      }
    }
  }
  const Instruction& at(std::size_t i) const { return code.instructions[i].decoded; }
};

struct Reaching {
  std::vector<std::size_t> defs; // instructions that may have written the register last
  bool entry = false;            // some path reaches the kernel's entry without a write
  bool call = false;             // some path meets a call, whose callee may write it
};

bool covers(const Regs& def, const Regs& r) {
  return def.kind == r.kind && def.index <= r.index && def.index + def.count >= r.index + r.count;
}

// The writes of `r` that may reach instruction `s`: walks every path back from `s` (back edges
// included, so a loop's previous iteration counts) until an unguarded write covers `r`.
Reaching reaching_defs(const Cfg& g, std::size_t s, const Regs& r) {
  Reaching out;
  std::vector<char> seen(g.preds.size(), 0);
  std::vector<std::size_t> todo(g.preds[s].begin(), g.preds[s].end());
  if (s == 0) out.entry = true;
  while (!todo.empty()) {
    std::size_t j = todo.back();
    todo.pop_back();
    if (seen[j]) continue;
    seen[j] = 1;
    const Instruction& d = g.at(j);
    if (d.calls) {
      out.call = true;
      continue;
    }
    bool writes = false, killed = false;
    for (const auto& w : d.defs)
      if (w.overlaps(r)) {
        writes = true;
        killed = killed || (covers(w, r) && !d.guard);
      }
    if (writes) out.defs.push_back(j);
    if (killed) continue;
    if (j == 0) out.entry = true;
    todo.insert(todo.end(), g.preds[j].begin(), g.preds[j].end());
  }
  return out;
}

// The reads of `r` by instructions `serves` accepts that may still be pending at `s` (a write to
// `r` must wait for an earlier store to read it): back from `s` until a write of `r`.
std::vector<std::size_t> pending_reads(const Cfg& g, std::size_t s, const Regs& r,
                                       bool (*serves)(Stall, const Instruction&), Stall st) {
  std::vector<std::size_t> out;
  std::vector<char> seen(g.preds.size(), 0);
  std::vector<std::size_t> todo(g.preds[s].begin(), g.preds[s].end());
  while (!todo.empty()) {
    std::size_t j = todo.back();
    todo.pop_back();
    if (seen[j]) continue;
    seen[j] = 1;
    const Instruction& d = g.at(j);
    if (serves(st, d) && std::any_of(d.uses.begin(), d.uses.end(), [&](const Regs& u) { return u.overlaps(r); }))
      out.push_back(j);
    if (std::any_of(d.defs.begin(), d.defs.end(), [&](const Regs& w) { return covers(w, r); }) && !d.guard) continue;
    todo.insert(todo.end(), g.preds[j].begin(), g.preds[j].end());
  }
  return out;
}

// Whether instruction `d` is of the kind a stall of reason `st` waits on.
bool serves(Stall st, const Instruction& d) {
  switch (st) {
  case Stall::long_scoreboard:
    return d.unit == Unit::l1tex;
  case Stall::short_scoreboard:
    return d.unit == Unit::mio || d.unit == Unit::constant;
  case Stall::wait:
    return d.unit == Unit::alu;
  default:
    return false;
  }
}

bool is_queue(Stall st) {
  return st == Stall::lg_throttle || st == Stall::mio_throttle || st == Stall::tex_throttle;
}

// What one stalled instruction waits on: instructions, and why none where there are none.
struct Verdict {
  std::vector<std::size_t> producers; // one line's instructions (found), several lines' (ambiguous)
  Cause::Status status = Cause::Status::undecided;
  std::string why;
};

double weight(const CodeInstruction& c) {
  return c.counters.executed ? static_cast<double>(c.counters.executed) : 1.0;
}

// Groups candidate producers by line, weighting each by how often it ran (a load issued once
// before a loop can hold up only the first of its iterations): one line holding at least twice
// the weight of every other is the answer, else the walk cannot tell.
Verdict decide(const Cfg& g, const std::set<std::size_t>& candidates) {
  Verdict v;
  std::map<std::pair<std::string, int>, double> by_line;
  for (std::size_t j : candidates) {
    const auto& c = g.code.instructions[j];
    by_line[{c.file, c.line}] += weight(c);
  }
  std::vector<std::pair<double, std::pair<std::string, int>>> ranked;
  for (const auto& [k, w] : by_line) ranked.emplace_back(w, k);
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (ranked.size() == 1 || ranked[0].first >= 2 * ranked[1].first) {
    v.status = Cause::Status::found;
    for (std::size_t j : candidates) {
      const auto& c = g.code.instructions[j];
      if (std::make_pair(c.file, c.line) == ranked[0].second) v.producers.push_back(j);
    }
  } else {
    v.status = Cause::Status::ambiguous;
    v.producers.assign(candidates.begin(), candidates.end());
    v.why = "producers on several lines run about as often";
  }
  return v;
}

const char* unit_words(Stall st) {
  switch (st) {
  case Stall::long_scoreboard:
    return "global, local or texture memory instruction";
  case Stall::short_scoreboard:
    return "shared-memory, special-function or constant instruction";
  default:
    return "fixed-latency instruction";
  }
}

Verdict producer_of(const Cfg& g, std::size_t s, Stall st) {
  Verdict v;
  const Instruction& d = g.at(s);
  std::set<std::size_t> candidates;
  bool call = false;
  for (const auto& u : d.uses) {
    Reaching r = reaching_defs(g, s, u);
    call = call || r.call;
    for (std::size_t j : r.defs)
      if (serves(st, g.at(j))) candidates.insert(j);
  }
  // A write waits for an earlier memory instruction still reading the register (a store's data).
  if (candidates.empty() && st != Stall::wait)
    for (const auto& w : d.defs)
      for (std::size_t j : pending_reads(g, s, w, serves, st)) candidates.insert(j);
  if (candidates.empty()) {
    v.why = call ? "what it reads may come from a called function"
                 : fmt::format("no {} writes what it reads", unit_words(st));
    return v;
  }
  return decide(g, candidates);
}

// The barrier a stalled instruction waits at: the nearest barrier instruction on every path back.
std::set<std::size_t> barriers_before(const Cfg& g, std::size_t s, Unit unit) {
  std::set<std::size_t> out;
  std::vector<char> seen(g.preds.size(), 0);
  std::vector<std::size_t> todo = {s};
  while (!todo.empty()) {
    std::size_t j = todo.back();
    todo.pop_back();
    if (seen[j]) continue;
    seen[j] = 1;
    if (g.at(j).unit == unit) {
      out.insert(j);
      continue;
    }
    todo.insert(todo.end(), g.preds[j].begin(), g.preds[j].end());
  }
  return out;
}

// Instructions on the paths back from `b` up to the previous barrier (or the entry).
std::vector<std::size_t> region_before(const Cfg& g, std::size_t b) {
  std::vector<std::size_t> out;
  std::vector<char> seen(g.preds.size(), 0);
  std::vector<std::size_t> todo(g.preds[b].begin(), g.preds[b].end());
  while (!todo.empty()) {
    std::size_t j = todo.back();
    todo.pop_back();
    if (seen[j] || j == b) continue;
    seen[j] = 1;
    if (g.at(j).unit == Unit::barrier) continue;
    out.push_back(j);
    todo.insert(todo.end(), g.preds[j].begin(), g.preds[j].end());
  }
  return out;
}

// The work of `region` only some warps do: instructions run fewer times than the barrier (the
// entry of a branch some warps take), and what follows them until the count is the barrier's
// again (the reconvergence point). A loop every warp runs alike runs a multiple of the
// barrier's count and starts nowhere below it, so it is not partial work.
std::vector<std::size_t> partial_work(const Cfg& g, const std::vector<std::size_t>& region, std::uint64_t barrier) {
  std::vector<char> in(g.preds.size(), 0), partial(g.preds.size(), 0);
  for (std::size_t j : region) in[j] = 1;
  std::vector<std::vector<std::size_t>> succs(g.preds.size());
  for (std::size_t j = 0; j < g.preds.size(); ++j)
    for (std::size_t p : g.preds[j]) succs[p].push_back(j);
  std::vector<std::size_t> todo;
  for (std::size_t j : region) {
    std::uint64_t n = g.code.instructions[j].counters.executed;
    if (n > 0 && n < barrier) todo.push_back(j);
  }
  while (!todo.empty()) {
    std::size_t j = todo.back();
    todo.pop_back();
    std::uint64_t n = g.code.instructions[j].counters.executed;
    if (!in[j] || partial[j] || n == 0 || n == barrier) continue;
    partial[j] = 1;
    todo.insert(todo.end(), succs[j].begin(), succs[j].end());
  }
  std::vector<std::size_t> out;
  for (std::size_t j : region)
    if (partial[j]) out.push_back(j);
  return out;
}

// Warps wait at a barrier for the warps still working before it. Work every warp does runs as
// often as the barrier; work some warps do (or do more of) runs a different number of times: its
// samples say where the late warps are.
Verdict barrier_work(const Cfg& g, std::size_t s, std::string& barrier_at) {
  Verdict v;
  auto bars = barriers_before(g, s, Unit::barrier);
  if (bars.size() != 1) {
    v.why = bars.empty() ? "no barrier instruction before it" : "several barriers reach it";
    return v;
  }
  std::size_t b = *bars.begin();
  const auto& bar = g.code.instructions[b];
  barrier_at = where(bar.file, bar.line);
  if (!g.code.has_counters || bar.counters.executed == 0) {
    v.why = "the page has no execution counts to tell unequal work";
    return v;
  }
  std::vector<std::size_t> partial = partial_work(g, region_before(g, b), bar.counters.executed);
  std::map<std::pair<std::string, int>, std::uint64_t> unequal;
  std::uint64_t all = 0;
  for (std::size_t j : partial) {
    const auto& c = g.code.instructions[j];
    std::uint64_t n = c.samples.all - c.samples.stalls[static_cast<std::size_t>(Stall::barrier)];
    unequal[{c.file, c.line}] += n;
    all += n;
  }
  if (all == 0) {
    v.why = "every warp runs the same instructions before the barrier";
    return v;
  }
  auto top = std::max_element(unequal.begin(), unequal.end(),
                              [](const auto& a, const auto& b2) { return a.second < b2.second; });
  const bool one = 2 * top->second >= all;
  for (std::size_t j : partial) {
    const auto& c = g.code.instructions[j];
    if (!one || std::make_pair(c.file, c.line) == top->first) v.producers.push_back(j);
  }
  v.status = one ? Cause::Status::found : Cause::Status::ambiguous;
  if (!one) v.why = "the unequal work before the barrier is spread over several lines";
  return v;
}

// A memory barrier waits for the earlier stores, atomics and reductions to be visible.
Verdict membar_stores(const Cfg& g, std::size_t s) {
  Verdict v;
  auto fences = barriers_before(g, s, Unit::membar);
  if (fences.empty()) {
    v.why = "no memory barrier instruction before it";
    return v;
  }
  std::set<std::size_t> stores;
  for (std::size_t f : fences)
    for (std::size_t j : region_before(g, f)) {
      const Instruction& d = g.at(j);
      if (d.unit == Unit::l1tex && d.access != profile::sass::Access::load && d.access != profile::sass::Access::none)
        stores.insert(j);
    }
  if (stores.empty()) {
    v.why = "no store before the memory barrier";
    return v;
  }
  return decide(g, stores);
}

std::string operation_of(const CodeInstruction& c) {
  const Instruction& d = c.decoded;
  if (d.access != profile::sass::Access::none && d.space != profile::sass::Space::none) {
    int bits = c.counters.access_bits ? c.counters.access_bits : d.access_bits;
    std::string s = fmt::format("{} {}", profile::sass::space_name(d.space), profile::sass::access_name(d.access));
    return bits ? fmt::format("{} ({}-bit)", s, bits) : s;
  }
  switch (d.unit) {
  case Unit::mio:
    return d.opcode + " (shared-memory/special-function pipe)";
  case Unit::constant:
    return d.opcode + " (constant cache)";
  case Unit::alu:
    return d.opcode + " (fixed latency)";
  default:
    return d.opcode;
  }
}

// "LDG.E, 32-bit, 4.0 sectors per request": the producer's own memory figures.
std::string producer_details(const CodeInstruction& c) {
  std::vector<std::string> parts = {profile::sass::mnemonic(c.decoded)};
  int bits = c.counters.access_bits ? c.counters.access_bits : c.decoded.access_bits;
  if (c.decoded.access != profile::sass::Access::none && bits) parts.push_back(fmt::format("{}-bit", bits));
  const auto& k = c.counters;
  if (k.executed && k.global_sectors) {
    double spr = ratio(k.global_sectors, k.executed), ideal = ratio(k.global_sectors_ideal, k.executed);
    parts.push_back(spr > ideal * 1.05 ? fmt::format("{:.1f} sectors per request where {:.1f} would do", spr, ideal)
                                       : fmt::format("{:.1f} sectors per request", spr));
  }
  if (k.shared_conflict_ways > 1) parts.push_back(fmt::format("{}-way bank conflicts", k.shared_conflict_ways));
  return util::join(parts, ", ");
}

// The instructions of (file, line) with samples of stall `k` that are walked back: the most
// sampled first, until they hold 95% of the line's samples of it or k_most_walked of them, so a
// line of a long unrolled loop costs a bounded number of walks. The rest count for nothing.
constexpr std::size_t k_most_walked = 64;
std::vector<std::size_t> walked(const KernelCode& code, const std::string& file, int line, std::size_t k) {
  std::vector<std::size_t> out;
  std::uint64_t all = 0;
  for (std::size_t s = 0; s < code.instructions.size(); ++s) {
    const auto& c = code.instructions[s];
    if (c.line != line || c.file != file || c.samples.stalls[k] == 0) continue;
    out.push_back(s);
    all += c.samples.stalls[k];
  }
  std::stable_sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) {
    return code.instructions[a].samples.stalls[k] > code.instructions[b].samples.stalls[k];
  });
  std::uint64_t taken = 0;
  std::size_t n = 0;
  while (n < out.size() && n < k_most_walked && 20 * taken < 19 * all)
    taken += code.instructions[out[n++]].samples.stalls[k];
  out.resize(n);
  return out;
}

} // namespace

// ---------------------------------------------------------------- a line's cause

std::string Cause::text() const {
  const std::string share_text =
      share > 0 && share < 0.995 ? fmt::format(" ({:.0f}% of its {} samples)", 100 * share, profile::stall_label(stall))
                                 : "";
  if (status == Status::undecided) return "what it waits on is not decided: " + why;
  if (status == Status::ambiguous)
    return fmt::format("waits on one of {} (not decided: {})", util::join(candidates, ", "), why);
  // The cause line's code beside its place, so a prompt shows both lines (issue #49).
  std::string at = where(file, line);
  if (!code.empty()) at += fmt::format(" `{}`", code.size() > 120 ? code.substr(0, 117) + "..." : code);
  if (kind == "queue") return fmt::format("waits for the queue of its own {} ({}){}", operation, details, share_text);
  if (kind == "barrier")
    return fmt::format("waits at the barrier of {} for the work of {}, which some warps do and others not{}",
                       barrier_at, at, share_text);
  if (kind == "membar")
    return fmt::format("waits at a memory barrier for the {} of {} ({}){}", operation, at, details, share_text);
  return fmt::format("waits on the {} of {} ({}){}", operation, at, details, share_text);
}

std::optional<Cause> find_cause(const KernelCode& code, const std::string& file, int line, Stall st) {
  const bool producer = st == Stall::long_scoreboard || st == Stall::short_scoreboard || st == Stall::wait;
  if (!producer && !is_queue(st) && st != Stall::barrier && st != Stall::membar) return std::nullopt;
  if (code.instructions.empty()) return std::nullopt;
  Cfg g(code);
  Cause out;
  out.stall = st;
  out.kind = producer ? "producer" : is_queue(st) ? "queue" : st == Stall::barrier ? "barrier" : "membar";
  const auto k = static_cast<std::size_t>(st);
  // Per stalled instruction its verdict, weighted by its samples of the stall.
  std::map<std::pair<std::string, int>, std::pair<double, std::size_t>> found; // line -> (samples, best producer)
  std::map<std::string, double> undecided;                                     // why -> samples
  std::set<std::pair<std::string, int>> ambiguous_lines;
  double ambiguous = 0, total = 0;
  for (std::size_t s : walked(code, file, line, k)) {
    const auto& c = code.instructions[s];
    const auto n = static_cast<double>(c.samples.stalls[k]);
    total += n;
    Verdict v;
    if (g.indirect) {
      v.why = "an indirect branch in the kernel makes its control flow unknown";
    } else if (producer) {
      v = producer_of(g, s, st);
    } else if (is_queue(st)) {
      // Memory instructions enter the MIO queue on their way to L1TEX too: a global load can
      // wait on mio_throttle (seen on the H100: the LDGs of examples/causes' conflict kernel).
      const Unit u = c.decoded.unit;
      const bool own = u == Unit::l1tex || (st == Stall::mio_throttle && (u == Unit::mio || u == Unit::constant));
      if (own) {
        v.status = Cause::Status::found;
        v.producers = {s};
      } else {
        v.why = "the stalled instruction is not itself a memory instruction of that queue";
      }
    } else if (st == Stall::barrier) {
      v = barrier_work(g, s, out.barrier_at);
    } else {
      v = membar_stores(g, s);
    }
    if (v.status == Cause::Status::undecided) {
      undecided[v.why] += n;
    } else if (v.status == Cause::Status::ambiguous) {
      ambiguous += n;
      for (std::size_t j : v.producers) ambiguous_lines.insert({code.instructions[j].file, code.instructions[j].line});
    } else {
      // The producer of the line that ran most often stands for the line.
      std::size_t best = *std::max_element(v.producers.begin(), v.producers.end(), [&](std::size_t a, std::size_t b) {
        return weight(code.instructions[a]) < weight(code.instructions[b]);
      });
      const auto& p = code.instructions[best];
      auto& slot = found[{p.file, p.line}];
      if (slot.first == 0 || weight(p) > weight(code.instructions[slot.second])) slot.second = best;
      slot.first += n;
    }
  }
  if (total == 0) return std::nullopt;
  auto top = std::max_element(found.begin(), found.end(),
                              [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
  if (top != found.end() && 2 * top->second.first >= total) {
    const auto& p = code.instructions[top->second.second];
    out.status = Cause::Status::found;
    out.file = p.file;
    out.line = p.line;
    out.instruction = p.sass;
    out.details = producer_details(p);
    out.operation = operation_of(p);
    out.share = top->second.first / total;
    if (p.line != line || p.file != file) out.facts = line_facts(code, p.file, p.line);
    return out;
  }
  double undecided_total = 0;
  for (const auto& [why, n] : undecided) undecided_total += n;
  if (undecided_total >= ambiguous && (top == found.end() || undecided_total >= top->second.first)) {
    auto most = std::max_element(undecided.begin(), undecided.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    out.status = Cause::Status::undecided;
    out.why = most->first;
    return out;
  }
  out.status = Cause::Status::ambiguous;
  for (const auto& [l, n] : found)
    if (n.first >= 0.2 * total) ambiguous_lines.insert(l);
  for (const auto& [f, l] : ambiguous_lines) out.candidates.push_back(where(f, l));
  out.why = ambiguous > 0 ? "producers on several lines run about as often"
                          : "its stalled instructions wait on different lines";
  return out;
}

// ---------------------------------------------------------------- divergence

std::string Divergence::text() const {
  const std::string head = fmt::format("runs with {:.1f} of 32 threads", threads);
  if (status == Cause::Status::found)
    return fmt::format("{}: its warps split at the branch of {}{} ({:.1f} threads there)", head, where(file, line),
                       code.empty() ? "" : fmt::format(" `{}`", code.size() > 120 ? code.substr(0, 117) + "..." : code),
                       branch_threads);
  if (status == Cause::Status::ambiguous)
    return fmt::format("{}: its warps split at one of the branches of {}", head, util::join(candidates, ", "));
  return fmt::format("{} (where its warps split is not decided: {})", head, why);
}

std::optional<Divergence> find_divergence(const KernelCode& code, const std::string& file, int line) {
  if (!code.has_counters) return std::nullopt;
  LineFacts f = line_facts(code, file, line);
  if (!std::isfinite(f.threads) || f.threads >= 31.5) return std::nullopt;
  Divergence out;
  out.threads = f.threads;
  Cfg g(code);
  // The line's most executed instruction, and the conditional branches met first walking back
  // from it whose threads are more than the line's: there its warps split.
  // The line's instruction with the fewest threads (a line may hold the branch with all of
  // them and the work after it with few); among equals the most executed.
  std::size_t start = code.instructions.size();
  double fewest = 0;
  for (std::size_t i = 0; i < code.instructions.size(); ++i) {
    const auto& c = code.instructions[i];
    const double t = threads_of(c.counters);
    if (c.line != line || c.file != file || !std::isfinite(t)) continue;
    if (start == code.instructions.size() || t < fewest ||
        (t == fewest && c.counters.executed > code.instructions[start].counters.executed)) {
      start = i;
      fewest = t;
    }
  }
  if (start == code.instructions.size()) return std::nullopt;
  if (g.indirect) {
    out.why = "an indirect branch in the kernel makes its control flow unknown";
    return out;
  }
  std::set<std::size_t> branches;
  std::vector<char> seen(g.preds.size(), 0);
  std::vector<std::size_t> todo(g.preds[start].begin(), g.preds[start].end());
  while (!todo.empty()) {
    std::size_t j = todo.back();
    todo.pop_back();
    if (seen[j]) continue;
    seen[j] = 1;
    const auto& c = code.instructions[j];
    const Instruction& d = c.decoded;
    const bool uniform = d.guard && (d.guard->kind == profile::sass::RegKind::uniform_predicate);
    const double t = threads_of(c.counters);
    // A loop's own branch, whose threads fall as their trips end, has a few more threads than its
    // body: a split means clearly more (half as many again).
    if (d.unit == Unit::branch && d.guard && !uniform && d.opcode != "BSSY" && std::isfinite(t) &&
        t > std::max(fewest + 0.5, 1.5 * fewest)) {
      branches.insert(j);
      continue;
    }
    todo.insert(todo.end(), g.preds[j].begin(), g.preds[j].end());
  }
  std::set<std::pair<std::string, int>> lines;
  for (std::size_t j : branches) lines.insert({code.instructions[j].file, code.instructions[j].line});
  if (lines.empty()) {
    out.why = "no conditional branch before it runs with more threads";
  } else if (lines.size() == 1) {
    out.status = Cause::Status::found;
    out.file = lines.begin()->first;
    out.line = lines.begin()->second;
    for (std::size_t j : branches)
      out.branch_threads = std::max(out.branch_threads, threads_of(code.instructions[j].counters));
  } else {
    out.status = Cause::Status::ambiguous;
    for (const auto& [fl, l] : lines) out.candidates.push_back(where(fl, l));
    out.why = "branches on several lines lead to it";
  }
  return out;
}

} // namespace optimas::analysis
