#include "profile/sass.hpp"

#include <gtest/gtest.h>

#include <ostream>

using namespace optimas::profile::sass;

namespace optimas::profile::sass {
// Readable failures: "R4:2" rather than the bytes of a Regs.
void PrintTo(const Regs& r, std::ostream* os) {
  constexpr const char* k_prefix[] = {"R", "UR", "P", "UP"};
  *os << k_prefix[static_cast<int>(r.kind)] << r.index;
  if (r.count != 1) *os << ":" << r.count;
}
} // namespace optimas::profile::sass

namespace {

using List = std::vector<Regs>;

Regs r(int i, int n = 1) {
  return {RegKind::gpr, i, n};
}
Regs ur(int i, int n = 1) {
  return {RegKind::uniform, i, n};
}
Regs p(int i, int n = 1) {
  return {RegKind::predicate, i, n};
}
Regs up(int i) {
  return {RegKind::uniform_predicate, i, 1};
}

// Decodes a line and checks what it writes and reads, in operand order.
void expect_regs(std::string_view text, const List& defs, const List& uses) {
  Instruction ins = decode(text);
  EXPECT_TRUE(ins.known) << text;
  EXPECT_EQ(ins.defs, defs) << text;
  EXPECT_EQ(ins.uses, uses) << text;
}

} // namespace

TEST(Sass, OpcodeModifiersAndMnemonic) {
  Instruction ins = decode("      LDG.E.64.CONSTANT R4, desc[UR4][R6.64]");
  EXPECT_EQ(ins.opcode, "LDG");
  EXPECT_EQ(ins.modifiers, (std::vector<std::string>{"E", "64", "CONSTANT"}));
  EXPECT_EQ(mnemonic(ins), "LDG.E.64.CONSTANT");
  EXPECT_EQ(mnemonic(decode("EXIT")), "EXIT");
  // Trailing ";" and nvdisasm-style comments are not operands.
  Instruction c = decode("/*0090*/  LDG.E R2, desc[UR8][R4.64] ; /* 0x000ea8000c1e1900 */");
  EXPECT_EQ(mnemonic(c), "LDG.E");
  EXPECT_EQ(c.defs, List{r(2)});
  EXPECT_EQ(c.uses, (List{ur(8, 2), r(4, 2)}));
}

TEST(Sass, Guards) {
  Instruction a = decode("@P0   EXIT");
  ASSERT_TRUE(a.guard);
  EXPECT_EQ(*a.guard, p(0));
  EXPECT_FALSE(a.guard_negated);
  EXPECT_EQ(a.uses, List{p(0)});
  Instruction b = decode("@!P1  FSETP.NEU.AND P2, PT, R5, R8, PT");
  ASSERT_TRUE(b.guard);
  EXPECT_EQ(*b.guard, p(1));
  EXPECT_TRUE(b.guard_negated);
  EXPECT_EQ(b.defs, List{p(2)});
  EXPECT_EQ(b.uses, (List{p(1), r(5), r(8)}));
  Instruction c = decode("@!UP0 UMOV UR4, UR6");
  ASSERT_TRUE(c.guard);
  EXPECT_EQ(*c.guard, up(0));
  EXPECT_TRUE(c.guard_negated);
  EXPECT_EQ(c.uses, (List{up(0), ur(6)}));
  EXPECT_EQ(*decode("@UP2 UIADD3 UR4, UR4, 0x1, URZ").guard, up(2));
  // @PT always runs: no guard, and PT carries no dependency.
  Instruction d = decode("@PT MOV R2, R3");
  EXPECT_FALSE(d.guard);
  EXPECT_EQ(d.uses, List{r(3)});
  expect_regs("@!P0  IMAD.MOV R9, RZ, RZ, R6", {r(9)}, {p(0), r(6)});
  expect_regs("@!P1  ISETP.LT.AND P0, PT, R7, R2, !P2", {p(0)}, {p(1), r(7), r(2), p(2)});
}

