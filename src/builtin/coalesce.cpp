// coalesce_tiles and warp_rows: a thread that walks its own row of a row-major array (`for (j...)
// acc op= a[row * n + j]`, row the global thread index) makes every warp load touch 32 rows, so
// the profile shows many sectors per request and long_scoreboard on the load. Both stage the
// rows through shared memory in tiles loaded at consecutive addresses, and each thread then runs
// its own loop body over its row, in the original order. warp_rows does it per warp (the lanes
// side by side along each of the warp's 32 rows, __syncwarp between tiles); coalesce_tiles per
// block (consecutive threads over the block's rows, __syncthreads).
//
// Why this stays bit-identical: the tile holds exactly the element the thread would have
// loaded for each j (the index expression is copied with row and j substituted), the array is
// never written by the kernel, and the body runs once per j in increasing j with the same
// statements, so every thread performs the same floating-point operations on the same values
// in the same order. The tiled path runs only where every thread that synchronises is sure to
// get there: for coalesce_tiles, a full block of the profiled 1-D shape; for warp_rows, a warp
// whose 32 rows all exist, in a 1-D block of whole warps no larger than the profiled one; the
// walk at the top of the kernel or under the `row < rows` guard. Others run the original loop.
// Token-level matching (see access.hpp); anything else is withheld with the reason.
#include "builtin/access.hpp"
#include "builtin/rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace optimas::builtin {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using access::Tokens;

using access::Outcome;
using access::withhold;

std::vector<int> brace_depths(const Tokens& t) {
  std::vector<int> d(t.size());
  int depth = 0;
  for (std::size_t x = 0; x < t.size(); ++x) {
    if (t[x].text == "}") --depth;
    d[x] = depth;
    if (t[x].text == "{") ++depth;
  }
  return d;
}

// The walk's context: where every thread of a full block is sure to arrive. Sets `rows` to
// the guard's bound (empty: no guard) or returns a reason.
std::string placement(const Tokens& t, const std::vector<int>& depth, const access::ForLoop& loop,
                      const std::string& row, const std::set<std::string>& uniform, std::string& rows,
                      std::size_t& guard_return) {
  auto bound_of = [&](std::size_t b, std::size_t e) { // `row OP E` -> E when uniform
    return access::is_uniform(t, b, e, uniform) ? access::text(t, b, e) : std::string();
  };
  guard_return = t.size();
  if (depth[loop.at] == 2) {
    // Inside `if (row < E) {`, itself at the top of the kernel.
    std::size_t open = loop.at;
    while (open > 0 && !(t[open].text == "{" && depth[open] == 1)) --open;
    std::size_t close_paren = open - 1;
    if (open < 6 || t[close_paren].text != ")") return "the walk is nested in a block that is not `if (row < rows)`";
    std::size_t if_at = close_paren;
    while (if_at > 0 && t[if_at].text != "if") --if_at;
    if (depth[if_at] != 1 || t[if_at + 1].text != "(" || t[if_at + 2].text != row || t[if_at + 3].text != "<" ||
        t[if_at + 4].text == "=" || (rows = bound_of(if_at + 4, close_paren)).empty())
      return "the walk is nested in a block that is not `if (row < rows)`";
    return "";
  }
  if (depth[loop.at] != 1)
    return "the walk is nested inside another statement, so not every thread of a block may reach it";
  // An optional `if (row >= E) return;` before it.
  for (std::size_t x = 1; x + 6 < loop.at; ++x) {
    if (t[x].text != "if" || depth[x] != 1 || t[x + 1].text != "(" || t[x + 2].text != row || t[x + 3].text != ">" ||
        t[x + 4].text != "=")
      continue;
    std::size_t close = access::matching(t, x + 1);
    if (close + 2 >= loop.at || t[close + 1].text != "return" || t[close + 2].text != ";") continue;
    rows = bound_of(x + 5, close);
    if (rows.empty()) return "the early return's bound is not the same for every thread";
    guard_return = close + 1;
    return "";
  }
  return "";
}

