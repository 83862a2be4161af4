#include "edit/apply.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace optimas::edit {

std::size_t Application::applied() const {
  return static_cast<std::size_t>(
      std::count_if(outcomes.begin(), outcomes.end(), [](const EditOutcome& o) { return o.applied; }));
}

namespace {

int line_of(const std::string& text, std::size_t offset) {
  return 1 + static_cast<int>(
                 std::count(text.begin(), text.begin() + static_cast<long>(std::min(offset, text.size())), '\n'));
}

// Offset of the start of 1-based `line`, or npos past the end.
std::size_t line_start(const std::string& text, std::int64_t line) {
  std::size_t pos = 0;
  for (std::int64_t l = 1; l < line; ++l) {
    pos = text.find('\n', pos);
    if (pos == std::string::npos) return std::string::npos;
    ++pos;
  }
  return pos <= text.size() ? pos : std::string::npos;
}

struct Span {
  std::size_t begin, end; // in the original text
  std::string replacement;
  std::size_t edit;
};

} // namespace

Application apply_edits(const std::map<std::string, std::string>& sources, const prompt::Reply& reply,
                        const std::set<std::string>& known) {
  Application app;
  app.original = sources;
  std::map<std::string, std::vector<Span>> spans;
  for (std::size_t i = 0; i < reply.edits.size(); ++i) {
    const auto& e = reply.edits[i];
    EditOutcome o;
    o.index = i;
    o.file = e.file;
    o.kernel = e.kernel;
    for (const auto& id : e.evidence)
      if (!known.count(id))
        o.unknown_evidence.push_back(id);
      else {
        ++o.known_evidence;
        o.cited.push_back(id);
      }
    auto fail = [&](std::string why) {
      o.reason = std::move(why);
      app.outcomes.push_back(o);
    };
    // The file as named in the prompt, exactly: a path that merely ends in a source's name may
    // mean another file of that name, and is refused with the names the reply may use.
    auto it = sources.find(e.file);
    if (it == sources.end()) {
      std::vector<std::string> names;
      for (const auto& [name, text] : sources) names.push_back(name);
      o.unknown_file = true;
      fail(fmt::format("file \"{}\" is not one of the prompt's sources ({}); name the file as the prompt does", e.file,
                       util::join(names, ", ")));
      continue;
    }
    o.file = it->first;
    const std::string& text = it->second;
    Span span{0, 0, "", i};
    if (e.is_range()) {
      // Checked as 64-bit numbers before any arithmetic (the parser rejects these too).
      if (e.line_end < e.line_start || e.line_end > prompt::k_max_line) {
        fail(fmt::format("line range {}..{} is not valid", e.line_start, e.line_end));
        continue;
      }
      std::size_t b = line_start(text, e.line_start);
      std::size_t end_line = line_start(text, e.line_end + 1);
      if (b == std::string::npos || e.line_end < e.line_start ||
          (end_line == std::string::npos && line_start(text, e.line_end) == std::string::npos)) {
        fail(fmt::format("line range {}..{} is outside {} ({} lines)", e.line_start, e.line_end, it->first,
                         line_of(text, text.size())));
        continue;
      }
      span.begin = b;
      span.end = end_line == std::string::npos ? text.size() : end_line;
      span.replacement = e.new_text.value_or("");
      if (!span.replacement.empty() && span.replacement.back() != '\n' && span.end > 0 && text[span.end - 1] == '\n')
        span.replacement += '\n';
    } else if (!e.find) {
      // The parser reports such an edit (a line range below 1, or no form at all); a caller
      // that applies the reply anyway gets a reason, not a read of an empty optional.
      fail("the edit gives neither find/replace nor a valid line range");
      continue;
    } else {
      const std::string& find = *e.find;
      std::size_t n = util::count_occurrences(text, find);
      if (n != 1) {
        fail(n == 0 ? fmt::format("the text to find does not occur in {}", it->first)
                    : fmt::format("the text to find occurs {} times in {}; it must be unique", n, it->first));
        continue;
      }
      span.begin = text.find(find);
      span.end = span.begin + find.size();
      span.replacement = e.replace.value_or("");
    }
    // Edits may not overlap: each one is judged against the original text.
    bool overlaps = false;
    for (const auto& s : spans[it->first])
      if (span.begin < s.end && s.begin < span.end) {
        fail(fmt::format("overlaps edit {} in {}", s.edit + 1, it->first));
        overlaps = true;
        break;
      }
    if (overlaps) continue;
    o.applied = true;
    o.first_line = line_of(text, span.begin);
    o.last_line = line_of(text, span.end > span.begin ? span.end - 1 : span.begin);
    spans[it->first].push_back(span);
    app.outcomes.push_back(o);
  }
  app.result = sources;
  for (auto& [file, list] : spans) {
    std::sort(list.begin(), list.end(), [](const Span& a, const Span& b) { return a.begin > b.begin; });
    std::string& text = app.result[file];
    for (const auto& s : list) text.replace(s.begin, s.end - s.begin, s.replacement);
  }
  return app;
}