TEST(Sass, SourcePageLinesOfSm90) {
  expect_regs("      LDC R1, c[0x0][0x28]", {r(1)}, {});
  expect_regs("      S2R R0, SR_CTAID.X", {r(0)}, {});
  expect_regs("      ULDC UR4, c[0x0][0x228]", {ur(4)}, {});
  expect_regs("      LDC.64 R4, c[0x0][0x218]", {r(4, 2)}, {});
  expect_regs("      ULDC.64 UR8, c[0x0][0x208]", {ur(8, 2)}, {});
  expect_regs("      SHF.R.S32.HI R3, RZ, 0x1f, R2", {r(3)}, {r(2)});
  expect_regs("      VIADD R9, R6, 0x1", {r(9)}, {r(6)});
  expect_regs("      S2UR UR6, SR_CgaCtaId", {ur(6)}, {});
  expect_regs("      UMOV UR4, 0x400", {ur(4)}, {});
  expect_regs("      ULEA UR4, UR6, UR4, 0x18", {ur(4)}, {ur(6), ur(4)});
  expect_regs("      LDC R10, c[0x0][RZ]", {r(10)}, {});
  expect_regs("      BAR.SYNC.DEFER_BLOCKING 0x0", {}, {});
  expect_regs("      BSYNC B0", {}, {});
  expect_regs("      MOV R2, 0x3f800000", {r(2)}, {});
  expect_regs("      MOV R4, UR4", {r(4)}, {ur(4)});
  expect_regs("      IMAD R2, R3, c[0x0][0x0], R0", {r(2)}, {r(3), r(0)});
  expect_regs("      R2UR UR4, R2", {ur(4)}, {r(2)});
  expect_regs("      POPC R3, R2", {r(3)}, {r(2)});
  expect_regs("      FLO.U32 R2, R4", {r(2)}, {r(4)});
  expect_regs("      BREV R2, R3", {r(2)}, {r(3)});
  expect_regs("      PRMT R2, R3, 0x7604, R2", {r(2)}, {r(3), r(2)});
  expect_regs("      FMNMX R2, R2, R3, !PT", {r(2)}, {r(2), r(3)});
  expect_regs("      IMNMX R2, R3, R4, PT", {r(2)}, {r(3), r(4)});
  expect_regs("      MATCH.ANY R3, R2", {r(3)}, {r(2)});
  expect_regs("      REDUX.SUM UR4, R2", {ur(4)}, {r(2)});
  expect_regs("      BMOV.32.CLEAR RZ, B0", {}, {});
  expect_regs("      NANOSLEEP 0x20", {}, {});
}

TEST(Sass, ComparisonsAndPredicateLogicWriteTwoOperands) {
  expect_regs("ISETP.GE.AND P0, PT, R0, UR4, PT", {p(0)}, {r(0), ur(4)});
  expect_regs("ISETP.GE.AND P0, P1, R0, UR4, PT", {p(0), p(1)}, {r(0), ur(4)});
  expect_regs("FSETP.GT.AND P1, PT, R5, R8, PT", {p(1)}, {r(5), r(8)});
  expect_regs("PLOP3.LUT P0, PT, PT, PT, PT, 0x80, 0x0", {p(0)}, {});
  expect_regs("PLOP3.LUT P1, PT, P0, PT, PT, 0xa8, 0x0", {p(1)}, {p(0)});
  expect_regs("PSETP.AND P0, PT, P1, P2, PT", {p(0)}, {p(1), p(2)});
  expect_regs("UISETP.NE.AND UP0, UPT, UR4, URZ, PT", {up(0)}, {ur(4)});
  expect_regs("HSETP2.GT.AND P0, P1, R2, R3, PT", {p(0), p(1)}, {r(2), r(3)});
}

TEST(Sass, CarryPredicates) {
  // Predicates printed right after the destination are carry-outs: written.
  expect_regs("LEA R8, P1, R6, R8, 0x2", {r(8), p(1)}, {r(6), r(8)});
  expect_regs("IADD3 R4, P0, PT, R2, R3, RZ", {r(4), p(0)}, {r(2), r(3)});
  expect_regs("IADD3 R4, P0, P1, R2, R3, RZ", {r(4), p(0), p(1)}, {r(2), r(3)});
  // Trailing predicates are carry-ins: read.
  expect_regs("LEA.HI.X R9, R6, R9, R7, 0x2, P1", {r(9)}, {r(6), r(9), r(7), p(1)});
  expect_regs("IADD3.X R5, R3, R7, RZ, P0, !PT", {r(5)}, {r(3), r(7), p(0)});
  expect_regs("IMAD.X R3, RZ, RZ, R5, P0", {r(3)}, {r(5), p(0)});
  expect_regs("SEL R3, R2, RZ, P0", {r(3)}, {r(2), p(0)});
  expect_regs("FSEL R4, R4, RZ, !P0", {r(4)}, {r(4), p(0)});
  // A predicate result printed before LOP3's register destination.
  expect_regs("LOP3.LUT P0, RZ, R0, 0x1, RZ, 0xc0, !PT", {p(0)}, {r(0)});
  expect_regs("LOP3.LUT R0, R0, 0xff, RZ, 0xc0, !PT", {r(0)}, {r(0)});
  expect_regs("ULOP3.LUT UR4, UR4, 0x3, URZ, 0xc0, !UPT", {ur(4)}, {ur(4)});
  expect_regs("UIADD3 UR4, UR4, 0x1, URZ", {ur(4)}, {ur(4)});
  expect_regs("USHF.L.U32 UR5, UR4, 0x2, URZ", {ur(5)}, {ur(4)});
}

