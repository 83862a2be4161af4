#include "profile/sass.hpp"
#include "profile/sass_table.hpp"

#include <algorithm>
#include <charconv>

namespace optimas::profile::sass {

namespace {

// The register files' sizes; the last of R and UR is RZ and URZ, the last predicate PT.
int limit_of(RegKind k) {
  switch (k) {
  case RegKind::gpr:
    return 255;
  case RegKind::uniform:
    return 63;
  default:
    return 7;
  }
}

std::optional<int> number(std::string_view s) {
  int v = 0;
  if (s.empty() || s.size() > 4) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// A register name after its decorations are stripped: "R4", "UP0", "PT", "SR_TID".
struct Name {
  bool is_register = false; // names a register, even one that carries no dependency (RZ, PT, SR_TID, B0)
  bool predicate = false;   // spelled as a predicate (P0, PT, UP1, PR): the "lead" rule reads these
  std::optional<Regs> regs; // what it covers; none for RZ, URZ, PT, UPT, SRZ, SR_*, B*, SB*
};

Name indexed(std::string_view digits, RegKind kind) {
  auto n = number(digits);
  if (!n) return {};
  bool pred = kind == RegKind::predicate || kind == RegKind::uniform_predicate;
  if (*n >= limit_of(kind)) return {true, pred, std::nullopt}; // R255 is RZ, P7 is PT
  return {true, pred, Regs{kind, *n, 1}};
}

Name read_name(std::string_view s) {
  if (s == "RZ" || s == "URZ" || s == "SRZ") return {true, false, std::nullopt};
  if (s == "PT" || s == "UPT") return {true, true, std::nullopt};
  // PR is every predicate at once (P2R, R2P).
  if (s == "PR") return {true, true, Regs{RegKind::predicate, 0, 7}};
  if (s == "UPR") return {true, true, Regs{RegKind::uniform_predicate, 0, 7}};
  if (s.starts_with("SR_") || (s.starts_with("SB") && number(s.substr(2)))) return {true, false, std::nullopt};
  if (s.starts_with("B") && number(s.substr(1))) return {true, false, std::nullopt};
  if (s.starts_with("UR")) return indexed(s.substr(2), RegKind::uniform);
  if (s.starts_with("UP")) return indexed(s.substr(2), RegKind::uniform_predicate);
  if (s.starts_with("R")) return indexed(s.substr(1), RegKind::gpr);
  if (s.starts_with("P")) return indexed(s.substr(1), RegKind::predicate);
  return {};
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] != sep) continue;
    if (i > start) out.push_back(s.substr(start, i - start));
    start = i + 1;
  }
  return out;
}

// A register token with its decorations ("-|R3|.reuse", "!P2", "R2.H1_H1", "R4.64"); ".64" makes it a pair.
Name read_register(std::string_view tok) {
  std::string clean;
  for (char c : tok)
    if (c != '|') clean += c;
  std::string_view s = clean;
  while (!s.empty() && (s.front() == '-' || s.front() == '!' || s.front() == '~' || s.front() == '+'))
    s.remove_prefix(1);
  auto dot = s.find('.');
  Name n = read_name(s.substr(0, dot));
  if (dot == std::string_view::npos || !n.regs) return n;
  for (auto part : split(s.substr(dot + 1), '.'))
    if (part == "64") n.regs->count = 2;
  return n;
}

struct Operand {
  Name name;                        // a register operand
  bool address = false;             // [R2+0x10], desc[UR4][R2.64], c[0x0][R3], gdesc[UR4]
  std::vector<Regs> inner;          // the registers an address reads
  std::optional<std::uint64_t> hex; // an unsigned hex literal ("0x7fb93b7a0290")
  std::string_view text;
};