struct Walk {
  std::string array, row, index; // a, row, and the index text "(size_t)row * n + j"
  std::size_t index_begin = 0, index_end = 0;
  std::vector<std::pair<std::size_t, std::size_t>> loads; // [name, ']'] of each a[index] in the body
};

// Finds `a[index]` in the loop body with the index `... row * S + j` (row not uniform, j the
// loop variable). Returns a reason when none or an ambiguous one is found.
std::string find_walk(const Tokens& t, const cuda::Function& fn, const access::ForLoop& loop,
                      const std::set<std::string>& uniform, Walk& w) {
  std::string j(t[loop.var].text);
  for (std::size_t x = loop.body_begin; x + 1 < loop.body_end; ++x) {
    if (t[x].kind != cuda::TokenKind::identifier || t[x + 1].text != "[") continue;
    const cuda::Parameter* p = nullptr;
    for (const auto& q : fn.parameters)
      if (q.pointer && q.name == t[x].text) p = &q;
    if (!p) continue;
    std::size_t close = access::matching(t, x + 1);
    if (close >= loop.body_end) return "an index in the loop is not balanced";
    std::set<std::string> others;
    int js = 0;
    for (std::size_t y = x + 2; y < close; ++y)
      if (t[y].kind == cuda::TokenKind::identifier) {
        if (t[y].text == j)
          ++js;
        else if (!uniform.count(std::string(t[y].text)) && !access::arithmetic_type_word(t[y].text))
          others.insert(std::string(t[y].text));
      }
    if (js == 0 || others.size() != 1) continue;
    std::string idx = access::text(t, x + 2, close);
    if (w.array.empty()) {
      w.array = std::string(t[x].text);
      w.row = *others.begin();
      w.index = idx;
      w.index_begin = x + 2;
      w.index_end = close;
    }
    if (std::string(t[x].text) == w.array && idx != w.index)
      return fmt::format("{} is read at two different indices in the loop ({} and {})", w.array, w.index, idx);
    if (std::string(t[x].text) == w.array) w.loads.push_back({x, close});
  }
  if (w.array.empty())
    return "no load in the loop indexes a row by one thread-dependent value and a column by the loop variable";
  // The index: `E + j` or `j + E`, with E holding row * S; j and row once; nothing that writes.
  std::size_t b = w.index_begin, e = w.index_end;
  int rows_seen = 0, js = 0;
  for (std::size_t y = b; y < e; ++y) {
    rows_seen += t[y].text == w.row;
    js += t[y].text == j;
  }
  bool j_last = t[e - 1].text == j && t[e - 2].text == "+";
  bool j_first = t[b].text == j && t[b + 1].text == "+";
  std::set<std::string> names = uniform;
  names.insert(w.row);
  names.insert(j);
  bool strided = access::text(t, b, e).find('*') != std::string::npos;
  if (rows_seen != 1 || js != 1 || !(j_last || j_first) || !strided || !access::is_uniform(t, b, e, names))
    return fmt::format("the index {} is not row * stride + {} with the row the global thread index", w.index, j);
  return "";
}

// What both forms of the tiled walk compute: the walk, its names, the tile's shape, and the
// loop's text with its loads found. Empty reason and no edit when there is nothing to do.
struct Tiling {
  std::string a, row, j, type, start, end, rows, elem, original, ind, index;
  std::vector<access::Replacement> loads_at; // each a[index] of the body, to be replaced
  std::string load_index;                    // the index with row and j as row_t and j_t
  int block = 0, width = 0, size = 0;
  double sectors = 0;
};

