// Reading one SASS instruction as Nsight Compute's source page prints it ("@!P1 FSETP.NEU.AND
// P2, PT, R5, R8, PT", "LDG.E.64 R4, desc[UR8][R2.64+0x10]"): its opcode, guard, the registers
// and predicates it writes and reads, its branch target and what kind of unit serves it. The
// operand syntax is that of sm_80 to sm_100 (uniform registers and predicates, desc[] addressing,
// register pairs and quads, .reuse flags, negations). The root-cause walk (analysis/causes.hpp)
// reads these; nothing here knows a profile.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace optimas::profile::sass {

enum class RegKind : std::uint8_t { gpr, uniform, predicate, uniform_predicate };

// Registers index .. index + count - 1 of one kind ("R4.64" is {gpr, 4, 2}). RZ, URZ, PT and UPT
// are never listed: they hold constants and carry no dependency.
struct Regs {
  RegKind kind = RegKind::gpr;
  int index = 0;
  int count = 1;
  bool operator==(const Regs&) const = default;
  bool overlaps(const Regs& o) const { return kind == o.kind && index < o.index + o.count && o.index < index + count; }
};

// What serves an instruction, as far as the stall reasons go (docs/analysis.md, "What a stall
// waits on"): L1TEX (global, local, texture, surface, generic memory: long scoreboard), MIO
// (shared memory, special functions, shuffles, S2R...: short scoreboard), fixed-latency math,
// or control.
enum class Unit : std::uint8_t {
  alu,      // fixed latency: IADD3, FFMA, ISETP, MOV, ...
  l1tex,    // variable latency through L1TEX: LDG, STG, LD, ST, LDL, STL, ATOM, ATOMG, RED, TEX, SULD, ...
  mio,      // variable latency through MIO: LDS, STS, LDSM, ATOMS, SHFL, MUFU, S2R, ...
  constant, // LDC, ULDC: the constant cache
  barrier,  // BAR, SYNCS, ... (a block-wide barrier)
  membar,   // MEMBAR, FENCE, ERRBAR
  branch,   // BRA, BRX, JMP, JMX, CALL, RET, EXIT, BSSY, BSYNC, WARPSYNC, ...
  other,    // anything unknown, NOP, ...
};

// The memory operation an instruction performs, where it performs one.
enum class Access : std::uint8_t { none, load, store, atomic, reduction };
enum class Space : std::uint8_t { none, global, local, shared, generic, texture, surface, constant };

struct Instruction {
  std::string opcode;                 // "LDG"
  std::vector<std::string> modifiers; // {"E", "64"}
  std::optional<Regs> guard;          // the predicate the instruction is guarded by ("@!P1": P1)
  bool guard_negated = false;
  std::vector<Regs> defs;              // written: destination registers and predicates
  std::vector<Regs> uses;              // read: sources, address registers, store data, the guard
  std::optional<std::uint64_t> target; // a direct branch's or call's target address
  Unit unit = Unit::other;
  Access access = Access::none;
  Space space = Space::none;
  int access_bits = 0;    // bits moved per thread by a memory operation (32 for .E, 64, 128, 8 for .U8)
  bool indirect = false;  // a branch or call through a register (BRX, JMX, CALL through R): the walk cannot follow it
  bool ends_path = false; // EXIT, RET, an unguarded BRA or JMP: nothing falls through
  bool calls = false;     // CALL: the callee may write any register
  bool known = true;      // the opcode is in the reader's table; false: defs and uses are guessed
};

// Reads one instruction's text (leading spaces, a guard, the opcode with its modifiers, the
// operands, an optional trailing ";"). Never throws: text it cannot read gives an instruction with
// known = false, its first register operand taken as written and the rest as read.
Instruction decode(std::string_view text);

// "LDG.E.64": the opcode with its modifiers.
std::string mnemonic(const Instruction& ins);

// "global", "shared", ... and "load", "store", ...: "" for none.
std::string_view space_name(Space s);
std::string_view access_name(Access a);

} // namespace optimas::profile::sass