TEST(Sass, WideMultiplyAddAndShifts) {
  expect_regs("IMAD.WIDE R4, R0, 0x4, R4", {r(4, 2)}, {r(0), r(4, 2)});
  expect_regs("IMAD.WIDE R6, R0, UR4, R2", {r(6, 2)}, {r(0), ur(4), r(2, 2)});
  expect_regs("IMAD.WIDE.U32 R2, R7, 0x4, R2", {r(2, 2)}, {r(7), r(2, 2)});
  // A funnel shift names both halves itself: no pairs.
  expect_regs("SHF.R.U64 R2, R2, 0x1, R3", {r(2)}, {r(2), r(3)});
  expect_regs("SHF.L.U64.HI R3, R2, 0x2, R3", {r(3)}, {r(2), r(3)});
  expect_regs("IMAD.MOV.U32 R2, RZ, RZ, R5", {r(2)}, {r(5)});
  // A .64 modifier or a .64 register outside an address makes pairs.
  expect_regs("IADD.64 R2, R4, R6", {r(2, 2)}, {r(4, 2), r(6, 2)});
  expect_regs("MOV R2, R4.64", {r(2)}, {r(4, 2)});
}

TEST(Sass, Decorations) {
  expect_regs("FFMA R2, R4.reuse, R5, R2", {r(2)}, {r(4), r(5), r(2)});
  expect_regs("FADD R4, -R2, |R3|", {r(4)}, {r(2), r(3)});
  expect_regs("FADD R4, -|R2|.reuse, -R3.reuse", {r(4)}, {r(2), r(3)});
  expect_regs("HADD2 R2, R2.H0_H0, R3.H1_H1", {r(2)}, {r(2), r(3)});
  expect_regs("LOP3.LUT R2, ~R3, R4.B1, RZ, 0xc0, !PT", {r(2)}, {r(3), r(4)});
  // A register read twice is listed once.
  expect_regs("FFMA R2, R4, R4, R2", {r(2)}, {r(4), r(2)});
}

TEST(Sass, GlobalLoadsAndStores) {
  Instruction ld = decode("      LDG.E R2, desc[UR8][R4.64]");
  EXPECT_EQ(ld.defs, List{r(2)});
  // desc[URn] is a 64-bit descriptor in URn, URn+1.
  EXPECT_EQ(ld.uses, (List{ur(8, 2), r(4, 2)}));
  EXPECT_EQ(ld.unit, Unit::l1tex);
  EXPECT_EQ(ld.access, Access::load);
  EXPECT_EQ(ld.space, Space::global);
  EXPECT_EQ(ld.access_bits, 32);
  Instruction q = decode("LDG.E.128 R8, desc[UR6][R2.64+0x10]");
  EXPECT_EQ(q.defs, List{r(8, 4)});
  EXPECT_EQ(q.uses, (List{ur(6, 2), r(2, 2)}));
  EXPECT_EQ(q.access_bits, 128);
  EXPECT_EQ(decode("LDG.E.64.CONSTANT R4, desc[UR4][R6.64]").defs, List{r(4, 2)});
  // LTC128B is a cache hint, not a width.
  Instruction hint = decode("LDG.E.LTC128B.128 R4, desc[UR4][R2.64]");
  EXPECT_EQ(hint.defs, List{r(4, 4)});
  EXPECT_EQ(hint.access_bits, 128);
  Instruction narrow = decode("LDG.E.LTC128B R4, desc[UR4][R2.64]");
  EXPECT_EQ(narrow.defs, List{r(4)});
  EXPECT_EQ(narrow.access_bits, 32);
  Instruction byte = decode("LDG.E.U8 R3, desc[UR4][R2.64]");
  EXPECT_EQ(byte.defs, List{r(3)});
  EXPECT_EQ(byte.access_bits, 8);
  EXPECT_EQ(decode("LDG.E.S16 R3, desc[UR4][R2.64]").access_bits, 16);
  Instruction st = decode("STG.E desc[UR4][R2.64], R5");
  EXPECT_TRUE(st.defs.empty());
  EXPECT_EQ(st.uses, (List{ur(4, 2), r(2, 2), r(5)}));
  EXPECT_EQ(st.access, Access::store);
  EXPECT_EQ(st.space, Space::global);
  Instruction st4 = decode("STG.E.128 desc[UR4][R2.64], R8");
  EXPECT_EQ(st4.uses, (List{ur(4, 2), r(2, 2), r(8, 4)}));
  EXPECT_EQ(st4.access_bits, 128);
}