// The checks both forms share (over 80 lines: each check reads the names the one before it found).
// A reason when the walk cannot be tiled; `ok` false with no reason when the evidence is not this array's.
std::string analyse_tiles(const json& k, const cuda::SourceFile& f, const cuda::Function& fn,
                          const std::map<std::string, std::string>& sources, const Tokens& t,
                          const access::ForLoop& loop, double sectors, int budget, Tiling& out, bool& ok) {
  ok = false;
  std::string_view body_text = std::string_view(f.text).substr(fn.body_begin, fn.end - fn.body_begin);
  auto uniform = access::uniform_names(f, fn, t);
  std::string j(t[loop.var].text);
  std::string type = access::text(t, loop.type_begin, loop.var);
  if (!access::is_uniform(t, loop.init_begin, loop.init_end, uniform))
    return ("the walk's start is not the same for every thread (a data-dependent trip count)");
  if (t[loop.cond_begin].text != j || t[loop.cond_begin + 1].text != "<" || t[loop.cond_begin + 2].text == "=" ||
      !access::is_uniform(t, loop.cond_begin + 2, loop.cond_end, uniform))
    return (fmt::format("the loop's bound is not `{} < E` with E the same for every thread (a data-dependent "
                        "trip count)",
                        j));
  std::string step = access::text(t, loop.step_begin, loop.step_end);
  if (step != j + "++" && step != "++" + j && step != j + "+=1")
    return (fmt::format("the loop does not step {} by one", j));
  std::string start = access::rewrite(body_text, t, loop.init_begin, loop.init_end, {});
  std::string end = access::rewrite(body_text, t, loop.cond_begin + 2, loop.cond_end, {});
  bool nested_loop = false;
  for (std::size_t x = loop.body_begin; x < loop.body_end; ++x) {
    std::string_view w = t[x].text;
    if (w == "return" || w == "break" || w == "goto" || w == "__syncthreads" || w == "asm" || w == "__syncwarp")
      return (fmt::format("the loop body holds `{}`, which the tiled loop (with __syncthreads between tiles) "
                          "cannot keep",
                          w));
    nested_loop = nested_loop || w == "for" || w == "while" || w == "do";
    if (w == "continue" && nested_loop) return ("a `continue` inside a nested loop");
    if (t[x].kind == cuda::TokenKind::identifier && x + 1 < t.size() && t[x + 1].text == "(" && f.function(w))
      return (fmt::format("the loop body calls {}, which could synchronise or exit", w));
  }
  if (access::assigned(t, loop.body_begin, loop.body_end, j))
    return (fmt::format("the body changes {} (a data-dependent trip count)", j));
  Walk walk;
  if (auto why = find_walk(t, fn, loop, uniform, walk); !why.empty()) return (why);
  const std::string& a = walk.array;
  const std::string& row = walk.row;
  auto init = access::initialiser(t, 0, loop.at, row);
  auto depth = brace_depths(t);
  if (!init || !access::is_thread_index(t, init->first, init->second) || depth[init->first] != 1)
    return (fmt::format("{} is not declared as blockIdx.x * blockDim.x + threadIdx.x at the top of the kernel", row));
  if (access::assigned(t, init->second, t.size(), row))
    return (fmt::format("{} is changed after its declaration", row));
  std::string rows;
  std::size_t guard_return = 0;
  if (auto why = placement(t, depth, loop, row, uniform, rows, guard_return); !why.empty()) return (why);
  for (std::size_t x = 0; x < t.size(); ++x) {
    if (t[x].text == "__shared__")
      return ("the kernel already uses shared memory, so the tile's budget cannot be judged");
    if ((t[x].text == "return" && x < loop.last && x != guard_return) || t[x].text == "goto")
      return (fmt::format("an early `{}` before the walk would leave __syncthreads waiting", t[x].text));
  }
  if (access::written_or_escapes(t, 0, t.size(), a))
    return (fmt::format("{} is written or passed on in the kernel, so a tile could hold a stale value", a));
  const cuda::Parameter* param = nullptr;
  for (const auto& p : fn.parameters)
    if (p.name == a) param = &p;
  std::string elem = access::pointee(*param);
  int size = access::element_size(elem);
  if (size == 0) return (fmt::format("{}'s element type `{}` is not one the tiles handle", a, elem));
  if (sectors <= 2.0 * size) return ""; // ideal for 8-byte words is 8: no evidence for this array
  int block = access::block_size(k, sources, fn.name);
  if (block == 0) return ("the block size is unknown (no profile figure, no literal block size in the launches)");
  int width = 128 / size; // one 128-byte line of each row per tile
  while (block * (width + 1) * size > budget && width > 32 / size) width /= 2;
  if (block * (width + 1) * size > budget)
    return (fmt::format("a tile of {} rows would need {} bytes of shared memory, over its {} (48 KiB shared by the "
                        "kernel's tiles)",
                        block, block * (width + 1) * size, budget));
  for (const auto& name : {a + "_tile", a + "_row0", a + "_e", a + "_r", a + "_c", a + "_w", a + "_lane", j + "_tile",
                           j + "_count", j + "_t", row + "_t"})
    for (const auto& tok : t)
      if (tok.text == name) return (fmt::format("the kernel already uses the name {}", name));
  if (!access::whole_lines(body_text, t, loop.at, loop.last))
    return ("the loop shares its first or last line with other code");
  std::vector<access::Replacement> subs;
  for (std::size_t y = walk.index_begin; y < walk.index_end; ++y)
    if (t[y].text == row || t[y].text == j) subs.push_back({y, y + 1, std::string(t[y].text) + "_t"});
  out.load_index = access::rewrite(body_text, t, walk.index_begin, walk.index_end, subs);
  for (auto [name, close] : walk.loads) out.loads_at.push_back({name, close + 1, ""});
  out.ind = access::indent_at(body_text, t[loop.at].offset);
  std::size_t first_line = body_text.rfind('\n', t[loop.at].offset) + 1;
  std::size_t last_end = body_text.find('\n', t[loop.last].offset);
  out.original = std::string(body_text.substr(first_line, last_end - first_line));
  out.a = a;
  out.row = row;
  out.j = j;
  out.type = type;
  out.start = start;
  out.end = end;
  out.rows = rows;
  out.elem = elem;
  out.index = walk.index;
  out.block = block;
  out.width = width;
  out.size = size;
  out.sectors = sectors;
  ok = true;
  return "";
}

