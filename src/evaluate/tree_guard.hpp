// What an untrusted program changed on disk while it ran. A variant runs as the user who runs
// optimas, so nothing stops it writing outside its scratch copy (the baseline's binary, the run's
// journals) or leaving a cache in its own folder for the next run: the loop records the files it
// must not touch before each run of a variant and compares them afterwards.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace optimas::evaluate {

// A file as the kernel describes it. The change time (ctime) cannot be set by a user process:
// a write, a rename over it, a chmod or a utimensat that restores the mtime all move it.
struct FileStamp {
  std::uint64_t inode = 0, size = 0;
  std::int64_t mtime_ns = 0, ctime_ns = 0;
  unsigned mode = 0;
  bool operator==(const FileStamp& o) const {
    return inode == o.inode && size == o.size && mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns && mode == o.mode;
  }
};

// Every entry under `root` (relative path -> stamp), folders included, without the relative
// paths in `skip` (an excluded folder is not entered). Symbolic links are stamped, not followed.
using TreeState = std::map<std::string, FileStamp>;
TreeState tree_state(const std::string& root, const std::set<std::string>& skip = {});

struct TreeChanges {
  std::vector<std::string> added, changed, removed; // relative paths, sorted
  bool empty() const { return added.empty() && changed.empty() && removed.empty(); }
  // "work/baseline/stream (changed), out/cache.bin (added)", the first `limit` of them.
  std::string describe(std::size_t limit = 5) const;
};

// What differs between two states of one tree. A folder whose entries changed gets a new mtime:
// folders count only when added or removed.
TreeChanges tree_changes(const TreeState& before, const TreeState& after);

} // namespace optimas::evaluate