TEST(Sass, GenericLocalAndSharedMemory) {
  Instruction ld = decode("LD.E R2, [R4.64]");
  EXPECT_EQ(ld.defs, List{r(2)});
  EXPECT_EQ(ld.uses, List{r(4, 2)});
  EXPECT_EQ(ld.space, Space::generic);
  Instruction st = decode("ST.E [R2.64], R4");
  EXPECT_EQ(st.uses, (List{r(2, 2), r(4)}));
  EXPECT_EQ(st.access, Access::store);
  EXPECT_EQ(st.space, Space::generic);
  Instruction stl = decode("STL [R1+0x4], R2");
  EXPECT_EQ(stl.uses, (List{r(1), r(2)}));
  EXPECT_EQ(stl.space, Space::local);
  EXPECT_EQ(stl.unit, Unit::l1tex);
  Instruction ldl = decode("LDL.64 R2, [R1+0x8]");
  EXPECT_EQ(ldl.defs, List{r(2, 2)});
  EXPECT_EQ(ldl.uses, List{r(1)});
  EXPECT_EQ(ldl.access, Access::load);
  EXPECT_EQ(ldl.space, Space::local);
  EXPECT_EQ(ldl.access_bits, 64);
  Instruction lds = decode("LDS.U.128 R4, [R0+0x10]");
  EXPECT_EQ(lds.defs, List{r(4, 4)});
  EXPECT_EQ(lds.uses, List{r(0)});
  EXPECT_EQ(lds.unit, Unit::mio);
  EXPECT_EQ(lds.space, Space::shared);
  EXPECT_EQ(lds.access_bits, 128);
  expect_regs("LDS.64 R2, [R5+UR4]", {r(2, 2)}, {r(5), ur(4)});
  expect_regs("STS [R3], R6", {}, {r(3), r(6)});
  Instruction sts = decode("STS.64 [R3+0x8], R4");
  EXPECT_EQ(sts.uses, (List{r(3), r(4, 2)}));
  EXPECT_EQ(sts.unit, Unit::mio);
  EXPECT_EQ(sts.access, Access::store);
  EXPECT_EQ(sts.space, Space::shared);
  Instruction ldsm = decode("LDSM.16.M88.4 R4, [R2]");
  EXPECT_EQ(ldsm.defs, List{r(4, 4)});
  EXPECT_EQ(ldsm.uses, List{r(2)});
  EXPECT_EQ(ldsm.access_bits, 128);
  EXPECT_EQ(ldsm.unit, Unit::mio);
  EXPECT_EQ(decode("LDSM.16.MT88.2 R4, [R2+0x200]").defs, List{r(4, 2)});
}

TEST(Sass, ConstantLoads) {
  Instruction c = decode("LDC.U8 R2, c[0x3][R3]");
  EXPECT_EQ(c.defs, List{r(2)});
  EXPECT_EQ(c.uses, List{r(3)});
  EXPECT_EQ(c.unit, Unit::constant);
  EXPECT_EQ(c.access, Access::load);
  EXPECT_EQ(c.space, Space::constant);
  EXPECT_EQ(c.access_bits, 8);
  expect_regs("LDC R2, c[0x0][R3+0x10]", {r(2)}, {r(3)});
  EXPECT_EQ(decode("ULDC.64 UR4, c[0x0][0x118]").unit, Unit::constant);
  // A constant operand of a math op reads no register.
  Instruction d = decode("DMUL R4, R4, c[0x0][0x220]");
  EXPECT_EQ(d.access, Access::none);
  EXPECT_EQ(d.uses, List{r(4, 2)});
}