// The registers inside an address's brackets. desc[URn] is a 64-bit descriptor (URn, URn+1); gdesc[URn]
// holds a warpgroup MMA's two descriptors (URn..URn+3); c[bank][...] reads only what indexes it.
std::vector<Regs> address_registers(std::string_view tok) {
  std::vector<Regs> out;
  std::string_view prefix = tok.substr(0, tok.find('['));
  bool first_group = true;
  for (std::size_t open = tok.find('['); open != std::string_view::npos; open = tok.find('[', open + 1)) {
    auto close = tok.find(']', open);
    std::string_view inside = tok.substr(open + 1, close == std::string_view::npos ? close : close - open - 1);
    std::string flat(inside);
    std::replace(flat.begin(), flat.end(), '-', '+');
    std::replace(flat.begin(), flat.end(), '*', '+');
    for (auto part : split(flat, '+')) {
      Name n = read_register(part);
      if (!n.regs) continue;
      if (first_group && prefix == "desc") n.regs->count = std::max(n.regs->count, 2);
      if (first_group && prefix == "gdesc") n.regs->count = std::max(n.regs->count, 4);
      out.push_back(*n.regs);
    }
    first_group = false;
  }
  return out;
}

Operand read_operand(std::string_view tok) {
  Operand op;
  op.text = tok;
  if (tok.find('[') != std::string_view::npos) {
    op.address = true;
    op.inner = address_registers(tok);
    return op;
  }
  if (tok.starts_with("0x") || tok.starts_with("0X")) {
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(tok.data() + 2, tok.data() + tok.size(), v, 16);
    if (ec == std::errc() && end == tok.data() + tok.size()) op.hex = v;
    return op;
  }
  op.name = read_register(tok);
  return op;
}

// Operands are separated by commas, and by spaces where the printer omits the comma ("BRX R4 -0x7f00001200").
std::vector<Operand> read_operands(std::string_view s) {
  std::vector<Operand> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    char c = i < s.size() ? s[i] : ' ';
    if (c == '[') ++depth;
    if (c == ']' && depth > 0) --depth;
    bool sep = i == s.size() || (depth == 0 && (c == ',' || c == ' ' || c == '\t'));
    if (!sep) continue;
    if (i > start) out.push_back(read_operand(s.substr(start, i - start)));
    start = i + 1;
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '{')) s.remove_prefix(1);
  while (!s.empty() && std::string_view(" \t\r\n;}").find(s.back()) != std::string_view::npos) s.remove_suffix(1);
  return s;
}

// The text without "/* 0x0010 */" comments.
std::string without_comments(std::string_view text) {
  std::string out;
  while (true) {
    auto open = text.find("/*");
    if (open == std::string_view::npos) break;
    out += text.substr(0, open);
    auto close = text.find("*/", open + 2);
    if (close == std::string_view::npos) return out;
    text.remove_prefix(close + 2);
  }
  out += text;
  return out;
}

std::string_view next_word(std::string_view& s) {
  s = trim(s);
  auto end = s.find_first_of(" \t");
  std::string_view word = s.substr(0, end);
  s = end == std::string_view::npos ? std::string_view() : trim(s.substr(end));
  return word;
}

bool has(const Instruction& ins, std::string_view mod) {
  return std::find(ins.modifiers.begin(), ins.modifiers.end(), mod) != ins.modifiers.end();
}

bool valid_opcode(std::string_view op) {
  if (op.empty() || op.front() < 'A' || op.front() > 'Z') return false;
  return std::all_of(op.begin(), op.end(),
                     [](char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; });
}

void mark_lead(const std::vector<Operand>& ops, std::vector<bool>& out) {
  std::size_t i = 0;
  while (i < ops.size() && !ops[i].address) {
    out[i] = true;
    if (!ops[i++].name.predicate) break;
  }
  while (i < ops.size() && !ops[i].address && ops[i].name.predicate) out[i++] = true;
}

std::vector<bool> written_operands(Writes w, const std::vector<Operand>& ops) {
  std::vector<bool> out(ops.size(), false);
  std::size_t n = w == Writes::first ? 1 : w == Writes::two ? 2 : 0;
  for (std::size_t i = 0; i < std::min(n, ops.size()); ++i) out[i] = !ops[i].address;
  if (w == Writes::lead) mark_lead(ops, out);
  if (w == Writes::before_address)
    for (std::size_t i = 0; i < ops.size() && !ops[i].address; ++i) out[i] = true;
  if (w == Writes::first_register) {
    auto it = std::find_if(ops.begin(), ops.end(), [](const Operand& o) { return !o.address && o.name.is_register; });
    if (it != ops.end()) out[static_cast<std::size_t>(it - ops.begin())] = true;
  }
  return out;
}

