#include "evaluate/tree_guard.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace optimas::evaluate {

namespace fs = std::filesystem;

TreeState tree_state(const std::string& root, const std::set<std::string>& skip) {
  TreeState state;
  std::error_code ec;
  // A file that goes away while we walk is simply not in the state: the walk must not throw.
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(root).string();
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    if (skip.count(rel)) {
      if (S_ISDIR(st.st_mode)) it.disable_recursion_pending();
      continue;
    }
    FileStamp s;
    s.inode = st.st_ino;
    s.size = static_cast<std::uint64_t>(st.st_size);
    s.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    s.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
    s.mode = st.st_mode;
    state[rel] = s;
  }
  return state;
}

TreeChanges tree_changes(const TreeState& before, const TreeState& after) {
  TreeChanges c;
  for (const auto& [path, stamp] : before) {
    auto it = after.find(path);
    if (it == after.end())
      c.removed.push_back(path);
    else if (!S_ISDIR(stamp.mode) && !(it->second == stamp))
      c.changed.push_back(path);
    else if (S_ISDIR(stamp.mode) != S_ISDIR(it->second.mode))
      c.changed.push_back(path);
  }
  for (const auto& [path, stamp] : after)
    if (!before.count(path)) c.added.push_back(path);
  return c;
}

std::string TreeChanges::describe(std::size_t limit) const {
  std::vector<std::string> all;
  for (const auto& p : changed) all.push_back(p + " (changed)");
  for (const auto& p : added) all.push_back(p + " (added)");
  for (const auto& p : removed) all.push_back(p + " (removed)");
  std::string out;
  for (std::size_t i = 0; i < all.size() && i < limit; ++i) out += (i ? ", " : "") + all[i];
  if (all.size() > limit) out += fmt::format(" and {} more", all.size() - limit);
  return out;
}

} // namespace optimas::evaluate