enum class Form { block, warp };

// The body with each load of the walk reading the tile instead.
std::string tiled_body(const cuda::Function& fn, const cuda::SourceFile& f, const Tokens& t,
                       const access::ForLoop& loop, const Tiling& g, const std::string& element) {
  std::string_view body_text = std::string_view(f.text).substr(fn.body_begin, fn.end - fn.body_begin);
  std::vector<access::Replacement> loads = g.loads_at;
  for (auto& r : loads) r.with = element;
  return access::rewrite(body_text, t, loop.body_begin, loop.body_end, loads);
}

// The tiled walk after its head (the path's condition and the tile): tiles of `{W}` columns, each
// loaded by `load` between two `sync`s, then the thread's own row consumed in order; the
// original loop in the else branch.
std::string tiled_walk(const Tiling& g, const std::string& body, const std::string& sync, const std::string& load) {
  return fmt::format("{i}  for ({ty} {j}_tile = {start}; {j}_tile < ({end});) {{\n"
                     "{i}    const {ty} {j}_count = ({end}) - {j}_tile < {W} ? ({end}) - {j}_tile : {W};\n"
                     "{i}    {sync}(); // the previous tile is consumed\n"
                     "{load}"
                     "{i}    {sync}();\n"
                     "{i}    for ({ty} {j} = {j}_tile; {j} < {j}_tile + {j}_count; {j}++) {{\n"
                     "{i}      {body}\n"
                     "{i}    }}\n"
                     "{i}    {j}_tile += {j}_count;\n"
                     "{i}  }}\n"
                     "{i}}} else {{\n"
                     "{orig}\n"
                     "{i}}}",
                     fmt::arg("i", g.ind), fmt::arg("W", g.width), fmt::arg("ty", g.type), fmt::arg("j", g.j),
                     fmt::arg("start", g.start), fmt::arg("end", g.end), fmt::arg("sync", sync), fmt::arg("load", load),
                     fmt::arg("body", access::indented(body, "    ").substr(4)),
                     fmt::arg("orig", access::indented(g.original, "  ")));
}