// The largest LCS table a diff may build: 16 M cells, 64 MB. A 20 MB reply once took 8 GB.
constexpr std::size_t k_max_diff_cells = std::size_t{1} << 24;

std::string unified_diff(const std::string& before, const std::string& after, const std::string& name) {
  auto a = util::split(before, '\n');
  auto b = util::split(after, '\n');
  if (!a.empty() && a.back().empty()) a.pop_back();
  if (!b.empty() && b.back().empty()) b.pop_back();
  const std::size_t n = a.size(), m = b.size();
  struct Op {
    char kind; // ' ', '-', '+'
    std::size_t ai, bi;
  };
  std::vector<Op> ops;
  // Lines equal at both ends are context; edits are local, so what is left between is small.
  std::size_t head = 0, tail = 0;
  while (head < n && head < m && a[head] == b[head]) ++head;
  while (tail < n - head && tail < m - head && a[n - 1 - tail] == b[m - 1 - tail]) ++tail;
  for (std::size_t k = 0; k < head; ++k) ops.push_back({' ', k, k});
  const std::size_t mn = n - head - tail, mm = m - head - tail;
  if (mn * mm <= k_max_diff_cells) {
    // Longest common subsequence of the middle.
    std::vector<std::vector<std::uint32_t>> lcs(mn + 1, std::vector<std::uint32_t>(mm + 1, 0));
    for (std::size_t i = mn; i-- > 0;)
      for (std::size_t j = mm; j-- > 0;)
        lcs[i][j] = a[head + i] == b[head + j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    std::size_t i = 0, j = 0;
    while (i < mn || j < mm) {
      if (i < mn && j < mm && a[head + i] == b[head + j])
        ops.push_back({' ', head + i++, head + j++});
      else if (i < mn && (j == mm || lcs[i + 1][j] >= lcs[i][j + 1]))
        ops.push_back({'-', head + i++, head + j}); // removals first
      else
        ops.push_back({'+', head + i, head + j++});
    }
  } else {
    // Too large a change for the table (a reply that rewrites a huge file): the middle as one
    // removal and one addition. Still a correct diff, in bounded memory.
    for (std::size_t i = 0; i < mn; ++i) ops.push_back({'-', head + i, head});
    for (std::size_t j = 0; j < mm; ++j) ops.push_back({'+', head + mn, head + j});
  }
  for (std::size_t k = 0; k < tail; ++k) ops.push_back({' ', head + mn + k, head + mm + k});
  std::string out;
  const std::size_t context = 3;
  for (std::size_t k = 0; k < ops.size();) {
    if (ops[k].kind == ' ') {
      ++k;
      continue;
    }
    // A hunk: from `context` lines before this change to `context` lines after the last change
    // that is within 2 x context of the previous one.
    std::size_t start = k >= context ? k - context : 0;
    while (start < k && ops[start].kind != ' ') ++start;
    std::size_t end = k;
    std::size_t last_change = k;
    while (end < ops.size()) {
      if (ops[end].kind != ' ')
        last_change = end;
      else if (end - last_change > 2 * context)
        break;
      ++end;
    }
    end = std::min(ops.size(), last_change + context + 1);
    std::size_t a_start = ops[start].ai, b_start = ops[start].bi, a_len = 0, b_len = 0;
    std::string body;
    for (std::size_t x = start; x < end; ++x) {
      const Op& op = ops[x];
      if (op.kind != '+') ++a_len;
      if (op.kind != '-') ++b_len;
      body += op.kind;
      body += op.kind == '+' ? b[op.bi] : a[op.ai];
      body += '\n';
    }
    if (out.empty()) out = fmt::format("--- a/{}\n+++ b/{}\n", name, name);
    out += fmt::format("@@ -{},{} +{},{} @@\n", a_len ? a_start + 1 : a_start, a_len, b_len ? b_start + 1 : b_start,
                       b_len);
    out += body;
    k = end;
  }
  return out;
}

} // namespace optimas::edit
