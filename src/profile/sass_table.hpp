// The SASS reader's one table (sass_table.cpp): what each opcode it knows writes, how wide its
// operands are, what it does to the flow of control and which memory it touches. Private to
// profile/sass.cpp.
#pragma once

#include "profile/sass.hpp"

#include <cstdint>
#include <string_view>

namespace optimas::profile::sass {

// Which operands an opcode writes.
enum class Writes : std::uint8_t {
  none,           // stores, branches, barriers: no register
  first,          // the first operand
  lead,           // leading predicates, the first register, then the predicates printed right after it ("LEA R8, P1")
  two,            // the first two operands (xSETP, PLOP3, VOTE)
  before_address, // every operand before the address (loads, atomics: "ATOMG PT, R2, desc[..][..]")
  first_register, // an unknown opcode: the first operand that names a register
};

// How many registers an operand covers beyond what its own text says ("R4.64").
enum class Shape : std::uint8_t {
  plain,        // a ".64" modifier makes every register operand a pair (ULDC.64, IADD.64, MOV.64)
  pair_dest,    // CS2R, LEPC: a 64-bit destination
  fp64,         // DADD, DFMA, DSETP: every register operand a pair
  convert,      // F2F, I2F, F2I, I2I, FRND: the type modifiers say which side is 64-bit
  wide_mad,     // IMAD.WIDE: the destination and the third source are pairs
  mma,          // HMMA, IMMA, DMMA: register fragments
  gmma,         // HGMMA and kin: a warpgroup's accumulators, tens of registers
  memory,       // the data registers get the width of the access
  texture,      // TEX, TLD: four components written, coordinate vectors read
  code_address, // CALL.ABS R4, JMX R4, RET R20: a 64-bit code address
};

// What an opcode does to the flow of control.
enum class Flow : std::uint8_t { none, jump, indirect_jump, call, ret, stop, reconverge };

struct OpInfo {
  std::string_view name;
  Unit unit = Unit::other;
  Writes writes = Writes::first;
  Shape shape = Shape::plain;
  Flow flow = Flow::none;
  Access access = Access::none;
  Space space = Space::none;
};

// The table's entry for `op`, a uniform twin's ("UIADD3" reads as "IADD3"), or nullptr for an
// opcode the reader does not know.
const OpInfo* lookup(std::string_view op);

} // namespace optimas::profile::sass
