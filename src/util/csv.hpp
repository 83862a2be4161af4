// A streaming CSV reader for profiler exports: constant memory, quoted fields with embedded
// newlines and doubled quotes, CRLF, and the physical line number of every record. Quotes that
// Nsight Compute leaves undoubled in source text are kept as part of their field (csv.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace optimas::util {

// What a page may hold, so that a damaged or hostile file (a gzip bomb, one 200 MB line) is an
// error naming it instead of gigabytes of memory. Nsight Compute's largest fields are source
// lines and metric values, its longest records a raw page's row of a few thousand metrics, its
// largest pages source pages of a few GB (bench_distill reads 1 GB ones).
struct CsvLimits {
  std::size_t field_bytes = std::size_t{1} << 20;     // 1 MiB
  std::size_t record_bytes = std::size_t{64} << 20;   // 64 MiB: the buffer stays below twice this
  std::size_t fields = std::size_t{1} << 20;          // per record
  std::uint64_t page_bytes = std::uint64_t{16} << 30; // 16 GiB, decompressed
};
inline constexpr CsvLimits k_csv_limits{};

class CsvReader {
public:
  // Reads a file, plain or gzip-compressed; throws Error when it cannot be opened.
  explicit CsvReader(const std::string& path, const CsvLimits& limits = k_csv_limits);
  // Reads an in-memory text (tests, captured output); `name` appears in error messages.
  static CsvReader from_string(std::string content, std::string name, const CsvLimits& limits = k_csv_limits);

  CsvReader(CsvReader&&) noexcept;
  CsvReader& operator=(CsvReader&&) = delete;
  CsvReader(const CsvReader&) = delete;
  ~CsvReader();

  // Advances to the next record; false at the end of the input. A blank line is a record
  // with no fields. Throws ParseError on an unterminated quoted field, bad quoting, or input
  // past the limits.
  bool next();

  // The current record's fields: valid until the next call to next().
  const std::vector<std::string_view>& fields() const { return m_fields; }
  std::size_t size() const { return m_fields.size(); }
  std::string_view operator[](std::size_t i) const { return i < m_fields.size() ? m_fields[i] : std::string_view(); }

  // The 1-based line on which the current record starts.
  std::size_t line() const { return m_record_line; }
  const std::string& name() const { return m_name; }
  // Bytes consumed so far (for progress and throughput figures).
  std::uint64_t bytes_consumed() const { return m_consumed; }

  // Throws a ParseError naming this file and the current record's line.
  [[noreturn]] void fail(const std::string& message) const;

private:
  CsvReader() = default;
  enum class Parse { complete, need_more, unterminated, bad_quote, too_many_fields };
  Parse parse_record(std::size_t& record_end, std::size_t& newlines);
  bool refill();

  void* m_gz = nullptr; // gzFile
  std::string m_name;
  CsvLimits m_limits;
  std::uint64_t m_read = 0; // bytes read from the file so far, decompressed
  std::vector<char> m_buf;
  std::size_t m_begin = 0; // first unread byte
  std::size_t m_end = 0;   // one past the last valid byte
  bool m_eof = false;
  std::size_t m_next_line = 1;
  std::size_t m_record_line = 0;
  std::uint64_t m_consumed = 0;
  std::vector<std::string_view> m_fields;
  std::size_t m_field_count = 0;
  std::vector<std::size_t> m_escaped; // fields holding doubled quotes
};

} // namespace optimas::util
