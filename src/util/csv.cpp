#include "util/csv.hpp"

#include "util/error.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstring>

namespace optimas::util {

namespace {
constexpr std::size_t k_chunk = 1 << 20;
}

CsvReader::CsvReader(const std::string& path) : m_name(path) {
  // zlib reads gzip-compressed pages and plain files alike.
  errno = 0;
  m_gz = gzopen(path.c_str(), "rb");
  if (!m_gz) throw Error(path + ": cannot open: " + std::strerror(errno ? errno : ENOMEM));
  gzbuffer(static_cast<gzFile>(m_gz), 1 << 17);
  m_buf.resize(k_chunk);
}

CsvReader CsvReader::from_string(std::string content, std::string name) {
  CsvReader r;
  r.m_name = std::move(name);
  r.m_buf.assign(content.begin(), content.end());
  r.m_end = r.m_buf.size();
  r.m_eof = true;
  return r;
}

CsvReader::CsvReader(CsvReader&& o) noexcept
    : m_gz(o.m_gz), m_name(std::move(o.m_name)), m_buf(std::move(o.m_buf)), m_begin(o.m_begin), m_end(o.m_end),
      m_eof(o.m_eof), m_next_line(o.m_next_line), m_record_line(o.m_record_line), m_consumed(o.m_consumed) {
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
  if (m_end == m_buf.size()) m_buf.resize(m_buf.size() * 2);
  for (;;) {
    int n = gzread(static_cast<gzFile>(m_gz), m_buf.data() + m_end, static_cast<unsigned>(m_buf.size() - m_end));
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(static_cast<gzFile>(m_gz), &code);
      throw ParseError(m_name, m_next_line,
                       std::string("read error: ") + (code == Z_ERRNO ? std::strerror(errno) : msg));
    }
    if (n == 0) {
      m_eof = true;
      return false;
    }
    m_end += static_cast<std::size_t>(n);
    return true;
  }
}

CsvReader::Parse CsvReader::parse_record(std::size_t& record_end, std::size_t& newlines) {
  const char* buf = m_buf.data();
  std::size_t i = m_begin;
  newlines = 0;
  m_spans.clear();
  for (;;) {
    if (i < m_end && buf[i] == '"') {
      // Quoted field: runs to the next quote that is not doubled.
      std::size_t j = i + 1;
      bool escaped = false;
      for (;;) {
        const char* q = static_cast<const char*>(std::memchr(buf + j, '"', m_end - j));
        const char* scan_end = q ? q : buf + m_end;
        for (const char* p = buf + j; p < scan_end; ++p) newlines += (*p == '\n');
        if (!q) return m_eof ? Parse::unterminated : Parse::need_more;
        std::size_t k = static_cast<std::size_t>(q - buf);
        if (k + 1 == m_end && !m_eof) return Parse::need_more; // doubled or closing: not known yet
        if (k + 1 < m_end && buf[k + 1] == '"') {
          escaped = true;
          j = k + 2;
          continue;
        }
        m_spans.push_back({i + 1, k, escaped});
        i = k + 1;
        break;
      }
      if (i < m_end && buf[i] == '\r') ++i;
    } else {
      std::size_t j = i;
      while (j < m_end && buf[j] != ',' && buf[j] != '\n') ++j;
      if (j == m_end && !m_eof) return Parse::need_more;
      std::size_t end = j;
      if (end > i && buf[end - 1] == '\r') --end;
      m_spans.push_back({i, end, false});
      i = j;
    }
    if (i == m_end) {
      if (!m_eof) return Parse::need_more;
      record_end = i;
      return Parse::complete;
    }
    if (buf[i] == ',') {
      ++i;
      continue;
    }
    if (buf[i] == '\n') {
      ++newlines;
      record_end = i + 1;
      return Parse::complete;
    }
    return Parse::bad_quote;
  }
}

bool CsvReader::next() {
  m_fields.clear();
  std::size_t record_end = 0;
  std::size_t newlines = 0;
  for (;;) {
    if (m_begin == m_end && !refill()) return false;
    Parse p = parse_record(record_end, newlines);
    if (p == Parse::complete) break;
    m_record_line = m_next_line;
    if (p == Parse::unterminated) fail("unterminated quoted field (truncated file?)");
    if (p == Parse::bad_quote) fail("unexpected character after a closing quote");
    refill(); // need_more: at end of input the next parse completes or reports the truncation
  }
  m_record_line = m_next_line;
  m_next_line += newlines;
  m_consumed += record_end - m_begin;
  char* buf = m_buf.data();
  // A blank line is a record with no fields.
  bool blank = m_spans.size() == 1 && m_spans[0].begin == m_spans[0].end && buf[m_begin] != '"';
  if (!blank) {
    for (const auto& s : m_spans) {
      if (!s.escaped) {
        m_fields.emplace_back(buf + s.begin, s.end - s.begin);
        continue;
      }
      // Collapse doubled quotes in place: the text only shrinks.
      std::size_t w = s.begin;
      for (std::size_t r = s.begin; r < s.end; ++r) {
        buf[w++] = buf[r];
        if (buf[r] == '"') ++r;
      }
      m_fields.emplace_back(buf + s.begin, w - s.begin);
    }
  }
  m_begin = record_end;
  return true;
}

} // namespace optimas::util
