// Pieces of the run page that are not charts: the source with each line shaded by its share of
// the kernel's PC samples and a badge per evidence ID, and diffs side by side.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace optimas::serve {

// Who cites each evidence ID: "RF1" -> {"edit-i1a1-0", ...} (fragment ids of the edits).
using Citations = std::map<std::string, std::vector<std::string>>;

// The fragment id of an evidence item ("ev-PC1") and of a variant's edit ("edit-i1a1-0").
std::string evidence_anchor(const std::string& id);
std::string edit_anchor(const std::string& variant, std::size_t index);

// A badge linking to the evidence item; "cited" when some edit cites it.
std::string evidence_badge(const std::string& id, const Citations& citations);

// The lines of one kernel's PC-stall summary (diagnostics.json "stalls"."lines") over the source
// `file_text` (the run's snapshot of that file; empty when absent): the stalled lines and a few
// around them, each shaded by its share of the kernel's samples, with its evidence badge and the
// dominant stall. Under a stalled line, its memory facts, root cause and divergence (the line's
// "memory", "cause" and "divergence" texts, where the diagnostics have them); a line a stalled
// line's found cause or divergence points to is shown too and marked ("cause of PC1", "warps
// split here for PC3"). When the snapshot's lines are not the profiled ones (another version of
// the file), the profile's own copies of the lines are shown instead, and the page says so.
std::string stall_source(const std::string& file_text, const nlohmann::json& lines, const Citations& citations);

// A unified diff as a two-column table (old left, new right), hunk by hunk.
std::string side_by_side(const std::string& unified_diff);

// One edit's text before and after, side by side (for find/replace edits).
std::string edit_pair(const std::string& before, const std::string& after);

} // namespace optimas::serve
