// Evidence about the whole application (AP items, issue #30) from a run's timeline: how long the
// GPU sat idle and why (host gaps that recur, synchronous copies), and what the copies cost.
#pragma once

#include "profile/timeline.hpp"

#include <string>
#include <vector>

namespace optimas::analysis {

struct Evidence;

// Items cover at least this share of the wall time; smaller ones are left out.
inline constexpr double k_min_wall_share = 0.01;
// At most this many recurring gap groups become items, the most idle time first.
inline constexpr std::size_t k_max_gap_items = 3;

// AP1, AP2, ...: the overview, the recurring host gaps, the largest single gap where no group
// shown holds it, and the copies of each direction. Each item's `saved` is a share of the wall
// time (not of the GPU time, as the kernels' items are); its text says what the bound assumes.
std::vector<Evidence> application_evidence(const profile::Timeline& timeline);

// The most of the wall time that anything but the kernels' own speed could save: the time no
// kernel runs (1 - kernel time / wall time). Caps the AP items' savings summed.
double application_headroom(const profile::Timeline& timeline);

// The runtime calls the AP items are about, as prefixes of their names (for finding them in the
// host code: optimize.scope: application): the blocking calls the trace recorded, and cudaMemcpy
// or cudaMemset (their Async and 2D forms too) where it holds copies or memsets.
std::vector<std::string> application_calls(const profile::Timeline& timeline);

// The copies (or memsets) of one direction in words, as their AP item begins: "40 host-to-device
// copies, 2.5 GiB in 310 ms (8.1 GiB/s); 40 synchronous (the host waited), 40 to or from pageable
// memory; 310 ms of it with no kernel running".
std::string traffic_text(const profile::Traffic& traffic);

// "300 us", "24.2 ms", "1.5 s".
std::string time_text(double ns);

} // namespace optimas::analysis
