// The builtin optimizer's rules in the order they run on a kernel (rules.hpp says why this
// order). Adding a rule is its file (one function with Rule::apply's signature) and one row here,
// with its declaration above the table; docs/builtin-memory-rules.md shows how. Bit-exact unless
// noted.
#include "builtin/rules.hpp"

namespace optimas::builtin {

// signature.cpp
void rule_restrict(const KernelInput& in, KernelEdits& ke);
void rule_bounds(const KernelInput& in, KernelEdits& ke);
// loops.cpp; reciprocal changes floating-point results: applied only with allow_fp_changes, else withheld.
void rule_unroll(const KernelInput& in, KernelEdits& ke);
void rule_hoist(const KernelInput& in, KernelEdits& ke);
void rule_reciprocal(const KernelInput& in, KernelEdits& ke);
// Memory rules (memory.cpp, read_only.cpp, local.cpp). Each reads the roofline's "access"
// figures (null-safe) and the PC lines, and edits only what it can argue stays bit-identical.
void rule_pad_shared(const KernelInput& in, KernelEdits& ke);
void rule_read_only(const KernelInput& in, KernelEdits& ke);
void rule_local_to_registers(const KernelInput& in, KernelEdits& ke);
// Memory-access rules (coalesce.cpp, vector.cpp): they read the roofline's "access" figures and
// stall lines, and rewrite one loop each. warp_rows and coalesce_tiles are two forms of one
// rewrite: the first that fires takes the loop, and the other is a search's alternative.
void rule_warp_rows(const KernelInput& in, KernelEdits& ke);
void rule_coalesce_tiles(const KernelInput& in, KernelEdits& ke);
void rule_vector_loads(const KernelInput& in, KernelEdits& ke);
// in_flight.cpp: after the loop rewrites above, which take a loop whole when their pattern holds.
void rule_loads_in_flight(const KernelInput& in, KernelEdits& ke);

const std::vector<Rule>& rule_table() {
  static const std::vector<Rule> rules = {
      {"restrict", rule_restrict,
       "__restrict__ on pointer parameters (and const on the ones only read) when memory-dependency stalls "
       "dominate and no launch passes one buffer twice"},
      {"bounds", rule_bounds,
       "__launch_bounds__(block, blocks) from the profiled block size when registers limit occupancy"},
      {"warp_rows", rule_warp_rows,
       "a thread's walk of its own row (many sectors per global load request, long_scoreboard on the load) "
       "staged through shared memory per warp: the lanes side by side along each of the warp's 32 rows, each "
       "thread consuming its row in the original order (__syncwarp; the warps of the tail run the original loop)"},
      {"coalesce_tiles", rule_coalesce_tiles,
       "a thread's walk of its own row (many sectors per global load request, long_scoreboard on the load) "
       "staged through shared-memory tiles loaded by consecutive threads, each thread consuming its row in the "
       "original order"},
      {"vector_loads", rule_vector_loads,
       "a latency-bound grid-stride loop (low memory throughput, long_scoreboard on its loads) gets a "
       "16-byte-per-array path under an alignment check, the original loop as the fallback"},
      {"loads_in_flight", rule_loads_in_flight,
       "a loop whose use waits on its own load (long_scoreboard at a line of the loop, caused by a load declared at "
       "the top of its body; memory not saturated) issues the loads of k iterations (2, 4 or 8, from occupancy and "
       "registers) before the first is used, each body then run unchanged and in order; a row walked one element "
       "at a time takes a whole, aligned batch in one 16-byte load; for loops and while loops that end by stepping "
       "their variable, in the kernel or a __device__ function holding its stalled lines",
       true},
      {"unroll", rule_unroll, "#pragma unroll on constant-trip innermost loops whose lines wait or branch"},
      {"hoist", rule_hoist,
       "a loop condition's invariant, expensive bound (a load, a division, a call) computed once before the "
       "loop, when the loop header line stalls and the loop writes no memory the bound could read"},
      {"reciprocal", rule_reciprocal,
       "(changes results) division by a floating-point kernel parameter on a hot line inside a loop becomes a "
       "multiplication by its reciprocal, computed once; applied only with allow_fp_changes, else withheld"},
      {"pad_shared", rule_pad_shared,
       "a 2-D __shared__ array walked by column gets one element of padding per row, when shared-memory bank "
       "conflicts are measured (or its lines stall on shared memory)"},
      {"local_to_registers", rule_local_to_registers,
       "a small local array indexed by data becomes register-resident: its constant-trip loops unrolled, each "
       "data-indexed access a compare-and-select (an index the source cannot bound checked first: __trap "
       "outside the array)"},
      {"read_only", rule_read_only,
       "never-written data loaded in hot loops goes through __ldg where a launch's aliasing withheld "
       "__restrict__"},
  };
  return rules;
}

// pinned.cpp
void rule_pinned_host(const ApplicationInput& in, KernelEdits& edits);

const std::vector<ApplicationRule>& application_rule_table() {
  static const std::vector<ApplicationRule> rules = {
      {"pinned_host", rule_pinned_host,
       "host buffers of recurring synchronous copies from or to pageable memory (an AP item), allocated once with "
       "malloc in a .cu file, allocated with cudaMallocHost and freed with cudaFreeHost; judged by the wall time"},
  };
  return rules;
}

} // namespace optimas::builtin