// coalesce_tiles: the block's rows, synchronised with __syncthreads; only full blocks of the
// profiled shape take it.
std::string block_code(const Tiling& g, const std::string& body) {
  std::string full = g.rows.empty()
                         ? ""
                         : fmt::format(" &&\n{}    (long long)({}) - (long long)threadIdx.x + {} <= (long long)({})",
                                       g.ind, g.row, g.block, g.rows);
  auto args = fmt::make_format_args(g.ind, g.block, g.width, full, g.elem, g.a, g.row, g.type, g.j, g.load_index);
  std::string head = fmt::vformat(
      "{0}if (blockDim.x == {1} && blockDim.y == 1 && blockDim.z == 1{3}) {{\n"
      "{0}  // coalesce_tiles: the block's {1} rows, {2} columns at a time, loaded by consecutive threads at\n"
      "{0}  // consecutive addresses; each thread then reads its own row from shared memory, in order.\n"
      "{0}  __shared__ {4} {5}_tile[{1}][{2} + 1]; // + 1: a row's column c and the next row's are in other banks\n"
      "{0}  const long long {5}_row0 = (long long)({6}) - (long long)threadIdx.x;\n",
      args);
  std::string load = fmt::vformat("{0}    for (int {5}_e = threadIdx.x; {5}_e < {1} * {2}; {5}_e += {1}) {{\n"
                                  "{0}      const int {5}_r = {5}_e / {2}, {5}_c = {5}_e % {2};\n"
                                  "{0}      if ({5}_c < {8}_count) {{\n"
                                  "{0}        const decltype({6}) {6}_t = (decltype({6}))({5}_row0 + {5}_r);\n"
                                  "{0}        const {7} {8}_t = {8}_tile + {5}_c;\n"
                                  "{0}        {5}_tile[{5}_r][{5}_c] = {5}[{9}];\n"
                                  "{0}      }}\n"
                                  "{0}    }}\n",
                                  args);
  return head + tiled_walk(g, body, "__syncthreads", load);
}

// warp_rows: each warp's 32 rows, synchronised with __syncwarp; a warp takes it when all 32 of
// its rows exist, in any 1-D block of up to the profiled size that is a whole number of warps.
std::string warp_code(const Tiling& g, const std::string& body) {
  std::string full = g.rows.empty() ? ""
                                    : fmt::format(" &&\n{}    (long long)({}) - (long long)(threadIdx.x % 32) + 32 <= "
                                                  "(long long)({})",
                                                  g.ind, g.row, g.rows);
  auto args = fmt::make_format_args(g.ind, g.block, g.width, full, g.elem, g.a, g.row, g.type, g.j, g.load_index);
  std::string head = fmt::vformat(
      "{0}if (blockDim.x % 32 == 0 && blockDim.x <= {1} && blockDim.y == 1 && blockDim.z == 1{3}) {{\n"
      "{0}  // warp_rows: each warp's 32 rows, {2} columns at a time, the lanes side by side along each row;\n"
      "{0}  // each lane then reads its own row from shared memory, in order.\n"
      "{0}  __shared__ {4} {5}_tile[{1} / 32][32][{2} + 1]; // + 1: a row's column c and the next row's are in "
      "other banks\n"
      "{0}  {4} (*{5}_w)[{2} + 1] = {5}_tile[threadIdx.x / 32];\n"
      "{0}  const int {5}_lane = threadIdx.x % 32;\n"
      "{0}  const long long {5}_row0 = (long long)({6}) - {5}_lane;\n",
      args);
  std::string load = fmt::vformat("{0}    for (int {5}_r = 0; {5}_r < 32; ++{5}_r) {{\n"
                                  "{0}      if ({5}_lane < {8}_count) {{\n"
                                  "{0}        const decltype({6}) {6}_t = (decltype({6}))({5}_row0 + {5}_r);\n"
                                  "{0}        const {7} {8}_t = {8}_tile + {5}_lane;\n"
                                  "{0}        {5}_w[{5}_r][{5}_lane] = {5}[{9}];\n"
                                  "{0}      }}\n"
                                  "{0}    }}\n",
                                  args);
  return head + tiled_walk(g, body, "__syncwarp", load);
}

