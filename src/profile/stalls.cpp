#include "profile/stalls.hpp"

#include <string>

namespace optimas::profile {

namespace {

struct Names {
  std::string_view name;
  std::string_view label;
};

constexpr Names k_names[k_stall_count] = {
    {"barrier", "stall_barrier"},
    {"branch_resolving", "stall_branch_resolving"},
    {"dispatch_stall", "stall_dispatch_stall"},
    {"drain", "stall_drain"},
    {"imc_miss", "stall_imc_miss"},
    {"lg_throttle", "stall_lg_throttle"},
    {"long_scoreboard", "stall_long_scoreboard"},
    {"math_pipe_throttle", "stall_math_pipe_throttle"},
    {"membar", "stall_membar"},
    {"mio_throttle", "stall_mio_throttle"},
    {"misc", "stall_misc"},
    {"no_instructions", "stall_no_instructions"},
    {"not_selected", "stall_not_selected"},
    {"selected", "stall_selected"},
    {"short_scoreboard", "stall_short_scoreboard"},
    {"sleeping", "stall_sleeping"},
    {"tex_throttle", "stall_tex_throttle"},
    {"wait", "stall_wait"},
    {"warpgroup_arrive", "stall_warpgroup_arrive"},
};

// Short spellings of the source page (ncu 2025.3.1), mapped to the canonical names.
constexpr struct {
  std::string_view alias;
  Stall stall;
} k_aliases[] = {
    {"dispatch", Stall::dispatch_stall},
    {"imc", Stall::imc_miss},
    {"lg", Stall::lg_throttle},
    {"long_sb", Stall::long_scoreboard},
    {"math", Stall::math_pipe_throttle},
    {"mio", Stall::mio_throttle},
    {"no_inst", Stall::no_instructions},
    {"short_sb", Stall::short_scoreboard},
    {"sleep", Stall::sleeping},
    {"tex", Stall::tex_throttle},
    {"gmma", Stall::warpgroup_arrive},
    {"warpgroup", Stall::warpgroup_arrive},
    {"long_scoreboard", Stall::long_scoreboard},
};

} // namespace

std::string_view stall_name(Stall s) {
  return k_names[static_cast<std::size_t>(s)].name;
}
std::string_view stall_label(Stall s) {
  return k_names[static_cast<std::size_t>(s)].label;
}

std::optional<Stall> stall_from_name(std::string_view name) {
  if (name.substr(0, 6) == "stall_") name.remove_prefix(6);
  for (std::size_t i = 0; i < k_stall_count; ++i)
    if (k_names[i].name == name) return static_cast<Stall>(i);
  for (const auto& a : k_aliases)
    if (a.alias == name) return a.stall;
  return std::nullopt;
}

std::optional<StallColumn> parse_stall_column(std::string_view header) {
  bool not_issued = false;
  constexpr std::string_view k_metric_prefix = "smsp__pcsamp_warps_issue_stalled_";
  if (header.substr(0, k_metric_prefix.size()) == k_metric_prefix) {
    header.remove_prefix(k_metric_prefix.size());
    constexpr std::string_view k_ni = "_not_issued";
    if (header.size() > k_ni.size() && header.substr(header.size() - k_ni.size()) == k_ni) {
      header.remove_suffix(k_ni.size());
      not_issued = true;
    }
    auto s = stall_from_name(header);
    if (!s) return std::nullopt;
    return StallColumn{*s, not_issued};
  }
  if (header.substr(0, 6) != "stall_") return std::nullopt;
  constexpr std::string_view k_suffix = " (Not Issued)";
  if (header.size() > k_suffix.size() && header.substr(header.size() - k_suffix.size()) == k_suffix) {
    header.remove_suffix(k_suffix.size());
    not_issued = true;
  }
  auto s = stall_from_name(header);
  if (!s) return std::nullopt;
  return StallColumn{*s, not_issued};
}

} // namespace optimas::profile
