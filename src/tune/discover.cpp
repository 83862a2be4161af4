// The knobs of an application without a tune: block (discover.hpp says which and when). Found on
// cuda::object_macros (integer defines) and cuda::lex tokens (launches and kernel declarations).
#include "tune/discover.hpp"

#include "cuda/macros.hpp"
#include "cuda/source.hpp"
#include "profile/stalls.hpp"
#include "tune/grid_stride.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

namespace optimas::tune {

std::string variable_value(std::string_view text, std::size_t at, const std::string& name) {
  const auto t = cuda::lex(text.substr(0, at));
  for (std::size_t i = t.size(); i-- > 1;) {
    if (t[i].text != name || t[i - 1].kind != cuda::TokenKind::identifier) continue;
    // A declaration: a type word before the name. Then `= E;` or `(E);`.
    if (i + 2 >= t.size()) return "";
    std::size_t from = i + 2, to = from;
    const bool constructed = t[i + 1].text == "(" || t[i + 1].text == "{";
    if (t[i + 1].text == ";" || t[i + 1].text == ",") {
      // Declared bare (`int b, g;`), then set once by a statement of its own (`b = TPB;`), as
      // Rodinia's gaussian sets its 2-D block.
      std::size_t set = 0, sets = 0;
      for (std::size_t j = i + 2; j + 2 < t.size(); ++j)
        if (t[j].text == name && t[j + 1].text == "=" && t[j + 2].text != "=" &&
            (t[j - 1].text == ";" || t[j - 1].text == "{" || t[j - 1].text == "}"))
          set = j, ++sets;
      if (sets != 1) return "";
      from = set + 2;
      for (to = from; to < t.size() && t[to].text != ";"; ++to) {
      }
    } else if (t[i + 1].text == "=") {
      while (to < t.size() && t[to].text != ";" && t[to].text != ",") ++to;
    } else if (constructed) {
      int depth = 1;
      for (to = from; to < t.size() && depth > 0; ++to) {
        if (t[to].text == "(" || t[to].text == "{") ++depth;
        if ((t[to].text == ")" || t[to].text == "}") && --depth == 0) break;
      }
    } else {
      return "";
    }
    if (to >= t.size() || to == from) return "";
    // Nothing may assign it after its declaration (b = ..., b.x = ..., b += ..., ++b, &b).
    auto is = [&](std::size_t j, const char* what) { return j < t.size() && t[j].text == what; };
    for (std::size_t j = to; j < t.size(); ++j) {
      if (t[j].text != name) continue;
      bool assigned = (is(j + 1, "=") && !is(j + 2, "=")) ||
                      (is(j + 2, "=") && (is(j + 1, "+") || is(j + 1, "-") || is(j + 1, "*") || is(j + 1, "/"))) ||
                      (is(j + 1, "+") && is(j + 2, "+")) || (is(j + 1, "-") && is(j + 2, "-")) ||
                      (j >= 2 && ((is(j - 1, "+") && is(j - 2, "+")) || (is(j - 1, "-") && is(j - 2, "-")))) ||
                      (j >= 1 && is(j - 1, "&")) || (is(j + 1, ".") && is(j + 3, "=") && !is(j + 4, "="));
      if (assigned) return "";
    }
    const std::string value = cuda::normalise(text.substr(t[from].offset, t[to].offset - t[from].offset));
    return constructed ? "dim3(" + value + ")" : value; // dim3 b(TPB, 1) reads as the dim3 it builds
  }
  return "";
}

namespace {

// "void foo<int>(float*)", "ns::foo<8>" -> "foo": what a launch names.
std::string bare_name(std::string name) {
  for (char stop : {'(', '<'})
    if (auto at = name.find(stop); at != std::string::npos) name.erase(at);
  if (auto at = name.rfind("::"); at != std::string::npos) name.erase(0, at + 2);
  if (auto at = name.rfind(' '); at != std::string::npos) name.erase(0, at + 1);
  return name;
}

bool limited_by(const analysis::Roofline& r, const char* resource) {
  return r.occupancy_limiter.find(resource) != std::string::npos;
}

double limit_of(const analysis::Roofline& r, const char* resource) {
  for (const auto& [label, blocks] : r.occupancy_limits)
    if (label == resource) return blocks;
  return NAN;
}

// `#define NAME 256` in a file: where, its value, and whether `#ifndef NAME` guards it.
struct Macro {
  std::string file, name;
  long long value = 0;
  std::size_t begin = 0, end = 0; // the directive's text
  bool guarded = false;
};

// The defines whose replacement is a decimal integer of at most five digits.
std::vector<Macro> integer_macros(const std::string& file, const std::string& text) {
  std::vector<Macro> out;
  for (const auto& m : cuda::object_macros(text)) {
    const std::string& v = m.text;
    if (v.empty() || v.size() >= 6 || !std::all_of(v.begin(), v.end(), ::isdigit)) continue;
    out.push_back({file, m.name, std::stoll(v), m.begin, m.end, m.guarded});
  }
  return out;
}

struct Hot {
  const analysis::KernelDiagnostics* k;
  std::string name; // bare
};

// The block sizes a macro knob tries: powers of two from 64 to 1024, and its own value.
std::vector<std::string> block_values(long long own) {
  std::set<long long> v = {64, 128, 256, 512, 1024};
  v.insert(own);
  std::vector<std::string> out;
  for (long long x : v) out.push_back(std::to_string(x));
  return out;
}

// The sides a square 2-D block's macro tries: 8, 16 and 32 (64 to 1024 threads), and its own.
std::vector<std::string> square_values(long long own) {
  std::set<long long> v = {8, 16, 32};
  v.insert(own);
  std::vector<std::string> out;
  for (long long x : v) out.push_back(std::to_string(x));
  return out;
}

std::string evidence_of(const analysis::Roofline& r) {
  std::string occupancy =
      std::isfinite(r.achieved_occupancy) ? fmt::format(", {:.0f}% achieved occupancy", r.achieved_occupancy) : "";
  return fmt::format("{}: {}, occupancy limited by {}{}", r.id, r.bound, r.occupancy_limiter, occupancy);
}

// The stall that dominates a kernel's samples, when there are any.
std::string dominant_stall(const analysis::KernelDiagnostics& k) {
  if (!k.stalls || k.stalls->kernel_stalls.empty()) return "";
  return std::string(profile::stall_name(k.stalls->kernel_stalls.front().first));
}

// A launch's block argument as one size: `TPB`, `dim3(TPB)`, `dim3(TPB, 1)` or `dim3(TPB, 1, 1)`
// give TPB; a 2-D or 3-D block gives "".
std::string one_dimension(std::string block) {
  for (const char* wrap : {"dim3(", "dim3 ("})
    if (block.rfind(wrap, 0) == 0 && block.back() == ')')
      block = block.substr(std::string(wrap).size()), block.pop_back();
  if (auto comma = block.find(','); comma != std::string::npos) {
    std::string rest = block.substr(comma);
    if (rest != ", 1" && rest != ", 1, 1" && rest != ",1" && rest != ",1,1") return "";
    block.erase(comma);
  }
  return block;
}

// A launch's block argument as the side of a square 2-D block: `dim3(B, B)` or `dim3(B, B, 1)`
// give B; anything else "".
std::string square_side(std::string block) {
  for (const char* wrap : {"dim3(", "dim3 ("})
    if (block.rfind(wrap, 0) == 0 && block.back() == ')') {
      block = block.substr(std::string(wrap).size());
      block.pop_back();
      std::vector<std::string> sides;
      for (const auto& part : util::split(block, ',')) sides.emplace_back(util::trim(part));
      if (sides.size() == 3 && sides[2] == "1") sides.pop_back();
      return sides.size() == 2 && sides[0] == sides[1] && !sides[0].empty() ? sides[0] : "";
    }
  return "";
}

void block_knobs(const std::map<std::string, std::string>& sources, const std::vector<Hot>& hot, Discovery& out,
                 std::map<std::string, std::string>& block_macro_of) {
  std::map<std::string, std::vector<Macro>> macros; // name -> definitions (one per file)
  for (const auto& [file, text] : sources)
    for (auto& m : integer_macros(file, text)) macros[m.name].push_back(m);
  std::set<std::string> done;
  for (const auto& [file, text] : sources)
    for (const auto& l : cuda::find_launches(text)) {
      auto h = std::find_if(hot.begin(), hot.end(), [&](const Hot& x) { return x.name == l.kernel; });
      if (h == hot.end() || l.config.size() < 2 || !h->k->roofline) continue;
      // The block's size, or the side of a square 2-D block, through variables set once from a
      // macro before the launch (`int threads = TPB;`, `dim3 b(TPB);`, `dim3 b(s, s)` with `s = SIDE;`).
      std::string block = l.config[1];
      int dims = 1;
      for (int hop = 0; hop < 3; ++hop) {
        std::string one = one_dimension(block);
        if (one.empty() && dims == 1 && !(one = square_side(block)).empty()) dims = 2;
        block = one;
        if (block.empty() || macros.count(block) || !(std::isalpha(block[0]) || block[0] == '_')) break;
        block = variable_value(text, l.config_offsets[1].first, block);
      }
      if (block.empty()) continue; // other 2-D blocks, 3-D ones, and what cannot be followed: left alone
      auto found = macros.find(block);
      if (found == macros.end()) {
        if (!block.empty() && std::all_of(block.begin(), block.end(), ::isdigit))
          out.passed.push_back(fmt::format("{}:{}: {} is launched with a literal block size ({}), which its grid would "
                                           "have to follow: not tuned",
                                           file, l.line, l.kernel, block));
        continue;
      }
      const auto& r = *h->k->roofline;
      bool occupancy = limited_by(r, "registers") || limited_by(r, "shared memory") || limited_by(r, "blocks");
      if (!occupancy && r.bound != "latency-bound") continue;
      block_macro_of[l.kernel] = dims == 1 ? block : "(" + block + " * " + block + ")"; // its threads
      if (!done.insert(block).second) continue;
      if (found->second.size() != 1) {
        out.passed.push_back(fmt::format("{} is defined in {} files: not tuned", block, found->second.size()));
        continue;
      }
      const Macro& m = found->second.front();
      if (dims == 1 && (m.value < 32 || m.value > 1024 || m.value % 32 != 0)) continue;
      if (dims == 2 && (m.value < 2 || m.value > 32)) continue;
      config::TuneParam p;
      p.name = block;
      p.values = dims == 1 ? block_values(m.value) : square_values(m.value);
      out.settings.params.push_back(p);
      out.defaults[block] = std::to_string(m.value);
      if (!m.guarded) {
        std::string& t = out.edited.try_emplace(m.file, sources.at(m.file)).first->second;
        std::size_t at = t.find(sources.at(m.file).substr(m.begin, m.end - m.begin));
        if (at != std::string::npos) {
          t.insert(at + (m.end - m.begin), "\n#endif");
          t.insert(at, "#ifndef " + block + "\n");
        }
      }
      out.knobs.push_back(fmt::format("{} ({}:{}, {}): the block {} of {}; {}{}", block, m.file, l.line,
                                      fmt::join(p.values, " "), dims == 1 ? "size" : "side (a square 2-D block)",
                                      l.kernel, evidence_of(r),
                                      m.guarded ? "" : "; #ifndef added so that -D reaches it"));
    }
}

void bounds_knobs(const std::map<std::string, std::string>& sources, const std::vector<Hot>& hot, Discovery& out,
                  const std::map<std::string, std::string>& block_macro_of) {
  for (const auto& h : hot) {
    if (!h.k->roofline || !limited_by(*h.k->roofline, "registers")) continue;
    const auto& r = *h.k->roofline;
    for (const auto& [file, text] : sources) {
      auto f = cuda::parse_source(file, text);
      const cuda::Function* fn = f.kernel(h.name);
      if (!fn) continue;
      if (!fn->launch_bounds.empty() || fn->is_template) {
        out.passed.push_back(fmt::format("{}: {} {}: its minimum blocks per SM not tuned", file, h.name,
                                         fn->is_template ? "is a template" : "has __launch_bounds__ already"));
        break;
      }
      auto mb = block_macro_of.find(h.name);
      std::string max_threads = mb != block_macro_of.end() ? mb->second : std::to_string(r.block_size);
      if (r.block_size <= 0 && mb == block_macro_of.end()) break;
      double now = limit_of(r, "registers");
      int current = std::isfinite(now) && now >= 1 ? static_cast<int>(now) : 1;
      int most = r.block_size > 0 ? std::max(1, 2048 / r.block_size) : 8;
      std::set<int> v = {0};
      for (int x : {current + 1, 2 * current})
        if (x <= most) v.insert(x);
      if (v.size() == 1) break;
      std::string name = std::string(k_min_blocks_prefix) + h.name, bounds = "OPTIMAS_BOUNDS_" + h.name;
      config::TuneParam p;
      p.name = name;
      for (int x : v) p.values.push_back(std::to_string(x));
      out.settings.params.push_back(p);
      out.defaults[name] = "0";
      std::string& t = out.edited.try_emplace(file, text).first->second;
      std::string decl = text.substr(fn->begin, fn->body_begin - fn->begin);
      std::size_t at = t.find(decl);
      std::size_t name_at = at == std::string::npos ? at : t.find(h.name + "(", at);
      if (name_at == std::string::npos) name_at = t.find(h.name + " (", at);
      if (at == std::string::npos || name_at == std::string::npos || name_at > at + decl.size()) {
        out.settings.params.pop_back();
        out.defaults.erase(name);
        out.passed.push_back(fmt::format("{}: {}'s declaration could not be edited", file, h.name));
        break;
      }
      t.insert(name_at, bounds + " ");
      // The directives go at the start of the declaration's line (`extern "C" __global__ ...`
      // starts before __global__, and a directive must begin its line).
      at = t.rfind('\n', at);
      at = at == std::string::npos ? 0 : at + 1;
      t.insert(at, fmt::format("#ifndef {0}\n#define {0} 0\n#endif\n#if {0} > 0\n#define {1} __launch_bounds__({2}, "
                               "{0})\n#else\n#define {1}\n#endif\n",
                               name, bounds, max_threads));
      out.knobs.push_back(fmt::format("{} ({}:{}, {}): __launch_bounds__({}, N) on {} (0: none, as now; registers "
                                      "allow {} block(s) per SM now); {}",
                                      name, file, fn->first_line, fmt::join(p.values, " "), max_threads, h.name,
                                      current, evidence_of(r)));
      break;
    }
  }
}

void cache_knob(const std::vector<Hot>& hot, Discovery& out) {
  for (const auto& h : hot) {
    if (!h.k->roofline) continue;
    const auto& r = *h.k->roofline;
    std::string stall = dominant_stall(*h.k);
    if ((stall != "long_scoreboard" && stall != "lg_throttle") ||
        (r.bound != "memory-bound" && r.bound != "latency-bound"))
      continue;
    config::TuneParam p;
    p.name = "dlcm";
    p.kind = config::TuneParam::Kind::flag;
    p.values = {"", "-Xptxas -dlcm=ca", "-Xptxas -dlcm=cg"};
    out.settings.params.push_back(p);
    out.defaults["dlcm"] = "";
    out.knobs.push_back(fmt::format("dlcm (none, -Xptxas -dlcm=ca, -Xptxas -dlcm=cg): how global loads use L1; {} "
                                    "waits on {} ({}, {})",
                                    h.name, stall, r.id, r.bound));
    return;
  }
}

// The waves of a kernel's grid where the evidence says it fills less than half a wave
// (Roofline::short_grid), or, where the profile has no waves, 0.25 when its achieved occupancy is
// below half the theoretical; NAN otherwise.
double waves_short(const analysis::Roofline& r) {
  if (std::isfinite(r.waves)) return r.short_grid() ? r.waves : NAN;
  if (std::isfinite(r.achieved_occupancy) && std::isfinite(r.theoretical_occupancy) &&
      r.achieved_occupancy < 0.5 * r.theoretical_occupancy)
    return 0.25; // tries up to 8 times the grid
  return NAN;
}

// OPTIMAS_GRID_SCALE: the literal grids (`k<<<128, b>>>`, or an integer macro) of hot kernels
// that fill less than half a wave, times 1, 2, 4 ... up to the first that makes every one two
// waves (at most 32). Only kernels whose results cannot depend on the grid (grid_stride.hpp).
void grid_knob(const std::map<std::string, std::string>& sources, const std::vector<Hot>& hot, Discovery& out) {
  const std::string knob(k_grid_knob);
  std::vector<cuda::SourceFile> files;
  for (const auto& [file, text] : sources) files.push_back(cuda::parse_source(file, text));
  std::set<std::string> integers; // integer macros: a grid may be one
  for (const auto& [file, text] : sources)
    for (const auto& m : integer_macros(file, text)) integers.insert(m.name);
  double fewest = 1;
  std::vector<std::string> scaled;
  for (const auto& f : files)
    for (const auto& l : cuda::find_launches(f.text)) {
      auto h = std::find_if(hot.begin(), hot.end(), [&](const Hot& x) { return x.name == l.kernel; });
      if (h == hot.end() || l.config.size() < 2 || !h->k->roofline) continue;
      const std::string& grid = l.config[0];
      // One block is usually an algorithm written for one (a last reduction step): left alone.
      if (grid.empty() || grid == "1" || !(std::all_of(grid.begin(), grid.end(), ::isdigit) || integers.count(grid)))
        continue;
      const double waves = waves_short(*h->k->roofline);
      if (!std::isfinite(waves)) continue;
      const cuda::Function* fn = nullptr;
      const cuda::SourceFile* home = nullptr;
      for (const auto& g : files)
        if ((fn = g.kernel(l.kernel))) {
          home = &g;
          break;
        }
      std::string why = fn ? grid_dependence(*home, *fn, files) : "its definition is not in the sources";
      const std::string where = fmt::format("{}:{}", f.path, l.line);
      if (!why.empty()) {
        out.passed.push_back(
            fmt::format("{}: {}'s grid ({} blocks, {:.2g} waves) not scaled: {}", where, l.kernel, grid, waves, why));
        continue;
      }
      // The launch up to its grid, found again in the text other knobs may have edited.
      const std::size_t line_begin = f.text.rfind('\n', l.config_offsets[0].first) + 1;
      const std::string before = f.text.substr(line_begin, l.config_offsets[0].second - line_begin);
      std::string& t = out.edited.try_emplace(f.path, f.text).first->second;
      const std::size_t at = t.find(before);
      if (at == std::string::npos || t.find(before, at + 1) != std::string::npos) {
        out.passed.push_back(fmt::format("{}: {}'s launch could not be edited", where, l.kernel));
        continue;
      }
      // The argument's range may hold the spaces around it (`<<< 128 , b>>>`): they stay.
      const auto [grid_begin, grid_end] = l.config_offsets[0];
      const std::string arg = f.text.substr(grid_begin, grid_end - grid_begin);
      const std::size_t lead = arg.find_first_not_of(" \t\n"), trail = arg.find_last_not_of(" \t\n") + 1;
      t.replace(at + (grid_begin - line_begin) + lead, trail - lead,
                fmt::format("({} * {})", arg.substr(lead, trail - lead), knob));
      if (t.find("#ifndef " + knob + "\n") == std::string::npos)
        t.insert(0, fmt::format("#ifndef {0}\n#define {0} 1\n#endif\n", knob));
      fewest = std::min(fewest, waves);
      scaled.push_back(
          fmt::format("{} ({}, {} blocks; {}: {:.2g} waves)", l.kernel, where, grid, h->k->roofline->id, waves));
    }
  if (scaled.empty()) return;
  config::TuneParam p;
  p.name = knob;
  for (int x = 1; x <= 32; x *= 2) {
    p.values.push_back(std::to_string(x));
    if (x * fewest >= 2) break;
  }
  out.settings.params.push_back(p);
  out.defaults[knob] = "1";
  out.knobs.push_back(fmt::format("{} ({}): the grid of {} times N; each walks a grid-stride loop, so any grid "
                                  "computes the same elements the same way",
                                  knob, fmt::join(p.values, " "), fmt::join(scaled, ", ")));
}

} // namespace

Discovery discover(const std::map<std::string, std::string>& sources, const analysis::Diagnostics& d, int budget) {
  Discovery out;
  std::vector<Hot> hot;
  for (const auto& k : d.kernels) hot.push_back({&k, bare_name(k.time.kernel)});
  std::map<std::string, std::string> block_macro_of; // kernel -> its threads per block, in its macro
  block_knobs(sources, hot, out, block_macro_of);
  bounds_knobs(sources, hot, out, block_macro_of);
  grid_knob(sources, hot, out);
  cache_knob(hot, out);
  std::set<std::string> macros; // the block-size macros made knobs (the bounds' are new names)
  for (const auto& p : out.settings.params)
    if (p.kind == config::TuneParam::Kind::macro) macros.insert(p.name);
  out.echoes = config_echoes(sources, macros);
  // Macros before flags, as read_tune orders them.
  std::stable_partition(out.settings.params.begin(), out.settings.params.end(),
                        [](const config::TuneParam& p) { return p.kind == config::TuneParam::Kind::macro; });
  out.settings.budget = std::min(budget, k_discovered_budget);
  // Each reason once: the instances of a template are hot kernels of one name (alignedTypes'
  // six testKernel<...> gave six lines "testKernel is a template").
  std::set<std::string> said;
  std::erase_if(out.passed, [&](const std::string& line) { return !said.insert(line).second; });
  for (auto it = out.edited.begin(); it != out.edited.end();)
    it = it->second == sources.at(it->first) ? out.edited.erase(it) : std::next(it);
  return out;
}

} // namespace optimas::tune
