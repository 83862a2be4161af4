#include "evaluate/snapshot.hpp"

#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <system_error>
#include <vector>

namespace optimas::evaluate {

namespace fs = std::filesystem;

namespace {

// Object files and CMake's build state: a snapshot never holds them, so every build compiles.
bool is_build_output(const fs::path& path, bool directory) {
  std::string name = path.filename().string();
  if (directory) return name == "CMakeFiles";
  if (name == "CMakeCache.txt") return true;
  std::string ext = path.extension().string();
  return ext == ".o" || ext == ".obj";
}

// What went wrong while copying into `to`, for an Error; a full disk says what to do about it.
std::string copy_failure(const std::string& from, const std::string& to, const fs::filesystem_error& e) {
  std::string what = e.path1().empty() ? from : e.path1().string();
  if (e.code() == std::errc::no_space_on_device || e.code().value() == EDQUOT)
    return fmt::format("the disk is full ({}) while copying {} into {}; the partial copy was removed: free some space "
                       "there, then resume the run",
                       e.code().message(), what, to);
  return fmt::format("cannot copy {} into {}: {}; the partial copy was removed", what, to, e.code().message());
}

// fs::copy_file reports a full disk as "Input/output error" (libstdc++ drops the errno of
// sendfile): this copy keeps ENOSPC, so the message can say what to do.
void copy_regular_file(const fs::path& from, const fs::path& to) {
  auto fail = [&](int in, int out) {
    std::error_code ec(errno, std::generic_category());
    if (in >= 0) ::close(in);
    if (out >= 0) ::close(out);
    throw fs::filesystem_error("cannot copy", from, to, ec);
  };
  int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (in < 0 || ::fstat(in, &st) != 0) fail(in, -1);
  int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 07777);
  if (out < 0 || ::fchmod(out, st.st_mode & 07777) != 0) fail(in, out);
  std::vector<char> buf(1 << 20);
  for (;;) {
    ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(in, out);
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(out, buf.data() + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) fail(in, out);
      done += w;
    }
  }
  ::close(in);
  if (::close(out) != 0) fail(-1, -1);
}

} // namespace

bool optimas_folder(const std::string& name) {
  static const std::set<std::string> k_ours = {".optimas", "runs", "optimas-profile", "optimas-variant",
                                               "optimas-manual"};
  return k_ours.count(name) > 0;
}

namespace {

// The copy of snapshot_application, which removes it when it fails.
Snapshot snapshot_into(const config::AppConfig& app, const std::string& to) {
  std::set<std::string> skip;
  if (!app.binary.empty()) skip.insert(fs::path(app.binary).lexically_normal().string());
  for (const auto& o : app.outputs) skip.insert(fs::path(o).lexically_normal().string());
  if (!app.build_dir.empty()) skip.insert(fs::path(app.build_dir).lexically_normal().string());
  Snapshot snap;
  fs::create_directories(to);
  const fs::path from(app.dir);
  for (auto it = fs::recursive_directory_iterator(from); it != fs::recursive_directory_iterator(); ++it) {
    fs::path rel = fs::relative(it->path(), from);
    if (skip.count(rel.string()) || it->path().filename() == ".git" ||
        (it.depth() == 0 && optimas_folder(rel.string()))) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (is_build_output(it->path(), it->is_directory())) {
      snap.left_out.push_back(rel.string());
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    fs::path target = fs::path(to) / rel;
    if (it->is_directory()) {
      fs::create_directories(target);
    } else if (it->is_regular_file()) {
      copy_regular_file(it->path(), target);
      snap.files[rel.string()] = util::sha256_file(target.string());
    }
  }
  std::sort(snap.left_out.begin(), snap.left_out.end());
  return snap;
}

} // namespace

Snapshot snapshot_application(const config::AppConfig& app, const std::string& to) {
  ScratchFolder scratch(to);
  try {
    Snapshot snap = snapshot_into(app, to);
    scratch.keep();
    return snap;
  } catch (const fs::filesystem_error& e) {
    throw Error(copy_failure(app.dir, to, e));
  }
}

void copy_tree(const std::string& from, const std::string& to) {
  ScratchFolder scratch(to);
  try {
    fs::create_directories(to);
    for (auto it = fs::recursive_directory_iterator(from); it != fs::recursive_directory_iterator(); ++it) {
      fs::path target = fs::path(to) / fs::relative(it->path(), from);
      if (it->is_directory())
        fs::create_directories(target);
      else if (it->is_regular_file())
        copy_regular_file(it->path(), target);
    }
  } catch (const fs::filesystem_error& e) {
    throw Error(copy_failure(from, to, e));
  }
  scratch.keep();
}

void write_tree(const std::string& to, const std::map<std::string, std::string>& files) {
  for (const auto& [rel, text] : files) {
    const fs::path target = fs::path(to) / rel;
    fs::create_directories(target.parent_path());
    util::write_file(target.string(), text);
  }
}

ScratchFolder::~ScratchFolder() {
  if (m_keep) return;
  std::error_code ec; // a destructor may run while an exception unwinds: it must not throw
  fs::remove_all(m_path, ec);
}

std::string build_fingerprint(const config::AppConfig& app, const std::string& dir, const Snapshot& snapshot) {
  std::vector<fs::path> products;
  if (!app.binary.empty()) {
    products.push_back(fs::path(dir) / app.binary);
  } else {
    for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
      fs::path rel = fs::relative(it->path(), dir);
      if (it->is_directory() && rel == "out") it.disable_recursion_pending();
      if (it->is_regular_file() && !snapshot.files.count(rel.string())) products.push_back(it->path());
    }
    std::sort(products.begin(), products.end());
  }
  // nvcc names its temporary files tmpxft_<pid>_<counter>-<n>_<file> and those names end up in
  // the objects; with them blanked, two builds of one source are byte-identical.
  static const std::regex k_tmpxft("tmpxft_[0-9a-f]{8}_[0-9a-f]{8}-[0-9]+");
  std::string all;
  for (const auto& p : products) {
    if (!fs::exists(p)) continue;
    std::string bytes = util::read_file(p.string());
    all +=
        fs::relative(p, dir).string() + '\0' + util::sha256_hex(std::regex_replace(bytes, k_tmpxft, "tmpxft")) + '\n';
  }
  return util::sha256_hex(all);
}

} // namespace optimas::evaluate
