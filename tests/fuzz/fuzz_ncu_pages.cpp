// The Nsight Compute page readers (details, raw, source, session, page sniffing and a single
// page's import), plain and gzip-compressed; a source page's blocks also go through the stall
// summary with its root causes (the SASS reader and the walk over whatever SASS the page holds). The first byte picks the reader (low 3 bits) and
// whether the rest is gzip-compressed before it is written (bit 3); the rest is the page.
#include "fuzz_common.hpp"

#include "analysis/saliency.hpp"
#include "profile/importer.hpp"
#include "profile/ncu_page.hpp"
#include "profile/ncu_readers.hpp"
#include "util/error.hpp"

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace {

std::string write_page(std::string_view page, bool compress) {
  if (!compress) return optimas::fuzz::write_file("page.csv", page);
  std::string path = (optimas::fuzz::scratch() / "page.csv.gz").string();
  gzFile gz = gzopen(path.c_str(), "wb1");
  if (!gz) __builtin_trap();
  if (!page.empty()) gzwrite(gz, page.data(), static_cast<unsigned>(page.size()));
  gzclose(gz);
  return path;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace optimas;
  if (size == 0) return 0;
  std::string_view page(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string path = write_page(page, (data[0] & 8) != 0);
  std::vector<profile::Launch> launches;
  try {
    switch (data[0] & 7) {
    case 0: profile::read_details_page(path, launches); break;
    case 1: profile::read_raw_page(path, launches); break;
    case 2: profile::read_source_page(path); break;
    case 3: profile::read_source_page(path, 2); break;
    case 4: {
      analysis::StallAggregator stalls;
      profile::for_each_source_block(path, [&](profile::KernelSource&& k) { stalls.add(k, k.page_bytes); });
      for (const auto& kernel : stalls.kernels()) stalls.summarize(kernel, {});
      break;
    }
    case 5: profile::read_session_page(path); break;
    case 6: profile::sniff_page(path); break;
    case 7: profile::import_profile(path); break;
    }
  } catch (const Error&) {
  }
  return 0;
}
