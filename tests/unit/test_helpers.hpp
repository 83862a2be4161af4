// Shared by the unit tests: temporary folders and files that clean up after themselves.
#pragma once

#include <sys/resource.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

namespace optimas::test {

class TempDir {
public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "optimas-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) std::abort();
    m_path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return m_path; }
  std::string file(std::string_view name, std::string_view content) const {
    auto p = m_path / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }

private:
  std::filesystem::path m_path;
};

// Sets (or, with nullptr, unsets) an environment variable for the scope, then restores it.
class ScopedEnv {
public:
  ScopedEnv(std::string name, const char* value) : m_name(std::move(name)) {
    if (const char* old = std::getenv(m_name.c_str())) m_old = old;
    if (value)
      setenv(m_name.c_str(), value, 1);
    else
      unsetenv(m_name.c_str());
  }
  ~ScopedEnv() {
    if (m_old)
      setenv(m_name.c_str(), m_old->c_str(), 1);
    else
      unsetenv(m_name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
  std::string m_name;
  std::optional<std::string> m_old;
};

inline std::string data_path(std::string_view rel) {
  return std::string(OPTIMAS_TEST_DATA) + "/" + std::string(rel);
}

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Writes a gzip file of `head`, then `piece` repeated until `bytes` more, then `tail`: a page
// that unpacks to far more than it holds on disk (a gzip bomb), made by the test itself.
inline void write_gzip(const std::string& path, std::string_view head, std::string_view piece, std::uint64_t bytes,
                       std::string_view tail = {}) {
  gzFile gz = gzopen(path.c_str(), "wb1");
  if (!gz) std::abort();
  gzwrite(gz, head.data(), static_cast<unsigned>(head.size()));
  std::string block;
  while (block.size() < (1u << 20)) block += piece;
  for (std::uint64_t written = 0; written < bytes; written += block.size())
    gzwrite(gz, block.data(), static_cast<unsigned>(std::min<std::uint64_t>(block.size(), bytes - written)));
  gzwrite(gz, tail.data(), static_cast<unsigned>(tail.size()));
  gzclose(gz);
}

// The most memory this process has held so far, in MiB (each test runs in a process of its own).
inline double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

} // namespace optimas::test
