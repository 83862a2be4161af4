#include "profile/importer.hpp"

#include "profile/ncu_agent.hpp"
#include "profile/ncu_page.hpp"
#include "profile/ncu_readers.hpp"
#include "profile/source_match.hpp"
#include "profile/timeline.hpp"
#include "profile/trace.hpp"

#include "util/csv.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace optimas::profile {

namespace fs = std::filesystem;

namespace {

std::uint64_t file_size(const std::string& path) {
  std::error_code ec;
  auto n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

// The first record of a source page says its layout: "File Path" (cuda,sass or cuda) or
// "Kernel Name" (sass). Line-level data makes cuda,sass the most useful.
int source_page_rank(const std::string& path) {
  util::CsvReader r(path);
  while (r.next()) {
    if (r.size() == 0 || is_ncu_chatter(r)) continue;
    if (r[0] == "File Path" || r[0] == "Function Name") {
      // cuda,sass has an "Address" column; cuda alone does not.
      while (r.next())
        if (r.size() > 0 && r[0] == "Line No") {
          for (auto f : r.fields())
            if (f == "Address") return 3;
          return 1;
        }
      return 1;
    }
    return 2;
  }
  return 0;
}

} // namespace

Run read_run(const RunPages& pages) {
  Run run;
  auto add_file = [&](const std::string& p) {
    run.files.push_back(p);
    run.input_bytes += file_size(p);
  };
  std::vector<const RunPages*> reports = {&pages};
  for (const auto& r : pages.later_rounds) reports.push_back(&r);
  // Each report's launches, in run.launches from `first[i]` on.
  std::vector<std::size_t> first;
  for (const auto* rp : reports) {
    std::vector<Launch> launches;
    if (!rp->details.empty()) {
      read_details_page(rp->details, launches);
      add_file(rp->details);
    }
    if (!rp->raw.empty()) {
      read_raw_page(rp->raw, launches);
      add_file(rp->raw);
    }
    std::sort(launches.begin(), launches.end(), [](const Launch& a, const Launch& b) { return a.id < b.id; });
    int offset = run.launches.empty() ? 0 : run.launches.back().id + 1;
    first.push_back(run.launches.size());
    for (auto& l : launches) {
      l.id += offset;
      run.launches.push_back(std::move(l));
    }
  }
  first.push_back(run.launches.size());
  if (!pages.timing_raw.empty()) {
    read_raw_page(pages.timing_raw, run.timing);
    std::sort(run.timing.begin(), run.timing.end(), [](const Launch& a, const Launch& b) { return a.id < b.id; });
    add_file(pages.timing_raw);
  }
  if (!pages.trace.empty()) {
    Trace trace = read_trace(pages.trace);
    // A format-3 trace also has the copies and waits between the launches (issue #30).
    run.timeline = summarize_timeline(trace);
    run.timing = std::move(trace.launches);
    // Later stages match launches by ncu's spelling of a kernel's name.
    adopt_profiled_names(run.timing, run.launches);
    run.files.insert(run.files.end(), trace.files.begin(), trace.files.end());
    run.input_bytes += trace.bytes;
  }
  for (const auto* rp : reports)
    if (!rp->session.empty()) {
      if (run.session.empty()) run.session = read_session_page(rp->session);
      add_file(rp->session);
    }
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const std::string& page = reports[i]->source;
    if (page.empty()) continue;
    auto begin = run.launches.begin() + static_cast<std::ptrdiff_t>(first[i]);
    auto end = run.launches.begin() + static_cast<std::ptrdiff_t>(first[i + 1]);
    add_file(page);
    if (begin == end) {
      // A source page alone: its blocks come in result order.
      auto sources = read_source_page(page, -1);
      int offset = run.launches.empty() ? 0 : run.launches.back().id + 1;
      for (std::size_t b = 0; b < sources.size(); ++b) sources[b].result_id = offset + static_cast<int>(b);
      for (auto& s : sources) run.sources.push_back(std::move(s));
      continue;
    }
    // Matched as the page is read, so that blocks printed again are dropped as they come: a page
    // of many repeats holds no more than its distinct blocks (bench_analyze_page).
    const std::vector<Launch> launches(begin, end);
    SourceMatcher matcher(launches, run.timing, page);
    KernelSource previous;
    for_each_source_block(page, [&](KernelSource&& b) {
      // The sass view prints each block twice in a row (read_source_page undoes it likewise).
      if (b.lines.empty() && same_block(previous, b)) return;
      if (b.lines.empty()) previous = b;
      matcher.add(std::move(b));
    });
    matcher.finish(run.sources);
  }
  return run;
}