// Makes a register operand cover at least count registers; predicates keep their single bit.
void widen(Operand& op, int count, bool gpr_only = false) {
  auto& r = op.name.regs;
  if (!r || (r->kind != RegKind::gpr && (gpr_only || r->kind != RegKind::uniform))) return;
  r->count = std::max(r->count, count);
}

bool wide_type(std::string_view m) {
  return m == "F64" || m == "S64" || m == "U64" || m == "64";
}

bool is_type(std::string_view m) {
  constexpr std::string_view k_types[] = {"F64", "F32", "F16", "BF16", "TF32", "E4M3", "E5M2", "S64",
                                          "U64", "S32", "U32", "S16",  "U16",  "S8",   "U8"};
  return std::find(std::begin(k_types), std::end(k_types), m) != std::end(k_types);
}

// F2F.F64.F32: the first type is the destination's, the second the source's. With one type, I2F's is
// the destination's when it names a float and F2I's the source's; otherwise both sides take it, since
// a missed pair would hide a dependency.
void convert_shape(const Instruction& ins, std::vector<Operand>& ops, const std::vector<bool>& written) {
  std::vector<std::string_view> types;
  for (const auto& m : ins.modifiers)
    if (is_type(m)) types.push_back(m);
  if (types.empty()) return;
  bool dest = wide_type(types[0]), src = wide_type(types.size() > 1 ? types[1] : types[0]);
  if (types.size() == 1) {
    bool is_float = types[0].front() == 'F';
    bool to_float = ins.opcode.starts_with("I2F"), from_float = ins.opcode.starts_with("F2I");
    if (to_float || from_float) {
      dest = dest && (to_float == is_float);
      src = src && (to_float != is_float);
    }
  }
  for (std::size_t i = 0; i < ops.size(); ++i) widen(ops[i], (written[i] ? dest : src) ? 2 : 1);
}

// The accumulators per thread of a warpgroup MMA: M x N / 128 ("64x128x16": 64); 128 when the shape is
// not printed. Counted for 32-bit accumulators, an over-approximation for 16-bit ones.
int gmma_registers(const Instruction& ins) {
  for (const auto& m : ins.modifiers) {
    auto dims = split(m, 'x');
    if (dims.size() != 3) continue;
    auto rows = number(dims[0]), cols = number(dims[1]);
    if (rows && cols && *rows * *cols >= 128) return *rows * *cols / 128;
  }
  return 128;
}

// Tensor-core fragments, over-approximated: HMMA/IMMA write 4 registers (an m16n8 F32 or S32 tile) and read
// up to 4 per source; DMMA 8. A warpgroup MMA writes all its accumulators and reads them back where the
// accumulator operand repeats the destination.
void mma_shape(const Instruction& ins, std::vector<Operand>& ops, const std::vector<bool>& written) {
  bool group = ins.opcode.ends_with("GMMA");
  int dest = group ? gmma_registers(ins) : ins.opcode == "DMMA" ? 8 : 4;
  int dest_index = -1, sources = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    auto& r = ops[i].name.regs;
    if (!r || r->kind != RegKind::gpr) continue;
    if (written[i]) {
      dest_index = r->index;
      widen(ops[i], dest);
    } else if (group) {
      widen(ops[i], r->index == dest_index ? dest : 4);
    } else if (sources++ < 3) {
      widen(ops[i], dest);
    }
  }
}

int access_bits(const Instruction& ins) {
  if (ins.opcode == "LDSM" || ins.opcode == "STSM") {
    // LDSM.16.M88.4 moves four 8x8 matrices: 32 bits of each per thread.
    for (const auto& m : ins.modifiers)
      if (m == "1" || m == "2" || m == "4") return 32 * (m[0] - '0');
    return 32;
  }
  int bits = 32;
  for (const auto& m : ins.modifiers) {
    if (wide_type(m)) bits = 64;
    if (m == "128" || m == "256") bits = m == "128" ? 128 : 256;
    if (m == "U8" || m == "S8") bits = 8;
    if (m == "U16" || m == "S16") bits = 16;
  }
  return bits;
}