TEST(Sass, AtomicsAndReductions) {
  Instruction g = decode("ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU PT, R2, desc[UR4][R4.64], R7");
  EXPECT_EQ(g.defs, List{r(2)});
  EXPECT_EQ(g.uses, (List{ur(4, 2), r(4, 2), r(7)}));
  EXPECT_EQ(g.access, Access::atomic);
  EXPECT_EQ(g.space, Space::global);
  EXPECT_EQ(g.unit, Unit::l1tex);
  Instruction cas = decode("ATOMG.E.CAS.64.STRONG.GPU P0, R2, desc[UR4][R4.64], R6, R8");
  EXPECT_EQ(cas.defs, (List{p(0), r(2, 2)}));
  EXPECT_EQ(cas.uses, (List{ur(4, 2), r(4, 2), r(6, 2), r(8, 2)}));
  EXPECT_EQ(cas.access_bits, 64);
  Instruction a = decode("ATOM.E.ADD.STRONG.GPU PT, R3, [R4.64], R5");
  EXPECT_EQ(a.defs, List{r(3)});
  EXPECT_EQ(a.uses, (List{r(4, 2), r(5)}));
  EXPECT_EQ(a.space, Space::generic);
  Instruction red = decode("RED.E.ADD.STRONG.GPU desc[UR4][R2.64], R5");
  EXPECT_TRUE(red.defs.empty());
  EXPECT_EQ(red.uses, (List{ur(4, 2), r(2, 2), r(5)}));
  EXPECT_EQ(red.access, Access::reduction);
  EXPECT_EQ(red.space, Space::global);
  EXPECT_EQ(decode("RED.ADD [R2.64], R5").space, Space::generic);
  Instruction s = decode("ATOMS.ADD R2, [R3], R4");
  EXPECT_EQ(s.defs, List{r(2)});
  EXPECT_EQ(s.uses, (List{r(3), r(4)}));
  EXPECT_EQ(s.unit, Unit::mio);
  EXPECT_EQ(s.access, Access::atomic);
  EXPECT_EQ(s.space, Space::shared);
}

TEST(Sass, AsyncCopiesAndTransactionBarriers) {
  Instruction cp = decode("LDGSTS.E.BYPASS.LTC128B.128 [R3], desc[UR6][R4.64]");
  EXPECT_TRUE(cp.known);
  EXPECT_TRUE(cp.defs.empty());
  EXPECT_EQ(cp.uses, (List{r(3), ur(6, 2), r(4, 2)}));
  EXPECT_EQ(cp.unit, Unit::l1tex);
  EXPECT_EQ(cp.access, Access::load);
  EXPECT_EQ(cp.space, Space::global);
  EXPECT_EQ(cp.access_bits, 128);
  expect_regs("LDGDEPBAR", {}, {});
  expect_regs("DEPBAR.LE SB0, 0x0", {}, {});
  Instruction arr = decode("ARRIVES.LDGSTSBAR.64 [URZ+0x800]");
  EXPECT_TRUE(arr.defs.empty());
  EXPECT_TRUE(arr.uses.empty());
  EXPECT_EQ(arr.unit, Unit::barrier);
  Instruction arrive = decode("SYNCS.ARRIVE.TRANS64.RED.A1T0 RZ, [UR4], RZ");
  EXPECT_TRUE(arrive.defs.empty());
  EXPECT_EQ(arrive.uses, List{ur(4)});
  EXPECT_EQ(arrive.unit, Unit::barrier);
  expect_regs("SYNCS.ARRIVE.TRANS64.A1T0 R4, [UR4+0x10], RZ", {r(4)}, {ur(4)});
  expect_regs("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R2+URZ+0x10], R3", {p(0)}, {r(2), r(3)});
}

TEST(Sass, ShufflesVotesAndSpecialFunctions) {
  Instruction s = decode("SHFL.BFLY PT, R3, R2, 0x1, 0x1f");
  EXPECT_EQ(s.defs, List{r(3)});
  EXPECT_EQ(s.uses, List{r(2)});
  EXPECT_EQ(s.unit, Unit::mio);
  expect_regs("SHFL.DOWN P0, R5, R4, 0x10, 0x1f", {p(0), r(5)}, {r(4)});
  expect_regs("SHFL.IDX PT, R3, R2, R5, 0x1f", {r(3)}, {r(2), r(5)});
  expect_regs("VOTE.ANY R5, PT, P1", {r(5)}, {p(1)});
  expect_regs("VOTE.ANY R5, P2, P1", {r(5), p(2)}, {p(1)});
  Instruction m = decode("MUFU.RCP R3, R2");
  EXPECT_EQ(m.defs, List{r(3)});
  EXPECT_EQ(m.uses, List{r(2)});
  EXPECT_EQ(m.unit, Unit::mio);
  EXPECT_EQ(decode("MUFU.EX2 R4, R4").uses, List{r(4)});
  EXPECT_EQ(decode("S2R R2, SR_TID.X").unit, Unit::mio);
  EXPECT_EQ(decode("S2UR UR4, SR_CTAID.X").unit, Unit::mio);
  EXPECT_EQ(decode("POPC R3, R2").unit, Unit::alu);
  // CS2R moves 64 bits unless .32; LEPC writes a 64-bit program counter.
  expect_regs("CS2R R4, SRZ", {r(4, 2)}, {});
  expect_regs("CS2R.32 R4, SR_CLOCKLO", {r(4)}, {});
  expect_regs("LEPC R20", {r(20, 2)}, {});
}

