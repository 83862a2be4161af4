#include "util/paths.hpp"

#include <algorithm>
#include <deque>
#include <system_error>

namespace optimas::util {

namespace fs = std::filesystem;

namespace {

// `path` (absolute) with every symbolic link on its way resolved, as realpath does, except that
// a part that does not exist is kept as named: a dangling link leads where it names, since
// writing through it would create that. nullopt after 40 links (a loop) or on an unreadable one.
std::optional<fs::path> resolve_links(const fs::path& path) {
  const fs::path rel = path.relative_path();
  std::deque<fs::path> parts(rel.begin(), rel.end());
  fs::path done = path.root_path();
  int links = 0;
  while (!parts.empty()) {
    const fs::path part = parts.front();
    parts.pop_front();
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      done = done.parent_path();
      continue;
    }
    const fs::path next = done / part;
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(next, ec))) {
      done = next;
      continue;
    }
    const fs::path target = fs::read_symlink(next, ec);
    if (ec || ++links > 40) return std::nullopt;
    const fs::path named = target.relative_path();
    parts.insert(parts.begin(), named.begin(), named.end());
    if (target.is_absolute()) done = target.root_path();
  }
  return done;
}

} // namespace

bool lies_inside(const fs::path& outer, const fs::path& inner) {
  auto o = outer.begin(), i = inner.begin();
  for (; o != outer.end(); ++o, ++i) {
    if (o->empty()) continue; // the empty last part of a path that ends in '/'
    if (i == inner.end() || *o != *i) return false;
  }
  return true;
}

std::optional<fs::path> resolve_inside(const fs::path& root, const fs::path& rel) {
  if (rel.empty() || rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) return std::nullopt;
  const fs::path normal = rel.lexically_normal();
  if (normal.empty() || *normal.begin() == "..") return std::nullopt;
  std::error_code ec;
  const auto base = resolve_links(fs::absolute(root, ec));
  if (ec || !base) return std::nullopt;
  auto full = resolve_links(*base / normal);
  if (!full || !lies_inside(*base, *full)) return std::nullopt;
  return full;
}

std::vector<std::string> links_out_of(const fs::path& root) {
  std::vector<std::string> out;
  std::error_code ec;
  const auto base = resolve_links(fs::absolute(root, ec));
  if (ec || !base) return out;
  for (auto it = fs::recursive_directory_iterator(*base, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code link_ec;
    if (!it->is_symlink(link_ec)) continue;
    const fs::path rel = it->path().lexically_relative(*base);
    if (!resolve_inside(*base, rel)) out.push_back(rel.string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace optimas::util