std::string rationale(const std::string& kernel, const Tiling& g, Form form) {
  std::string how =
      form == Form::block
          ? fmt::format("The block now loads {W}-column tiles of its {B} rows into shared memory with consecutive "
                        "threads at consecutive addresses",
                        fmt::arg("W", g.width), fmt::arg("B", g.block))
          : fmt::format("Each warp now loads {W}-column tiles of its 32 rows into shared memory, the lanes side by "
                        "side along each row (one line per row)",
                        fmt::arg("W", g.width));
  std::string who =
      form == Form::block
          ? fmt::format("Only full blocks of {}x1x1 threads{} take the tiled path, so every thread of such a block "
                        "reaches its __syncthreads; other blocks (the tail, another launch shape) run the original "
                        "loop.",
                        g.block, g.rows.empty() ? "" : fmt::format(" (all of whose rows are below {})", g.rows))
          : fmt::format("A warp takes the tiled path only when its 32 rows all exist{} in a 1-D block of a whole "
                        "number of warps, up to {} threads, so its 32 lanes all reach each __syncwarp; other warps "
                        "(the tail) run the original loop.",
                        g.rows.empty() ? "" : fmt::format(" (below {})", g.rows), g.block);
  return fmt::format(
      "{fn}: global loads use {s:.1f} sectors per request (ideal {z} for {z}-byte words) and the walk waits on "
      "long_scoreboard: each thread reads its own row, {a}[{idx}], so a warp's 32 loads touch 32 rows. {how} "
      "(padded by one element against bank conflicts), and each thread runs the same body over its row from there. "
      "Bit-identical: the tile holds exactly the element the thread would have loaded for each {j} ({a} is not "
      "written by the kernel), and the body runs once per {j} in increasing order, so every thread performs the same "
      "operations on the same values in the same order. {who}",
      fmt::arg("fn", kernel), fmt::arg("s", g.sectors), fmt::arg("z", g.size), fmt::arg("a", g.a),
      fmt::arg("idx", g.index), fmt::arg("how", how), fmt::arg("j", g.j), fmt::arg("who", who));
}