TEST(Sass, Fp64OperandsArePairs) {
  Instruction a = decode("DADD R4, R2, R6");
  EXPECT_EQ(a.defs, List{r(4, 2)});
  EXPECT_EQ(a.uses, (List{r(2, 2), r(6, 2)}));
  EXPECT_EQ(a.unit, Unit::alu);
  expect_regs("DFMA R2, R4, R6, R2", {r(2, 2)}, {r(4, 2), r(6, 2), r(2, 2)});
  expect_regs("DMUL R4, R4, c[0x0][0x220]", {r(4, 2)}, {r(4, 2)});
  expect_regs("DSETP.GT.AND P0, PT, R2, R4, PT", {p(0)}, {r(2, 2), r(4, 2)});
  expect_regs("@P1 DMNMX R2, R2, R4, !P0", {r(2, 2)}, {p(1), r(2, 2), r(4, 2), p(0)});
}

TEST(Sass, ConversionsWidenTheSideTheirTypeNames) {
  Instruction a = decode("F2F.F64.F32 R4, R2");
  EXPECT_EQ(a.defs, List{r(4, 2)});
  EXPECT_EQ(a.uses, List{r(2)});
  EXPECT_EQ(a.unit, Unit::mio);
  expect_regs("F2F.F32.F64 R2, R4", {r(2)}, {r(4, 2)});
  expect_regs("I2F.F64 R2, R4", {r(2, 2)}, {r(4)});
  expect_regs("I2F.S64 R2, R4", {r(2)}, {r(4, 2)});
  expect_regs("F2I.F64.TRUNC R5, R2", {r(5)}, {r(2, 2)});
  expect_regs("F2I.S64.TRUNC R4, R2", {r(4, 2)}, {r(2)});
  expect_regs("I2F.F64.S64 R2, R4", {r(2, 2)}, {r(4, 2)});
  // One type on a conversion that could mean either side: both sides.
  expect_regs("FRND.F64.TRUNC R2, R4", {r(2, 2)}, {r(4, 2)});
  Instruction narrow = decode("I2I.U16.U32.SAT R2, R3");
  EXPECT_EQ(narrow.defs, List{r(2)});
  EXPECT_EQ(narrow.uses, List{r(3)});
  EXPECT_EQ(narrow.unit, Unit::alu);
  EXPECT_EQ(decode("F2FP.BF16.F32.PACK_AB R2, R3, R2").unit, Unit::alu);
}

