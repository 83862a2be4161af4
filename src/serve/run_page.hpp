// The Run page: a run's steps, per hot kernel its roofline and stall-shaded source with evidence
// badges, per variant its edits (each linked to the evidence it cites, and back), diff, checks,
// samples and EAR metrics. The same HTML is the self-contained report of `optimas report`.
#pragma once

#include "serve/run_files.hpp"

#include <string>

namespace optimas::serve {

struct PageOptions {
  bool report = false; // a file of its own: no links to the server's pages or to artifacts
};

// The page's <main> content.
std::string run_body(const RunData& data, const PageOptions& options = {});

// The whole page (html.hpp's page() around run_body()).
std::string run_page(const RunData& data, const PageOptions& options = {});

} // namespace optimas::serve