RunPages find_pages(const std::string& folder) {
  RunPages pages;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(folder)) {
    if (!e.is_regular_file()) continue;
    std::string name = e.path().filename().string();
    auto ends = [&](std::string_view suffix) {
      return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends(".csv") || ends(".csv.gz") || ends(".txt")) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  int best_source = 0;
  for (const auto& f : files) {
    PageKind kind = sniff_page(f);
    auto take = [&](std::string& slot) {
      if (!slot.empty()) {
        log::warn("{}: a second {} page; using {}", f, page_kind_name(kind), slot);
        return;
      }
      slot = f;
    };
    switch (kind) {
    case PageKind::details:
      take(pages.details);
      break;
    case PageKind::raw:
      take(pages.raw);
      break;
    case PageKind::session:
      take(pages.session);
      break;
    case PageKind::source: {
      int rank = source_page_rank(f);
      if (rank > best_source) {
        best_source = rank;
        pages.source = f;
      }
      break;
    }
    case PageKind::summary:
      log::debug("{}: summary page, not needed", f);
      break;
    case PageKind::unknown:
      log::warn("{}: not an Nsight Compute CSV page; ignored", f);
      break;
    }
  }
  if (pages.details.empty() && pages.raw.empty())
    throw Error(folder + ": no Nsight Compute details or raw page found (export them with ncu -i REPORT --csv "
                         "--page details --print-units base --print-metric-name name)");
  return pages;
}

namespace {

// The fields of manifest.json that are read, with the types they must have: a mistyped one is an
// error naming the file and the field (it was an "internal error").
void check_manifest(const nlohmann::json& m, const std::string& path) {
  auto fail = [&](const std::string& what) { throw ParseError(path, 0, what); };
  if (!m.is_object()) fail("manifest.json must hold a JSON object");
  auto object_of_strings = [&](const char* key) {
    if (!m.contains(key)) return;
    if (!m[key].is_object()) fail(fmt::format("\"{}\" must be an object", key));
    for (const auto& [k, v] : m[key].items())
      if (!v.is_string() && !v.is_number() && !v.is_null())
        fail(fmt::format("\"{}.{}\" must be a string or a number", key, k));
  };
  object_of_strings("gpu");
  object_of_strings("ncu");
  object_of_strings("app");
  if (m.contains("ncu") && m["ncu"].contains("version") && !m["ncu"]["version"].is_string())
    fail("\"ncu.version\" must be a string");
  for (const char* k : {"name", "driver"})
    if (m.contains("gpu") && m["gpu"].contains(k) && !m["gpu"][k].is_string())
      fail(fmt::format("\"gpu.{}\" must be a string", k));
  if (!m.contains("runs") || !m["runs"].is_array() || m["runs"].empty()) fail("manifest lists no runs");
  for (std::size_t i = 0; i < m["runs"].size(); ++i) {
    const auto& r = m["runs"][i];
    if (!r.is_object()) fail(fmt::format("runs[{}] must be an object", i));
    if (r.contains("config") && !r["config"].is_string()) fail(fmt::format("runs[{}].config must be a string", i));
    if (r.contains("repeat") && !r["repeat"].is_number_integer())
      fail(fmt::format("runs[{}].repeat must be an integer", i));
    auto check_pages = [&](const nlohmann::json& holder, const std::string& where) {
      if (!holder.contains("pages")) return;
      if (!holder["pages"].is_object()) fail(fmt::format("{}.pages must be an object", where));
      for (const auto& [k, v] : holder["pages"].items())
        if (!v.is_string()) fail(fmt::format("{}.pages.{} must be a file name", where, k));
    };
    check_pages(r, fmt::format("runs[{}]", i));
    if (r.contains("rounds")) {
      if (!r["rounds"].is_array()) fail(fmt::format("runs[{}].rounds must be an array", i));
      for (std::size_t k = 0; k < r["rounds"].size(); ++k) {
        if (!r["rounds"][k].is_object()) fail(fmt::format("runs[{}].rounds[{}] must be an object", i, k));
        check_pages(r["rounds"][k], fmt::format("runs[{}].rounds[{}]", i, k));
      }
    }
    if (r.contains("cut") && (!r["cut"].is_object() || !r["cut"].value("why", nlohmann::json()).is_string()))
      fail(fmt::format("runs[{}].cut must be an object with a \"why\"", i));
    if (r.contains("profiled")) {
      if (!r["profiled"].is_array()) fail(fmt::format("runs[{}].profiled must be an array", i));
      for (const auto& p : r["profiled"])
        if (!p.is_object() || !p.value("function", nlohmann::json()).is_string() ||
            !p.value("launches", nlohmann::json()).is_number_integer() ||
            !p.value("of", nlohmann::json()).is_number_integer())
          fail(fmt::format("runs[{}].profiled: each entry needs a function, launches and of", i));
    }
  }
}

} // namespace

std::string cut_text(const nlohmann::json& run) {
  std::vector<std::string> parts;
  for (const auto& p : run.value("profiled", nlohmann::json::array()))
    if (p["launches"].get<int>() < p["of"].get<int>())
      parts.push_back(fmt::format("{} of {} launches of {} profiled", p["launches"].get<int>(), p["of"].get<int>(),
                                  p["function"].get<std::string>()));
  if (parts.empty() && run.contains("cut")) return "the heavy pass was cut";
  return util::join(parts, ", ");
}

