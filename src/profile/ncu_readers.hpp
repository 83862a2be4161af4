// Streaming readers for the details, raw, source and session pages of Nsight Compute. Each
// survives the pitfalls in docs/ncu-formats.md and reports bad input as a
// ParseError naming the file and line.
#pragma once

#include "profile/profile.hpp"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace optimas::profile {

// Adds the details page's launches, metrics (base units) and rule findings to `launches`,
// merging by result ID with launches already there.
void read_details_page(const std::string& path, std::vector<Launch>& launches);

// Adds the raw page's launches and metrics to `launches`, merging by result ID.
void read_raw_page(const std::string& path, std::vector<Launch>& launches);

// Reads a source page (--print-source cuda,sass, sass or cuda) into one KernelSource per
// profiled launch, in result order. `expected_results` (-1: unknown) helps undo ncu's
// doubled blocks in the sass view.
std::vector<KernelSource> read_source_page(const std::string& path, int expected_results = -1);

// Streams a source page block by block (one profiled launch each, in result order) without
// keeping earlier blocks: memory stays bounded by one block. Blocks come as printed: the sass
// view's doubled blocks are not undone here (read_source_page does that).
void for_each_source_block(const std::string& path, const std::function<void(KernelSource&&)>& on_block);

// Whether two blocks hold the same kernel's same instructions and samples: one block printed twice.
bool same_block(const KernelSource& a, const KernelSource& b);

// Reads the session page's "attribute","value" pairs (ncu version, CUDA version, device, ...).
std::map<std::string, std::string> read_session_page(const std::string& path);

} // namespace optimas::profile
