#include "serve/html.hpp"

#include <fmt/format.h>

#include <cmath>

namespace optimas::serve {

namespace {

// The length of the UTF-8 sequence starting at s[i], or 0 when it is not a valid one.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return 0;
  return n;
}

constexpr const char* k_style = R"css(
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2433;background:#f6f7f9}
header{background:#1d2433;color:#fff;padding:8px 20px}header a{color:#cfe0ff;margin-right:16px}
main{padding:12px 20px;max-width:1400px}h1{font-size:20px}h2{font-size:17px;margin-top:28px}
h3{font-size:15px}section{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:8px 14px;margin:12px 0}
table{border-collapse:collapse}td,th{padding:2px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #eceff3}
th{background:#f0f2f5}a{color:#1a56c4}code,pre,.src{font:12px/1.4 ui-monospace,monospace}
pre{white-space:pre-wrap;background:#f3f4f6;padding:6px;margin:4px 0}
.status{padding:1px 6px;border-radius:8px;background:#e5e7eb;font-size:12px}
.status-accepted,.status-finished,.status-improved,.status-done{background:#c9f2d3}.status-running{background:#fde68a}
.status-rejected,.status-not_measured{background:#e0e7ff}
.status-cancelled,.status-preempted,.status-timed_out,.status-lost{background:#fed7aa}
.campaign-table td.n,.cells td.n{text-align:right}.campaign-table td{white-space:nowrap}.wide{overflow-x:auto}
.status-validation_failed,.status-build_failed,.status-failed,.status-run_failed,.status-guardrail_rejected,.status-invalid_reply{background:#fecaca}
.badge{display:inline-block;font:11px ui-monospace,monospace;padding:0 4px;margin:0 2px;border-radius:4px;background:#1a56c4;color:#fff;text-decoration:none}
.badge.cited{background:#7c3aed}.stalled td,.stalled td.muted,.stalled td.n{color:#1d2433}.src td{border:0;padding:0 6px;white-space:pre}.src td.n{color:#8b93a1;text-align:right}
.src tr.facts td{white-space:pre-wrap;color:#4b5563;font-size:11px;padding-bottom:4px}.src tr.marked{background:#fef3c7}.src .mark{color:#92400e;font-weight:600}
.diff{width:100%;table-layout:fixed}.diff td{white-space:pre-wrap;font:12px/1.4 ui-monospace,monospace;border:0}
.diff .del{background:#fde2e2}.diff .add{background:#dcfce7}.diff .hunk{color:#6b7280;background:#f3f4f6}
.muted{color:#6b7280}.kv td:first-child{color:#4b5563}.ev:target,.edit:target{outline:2px solid #7c3aed}
svg text{font:11px system-ui,sans-serif}
)css";

} // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (std::size_t i = 0; i < text.size();) {
    char c = text[i];
    switch (c) {
    case '&':
      out += "&amp;";
      ++i;
      continue;
    case '<':
      out += "&lt;";
      ++i;
      continue;
    case '>':
      out += "&gt;";
      ++i;
      continue;
    case '"':
      out += "&quot;";
      ++i;
      continue;
    case '\'':
      out += "&#39;";
      ++i;
      continue;
    default:
      break;
    }
    std::size_t n = utf8_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else if (n == 1 && static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') {
      out += "\xEF\xBF\xBD"; // control characters are not allowed in HTML text
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string anchor(std::string_view text) {
  std::string out(text);
  for (auto& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) c = '_';
  return out;
}

std::string text_of(const nlohmann::json& value) {
  if (value.is_null()) return "\xE2\x80\x93";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  if (value.is_number_integer() || value.is_number_unsigned()) return value.dump();
  if (value.is_number()) return fmt::format("{:.4g}", value.get<double>());
  return value.dump();
}

std::string speedup_text(const nlohmann::json& value) {
  if (!value.is_number()) return "\xE2\x80\x93";
  return fmt::format("{:.3g}x", value.get<double>());
}

std::string si(double value) {
  if (!std::isfinite(value)) return "\xE2\x80\x93";
  static const char* prefixes[] = {"", " k", " M", " G", " T", " P", " E"};
  int p = 0;
  double v = value;
  while (std::fabs(v) >= 1000 && p < 6) v /= 1000, ++p;
  return fmt::format("{:.3g}{}", v, prefixes[p]);
}

std::string page(std::string_view title, std::string_view body, bool with_nav) {
  // The empty icon keeps browsers from asking for /favicon.ico, a failed request otherwise.
  return fmt::format(
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width\"><title>{}</title>"
      "<link rel=\"icon\" href=\"data:,\"><style>{}</style></head>\n<body><header><b>Optimas</b> &nbsp; {}"
      "</header>\n<main>\n{}\n</main></body></html>\n",
      escape(title), k_style, with_nav ? "<a href=\"/\">Runs</a><a href=\"/compare\">Compare</a>" : "report", body);
}

std::string status_badge(std::string_view status) {
  return fmt::format("<span class=\"status status-{}\">{}</span>", anchor(status), escape(status));
}

} // namespace optimas::serve
