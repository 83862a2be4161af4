// The profile the prompts are built from: the baseline profiled with ncu (or a recorded profile
// imported), once per run (profile/.complete marks it done); and each improving variant
// re-profiled, for the EAR metrics' directional consistency and the next iteration.
#include "loop/run_state.hpp"

#include "profile/importer.hpp"
#include "util/error.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace optimas::loop {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string tool_version(const std::vector<std::string>& argv, const std::string& marker) {
  if (!util::find_executable(argv[0])) return {};
  util::ProcessSpec spec;
  spec.argv = argv;
  spec.timeout_s = 30;
  auto r = util::run_process(spec);
  for (auto line : util::split(r.out + r.err, '\n'))
    if (util::contains(line, marker)) return std::string(util::trim(line));
  return {};
}

} // namespace

UsageError Loop::cannot_profile() const {
  return UsageError(fmt::format("cannot profile {}: {}{}. Pass --import with a recorded profile (a folder written by "
                                "`optimas profile`, ncu CSV pages or a .ncu-rep)",
                                m_app.name, m_execute ? "ncu was not found" : m_no_execute_reason,
                                m_execute ? fmt::format(" (--ncu {})", m_settings.ncu) : ""));
}

profile::NcuOptions Loop::ncu_options() const {
  profile::NcuOptions o;
  o.ncu = m_settings.ncu;
  o.tracer = m_settings.tracer;
  o.alpha = m_settings.alpha;
  o.mode = m_settings.full_profile ? profile::ProfileMode::full : profile::ProfileMode::two_pass;
  o.build = false;
  o.timeout_s = std::max(1800.0, m_app.timeout_s * 4);
  return o;
}

void Loop::obtain_profile() {
  fs::path dir = m_dir / "profile";
  fs::path done = dir / ".complete";
  if (!fs::exists(done)) {
    fs::remove_all(dir);
    if (!m_settings.import.empty()) {
      say("profile", "importing " + m_settings.import, false);
      fs::path from(m_settings.import);
      if (!fs::exists(from)) throw UsageError(m_settings.import + ": no such profile");
      fs::create_directories(dir);
      if (fs::is_directory(from))
        fs::copy(from, dir, fs::copy_options::recursive);
      else
        fs::copy_file(from, dir / from.filename());
    } else if (m_can_profile) {
      profile::profile_app(app_in(m_dir / "work" / "baseline"), ncu_options(), dir.string(),
                           [&](const std::string& line) { say("profile", line, false); });
    } else {
      throw cannot_profile();
    }
    util::write_file(done.string(), util::utc_now_iso8601() + "\n");
  }
  fs::path source = dir;
  if (!m_settings.import.empty() && !fs::is_directory(m_settings.import))
    source = dir / fs::path(m_settings.import).filename();
  profile::ImportOptions io;
  io.ncu = m_settings.ncu;
  m_profile = profile::import_profile(source.string(), io);
  record_hardware();
  say("profile", fmt::format("{} run(s) from {}", m_profile.runs.size(), dir.string()));
}

// HW names where variants run; a profile imported from elsewhere says only where it came from.
void Loop::record_hardware() {
  const auto& gpu = m_profile.manifest.value("gpu", json::object());
  std::string here = m_app.needs_gpu ? evaluate::gpu_name() : "host CPU (needs_gpu: false)";
  std::string profiled = gpu.value("name", "");
  m_run["profile_gpu"] = profiled;
  if (!m_execute) here = "none here";
  m_run["hw"] = here.empty() ? profiled : here;
  if (!profiled.empty() && profiled != here)
    m_run["hw"] = fmt::format("{} (profile from {})", m_run["hw"].get<std::string>(), profiled);
  std::vector<std::string> sw;
  std::string nvcc = tool_version({"nvcc", "--version"}, "release");
  if (!nvcc.empty()) sw.push_back("nvcc " + nvcc.substr(nvcc.find("release") + 8));
  if (auto v = m_profile.manifest.value("ncu", json::object()).value("version", ""); !v.empty())
    sw.push_back("ncu " + v);
  if (auto d = gpu.value("driver", ""); !d.empty()) sw.push_back("driver " + d);
  m_run["sw"] = util::join(sw, ", ");
}

void Loop::reprofile(Variant& v) {
  fs::path dir = v.dir / "profile";
  if (fs::exists(dir / ".complete")) return;
  fs::remove_all(dir);
  profile::NcuOptions o = ncu_options();
  o.configs = {m_diagnostics.config.empty() ? m_app.default_config().name : m_diagnostics.config};
  o.also_profile = m_diagnostics.hot.hot_names(); // the kernels the edits were about, hot or not now
  // The line table names work/building's files: it leads to this variant's build while ncu reads
  // them (builds made ahead since, loop/pipeline.hpp, may have led it elsewhere).
  std::lock_guard<std::mutex> lock(m_building_mutex);
  std::error_code ec;
  if (fs::is_symlink(m_dir / "work" / "building")) fs::remove(m_dir / "work" / "building", ec);
  fs::create_directory_symlink(v.work.filename(), m_dir / "work" / "building", ec);
  profile::profile_app(app_in(v.work), o, dir.string(),
                       [&](const std::string& line) { say(v.key + " re-profile", line, false); });
  util::write_file((dir / ".complete").string(), util::utc_now_iso8601() + "\n");
  say(v.key + " re-profile", "done");
}

} // namespace optimas::loop
