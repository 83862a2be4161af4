#include "evaluate/isolation.hpp"

#include "util/process.hpp"

#include <fmt/format.h>
#include <stdlib.h>

#include <filesystem>
#include <set>
#include <system_error>

namespace optimas::evaluate {

namespace fs = std::filesystem;

namespace {

// The unshare level's walls, built inside the new namespaces by /bin/sh:
//   $1 the folder to start in; $2 1 for walls (0: only the seen folder); $3 $4 the seen folder's
//   source and where it is seen ("" for none); $5 N, then N writable folders; then K, then K
//   paths under /tmp to be seen read-only; then the program.
// Each writable folder and read-only path is opened before the walls go up (it may lie under
// /tmp, which the private /tmp then hides) and bound back at its path from that descriptor
// (mount --no-canonicalize: the path it names is no longer the folder), the read-only ones first:
// a writable folder inside one is bound on top of it. /dev (the GPU), /proc and /sys stay as they
// are.
constexpr const char* k_walls = R"sh(set -e
cwd=$1 walls=$2 from=$3 as=$4 n=$5
shift 5
i=0
while [ "$i" -lt "$n" ]; do
  eval "w$i=\$1; exec $((i + 3))<\"\$1\""
  shift
  i=$((i + 1))
done
k=$1
shift
j=0
while [ "$j" -lt "$k" ]; do
  eval "r$j=\$1; exec $((n + j + 3))<\"\$1\""
  shift
  j=$((j + 1))
done
if [ "$walls" = 1 ]; then
  for m in $(awk '{print $5}' /proc/self/mountinfo); do
    m=$(printf '%b' "$m")
    case $m in /dev|/dev/*|/proc|/proc/*|/sys|/sys/*) continue ;; esac
    mount -o remount,bind,ro "$m" 2>/dev/null || true
  done
  mount -t tmpfs optimas-tmp /tmp
  j=0
  while [ "$j" -lt "$k" ]; do
    eval "r=\$r$j"
    fd=$((n + j + 3))
    if [ ! -e "$r" ]; then
      mkdir -p "$(dirname "$r")"
      if [ -d "/proc/self/fd/$fd" ]; then mkdir "$r"; else : > "$r"; fi
      mount --no-canonicalize --bind "/proc/self/fd/$fd" "$r"
      mount -o remount,bind,ro "$r"
    fi
    j=$((j + 1))
  done
  i=0
  while [ "$i" -lt "$n" ]; do
    eval "w=\$w$i"
    mkdir -p "$w"
    mount --no-canonicalize --bind "/proc/self/fd/$((i + 3))" "$w"
    mount -o remount,bind,rw "$w"
    i=$((i + 1))
  done
fi
i=0
while [ "$i" -lt $((n + k)) ]; do
  eval "exec $((i + 3))<&-"
  i=$((i + 1))
done
if [ -n "$as" ]; then
  mkdir -p "$(dirname "$as")"
  mount -t tmpfs optimas "$(dirname "$as")"
  mkdir "$as"
  mount --bind "$from" "$as"
fi
cd "$cwd"
exec "$@"
)sh";

// Whether `level` works here: behind its walls a program sees the root file system read-only
// (a remount the kernel refused would leave walls in name only) and writes its own folder.
bool works(Isolation level) {
  std::error_code ec;
  std::string dir_template = (fs::temp_directory_path(ec) / "optimas-isolation-XXXXXX").string();
  if (ec || !::mkdtemp(dir_template.data())) return false;
  const fs::path dir = dir_template;
  util::ProcessSpec spec;
  spec.argv = isolated_argv(
      level, {dir.string()}, {}, dir.string(), nullptr,
      {"/bin/sh", "-c", "awk '$5 == \"/\" && $6 !~ /^ro/ { exit 1 }' /proc/self/mountinfo && echo ok > probe"});
  spec.timeout_s = 20;
  const bool ok = util::run_process(spec).ok() && fs::exists(dir / "probe");
  fs::remove_all(dir, ec);
  return ok;
}

} // namespace

const char* isolation_name(Isolation level) {
  switch (level) {
  case Isolation::bwrap:
    return "bwrap";
  case Isolation::unshare:
    return "unshare";
  case Isolation::watch:
    return "watch";
  }
  return "watch";
}

std::optional<Isolation> parse_isolation(const std::string& text, bool& automatic) {
  automatic = text == "auto";
  if (automatic) return strongest_isolation();
  for (auto level : {Isolation::bwrap, Isolation::unshare, Isolation::watch})
    if (text == isolation_name(level)) return level;
  return std::nullopt;
}

bool allows(Isolation level) {
  static const bool bwrap = util::find_executable("bwrap") && works(Isolation::bwrap);
  static const bool unshare = util::find_executable("unshare") && works(Isolation::unshare);
  return level == Isolation::watch || (level == Isolation::bwrap ? bwrap : unshare);
}

Isolation strongest_isolation() {
  for (auto level : {Isolation::bwrap, Isolation::unshare})
    if (allows(level)) return level;
  return Isolation::watch;
}

std::string isolation_summary(Isolation level) {
  if (level == Isolation::watch)
    return "watch: programs run as you, without walls; a variant that changes the application folder or the run "
           "store fails";
  return fmt::format("{}: programs write only their own scratch folders and a private /tmp, with no network",
                     isolation_name(level));
}

std::vector<std::string> isolated_argv(Isolation level, const std::vector<std::string>& writable,
                                       const std::vector<std::string>& readable, const std::string& cwd,
                                       const Seen* seen, const std::vector<std::string>& argv) {
  // Elsewhere than under /tmp, the whole file system is seen read-only already. A path under /tmp
  // is seen by its folder right below /tmp (/tmp/suite for /tmp/suite/prog/Makefile), so that
  // what a command reaches from it by `..` is seen too (Rodinia's `make -I /tmp/suite/cuda/bfs`,
  // whose Makefile includes ../../common/make.config). These go up first: the writable folders,
  // some of which may lie inside them, are bound on top.
  std::set<std::string> tops;
  for (const auto& r : readable) {
    const fs::path p = fs::path(r).lexically_normal();
    auto part = p.begin();
    if (!p.is_absolute() || ++part == p.end() || *part != "tmp" || ++part == p.end()) continue;
    tops.insert((fs::path("/tmp") / *part).string());
  }
  std::vector<std::string> out;
  if (level == Isolation::bwrap) {
    out = {"bwrap", "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--tmpfs", "/tmp"};
    for (const auto& r : tops) out.insert(out.end(), {"--ro-bind-try", r, r});
    for (const auto& w : writable) out.insert(out.end(), {"--bind", w, w});
    if (seen)
      out.insert(out.end(), {"--tmpfs", fs::path(seen->as).parent_path().string(), "--bind", seen->from, seen->as});
    out.insert(out.end(), {"--unshare-net", "--die-with-parent", "--chdir", cwd});
  } else if (level == Isolation::unshare || seen) {
    out = {"unshare", "--user", "--map-root-user", "--mount"};
    if (level == Isolation::unshare) out.push_back("--net");
    const bool walls = level == Isolation::unshare;
    out.insert(out.end(), {"/bin/sh", "-c", k_walls, "optimas-sandbox", cwd, walls ? "1" : "0", seen ? seen->from : "",
                           seen ? seen->as : ""});
    out.push_back(std::to_string(walls ? writable.size() : 0));
    if (walls) out.insert(out.end(), writable.begin(), writable.end());
    out.push_back(std::to_string(walls ? tops.size() : 0));
    if (walls) out.insert(out.end(), tops.begin(), tops.end());
  }
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

} // namespace optimas::evaluate