// Loaded registers and stored data take the access's width (LDG.E.128 R8: R8..R11). Surface coordinates
// are vectors: a 2D address register holds x and y.
void memory_shape(const OpInfo& info, const Instruction& ins, std::vector<Operand>& ops,
                  const std::vector<bool>& written) {
  int count = std::max(1, access_bits(ins) / 32);
  if (info.space == Space::surface && has(ins, "P")) count = 4; // SULD.P: up to four channels
  bool data_after = info.access == Access::store || info.access == Access::atomic || info.access == Access::reduction;
  int dims = has(ins, "3D") ? 3 : has(ins, "2D") ? 2 : 1;
  bool after_address = false;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].address) {
      after_address = true;
      if (info.space == Space::surface)
        for (auto& r : ops[i].inner)
          if (r.kind == RegKind::gpr) r.count = std::max(r.count, dims);
    }
    if (written[i])
      widen(ops[i], count);
    else if (after_address && data_after)
      widen(ops[i], count, true);
  }
}

void apply_shape(const OpInfo& info, const Instruction& ins, std::vector<Operand>& ops,
                 const std::vector<bool>& written) {
  bool wide = has(ins, "64");
  for (std::size_t i = 0; i < ops.size(); ++i) {
    bool is_written = written[i];
    switch (info.shape) {
    case Shape::plain:
      widen(ops[i], wide ? 2 : 1);
      break;
    case Shape::pair_dest:
      widen(ops[i], wide || (is_written && !has(ins, "32")) ? 2 : 1);
      break;
    case Shape::fp64:
      widen(ops[i], 2);
      break;
    case Shape::texture:
      widen(ops[i], is_written ? 4 : 2, !is_written);
      break; // four components, coordinate pairs
    case Shape::code_address:
      widen(ops[i], 2, true);
      break;
    default:
      break;
    }
  }
  if (info.shape == Shape::convert) convert_shape(ins, ops, written);
  if (info.shape == Shape::mma || info.shape == Shape::gmma) mma_shape(ins, ops, written);
  if (info.shape == Shape::memory) memory_shape(info, ins, ops, written);
  if (info.shape == Shape::wide_mad && has(ins, "WIDE")) {
    // IMAD.WIDE d, a, b, c: d and c are 64-bit.
    std::size_t source = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (written[i] && !ops[i].name.predicate) widen(ops[i], 2);
      if (!written[i] && ++source == 3) widen(ops[i], 2);
    }
  }
}

// Adds a register range once, cut to the register file (R250.128 stops at R254).
void add(std::vector<Regs>& to, Regs r) {
  int room = limit_of(r.kind) - r.index;
  if (room <= 0) return;
  r.count = std::clamp(r.count, 1, room);
  if (std::find(to.begin(), to.end(), r) == to.end()) to.push_back(r);
}

void collect(Instruction& ins, const std::vector<Operand>& ops, const std::vector<bool>& written) {
  if (ins.guard) add(ins.uses, *ins.guard);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    for (const auto& r : ops[i].inner) add(ins.uses, r);
    if (ops[i].name.regs) add(written[i] ? ins.defs : ins.uses, *ops[i].name.regs);
  }
}

void apply_memory(const OpInfo& info, Instruction& ins, const std::vector<Operand>& ops) {
  ins.access = info.access;
  ins.space = info.space;
  if (info.access == Access::none) return;
  ins.access_bits = access_bits(ins);
  // RED prints .E and a descriptor for global memory; a bare address is generic.
  bool desc = std::any_of(ops.begin(), ops.end(), [](const Operand& o) { return o.text.starts_with("desc["); });
  if (ins.opcode == "RED" && (desc || has(ins, "E"))) ins.space = Space::global;
}