TEST(Sass, Branches) {
  Instruction guarded = decode("@P0   BRA 0x7fb93b7a0290");
  EXPECT_EQ(guarded.unit, Unit::branch);
  EXPECT_EQ(guarded.target, 0x7fb93b7a0290u);
  EXPECT_FALSE(guarded.ends_path);
  EXPECT_EQ(guarded.uses, List{p(0)});
  Instruction neg = decode("@!P1  BRA 0x7fb93b7a0190");
  EXPECT_EQ(neg.target, 0x7fb93b7a0190u);
  EXPECT_FALSE(neg.ends_path);
  Instruction jump = decode("BRA 0x7fb93b7a0190");
  EXPECT_TRUE(jump.ends_path);
  EXPECT_EQ(jump.target, 0x7fb93b7a0190u);
  EXPECT_FALSE(jump.indirect);
  // A uniform branch on a predicate operand, a divergence branch: conditional.
  Instruction u = decode("BRA.U !UP0, 0x7f00001230");
  EXPECT_EQ(u.target, 0x7f00001230u);
  EXPECT_FALSE(u.ends_path);
  EXPECT_EQ(u.uses, List{up(0)});
  Instruction div = decode("BRA.DIV UR4, 0x7f0000a000");
  EXPECT_EQ(div.target, 0x7f0000a000u);
  EXPECT_FALSE(div.ends_path);
  EXPECT_EQ(div.uses, List{ur(4)});
  Instruction brx = decode("BRX R4 -0x7f00001200");
  EXPECT_TRUE(brx.indirect);
  EXPECT_FALSE(brx.target);
  EXPECT_TRUE(brx.ends_path);
  EXPECT_EQ(brx.uses, List{r(4)});
  Instruction jmx = decode("JMX R4");
  EXPECT_TRUE(jmx.indirect);
  EXPECT_EQ(jmx.uses, List{r(4, 2)});
  Instruction bssy = decode("BSSY B0, 0x7fb93b7a02a0");
  EXPECT_EQ(bssy.target, 0x7fb93b7a02a0u);
  EXPECT_FALSE(bssy.ends_path);
  EXPECT_TRUE(bssy.uses.empty());
  EXPECT_EQ(bssy.unit, Unit::branch);
  EXPECT_FALSE(decode("BPT.TRAP 0x1").target);
  EXPECT_FALSE(decode("BPT.TRAP 0x1").ends_path);
  expect_regs("WARPSYNC.ALL", {}, {});
  expect_regs("WARPSYNC R4", {}, {r(4)});
  EXPECT_EQ(decode("WARPSYNC R4").unit, Unit::branch);
}

TEST(Sass, CallsReturnsAndExits) {
  Instruction call = decode("CALL.REL.NOINC 0x7f0000ab00");
  EXPECT_TRUE(call.calls);
  EXPECT_EQ(call.target, 0x7f0000ab00u);
  EXPECT_FALSE(call.indirect);
  EXPECT_FALSE(call.ends_path);
  EXPECT_TRUE(call.defs.empty());
  Instruction through = decode("CALL.ABS.NOINC R4");
  EXPECT_TRUE(through.calls);
  EXPECT_TRUE(through.indirect);
  EXPECT_FALSE(through.target);
  EXPECT_EQ(through.uses, List{r(4, 2)});
  Instruction ret = decode("RET.REL.NODEC R20 0x7f00000000");
  EXPECT_TRUE(ret.ends_path);
  EXPECT_FALSE(ret.indirect);
  EXPECT_FALSE(ret.target);
  EXPECT_EQ(ret.uses, List{r(20, 2)});
  EXPECT_TRUE(decode("RET.ABS R2").ends_path);
  EXPECT_TRUE(decode("EXIT").ends_path);
  EXPECT_TRUE(decode("KILL").ends_path);
  EXPECT_EQ(decode("EXIT").unit, Unit::branch);
  // A guarded exit falls through when its guard is false.
  EXPECT_FALSE(decode("@P0 EXIT").ends_path);
  EXPECT_FALSE(decode("@!P2 RET.REL.NODEC R20 0x7f00000000").ends_path);
}

TEST(Sass, TensorCoresOverApproximate) {
  Instruction h = decode("HMMA.16816.F32 R4, R8, R12, R4");
  EXPECT_EQ(h.defs, List{r(4, 4)});
  EXPECT_EQ(h.uses, (List{r(8, 4), r(12, 4), r(4, 4)}));
  EXPECT_EQ(h.unit, Unit::alu);
  EXPECT_EQ(decode("HMMA.1688.F32.TF32 R16, R4, R8, R16").defs, List{r(16, 4)});
  EXPECT_EQ(decode("IMMA.16832.S8.S8 R24, R4.reuse, R8, R24").defs, List{r(24, 4)});
  EXPECT_EQ(decode("DMMA.884 R4, R8, R10, R4").defs, List{r(4, 8)});
  Instruction g = decode("HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24");
  EXPECT_EQ(g.defs, List{r(24, 64)});
  EXPECT_EQ(g.uses, (List{ur(4, 4), r(24, 64)}));
  // Register counts stop at the end of the register file.
  EXPECT_EQ(decode("HGMMA.64x256x16.F32.BF16 R200, gdesc[UR4], RZ, !UPT").defs, List{r(200, 55)});
}

