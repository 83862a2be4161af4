// Paths named by a file Optimas did not just write (an optimas.yml, a run folder's records): where
// they lead once every symbolic link on their way is resolved, checked against the folder they
// must stay in.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace optimas::util {

// True when `inner` is `outer` or lies under it, compared part by part as given (make both
// canonical first).
bool lies_inside(const std::filesystem::path& outer, const std::filesystem::path& inner);

// Where `rel` leads under `root`, with every symbolic link on the part that exists resolved
// (fs::weakly_canonical); nullopt when it is empty or absolute, or leads out of `root` by ".." or
// by a link. `root` itself counts as inside. The path need not exist.
std::optional<std::filesystem::path> resolve_inside(const std::filesystem::path& root,
                                                    const std::filesystem::path& rel);

// The symbolic links under `root` (walked without following any) that lead out of it once
// resolved, or that cannot be resolved (a loop), as paths relative to `root`, sorted.
std::vector<std::string> links_out_of(const std::filesystem::path& root);

} // namespace optimas::util