// The tiled form of one loop, its tile within `budget` bytes of shared memory; `array` names the
// array whose rows it walks.
Outcome plan_tiles(const json& k, const cuda::SourceFile& f, const cuda::Function& fn,
                   const std::map<std::string, std::string>& sources, const Tokens& t, const access::ForLoop& loop,
                   double sectors, Form form, int budget, std::string& array) {
  Tiling g;
  bool ok = false;
  if (auto why = analyse_tiles(k, f, fn, sources, t, loop, sectors, budget, g, ok); !ok) return withhold(why);
  array = g.a;
  std::string element = form == Form::block ? fmt::format("{}_tile[threadIdx.x][{} - {}_tile]", g.a, g.j, g.j)
                                            : fmt::format("{}_w[{}_lane][{} - {}_tile]", g.a, g.a, g.j, g.j);
  std::string body = tiled_body(fn, f, t, loop, g, element);
  std::string code = form == Form::block ? block_code(g, body) : warp_code(g, body);
  prompt::Edit e = access::loop_edit(form == Form::block ? "coalesce_tiles" : "warp_rows", f, fn, t, loop, code);
  e.rationale = rationale(fn.name, g, form);
  e.expected_effect.push_back({"stall_long_scoreboard", "decrease"});
  e.expected_effect.push_back({"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "decrease"});
  return {std::move(e), ""};
}

} // namespace

namespace {

// Static shared memory a kernel's tiles may take together.
constexpr int k_shared_budget = 48 * 1024;

// Either form, on the loops whose long_scoreboard lines the evidence names, and the other loops
// walking the same array's rows.
void tile_rule(const KernelInput& in, KernelEdits& ke, Form form) {
  const json& k = in.kernel;
  const cuda::SourceFile& f = in.file;
  const cuda::Function& fn = in.fn;
  const std::map<std::string, std::string>& sources = in.sources;
  auto sectors = access::figure(k, "global_load_sectors_per_request");
  if (!sectors || *sectors <= 8) return; // 4-byte words: 4 is ideal, 32 is one sector per thread
  const std::string& file = in.file_name;
  const auto& t = in.tokens;
  const int base_line = in.base_line;
  // Each long_scoreboard line goes to the innermost loop holding it.
  std::map<std::size_t, std::vector<std::string>> evidence; // loop's `for` token -> PC ids
  std::map<std::size_t, access::ForLoop> loops;
  for (const auto& l : stall_lines(k)) {
    if (l.file != file || l.stall != "stall_long_scoreboard") continue;
    std::optional<access::ForLoop> best;
    for (std::size_t x = 0; x < t.size(); ++x) {
      auto loop = access::for_loop(t, x);
      if (!loop || l.line < base_line + t[loop->at].line || l.line > base_line + t[loop->last].line) continue;
      if (!best || loop->at > best->at) best = loop; // a later start inside means nested deeper
    }
    if (!best) continue;
    loops[best->at] = *best;
    evidence[best->at].push_back(l.id);
  }
  // Every other loop of the kernel that walks the same array's rows takes the same form: a
  // kernel that walks its rows three times gains little from one walk tiled (a public row-wise
  // kernel: 1.07x from its first loop; an expert's every loop, 3.4x). It cites the evidence of
  // the walk the profile caught.
  std::string array;
  std::vector<std::string> first_evidence;
  for (const auto& [at, loop] : loops)
    if (plan_tiles(k, f, fn, sources, t, loop, *sectors, form, k_shared_budget, array).edit) {
      first_evidence = evidence[at];
      break;
    }
  if (!array.empty())
    for (std::size_t x = 0; x < t.size(); ++x) {
      auto loop = access::for_loop(t, x);
      if (!loop || loops.count(x)) continue;
      bool overlaps = false;
      for (const auto& [at, other] : loops) overlaps = overlaps || (x <= other.last && at <= loop->last);
      std::string walked;
      if (overlaps || !plan_tiles(k, f, fn, sources, t, *loop, *sectors, form, k_shared_budget, walked).edit ||
          walked != array)
        continue;
      loops[x] = *loop;
      evidence[x] = first_evidence;
    }
  // The tiles share the 48 KiB of static shared memory.
  int tiles = 0;
  for (const auto& [at, loop] : loops) {
    std::string walked;
    tiles += plan_tiles(k, f, fn, sources, t, loop, *sectors, form, k_shared_budget, walked).edit ? 1 : 0;
  }
  const int budget = k_shared_budget / std::max(1, tiles);
  std::string rf = access::roofline_id(k);
  for (const auto& [at, loop] : loops) {
    std::string walked;
    auto outcome = plan_tiles(k, f, fn, sources, t, loop, *sectors, form, budget, walked);
    std::vector<std::string> cited = evidence[at];
    if (!rf.empty()) cited.push_back(rf);
    if (outcome.edit) {
      if (tiles > 1)
        outcome.edit->rationale += fmt::format(" The kernel walks {}'s rows in {} loops: each is tiled, its tile "
                                               "within {} bytes of shared memory.",
                                               array, tiles, budget);
      outcome.edit->evidence = cited;
      ke.others.push_back(std::move(*outcome.edit));
    } else if (!outcome.reason.empty()) {
      const int line = base_line + t[loop.at].line; // (clang 14 lambdas cannot capture a structured binding)
      auto suggestion = [&](const char* rule) {
        return fmt::format("{}: stage the loop at line {} through shared-memory tiles ({})", fn.name, line, rule);
      };
      // The two forms share their checks: a reason warp_rows gave for this loop is not said twice.
      bool said = form == Form::block && std::any_of(ke.withheld.begin(), ke.withheld.end(), [&](const auto& w) {
                    return w.suggestion == suggestion("warp_rows") && w.reason == outcome.reason;
                  });
      if (!said)
        ke.withheld.push_back(
            {suggestion(form == Form::block ? "coalesce_tiles" : "warp_rows"), outcome.reason, cited});
    }
  }
}

} // namespace

void rule_coalesce_tiles(const KernelInput& in, KernelEdits& ke) {
  tile_rule(in, ke, Form::block);
}

void rule_warp_rows(const KernelInput& in, KernelEdits& ke) {
  tile_rule(in, ke, Form::warp);
}

} // namespace optimas::builtin
