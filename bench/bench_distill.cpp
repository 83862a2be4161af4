// Distillation of PC-sampling data: throughput and peak memory of reading a source page
// (--print-source cuda,sass) and reducing it to per-kernel stall summaries, on one core.
//
// The page is generated in the real format: the blocks of a page recorded on the H200
// (tests/data/h200/stencil/default/source.csv.gz) repeated until the file reaches the
// requested size, as a report with many launches would be. Memory must not grow with it.
//
//   bench_distill [SIZE_MB ...] [--dir DIR] [--keep]     (default: 256 1024)
#include "analysis/saliency.hpp"
#include "profile/ncu_readers.hpp"
#include "util/gzip.hpp"
#include "util/strings.hpp"

#include "bench_pages.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace optimas;
using bench::generate;
using bench::peak_rss_mb;

int main(int argc, char** argv) {
  const auto [sizes_mb, dir, keep] = bench::page_args(argc, argv);

  std::string page =
      util::gunzip(util::read_file(std::string(OPTIMAS_TEST_DATA) + "/h200/stencil/default/source.csv.gz"));
  std::printf("template: recorded stencil source page, %.2f MB\n", page.size() / 1e6);
  std::printf("%10s %10s %8s %12s %10s %12s %10s\n", "page_MB", "blocks", "kernels", "seconds", "MB/s", "summary_B",
              "peak_RSS_MB");
  for (auto mb : sizes_mb) {
    std::string path = (fs::path(dir) / ("optimas-bench-source-" + std::to_string(mb) + "MB.csv")).string();
    std::uint64_t bytes = generate(path, page, mb * 1000 * 1000);

    auto t0 = std::chrono::steady_clock::now();
    analysis::StallAggregator agg;
    std::uint64_t blocks = 0;
    profile::for_each_source_block(path, [&](profile::KernelSource&& k) {
      agg.add(k, k.page_bytes);
      ++blocks;
    });
    std::size_t summary_bytes = 0;
    for (const auto& kernel : agg.kernels()) summary_bytes += agg.summarize(kernel, {}).text.size();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    std::printf("%10.1f %10llu %8zu %12.3f %10.1f %12zu %10.1f\n", bytes / 1e6, static_cast<unsigned long long>(blocks),
                agg.kernels().size(), seconds, bytes / 1e6 / seconds, summary_bytes, peak_rss_mb());
    if (!keep) fs::remove(path);
  }
  std::printf("goal: >= 300 MB/s on one core, peak RSS <= 256 MB and not growing with the page\n");
  return 0;
}
