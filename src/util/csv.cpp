#include "util/csv.hpp"

#include "util/error.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

namespace optimas::util {

namespace {
constexpr std::size_t k_chunk = 1 << 20;
constexpr std::size_t k_padding = 16;

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}
} // namespace

CsvReader::CsvReader(const std::string& path, const CsvLimits& limits) : m_name(path), m_limits(limits) {
  // zlib reads gzip-compressed pages and plain files alike.
  errno = 0;
  m_gz = gzopen(path.c_str(), "rb");
  if (!m_gz) throw Error(path + ": cannot open: " + std::strerror(errno ? errno : ENOMEM));
  // Buffers no larger than the file: most pages are kilobytes, and 1.4 MB of buffers per small
  // page made reading them (and fuzzing the readers) ten times slower. The buffer still grows
  // for a record longer than it, and a compressed page reads through it in several refills.
  struct stat st{};
  std::size_t size = stat(path.c_str(), &st) == 0 && st.st_size > 0 ? static_cast<std::size_t>(st.st_size) : k_chunk;
  std::size_t chunk = std::clamp<std::size_t>(size + 1 + k_padding, 4096, k_chunk);
  gzbuffer(static_cast<gzFile>(m_gz), static_cast<unsigned>(std::min<std::size_t>(chunk, 1 << 17)));
  m_buf.resize(chunk);
  m_buf[0] = '"'; // sentinel
}

CsvReader CsvReader::from_string(std::string content, std::string name, const CsvLimits& limits) {
  CsvReader r;
  r.m_name = std::move(name);
  r.m_limits = limits;
  r.m_buf.assign(content.begin(), content.end());
  r.m_end = r.m_buf.size();
  r.m_buf.push_back('"'); // sentinel
  r.m_buf.resize(r.m_buf.size() + k_padding, '\0');
  r.m_eof = true;
  return r;
}

CsvReader::CsvReader(CsvReader&& o) noexcept
    : m_gz(o.m_gz), m_name(std::move(o.m_name)), m_limits(o.m_limits), m_read(o.m_read), m_buf(std::move(o.m_buf)),
      m_begin(o.m_begin), m_end(o.m_end), m_eof(o.m_eof), m_next_line(o.m_next_line), m_record_line(o.m_record_line),
      m_consumed(o.m_consumed) {
  o.m_gz = nullptr;
}

CsvReader::~CsvReader() {
  if (m_gz) gzclose(static_cast<gzFile>(m_gz));
}

void CsvReader::fail(const std::string& message) const {
  throw ParseError(m_name, m_record_line, message);
}

bool CsvReader::refill() {
  if (m_eof) return false;
  // Keep the unread tail, grow when a single record fills the whole buffer.
  if (m_begin > 0) {
    std::memmove(m_buf.data(), m_buf.data() + m_begin, m_end - m_begin);
    m_end -= m_begin;
    m_begin = 0;
  }
  // One byte past the data always holds a '"' sentinel for the quoted-field scan, and
  // k_padding bytes after it keep 16-byte loads inside the buffer.
  if (m_end + 1 + k_padding >= m_buf.size()) {
    if (m_end >= m_limits.record_bytes)
      throw ParseError(m_name, m_next_line,
                       fmt::format("a record longer than {} (no Nsight Compute page has one; is the file damaged?)",
                                   size_text(m_limits.record_bytes)));
    m_buf.resize(m_buf.size() * 2);
  }
  for (;;) {
    int n = gzread(static_cast<gzFile>(m_gz), m_buf.data() + m_end,
                   static_cast<unsigned>(m_buf.size() - m_end - 1 - k_padding));
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(static_cast<gzFile>(m_gz), &code);
      throw ParseError(m_name, m_next_line,
                       std::string("read error: ") + (code == Z_ERRNO ? std::strerror(errno) : msg));
    }
    if (n == 0) {
      m_eof = true;
      m_buf[m_end] = '"';
      return false;
    }
    m_end += static_cast<std::size_t>(n);
    m_buf[m_end] = '"';
    m_read += static_cast<std::uint64_t>(n);
    if (m_read > m_limits.page_bytes)
      throw ParseError(m_name, m_next_line,
                       fmt::format("the page holds more than {} (decompressed); no Nsight Compute page is that large: "
                                   "is it a damaged or hostile file?",
                                   size_text(m_limits.page_bytes)));
    return true;
  }
}

namespace {

// Position of the next '"' at or after j. A '"' sentinel at the end of the data and 16 bytes of
// padding after it (see refill) make the search safe without bounds checks.
inline std::size_t find_quote(const char* buf, std::size_t j) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  for (;;) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf + j));
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)));
    if (mask) return j + static_cast<std::size_t>(__builtin_ctz(mask));
    j += 16;
  }
#else
  while (buf[j] != '"') ++j;
  return j;
#endif
}

} // namespace