// A guarded instruction falls through when its guard is false, so only an unguarded one ends a path.
void apply_flow(Flow flow, Instruction& ins, const std::vector<Operand>& ops) {
  std::optional<std::uint64_t> hex;
  bool reads = false;
  for (const auto& o : ops) {
    if (o.hex) hex = o.hex;
    reads = reads || (!o.address && o.name.regs);
  }
  bool unguarded = !ins.guard;
  switch (flow) {
  case Flow::jump: // BRA.U !UP0, BRA.DIV UR4: conditional on what they read
    ins.target = hex;
    ins.ends_path = unguarded && !reads && !has(ins, "DIV");
    break;
  case Flow::indirect_jump:
    ins.indirect = true;
    ins.ends_path = unguarded;
    break;
  case Flow::call:
    ins.calls = true;
    ins.target = hex;
    ins.indirect = !hex && reads;
    break;
  case Flow::ret:
  case Flow::stop:
    ins.ends_path = unguarded;
    break;
  case Flow::reconverge:
    ins.target = hex;
    break; // BSSY: the reconvergence point; nothing jumps there now
  case Flow::none:
    break;
  }
}

void read_guard(Instruction& ins, std::string_view guard) {
  if (guard.size() < 2) return;
  Name n = read_register(guard.substr(1));
  if (!n.regs || !n.predicate) return; // @PT: always
  ins.guard = n.regs;
  ins.guard_negated = guard[1] == '!';
}

Instruction decode_text(std::string_view text) {
  Instruction ins;
  std::string clean = without_comments(text);
  std::string_view rest = trim(clean);
  std::string_view guard = rest.starts_with("@") ? next_word(rest) : std::string_view();
  auto parts = split(next_word(rest), '.');
  if (parts.empty()) {
    ins.known = false;
    return ins;
  }
  ins.opcode = parts[0];
  ins.modifiers.assign(parts.begin() + 1, parts.end());
  read_guard(ins, guard);
  auto ops = read_operands(rest);
  const OpInfo* found = valid_opcode(ins.opcode) ? lookup(ins.opcode) : nullptr;
  // Unknown text: the first register operand is taken as written, the rest as read.
  OpInfo info = found ? *found : OpInfo{"", Unit::other, Writes::first_register};
  ins.known = found != nullptr;
  ins.unit = info.unit;
  if (info.shape == Shape::convert &&
      std::any_of(ins.modifiers.begin(), ins.modifiers.end(), [](const auto& m) { return wide_type(m); }))
    ins.unit = Unit::mio; // FP64 conversions are variable latency (short scoreboard), like MUFU
  auto written = written_operands(info.writes, ops);
  apply_shape(info, ins, ops, written);
  collect(ins, ops, written);
  apply_memory(info, ins, ops);
  apply_flow(info.flow, ins, ops);
  return ins;
}

} // namespace

// Destinations are over-approximated where the text leaves the width open (MMA fragments, texture
// components, one-sided conversion types): the root-cause walk would rather see an extra write than miss one.
Instruction decode(std::string_view text) {
  try {
    return decode_text(text);
  } catch (...) {
    // Only allocation can throw here; an unreadable instruction is still an instruction.
    Instruction ins;
    ins.known = false;
    return ins;
  }
}

std::string mnemonic(const Instruction& ins) {
  std::string out = ins.opcode;
  for (const auto& m : ins.modifiers) {
    out += '.';
    out += m;
  }
  return out;
}

std::string_view space_name(Space s) {
  switch (s) {
  case Space::global:
    return "global";
  case Space::local:
    return "local";
  case Space::shared:
    return "shared";
  case Space::generic:
    return "generic";
  case Space::texture:
    return "texture";
  case Space::surface:
    return "surface";
  case Space::constant:
    return "constant";
  case Space::none:
    break;
  }
  return "";
}

std::string_view access_name(Access a) {
  switch (a) {
  case Access::load:
    return "load";
  case Access::store:
    return "store";
  case Access::atomic:
    return "atomic";
  case Access::reduction:
    return "reduction";
  case Access::none:
    break;
  }
  return "";
}

} // namespace optimas::profile::sass
