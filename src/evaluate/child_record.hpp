// The programs a run has running, recorded in its folder, and their ending by a later process:
// how a resumed run finds and ends what a killed optimas left behind.
#pragma once

#include "util/process.hpp"

#include <string>
#include <vector>

namespace optimas::evaluate {

// The environment variable that marks every program of a run (and what it starts) with the
// run's id: how a resumed run finds what a killed supervisor left behind.
inline constexpr const char* k_run_mark = "OPTIMAS_RUN";

// The programs a run has running, recorded in its folder (children.json: each supervisor and
// program group with their start times, written atomically, removed when none runs), so that a
// resumed run can end what a killed optimas left behind. While it exists it records every
// child util::run_process starts in this process, and marks it with OPTIMAS_RUN=<run_id>.
class ChildRecord {
public:
  ChildRecord(std::string path, const std::string& run_id);
  ~ChildRecord();
  ChildRecord(const ChildRecord&) = delete;
  ChildRecord& operator=(const ChildRecord&) = delete;

private:
  void changed(const util::ChildInfo& child, bool running);
  void write() const;

  std::string m_path;
  std::vector<util::ChildInfo> m_children;
  bool m_warned = false;
};

// Ends what the process that wrote `path` (a ChildRecord) left running: its supervisors (which
// end their programs' trees) and the program groups their programs still lead, each only while
// it is still the recorded process, and nothing after a reboot; then every process marked with
// OPTIMAS_RUN=<run_id>. Removes the file; returns how many it ended. Error when the process
// that wrote the record is still alive: it is working on the run, and two processes must not.
int end_recorded_children(const std::string& path, const std::string& run_id);

// What of a recorded child end_recorded_children may signal (zeros where nothing): its program's
// group only while the group's leader is the recorded process (same start time), started after
// the process that wrote the record (`owner_start`) and carries the run's mark (k_run_mark =
// run_id, read from /proc); its supervisor only as that program's parent. Never a pid or group of
// 1 or less, nor this process's own. `why` says why a record that names a live process was
// refused (empty when nothing was refused or the program is simply gone).
util::ChildInfo recorded_child_to_end(const util::ChildInfo& recorded, std::uint64_t owner_start,
                                      const std::string& run_id, std::string& why);

} // namespace optimas::evaluate
