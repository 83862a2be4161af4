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
      log::warn("{}: cannot record the running programs ({}); a resumed run may not find them", m_path, e.what());
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

namespace {

// The supervisors of end_recorded_children.
int end_recorded_supervisors(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return 0;
  nlohmann::json doc;
  try {
    doc = util::parse_json(util::read_file(path));
    if (!doc.is_object() || !doc.value("children", nlohmann::json()).is_array())
      throw std::runtime_error("no children list");
  } catch (const std::exception& e) {
    log::warn("{}: not a record of running programs ({}); ignoring it", path, e.what());
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
  for (const auto& c : doc["children"]) {
    util::ChildInfo child;
    child.supervisor = c.value("supervisor", 0);
    child.supervisor_start = c.value("supervisor_start", std::uint64_t{0});
    child.group = c.value("group", 0);
    child.group_start = c.value("group_start", std::uint64_t{0});
    if (util::end_child(child)) ++ended;
  }
  fs::remove(path, ec);
  return ended;
}

} // namespace

int end_recorded_children(const std::string& path, const std::string& run_id) {
  int ended = end_recorded_supervisors(path);
  // What a supervisor that was itself killed left behind (a background process, one that left
  // with setsid) no longer has a recorded pid of its own: it carries the run's mark.
  return ended + util::end_marked(k_run_mark, run_id);
}

} // namespace optimas::evaluate
