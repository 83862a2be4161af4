// `optimas analyze` on a profile whose source page is large (issue #49): the pages of a profile
// recorded on the H200 (tests/data/h200/stencil/default: details, raw, session), its source page
// replaced by bench_distill's (that page's blocks repeated to the requested size, as a report of
// many launches prints them). Import and analysis with the root causes computed, timed in one
// process on one core; peak RSS must not grow with the page.
//
//   bench_analyze_page [SIZE_MB ...] [--dir DIR] [--keep]     (default: 256 1024)
#include "analysis/diagnostics.hpp"
#include "profile/importer.hpp"
#include "util/gzip.hpp"
#include "util/strings.hpp"

#include "bench_pages.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace optimas;
using bench::generate;
using bench::peak_rss_mb;

namespace {

std::string recorded(const std::string& page) {
  return util::gunzip(util::read_file(std::string(OPTIMAS_TEST_DATA) + "/h200/stencil/default/" + page + ".csv.gz"));
}

} // namespace

int main(int argc, char** argv) {
  const auto [sizes_mb, dir, keep] = bench::page_args(argc, argv);
  const std::string page = recorded("source");
  std::printf("profile: h200/stencil/default's details, raw and session pages; its source page (%.2f MB) repeated\n",
              page.size() / 1e6);
  std::printf("%10s %12s %10s %10s %10s %12s\n", "page_MB", "seconds", "MB/s", "PC_items", "causes", "peak_RSS_MB");
  for (auto mb : sizes_mb) {
    fs::path folder = fs::path(dir) / ("optimas-bench-profile-" + std::to_string(mb) + "MB");
    fs::create_directories(folder);
    for (const char* p : {"details", "raw", "session"})
      util::write_file((folder / (std::string(p) + ".csv")).string(), recorded(p));
    std::uint64_t bytes = generate((folder / "source.csv").string(), page, mb * 1000 * 1000);

    auto t0 = std::chrono::steady_clock::now();
    auto profile = profile::import_profile(folder.string());
    analysis::AnalysisOptions o;
    analysis::Diagnostics d = analysis::analyze(profile, o);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::size_t items = 0, causes = 0;
    for (const auto& k : d.kernels)
      if (k.stalls)
        for (const auto& l : k.stalls->lines) {
          ++items;
          causes += l.cause && l.cause->status == analysis::Cause::Status::found;
        }
    std::printf("%10.1f %12.3f %10.1f %10zu %10zu %12.1f\n", bytes / 1e6, seconds, bytes / 1e6 / seconds, items, causes,
                peak_rss_mb());
    if (!keep) fs::remove_all(folder);
  }
  std::printf("goal (issue #49): >= 300 MB/s, peak RSS <= 256 MB with the causes computed\n");
  return 0;
}