namespace {

Profile import_manifest_dir(const std::string& dir) {
  std::string manifest_path = (fs::path(dir) / "manifest.json").string();
  Profile profile;
  try {
    profile.manifest = util::parse_json(util::read_file(manifest_path));
  } catch (const nlohmann::json::exception& e) { // parse_error, or out_of_range for 1e400
    throw ParseError(manifest_path, 0, plain_message(e));
  }
  check_manifest(profile.manifest, manifest_path);
  const auto& runs = profile.manifest["runs"];
  for (const auto& r : runs) {
    // A page is a file of the profile folder: not a path out of it, not a device.
    auto page = [&](const nlohmann::json& holder, const char* key, bool folder_ok = false) -> std::string {
      const auto& p = holder.value("pages", nlohmann::json::object());
      if (!p.contains(key) || p[key].get<std::string>().empty()) return {};
      // The error_code forms: a name the file system refuses (too long, say) is a bad page too.
      fs::path path = fs::path(dir) / p[key].get<std::string>();
      std::error_code ec_page, ec_dir, ec_kind;
      auto rel = fs::weakly_canonical(path, ec_page).lexically_relative(fs::weakly_canonical(dir, ec_dir));
      auto st = fs::status(path, ec_kind);
      bool kind_ok = fs::is_regular_file(st) || (folder_ok && fs::is_directory(st));
      if (ec_page || ec_dir || ec_kind || rel.empty() || *rel.begin() == ".." || !kind_ok)
        throw ParseError(manifest_path, 0,
                         fmt::format("page \"{}\" of run {} is not a file inside {}", p[key].get<std::string>(),
                                     r.value("config", "?"), dir));
      return path.string();
    };
    auto report_pages = [&](const nlohmann::json& holder, RunPages& pages) {
      pages.details = page(holder, "details");
      pages.raw = page(holder, "raw");
      pages.source = page(holder, "source");
      pages.session = page(holder, "session");
    };
    RunPages pages;
    report_pages(r, pages);
    pages.timing_raw = page(r, "timing_raw");
    pages.trace = page(r, "trace", true);
    // The heavy pass's rounds (a profile written before them has its one report's pages above).
    for (const auto& round : r.value("rounds", nlohmann::json::array())) {
      RunPages rp;
      report_pages(round, rp);
      if (pages.details.empty() && pages.raw.empty() && pages.later_rounds.empty()) {
        pages.details = rp.details, pages.raw = rp.raw, pages.source = rp.source, pages.session = rp.session;
      } else {
        pages.later_rounds.push_back(std::move(rp));
      }
    }
    if (r.contains("cut"))
      log::warn("{}: run {}: {}; {} (a partial profile: analysis uses the launches it holds)", manifest_path,
                r.value("dir", r.value("config", "?")), cut_text(r), r["cut"]["why"].get<std::string>());
    Run run = read_run(pages);
    run.config = r.value("config", "default");
    run.repeat = r.value("repeat", 0);
    profile.runs.push_back(std::move(run));
  }
  return profile;
}

Run import_report(const std::string& report, const ImportOptions& options) {
  auto ncu = util::find_executable(options.ncu);
  if (!ncu)
    throw Error(fmt::format("{}: reading a .ncu-rep needs Nsight Compute's ncu on PATH (or --ncu PATH); or export "
                            "the CSV pages where ncu is and import that folder",
                            report));
  std::string dir = options.export_dir;
  bool temporary = dir.empty();
  if (temporary) {
    std::string tmpl = (fs::temp_directory_path() / "optimas-import-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw Error("cannot create a temporary folder for the export");
    dir = tmpl;
  }
  fs::create_directories(dir);
  RunPages pages = export_pages(*ncu, report, dir, "", PageSet::all, options.timeout_s);
  Run run = read_run(pages);
  run.config = fs::path(report).stem().string();
  if (temporary) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    run.files = {report};
  }
  return run;
}

} // namespace

Profile import_profile(const std::string& path, const ImportOptions& options) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(path + ": no such file or folder");
  Profile profile;
  if (fs::is_directory(path)) {
    if (fs::exists(fs::path(path) / "manifest.json")) return import_manifest_dir(path);
    bool has_csv = false;
    std::vector<std::string> reports;
    for (const auto& e : fs::directory_iterator(path)) {
      auto ext = e.path().extension().string();
      has_csv = has_csv || ext == ".csv" || e.path().string().ends_with(".csv.gz");
      if (ext == ".ncu-rep") reports.push_back(e.path().string());
    }
    std::sort(reports.begin(), reports.end());
    if (has_csv || reports.empty()) {
      Run run = read_run(find_pages(path));
      profile.runs.push_back(std::move(run));
    } else {
      for (const auto& r : reports) profile.runs.push_back(import_report(r, options));
    }
  } else if (fs::path(path).extension() == ".ncu-rep") {
    profile.runs.push_back(import_report(path, options));
  } else {
    // A single exported page.
    RunPages pages;
    switch (sniff_page(path)) {
    case PageKind::details:
      pages.details = path;
      break;
    case PageKind::raw:
      pages.raw = path;
      break;
    default:
      throw Error(path + ": not an ncu details or raw page, a folder of pages, a profile directory or a .ncu-rep");
    }
    profile.runs.push_back(read_run(pages));
  }
  profile.manifest = {{"mode", "import"}, {"source", fs::absolute(path).string()}};
  return profile;
}

} // namespace optimas::profile
