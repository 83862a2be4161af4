// Warp stall reasons: one canonical list, and the many spellings ncu uses for them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace optimas::profile {

// Canonical names follow the kernel-level metrics smsp__pcsamp_warps_issue_stalled_<name>.
enum class Stall : std::uint8_t {
  barrier,
  branch_resolving,
  dispatch_stall,
  drain,
  imc_miss,
  lg_throttle,
  long_scoreboard,
  math_pipe_throttle,
  membar,
  mio_throttle,
  misc,
  no_instructions,
  not_selected,
  selected,
  short_scoreboard,
  sleeping,
  tex_throttle,
  wait,
  warpgroup_arrive,
};
inline constexpr std::size_t k_stall_count = 19;

using StallCounts = std::array<std::uint64_t, k_stall_count>;

// "long_scoreboard"
std::string_view stall_name(Stall s);
// "stall_long_scoreboard", the form prompts and reports use.
std::string_view stall_label(Stall s);
std::optional<Stall> stall_from_name(std::string_view name);

// Recognises a stall column of the source page ("stall_long_sb", "stall_sleeping (Not Issued)")
// or a kernel-level metric ("smsp__pcsamp_warps_issue_stalled_long_scoreboard[_not_issued]").
struct StallColumn {
  Stall stall;
  bool not_issued;
};
std::optional<StallColumn> parse_stall_column(std::string_view header);

// Whether a sample of this reason means the warp could not issue. `selected` means it issued.
inline bool is_stalled(Stall s) {
  return s != Stall::selected;
}

} // namespace optimas::profile