CsvReader::Parse CsvReader::parse_record(std::size_t& record_end, std::size_t& newlines) {
  char* buf = m_buf.data();
  const std::size_t end = m_end;
  std::size_t i = m_begin;
  std::size_t n = 0; // fields found
  m_escaped.clear();
  auto push = [&](std::size_t b, std::size_t e) {
    if (n == m_fields.size()) m_fields.resize(std::min(2 * n + 16, m_limits.fields + 1));
    m_fields[n++] = std::string_view(buf + b, e - b);
  };
  for (;;) {
    if (n > m_limits.fields) return Parse::too_many_fields;
    if (i < end && buf[i] == '"') {
      // Quoted field: runs to the next quote that is not doubled. Fast path first: the
      // closing quote followed by a separator, as in nearly every field of an ncu page.
      std::size_t j = find_quote(buf, i + 1);
      if (j + 1 < end) {
        char next = buf[j + 1];
        if (next == ',' && j + 2 < end && buf[j + 2] != ' ' && buf[j + 2] != '\t') {
          push(i + 1, j);
          i = j + 2;
          continue;
        }
        if (next == '\n') {
          push(i + 1, j);
          record_end = j + 2;
          break;
        }
      }
      j = i + 1;
      bool escaped = false;
      for (;;) {
        j = find_quote(buf, j);
        if (j >= end) return m_eof ? Parse::unterminated : Parse::need_more;
        if (j + 1 == end && !m_eof) return Parse::need_more; // doubled or closing: not known yet
        if (j + 1 < end && buf[j + 1] == '"') {
          escaped = true;
          j += 2;
          continue;
        }
        // Nsight Compute writes source lines without doubling their quotes (`asm("ld.global.nc
        // ..." : "=f"(r))`, `printf("%d\n", x)`): a quote followed by anything but a separator
        // or a line end, or by a separator and a blank, is one of those and part of the field.
        if (j + 2 == end && buf[j + 1] == ',' && !m_eof) return Parse::need_more;
        bool closing = j + 1 == end || buf[j + 1] == '\n' || buf[j + 1] == '\r' ||
                       (buf[j + 1] == ',' && (j + 2 == end || (buf[j + 2] != ' ' && buf[j + 2] != '\t')));
        if (!closing) {
          ++j;
          continue;
        }
        break;
      }
      if (escaped) m_escaped.push_back(n);
      push(i + 1, j);
      i = j + 1;
      if (i < end && buf[i] == '\r') ++i;
    } else {
      std::size_t j = i;
      while (j < end && buf[j] != ',' && buf[j] != '\n') ++j;
      if (j == end && !m_eof) return Parse::need_more;
      std::size_t e = j;
      if (e > i && buf[e - 1] == '\r') --e;
      push(i, e);
      i = j;
    }
    if (i == end) {
      if (!m_eof) return Parse::need_more;
      record_end = i;
      break;
    }
    if (buf[i] == ',') {
      ++i;
      continue;
    }
    if (buf[i] == '\n') {
      record_end = i + 1;
      break;
    }
    return Parse::bad_quote;
  }
  m_field_count = n;
  // Newlines inside quoted fields are rare: count them once per record with memchr.
  newlines = 0;
  for (const char* p = buf + m_begin; (p = static_cast<const char*>(std::memchr(p, '\n', buf + record_end - p))); ++p)
    ++newlines;
  return Parse::complete;
}

bool CsvReader::next() {
  std::size_t record_end = 0;
  std::size_t newlines = 0;
  for (;;) {
    if (m_begin == m_end && !refill()) {
      m_fields.clear();
      return false;
    }
    Parse p = parse_record(record_end, newlines);
    if (p == Parse::complete) break;
    m_record_line = m_next_line;
    if (p == Parse::unterminated) fail("unterminated quoted field (truncated file?)");
    if (p == Parse::bad_quote) fail("unexpected character after a closing quote");
    if (p == Parse::too_many_fields) fail(fmt::format("a record of more than {} fields", m_limits.fields));
    refill(); // need_more: at end of input the next parse completes or reports the truncation
  }
  m_record_line = m_next_line;
  m_next_line += newlines;
  m_consumed += record_end - m_begin;
  // A blank line is a record with no fields.
  bool blank = m_field_count == 1 && m_fields[0].empty() && m_buf[m_begin] != '"';
  if (m_field_count > m_limits.fields) fail(fmt::format("a record of more than {} fields", m_limits.fields));
  m_fields.resize(blank ? 0 : m_field_count);
  for (std::size_t f = 0; f < m_fields.size(); ++f)
    if (m_fields[f].size() > m_limits.field_bytes)
      fail(fmt::format("field {} is longer than {} (no Nsight Compute page has one; is the file damaged?)", f + 1,
                       size_text(m_limits.field_bytes)));
  for (std::size_t f : m_escaped) {
    // Collapse doubled quotes in place: the text only shrinks.
    char* text = const_cast<char*>(m_fields[f].data());
    std::size_t w = 0;
    for (std::size_t r = 0; r < m_fields[f].size(); ++r) {
      text[w++] = text[r];
      if (text[r] == '"' && r + 1 < m_fields[f].size() && text[r + 1] == '"') ++r; // a lone one is ncu's
    }
    m_fields[f] = std::string_view(text, w);
  }
  m_begin = record_end;
  return true;
}

} // namespace optimas::util
