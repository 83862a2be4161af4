// Reading what a run printed (init's printed times and its varying lines) must stay linear in
// the output's length, however many figures a line holds: Rodinia's gaussian, verbose, prints
// its matrices at 512 figures a line, and a reader that looked at each figure's whole label took
// 18 minutes on 1.6 MB. Prints seconds and MB/s per row length; for a linear reader MB/s stays
// within cache effects as rows grow; a quadratic one falls with them.
//
//   bench_printed_times [FIGURES_PER_ROW ...]     (default: 8 64 512 4096), 1 MB of rows each
#include "init/observe.hpp"
#include "init/printed_times.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace optimas;

int main(int argc, char** argv) {
  std::vector<long> widths;
  for (int i = 1; i < argc; ++i) widths.push_back(std::atol(argv[i]));
  if (widths.empty()) widths = {8, 64, 512, 4096};
  std::printf("%-8s %9s %9s %9s %7s\n", "figures", "size_kb", "seconds", "MB/s", "times");
  for (long width : widths) {
    std::vector<init::ObservedRun> runs(3);
    for (int k = 0; k < 3; ++k) {
      std::string& text = runs[k].stdout_text;
      for (int row = 0; text.size() < 1024 * 1024; ++row) {
        for (long j = 0; j < width; ++j) text += fmt::format("{:8.2f} ", static_cast<double>((row * 7 + j) % 100) / 7);
        text += '\n';
      }
      text += fmt::format("Time for CUDA kernels:\t{:f} sec\n", 0.001 * (k + 1));
    }
    auto t0 = std::chrono::steady_clock::now();
    auto found = init::printed_times_in_output(runs[0].stdout_text);
    std::vector<std::string> findings;
    init::ignore_patterns(runs, found.empty() ? "" : found[0].pattern, findings);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-8ld %9zu %9.4f %9.1f %7zu\n", width, runs[0].stdout_text.size() / 1024, s,
                static_cast<double>(runs[0].stdout_text.size()) / 1e6 / s, found.size());
  }
  return 0;
}