TEST(Sass, TexturesAndSurfaces) {
  Instruction t = decode("TEX.SCR.LL.NODEP R4, R2, R0, 0x0, 0x5a, 2D, 0x1");
  EXPECT_EQ(t.defs, List{r(4, 4)});
  EXPECT_EQ(t.uses, (List{r(2, 2), r(0, 2)}));
  EXPECT_EQ(t.unit, Unit::l1tex);
  EXPECT_EQ(t.access, Access::load);
  EXPECT_EQ(t.space, Space::texture);
  expect_regs("TLD.SCR.LZ R4, R2, 0x0, 0x58, 1D, 0x1", {r(4, 4)}, {r(2, 2)});
  Instruction s = decode("SULD.D.BA.2D.STRONG.SM.TRAP R4, [R2], UR4");
  EXPECT_EQ(s.defs, List{r(4)});
  EXPECT_EQ(s.uses, (List{r(2, 2), ur(4)}));
  EXPECT_EQ(s.space, Space::surface);
  EXPECT_EQ(s.access, Access::load);
}

TEST(Sass, PredicateRegisterMoves) {
  // PR stands for P0..P6 at once.
  expect_regs("P2R R2, PR, RZ, 0x7f", {r(2)}, {p(0, 7)});
  expect_regs("R2P PR, R2, 0x7f", {p(0, 7)}, {r(2)});
}

TEST(Sass, FencesAndOtherUnits) {
  EXPECT_EQ(decode("MEMBAR.SC.GPU").unit, Unit::membar);
  EXPECT_EQ(decode("MEMBAR.ALL.CTA").unit, Unit::membar);
  EXPECT_EQ(decode("FENCE.VIEW.ASYNC.S").unit, Unit::membar);
  EXPECT_EQ(decode("ERRBAR").unit, Unit::membar);
  Instruction cctl = decode("CCTL.IVALL");
  EXPECT_EQ(cctl.unit, Unit::l1tex);
  EXPECT_EQ(cctl.access, Access::none);
  EXPECT_EQ(decode("BAR.SYNC.DEFER_BLOCKING 0x0").unit, Unit::barrier);
  for (auto text : {"NOP", "YIELD", "NANOSLEEP 0x20", "DEPBAR.LE SB0, 0x0"}) {
    Instruction ins = decode(text);
    EXPECT_TRUE(ins.known) << text;
    EXPECT_EQ(ins.unit, Unit::other) << text;
    EXPECT_TRUE(ins.defs.empty()) << text;
  }
  EXPECT_EQ(decode("FFMA R2, R4, R5, R2").unit, Unit::alu);
  EXPECT_EQ(decode("UISETP.NE.AND UP0, UPT, UR4, URZ, PT").unit, Unit::alu);
}

TEST(Sass, UnknownOpcodeGuessesFirstRegisterWritten) {
  Instruction ins = decode("@P3 FROBNICATE.X R2, R3, [R4+0x8], UR5");
  EXPECT_FALSE(ins.known);
  EXPECT_EQ(ins.opcode, "FROBNICATE");
  EXPECT_EQ(ins.unit, Unit::other);
  EXPECT_EQ(ins.defs, List{r(2)});
  EXPECT_EQ(ins.uses, (List{p(3), r(3), r(4), ur(5)}));
  Instruction imm = decode("FROB 0x10, R7, R8");
  EXPECT_EQ(imm.defs, List{r(7)});
  EXPECT_EQ(imm.uses, List{r(8)});
}

TEST(Sass, GarbageNeverThrows) {
  for (auto text : {"",
                    "   ",
                    "@",
                    "@P0",
                    ";",
                    ",,,",
                    "[[[",
                    "]]]",
                    "R2, R3",
                    "%%% R2, R3",
                    "LDG.E R2, desc[UR4][R2.64",
                    "FFMA R99999999999999999999, R-1, R256, P9",
                    "BRA 0xzz",
                    "BRA 0xffffffffffffffffffff",
                    "....",
                    "@!@! MOV",
                    "/* open comment",
                    "MOV R2,,, R3 ]] [",
                    "UR",
                    "U"}) {
    Instruction ins;
    EXPECT_NO_THROW(ins = decode(text)) << text;
  }
  EXPECT_FALSE(decode("").known);
  EXPECT_FALSE(decode("   ").known);
  EXPECT_TRUE(decode("").defs.empty());
  Instruction junk = decode("%%% R2, R3");
  EXPECT_FALSE(junk.known);
  EXPECT_EQ(junk.defs, List{r(2)});
  EXPECT_EQ(junk.uses, List{r(3)});
  // Registers out of range name nothing.
  EXPECT_TRUE(decode("FFMA R300, R-1, R256, R2").defs.empty());
  EXPECT_FALSE(decode("BRA 0xzz").target);
}
