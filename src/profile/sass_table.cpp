#include "profile/sass_table.hpp"

namespace optimas::profile::sass {

namespace {

constexpr OpInfo alu(std::string_view n, Writes w = Writes::first, Shape s = Shape::plain) {
  return {n, Unit::alu, w, s};
}
constexpr OpInfo mio(std::string_view n, Writes w = Writes::first) {
  return {n, Unit::mio, w};
}
constexpr OpInfo quiet(std::string_view n, Unit u) {
  return {n, u, Writes::none};
}
constexpr OpInfo control(std::string_view n, Flow f = Flow::none, Shape s = Shape::plain) {
  return {n, Unit::branch, Writes::none, s, f};
}
constexpr OpInfo mem(std::string_view n, Unit u, Access a, Space sp, Writes w, Shape s = Shape::memory) {
  return {n, u, w, s, Flow::none, a, sp};
}
constexpr OpInfo load(std::string_view n, Unit u, Space sp, Writes w = Writes::before_address) {
  return mem(n, u, Access::load, sp, w);
}
constexpr OpInfo store(std::string_view n, Unit u, Access a, Space sp) {
  return mem(n, u, a, sp, Writes::none);
}

constexpr auto k_lead = Writes::lead;
constexpr auto k_two = Writes::two;
constexpr auto k_first = Writes::first;
constexpr auto k_l1 = Unit::l1tex;

// One table: every opcode the reader knows. A "U" opcode missing here reads as its non-uniform ALU twin
// (UIADD3 as IADD3), since the uniform datapath mirrors the integer ALU.
// clang-format off
constexpr OpInfo k_ops[] = {
    // Integer ops that print carry-out or result predicates right after the destination.
    alu("IADD3", k_lead), alu("IADD", k_lead), alu("IADD32I", k_lead), alu("IMAD", k_lead, Shape::wide_mad),
    alu("IMAD32I", k_lead), alu("ISCADD", k_lead), alu("LEA", k_lead), alu("LOP3", k_lead), alu("LOP", k_lead),
    alu("LOP32I", k_lead), alu("ELECT", k_lead),
    // Comparisons and predicate logic write two predicates; VOTE a register and a predicate.
    alu("ISETP", k_two), alu("FSETP", k_two), alu("DSETP", k_two, Shape::fp64), alu("HSETP2", k_two),
    alu("PSETP", k_two), alu("PLOP3", k_two), alu("VOTE", k_two), alu("VOTEU", k_two),
    // Fixed-latency math, logic and moves.
    alu("FFMA"), alu("FFMA32I"), alu("FADD"), alu("FADD32I"), alu("FMUL"), alu("FMUL32I"), alu("FMNMX"),
    alu("FMNMX3"), alu("FSEL"), alu("FSET"), alu("FCHK"), alu("FSWZADD"), alu("HADD2"), alu("HFMA2"), alu("HMUL2"),
    alu("HMNMX2"), alu("HSET2"), alu("IMNMX"), alu("VIMNMX"), alu("VIMNMX3"), alu("VIADD"), alu("VIADDMNMX"),
    alu("IABS"), alu("IDP"), alu("IMUL"), alu("SEL"), alu("SHF"), alu("SHL"), alu("SHR"), alu("MOV"), alu("MOV32I"),
    alu("PRMT"), alu("POPC"), alu("FLO"), alu("BREV"), alu("BMSK"), alu("SGXT"), alu("VABSDIFF"), alu("VABSDIFF4"),
    alu("P2R"), alu("R2P"), alu("R2UR"), alu("UP2UR"), alu("B2R"), alu("BMOV"),
    alu("CS2R", k_first, Shape::pair_dest), alu("LEPC", k_first, Shape::pair_dest),
    alu("DADD", k_first, Shape::fp64), alu("DMUL", k_first, Shape::fp64), alu("DFMA", k_first, Shape::fp64),
    alu("DMNMX", k_first, Shape::fp64), alu("DSET", k_first, Shape::fp64),
    // Conversions: FP64 ones go through MIO (decided in decode_text).
    alu("F2F", k_first, Shape::convert), alu("I2F", k_first, Shape::convert), alu("F2I", k_first, Shape::convert),
    alu("I2I", k_first, Shape::convert), alu("FRND", k_first, Shape::convert), alu("F2FP", k_first, Shape::convert),
    alu("I2FP", k_first, Shape::convert), alu("F2IP", k_first, Shape::convert), alu("I2IP", k_first, Shape::convert),
    // Tensor cores: fixed latency enough for the walk.
    alu("HMMA", k_first, Shape::mma), alu("IMMA", k_first, Shape::mma), alu("BMMA", k_first, Shape::mma),
    alu("DMMA", k_first, Shape::mma), alu("HGMMA", k_first, Shape::gmma), alu("IGMMA", k_first, Shape::gmma),
    alu("QGMMA", k_first, Shape::gmma), alu("BGMMA", k_first, Shape::gmma),
    // MIO: special functions, shuffles, special registers, warp-wide reductions.
    mio("MUFU"), mio("S2R"), mio("S2UR"), mio("SHFL", k_lead), mio("MATCH"), mio("REDUX"),
    // Memory through L1TEX.
    load("LDG", k_l1, Space::global), load("LD", k_l1, Space::generic), load("LDL", k_l1, Space::local),
    store("STG", k_l1, Access::store, Space::global), store("ST", k_l1, Access::store, Space::generic),
    store("STL", k_l1, Access::store, Space::local),
    mem("ATOM", k_l1, Access::atomic, Space::generic, Writes::before_address),
    mem("ATOMG", k_l1, Access::atomic, Space::global, Writes::before_address),
    store("RED", k_l1, Access::reduction, Space::generic), store("REDG", k_l1, Access::reduction, Space::global),
    store("LDGSTS", k_l1, Access::load, Space::global),
    load("SULD", k_l1, Space::surface), store("SUST", k_l1, Access::store, Space::surface),
    mem("SUATOM", k_l1, Access::atomic, Space::surface, Writes::before_address),
    store("SURED", k_l1, Access::reduction, Space::surface),
    mem("TEX", k_l1, Access::load, Space::texture, k_first, Shape::texture),
    mem("TLD", k_l1, Access::load, Space::texture, k_first, Shape::texture),
    mem("TLD4", k_l1, Access::load, Space::texture, k_first, Shape::texture),
    mem("TXD", k_l1, Access::load, Space::texture, k_first, Shape::texture),
    mem("TXQ", k_l1, Access::load, Space::texture, k_first, Shape::texture),
    mem("TMML", k_l1, Access::load, Space::texture, k_first, Shape::texture),
    quiet("CCTL", k_l1),
    // Tensor memory accelerator copies write shared or global memory, never a register.
    store("UTMALDG", k_l1, Access::load, Space::global), store("UTMASTG", k_l1, Access::store, Space::global),
    store("UBLKCP", k_l1, Access::load, Space::global), quiet("UTMAPF", k_l1), quiet("UTMACCTL", k_l1),
    // Shared memory through MIO.
    load("LDS", Unit::mio, Space::shared), load("LDSM", Unit::mio, Space::shared),
    store("STS", Unit::mio, Access::store, Space::shared), store("STSM", Unit::mio, Access::store, Space::shared),
    mem("ATOMS", Unit::mio, Access::atomic, Space::shared, Writes::before_address),
    // The constant cache.
    load("LDC", Unit::constant, Space::constant), load("ULDC", Unit::constant, Space::constant),
    // Barriers: BAR writes nothing (BAR.RED's result comes back through B2R); SYNCS.PHASECHK writes a predicate.
    quiet("BAR", Unit::barrier), {"SYNCS", Unit::barrier}, quiet("ARRIVES", Unit::barrier),
    quiet("UCGABAR_ARV", Unit::barrier), quiet("UCGABAR_WAIT", Unit::barrier),
    quiet("MEMBAR", Unit::membar), quiet("FENCE", Unit::membar), quiet("ERRBAR", Unit::membar),
    // Control.
    control("BRA", Flow::jump), control("JMP", Flow::jump), control("BRX", Flow::indirect_jump),
    control("JMX", Flow::indirect_jump, Shape::code_address), control("CALL", Flow::call, Shape::code_address),
    control("RET", Flow::ret, Shape::code_address), control("EXIT", Flow::stop), control("KILL", Flow::stop),
    control("BSSY", Flow::reconverge), control("BSYNC"), control("WARPSYNC"), control("BREAK"), control("BPT"),
    // Waits on scoreboards (DEPBAR, WARPGROUP.DEPBAR) are no block-wide barrier: "other", like NOP.
    quiet("DEPBAR", Unit::other), quiet("LDGDEPBAR", Unit::other), quiet("WARPGROUP", Unit::other),
    quiet("NOP", Unit::other), quiet("YIELD", Unit::other), quiet("NANOSLEEP", Unit::other),
    quiet("SETMAXREG", Unit::other), quiet("USETMAXREG", Unit::other), quiet("PMTRIG", Unit::other),
};
// clang-format on

const OpInfo* find_op(std::string_view op) {
  for (const auto& info : k_ops)
    if (info.name == op) return &info;
  return nullptr;
}

} // namespace

const OpInfo* lookup(std::string_view op) {
  if (const auto* info = find_op(op)) return info;
  if (op.size() > 1 && op.front() == 'U') {
    const auto* twin = find_op(op.substr(1));
    if (twin && twin->unit == Unit::alu) return twin;
  }
  return nullptr;
}

} // namespace optimas::profile::sass
