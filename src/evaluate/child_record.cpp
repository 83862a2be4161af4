#include "evaluate/child_record.hpp"

#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace optimas::evaluate {

namespace fs = std::filesystem;

namespace {

std::string boot_id() {
  std::error_code ec;
  if (!fs::exists("/proc/sys/kernel/random/boot_id", ec)) return {};
  return std::string(util::trim(util::read_file("/proc/sys/kernel/random/boot_id")));
}

} // namespace

ChildRecord::ChildRecord(std::string path, const std::string& run_id) : m_path(std::move(path)) {
  util::set_child_observer([this](const util::ChildInfo& child, bool running) { changed(child, running); });
  util::set_child_mark(k_run_mark, run_id);
}

ChildRecord::~ChildRecord() {
  util::set_child_observer({});
  util::set_child_mark("", "");
  std::error_code ec;
  if (!m_children.empty()) fs::remove(m_path, ec);
}

// Called by run_process (one call at a time); it must not throw, or a program would run on
// unwatched: a record that cannot be written is a warning.
void ChildRecord::changed(const util::ChildInfo& child, bool running) {
  if (running) {
    m_children.push_back(child);
  } else {
    m_children.erase(std::remove_if(m_children.begin(), m_children.end(),
                                    [&](const util::ChildInfo& c) { return c.supervisor == child.supervisor; }),
                     m_children.end());
  }
  try {
    write();
  } catch (const std::exception& e) {
    if (!m_warned)
      log::warn("{}: cannot record the running programs ({}); a resumed run may not find them", m_path,
                plain_message(e));
    m_warned = true;
  }
}

void ChildRecord::write() const {
  if (m_children.empty()) {
    fs::remove(m_path);
    return;
  }
  nlohmann::json children = nlohmann::json::array();
  for (const auto& c : m_children)
    children.push_back({{"supervisor", c.supervisor},
                        {"supervisor_start", c.supervisor_start},
                        {"group", c.group},
                        {"group_start", c.group_start}});
  const int self = ::getpid();
  nlohmann::json owner = {{"pid", self}, {"start", util::process_start_time(self).value_or(0)}};
  nlohmann::json doc = {{"owner", owner}, {"boot_id", boot_id()}, {"children", children}};
  // Written next to the record and renamed over it: a kill at any moment leaves the old
  // record or the new one, never half of one.
  const std::string tmp = fmt::format("{}.tmp.{}", m_path, self);
  util::write_file(tmp, doc.dump(2) + "\n");
  fs::rename(tmp, m_path);
}

util::ChildInfo recorded_child_to_end(const util::ChildInfo& c, std::uint64_t owner_start, const std::string& run_id,
                                      std::string& why) {
  util::ChildInfo none;
  auto refuse = [&](const std::string& reason) {
    why = fmt::format("children.json names supervisor {} and group {}, {}", c.supervisor, c.group, reason);
    return none;
  };
  if (c.group == 0) return refuse("no program group");
  if (c.group <= 1 || c.supervisor < 0 || c.supervisor == 1 || c.group == ::getpgrp() || c.group == ::getpid() ||
      c.supervisor == ::getpid())
    return refuse("which no program of a run can be (a group or pid of 1 or less, or this process's own)");
  // Gone, or its pid taken by another process since: nothing of the run's is there (what the
  // program left running carries the mark, end_marked).
  if (c.group_start == 0 || util::process_start_time(c.group) != c.group_start) return none;
  if (c.group_start < owner_start)
    return refuse("whose program started before the process that recorded it: not one it started");
  if (!util::carries_mark(c.group, k_run_mark, run_id))
    return refuse(fmt::format("whose program does not carry the run's mark ({}={})", k_run_mark, run_id));
  util::ChildInfo ours;
  ours.group = c.group;
  ours.group_start = c.group_start;
  // Its supervisor: only the parent of that marked program, started before it.
  if (c.supervisor > 1 && util::parent_pid(c.group) == c.supervisor && c.supervisor_start >= owner_start &&
      c.supervisor_start <= c.group_start) {
    ours.supervisor = c.supervisor;
    ours.supervisor_start = c.supervisor_start;
  }
  return ours;
}

namespace {

// The supervisors of end_recorded_children.
int end_recorded_supervisors(const std::string& path, const std::string& run_id) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return 0;
  nlohmann::json doc;
  try {
    doc = util::parse_json(util::read_file(path));
    if (!doc.is_object() || !doc.value("children", nlohmann::json()).is_array())
      throw std::runtime_error("no children list");
  } catch (const std::exception& e) {
    log::warn("{}: not a record of running programs ({}); ignoring it", path, plain_message(e));
    fs::remove(path, ec);
    return 0;
  }
  if (doc.value("boot_id", "") != boot_id()) { // the machine restarted: nothing recorded still runs
    fs::remove(path, ec);
    return 0;
  }
  const auto& owner = doc.value("owner", nlohmann::json::object());
  const int owner_pid = owner.value("pid", 0);
  if (owner_pid > 0 && owner_pid != ::getpid() &&
      util::process_start_time(owner_pid) == owner.value("start", std::uint64_t{0}))
    throw Error(fmt::format("{}: process {}, which started these programs, is still working on this run; two processes "
                            "must not work on one run: wait for it to finish, or stop it (kill {}) and resume again",
                            path, owner_pid, owner_pid));
  int ended = 0;
  const std::uint64_t owner_start = owner.value("start", std::uint64_t{0});
  for (const auto& c : doc["children"]) {
    util::ChildInfo child;
    child.supervisor = c.value("supervisor", 0);
    child.supervisor_start = c.value("supervisor_start", std::uint64_t{0});
    child.group = c.value("group", 0);
    child.group_start = c.value("group_start", std::uint64_t{0});
    std::string why;
    const util::ChildInfo ours = recorded_child_to_end(child, owner_start, run_id, why);
    if (!why.empty()) log::warn("{}: {}; not signalled", path, why);
    if ((ours.supervisor != 0 || ours.group != 0) && util::end_child(ours)) ++ended;
  }
  fs::remove(path, ec);
  return ended;
}

} // namespace

int end_recorded_children(const std::string& path, const std::string& run_id) {
  int ended = end_recorded_supervisors(path, run_id);
  // What a supervisor that was itself killed left behind (a background process, one that left
  // with setsid) no longer has a recorded pid of its own: it carries the run's mark.
  return ended + util::end_marked(k_run_mark, run_id);
}

} // namespace optimas::evaluate
