// HTML building blocks of the dashboard: every piece of text that comes from a run (model
// replies, source code, program output, file names) goes through escape() or attr() on its way
// into a page, so that a reply containing <script> shows as text.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace optimas::serve {

// Text for an element's content: & < > " ' replaced by entities; bytes that are not valid
// UTF-8 become U+FFFD so that the page stays valid.
std::string escape(std::string_view text);

// Text for a double-quoted attribute value (the same entities as escape()).
inline std::string attr(std::string_view text) {
  return escape(text);
}

// A fragment id made of [A-Za-z0-9_-] only: anything else becomes '_'.
std::string anchor(std::string_view text);

// A JSON value as short text: strings as they are, numbers with up to 4 significant digits,
// null/absent as an en dash.
std::string text_of(const nlohmann::json& value);

// "3.45x"; an en dash when not a number.
std::string speedup_text(const nlohmann::json& value);

// A number with 3 significant digits and an SI prefix: 4.29e12 -> "4.29 T".
std::string si(double value);

// A whole page: <!doctype html>, the inline style sheet, a header with the navigation, `body`.
// Nothing in it is fetched from elsewhere, so a page saved to a file opens offline; a report
// (`with_nav` false) has no links to the server's other pages.
std::string page(std::string_view title, std::string_view body, bool with_nav = true);

// <span class="status status-accepted">accepted</span>
std::string status_badge(std::string_view status);

} // namespace optimas::serve
